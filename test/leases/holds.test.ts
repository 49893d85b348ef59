/**
 * HoldTable's invariant and its logged failures (issue 14): a hold's generation never decreases,
 * checked where it is read and written; releases that fail at stop are logged, not swallowed.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { SimClock } from '../../src/core/clock.js';
import { resolveOptions } from '../../src/core/config.js';
import { ErrorCode, isKeepworkError } from '../../src/core/errors.js';
import { silentLogger, type Logger } from '../../src/core/logger.js';
import { NodeDirectory } from '../../src/leases/directory.js';
import { HoldTable } from '../../src/leases/holds.js';
import { NodeLease } from '../../src/leases/node-lease.js';
import { decodeNode, encodeHold, encodeNode, holdKey, nodeKey } from '../../src/leases/records.js';
import { MemoryStore } from '../../src/store/memory.js';
import { capturedLogger } from '../helpers/log-lines.js';

const config = resolveOptions({ leasePeriodMs: 10_000, graceMs: 5_000, skewBoundMs: 1_000 });
const A = parseAddress('t/C/x');

async function node(log: Logger = silentLogger()) {
  const clock = new SimClock(1_000_000);
  const store = new MemoryStore({ clock });
  const lease = new NodeLease(store, clock, config, { nodeId: 'n1', addr: 'http://n1', tenants: null, classes: ['C'] }, log);
  await lease.start(0);
  const nodes = new NodeDirectory(store, clock, config, log);
  return { clock, store, lease, nodes, holds: new HoldTable(store, clock, config, lease, nodes, { nodeId: 'n1' }, log) };
}

describe('hold generations never decrease', () => {
  it('a bucket hold below a generation this node released stops the acquire with INTERNAL (planted)', async () => {
    const { store, lease, holds } = await node();
    assert.deepEqual(await holds.acquire(A), { kind: 'mine', generation: 1 });
    await holds.release(A);
    assert.deepEqual(await holds.acquire(A), { kind: 'mine', generation: 2 });
    await holds.release(A);
    // The wrong state: the bucket's hold went back to generation 1 (no code of keepwork writes that).
    await store.put(holdKey(A), encodeHold({ nodeId: 'n1', epoch: lease.epoch, generation: 1, state: 'released' }));
    await assert.rejects(
      holds.acquire(A),
      (e: unknown) => isKeepworkError(e, ErrorCode.Internal) && /generation 1 .* below 2/.test(e.message),
    );
  });
});

describe('errors that used to be swallowed are logged', () => {
  it('releaseAll: a release that fails is logged with the actor', async () => {
    const { log, lines } = capturedLogger();
    const { store, holds } = await node(log);
    await holds.acquire(A);
    store.setFaults((r) => (r.op === 'put' && r.key === holdKey(A) ? { fail: true } : undefined));
    await holds.releaseAll();
    const line = lines.find((l) => l.msg.startsWith('releasing a hold at stop failed'));
    assert.equal(line?.actor, 't/C/x');
    assert.equal(line?.err?.code, ErrorCode.StoreUnavailable);
  });

  it('the node directory: an unreadable node record is logged and skipped', async () => {
    const { log, lines } = capturedLogger();
    const { store, nodes } = await node(log);
    await store.put(nodeKey('n2'), new TextEncoder().encode('{not json'));
    const all = await nodes.all(0);
    assert.deepEqual(
      all.map((e) => e.record.nodeId),
      ['n1'],
    );
    assert.equal(lines.find((l) => l.msg === 'unreadable node record skipped')?.nodeId, 'n2');
  });

  it('the lease: a failed read after a 412 is logged (and taken as a fence, as before)', async () => {
    const { log, lines } = capturedLogger();
    const { store, lease } = await node(log);
    const obj = (await store.get(nodeKey('n1')))!;
    const moved = encodeNode({ ...decodeNode(obj.body), addr: 'http://elsewhere' });
    await store.put(nodeKey('n1'), moved, { ifMatch: obj.etag }); // the etag moves: the renewal gets a 412
    store.setFaults((r) => (r.op === 'get' && r.key === nodeKey('n1') ? { fail: true } : undefined));
    assert.equal(await lease.renew(), 'fenced');
    assert.ok(
      lines.some((l) => l.msg.startsWith('reading the lease record after a 412 failed') && l.err?.code === ErrorCode.StoreUnavailable),
    );
  });
});
