/**
 * The per-tenant rate of new actors: the token bucket (refill) never admits more than a second's
 * worth plus the rate over the time elapsed; past it a hold create is refused with OVERLOADED and
 * the wait, nothing written; actors that exist, and other tenants, are not counted.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseAddress } from '../../src/core/address.js';
import { SimClock } from '../../src/core/clock.js';
import { resolveOptions } from '../../src/core/config.js';
import { ErrorCode, isKeepworkError } from '../../src/core/errors.js';
import { silentLogger } from '../../src/core/logger.js';
import { NodeDirectory } from '../../src/leases/directory.js';
import { HoldTable } from '../../src/leases/holds.js';
import { refill, type RateBucket } from '../../src/leases/new-actor-rate.js';
import { NodeLease } from '../../src/leases/node-lease.js';
import { holdKey } from '../../src/leases/records.js';
import { MemoryStore } from '../../src/store/memory.js';

describe('refill (token bucket)', () => {
  it('admits at most a second’s worth plus the rate over the time elapsed, and says how long to wait', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 50 }), fc.array(fc.integer({ min: 0, max: 400 }), { maxLength: 200 }), (rate, gaps) => {
        let bucket: RateBucket | undefined;
        let now = 0;
        let admitted = 0;
        for (const gap of gaps) {
          now += gap;
          const r = refill(bucket, now, rate);
          bucket = r.bucket;
          if (r.waitMs === 0) admitted++;
          else {
            assert.ok(r.waitMs <= Math.ceil(1000 / rate));
            assert.equal(refill(bucket, now + r.waitMs, rate).waitMs, 0); // the wait is enough
          }
        }
        assert.ok(admitted <= rate + Math.floor((now * rate) / 1000), `${admitted} admitted in ${now} ms at ${rate}/s`);
      }),
      // in fractions of a token, 0.312 + 344 ms × 2/s came to 0.9999999999999999: the wait fell short
      { examples: [[2, [0, 112, 44]]] },
    );
  });
});

describe('new actors per tenant per second', () => {
  async function table(rate: number) {
    const config = resolveOptions({ newActorsPerTenantPerSecond: rate });
    const clock = new SimClock(1_000_000);
    const store = new MemoryStore({ clock });
    const lease = new NodeLease(store, clock, config, { nodeId: 'n1', addr: 'http://n1', tenants: null, classes: ['C'] }, silentLogger());
    await lease.start(0);
    const nodes = new NodeDirectory(store, clock, config, silentLogger());
    return { clock, store, holds: new HoldTable(store, clock, config, lease, nodes, { nodeId: 'n1' }, silentLogger()) };
  }

  it('refuses a tenant’s new actor past the rate with OVERLOADED and the wait, writing nothing; existing actors and other tenants go on', async () => {
    const { clock, store, holds } = await table(2);
    const a = (name: string) => parseAddress(`t/C/${name}`);
    assert.equal((await holds.acquire(a('one'))).kind, 'mine');
    assert.equal((await holds.acquire(a('two'))).kind, 'mine');
    await holds.release(a('one'));
    await assert.rejects(
      holds.acquire(a('three')),
      (e: unknown) =>
        isKeepworkError(e, ErrorCode.Overloaded) &&
        /newActorsPerTenantPerSecond/.test(e.message) &&
        (e as unknown as { details: { retryAfterMs: number } }).details.retryAfterMs === 500,
    );
    assert.equal(await store.get(holdKey(a('three'))), null, 'the refused create wrote no hold');
    assert.deepEqual(await holds.acquire(a('one')), { kind: 'mine', generation: 2 }, 'an actor that exists is taken');
    assert.equal((await holds.acquire(parseAddress('u/C/one'))).kind, 'mine', 'another tenant has its own rate');
    await clock.advance(500);
    assert.deepEqual(await holds.acquire(a('three')), { kind: 'mine', generation: 1 });
  });
});
