/** The main thread's membership (membership.ts): the lease renewal schedule. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SimClock } from '../../src/core/clock.js';
import { resolveOptions } from '../../src/core/config.js';
import { silentLogger } from '../../src/core/logger.js';
import { Membership } from '../../src/main/membership.js';
import { MemoryStore } from '../../src/store/memory.js';

const config = resolveOptions({ leasePeriodMs: 10_000, graceMs: 5_000, skewBoundMs: 1_000 });

describe('lease renewal schedule', () => {
  it('renewals never overlap: a bucket slower than the renewal interval does not read as a fence', async () => {
    const clock = new SimClock(1_000_000);
    const store = new MemoryStore({ clock });
    const m = new Membership(store, clock, config, silentLogger(), { nodeId: 'slow', addr: '', tenants: null, classes: ['C'] });
    await m.lease.start(1);
    await clock.advance(3_000); // the renewals write a body other than the start's
    store.setFaults((r) => (r.op === 'put' && r.key === 'nodes/slow' ? { delayMs: 1_200 } : undefined));
    let fenced = false;
    const first = m.renew(() => (fenced = true));
    const second = m.renew(() => (fenced = true)); // the next tick while the first is still in flight
    await clock.advance(3_000);
    await Promise.all([first, second]);
    assert.equal(fenced, false);
    assert.equal(m.lease.fenced, false);
    assert.ok(m.lease.isValid());
  });
});
