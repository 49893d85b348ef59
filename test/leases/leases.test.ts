import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { SimClock } from '../../src/core/clock.js';
import { resolveOptions } from '../../src/core/config.js';
import { silentLogger } from '../../src/core/logger.js';
import { holdDecision, isFenceable, isLive, leaseValidUntil, renewConflictIsFence } from '../../src/leases/decisions.js';
import { NodeDirectory } from '../../src/leases/directory.js';
import { HoldTable } from '../../src/leases/holds.js';
import { NodeLease } from '../../src/leases/node-lease.js';
import { decodeHold, decodeNode, encodeNode, holdKey, nodeKey, type NodeRecord } from '../../src/leases/records.js';
import { MemoryStore } from '../../src/store/memory.js';
import { countedStore, RequestCounts } from '../../src/store/request-counts.js';

const config = resolveOptions({ leasePeriodMs: 10_000, graceMs: 5_000, skewBoundMs: 1_000 });
const rec = (over: Partial<NodeRecord> = {}): NodeRecord => ({
  nodeId: 'n2',
  epoch: 3,
  addr: 'http://n2',
  tenants: null,
  classes: ['C'],
  expiresAtMs: 100_000,
  state: 'live',
  ...over,
});
const self = { nodeId: 'n1', epoch: 7 };
const hold = (over = {}) => ({ nodeId: 'n2', epoch: 3, generation: 5, state: 'held' as const, ...over });

describe('ownership decisions (pure)', () => {
  it('liveness: live until expiry + grace, fenceable after', () => {
    assert.ok(isLive(rec(), 104_999, 5_000));
    assert.ok(!isLive(rec(), 105_000, 5_000));
    assert.ok(isFenceable(rec(), 105_000, 5_000));
    assert.ok(!isFenceable(rec({ state: 'fenced' }), 200_000, 5_000));
    assert.ok(!isLive(rec({ state: 'released' }), 0, 5_000));
  });

  it('the lease counts from the renew’s send time, minus the skew bound', () => {
    assert.equal(leaseValidUntil(50_000, 10_000, 1_000), 59_000);
  });

  it('a 412 on renew is a fence unless the record is still ours (our epoch) and live', () => {
    assert.equal(renewConflictIsFence(rec(), 3), false, 'a renewal that timed out but landed');
    assert.equal(renewConflictIsFence(rec({ state: 'fenced' }), 3), true);
    assert.equal(renewConflictIsFence(rec({ state: 'released' }), 3), true);
    assert.equal(renewConflictIsFence(rec({ epoch: 4 }), 3), true, 'a newer process of this nodeId');
    assert.equal(renewConflictIsFence(null, 3), true, 'the record is gone (or could not be read)');
  });

  const cases: [string, Parameters<typeof holdDecision>, ReturnType<typeof holdDecision>][] = [
    ['no hold: create generation 1', [null, null, self, 0, 5_000], { kind: 'create' }],
    ['our own hold: ours', [hold({ nodeId: 'n1', epoch: 7 }), null, self, 0, 5_000], { kind: 'ours', generation: 5 }],
    ['our earlier epoch: take, generation + 1', [hold({ nodeId: 'n1', epoch: 6 }), null, self, 0, 5_000], { kind: 'take', generation: 6 }],
    ['a released hold: take', [hold({ state: 'released' }), rec(), self, 0, 5_000], { kind: 'take', generation: 6 }],
    ['a live holder: forward to it', [hold(), rec(), self, 104_000, 5_000], { kind: 'forward', nodeId: 'n2', addr: 'http://n2' }],
    [
      'a holder expired within grace is still live: forward',
      [hold(), rec(), self, 101_000, 5_000],
      { kind: 'forward', nodeId: 'n2', addr: 'http://n2' },
    ],
    [
      'a holder expired more than grace ago: fence, then take',
      [hold(), rec(), self, 105_000, 5_000],
      { kind: 'fenceThenTake', generation: 6 },
    ],
    ['a fenced holder: take', [hold(), rec({ state: 'fenced' }), self, 0, 5_000], { kind: 'take', generation: 6 }],
    ['a holder that restarted (new epoch): take', [hold(), rec({ epoch: 4 }), self, 0, 5_000], { kind: 'take', generation: 6 }],
    ['a holder with no node record: take', [hold(), null, self, 0, 5_000], { kind: 'take', generation: 6 }],
  ];
  for (const [name, args, want] of cases) it(name, () => assert.deepEqual(holdDecision(...args), want));
});

function cluster() {
  const clock = new SimClock(1_000_000);
  const store = new MemoryStore({ clock });
  const node = async (nodeId: string, localEpoch = 0) => {
    const lease = new NodeLease(store, clock, config, { nodeId, addr: `http://${nodeId}`, tenants: null, classes: ['C'] }, silentLogger());
    await lease.start(localEpoch);
    const holds = new HoldTable(
      store,
      clock,
      config,
      lease,
      new NodeDirectory(store, clock, config, silentLogger()),
      { nodeId },
      silentLogger(),
    );
    return { lease, holds };
  };
  return { clock, store, node };
}

const A = parseAddress('t/C/x');

describe('node leases and holds (memory bucket, virtual time)', () => {
  it('a node starts above every epoch it or the bucket knows; a second process with the nodeId of a live node refuses to start', async () => {
    const c = cluster();
    const first = await c.node('n1', 3);
    assert.equal(first.lease.epoch, 3, 'the data dir’s new epoch');
    await assert.rejects(c.node('n1'), /node n1 is already running/);
    await c.clock.advance(config.leasePeriodMs + config.graceMs);
    const again = await c.node('n1', 1);
    assert.equal(again.lease.epoch, 4, 'after the lease ran out it may start, above the bucket’s epoch');
  });

  it('a restart on the same data dir fences its dead predecessor’s live lease at once; another data dir is refused', async () => {
    const store = new MemoryStore();
    const clock = new SimClock(1_000_000);
    const lease = (dataDirId?: string) =>
      new NodeLease(store, clock, config, { nodeId: 'n1', addr: '', tenants: null, classes: [], dataDirId }, silentLogger());
    const dead = lease('dir-a');
    await dead.start(1);
    await assert.rejects(lease('dir-b').start(2), /node n1 is already running/, 'another data dir: the lease is another run’s');
    await assert.rejects(lease().start(2), /node n1 is already running/, 'no data dir named: nothing is proven');
    const fencedSeen: number[] = [];
    const restarted = lease('dir-a');
    assert.equal(await restarted.start(2, (p) => fencedSeen.push(p.epoch)), 2, 'the data dir’s lock holder starts at once');
    assert.deepEqual(fencedSeen, [1]);
    assert.ok(restarted.isValid());
    assert.equal(await dead.renew(), 'fenced', 'the dead run can never renew again');
    const record = decodeNode((await store.get(nodeKey('n1')))!.body);
    assert.deepEqual([record.state, record.epoch, record.dataDirId], ['live', 2, 'dir-a']);
  });

  it('renewing extends validity from the send time; a failed renew leaves it to run out', async () => {
    const c = cluster();
    const { lease } = await c.node('n1');
    assert.equal(lease.validUntil, 1_000_000 + 9_000);
    await c.clock.advance(3_000);
    assert.equal(await lease.renew(), 'renewed');
    assert.equal(lease.validUntil, 1_003_000 + 9_000);
    c.store.setFaults((r) => (r.op === 'put' ? { fail: true } : undefined));
    assert.equal(await lease.renew(), 'failed');
    await c.clock.advance(9_000);
    assert.equal(lease.isValid(), false);
    assert.throws(() => lease.check(), { code: 'LEASE_LOST' });
  });

  it('the first node to ask holds an actor (generation 1); another live node is told where it is', async () => {
    const c = cluster();
    const n1 = await c.node('n1');
    const n2 = await c.node('n2');
    assert.deepEqual(await n1.holds.acquire(A), { kind: 'mine', generation: 1 });
    assert.deepEqual(await n2.holds.acquire(A), { kind: 'elsewhere', nodeId: 'n1', addr: 'http://n1' });
    assert.deepEqual(await n1.holds.acquire(A), { kind: 'mine', generation: 1 });
  });

  it('an acquire told not to create answers none for an actor without a hold, writing nothing; a held one as usual', async () => {
    const c = cluster();
    const n1 = await c.node('n1');
    const n2 = await c.node('n2');
    const other = parseAddress('t/C/never-created');
    await n1.holds.acquire(A); // a create first, so that n1 creates the next new actor without reading
    for (const n of [n1, n2]) assert.deepEqual(await n.holds.acquire(other, { create: false }), { kind: 'none' });
    assert.equal(await c.store.get(holdKey(other)), null);
    assert.deepEqual(await n2.holds.acquire(A, { create: false }), { kind: 'elsewhere', nodeId: 'n1', addr: 'http://n1' });
    assert.deepEqual(await n1.holds.acquire(A, { create: false }), { kind: 'mine', generation: 1 });
  });

  it('racing acquirers: exactly one holds the actor', async () => {
    const c = cluster();
    const nodes = await Promise.all(['a', 'b', 'c', 'd'].map((id) => c.node(id)));
    const results = await Promise.all(nodes.map((n) => n.holds.acquire(A)));
    assert.equal(results.filter((r) => r.kind === 'mine').length, 1);
  });

  it('a dead holder is fenced before its actor is taken with generation + 1; the fenced node can never renew', async () => {
    const c = cluster();
    const n1 = await c.node('n1');
    const n2 = await c.node('n2');
    await n1.holds.acquire(A);
    // n1 stops renewing (it died); n2 keeps renewing.
    for (let t = 0; t < 5; t++) {
      await c.clock.advance(3_000);
      assert.equal(await n2.lease.renew(), 'renewed');
    }
    assert.deepEqual(await n2.holds.acquire(A), { kind: 'mine', generation: 2 });
    assert.equal(decodeNode((await c.store.get(nodeKey('n1')))!.body).state, 'fenced');
    assert.deepEqual(decodeHold((await c.store.get(holdKey(A)))!.body), { nodeId: 'n2', epoch: 1, generation: 2, state: 'held' });
    assert.equal(await n1.lease.renew(), 'fenced', 'n1 wakes up and finds itself fenced');
    assert.equal(n1.lease.isValid(), false);
    await assert.rejects(n1.holds.acquire(parseAddress('t/C/other')), { code: 'LEASE_LOST' });
  });

  it('draining a dead node: its record is read and fenced once, then every other hold of that run is taken without reading it; its next run is read again', async () => {
    const c = cluster();
    const n1 = await c.node('n1');
    const actors = ['a', 'b', 'c', 'd'].map((n) => parseAddress(`t/C/${n}`));
    for (const a of actors) await n1.holds.acquire(a);
    const lease2 = new NodeLease(
      c.store,
      c.clock,
      config,
      { nodeId: 'n2', addr: 'http://n2', tenants: null, classes: ['C'] },
      silentLogger(),
    );
    await lease2.start(0);
    const counts = new RequestCounts();
    const seen = countedStore(c.store, counts);
    const holds2 = new HoldTable(
      seen,
      c.clock,
      config,
      lease2,
      new NodeDirectory(seen, c.clock, config, silentLogger()),
      { nodeId: 'n2' },
      silentLogger(),
    );
    for (let t = 0; t < 5; t++) {
      await c.clock.advance(3_000);
      assert.equal(await lease2.renew(), 'renewed');
    }
    for (const a of actors) assert.deepEqual(await holds2.acquire(a), { kind: 'mine', generation: 2 });
    const nodeGets = () => [...counts.entries()].find((e) => e.op === 'get' && e.area === 'nodes')?.count ?? 0;
    assert.equal(nodeGets(), 1, 'one read of n1, before the fence');
    // n1 restarts under a new epoch and holds another actor: that run is live, so it is read and kept.
    const again = await c.node('n1');
    const E = parseAddress('t/C/e');
    await again.holds.acquire(E);
    assert.deepEqual(await holds2.acquire(E), { kind: 'elsewhere', nodeId: 'n1', addr: 'http://n1' });
    assert.equal(nodeGets(), 2);
  });

  it('a released hold is taken without reading its last holder’s record', async () => {
    const c = cluster();
    const n1 = await c.node('n1');
    await n1.holds.acquire(A);
    await n1.holds.release(A);
    const lease2 = new NodeLease(
      c.store,
      c.clock,
      config,
      { nodeId: 'n2', addr: 'http://n2', tenants: null, classes: ['C'] },
      silentLogger(),
    );
    await lease2.start(0);
    const counts = new RequestCounts();
    const seen = countedStore(c.store, counts);
    const holds2 = new HoldTable(
      seen,
      c.clock,
      config,
      lease2,
      new NodeDirectory(seen, c.clock, config, silentLogger()),
      { nodeId: 'n2' },
      silentLogger(),
    );
    assert.deepEqual(await holds2.acquire(A), { kind: 'mine', generation: 2 });
    assert.deepEqual(Object.fromEntries([...counts.entries()].map((e) => [`${e.op} ${e.area}`, e.count])), {
      'get holds': 1,
      'put_conditional holds': 1,
    });
  });

  it('a released hold is taken at once by another node, generation + 1', async () => {
    const c = cluster();
    const n1 = await c.node('n1');
    const n2 = await c.node('n2');
    await n1.holds.acquire(A);
    await n1.holds.release(A);
    assert.deepEqual(await n2.holds.acquire(A), { kind: 'mine', generation: 2 });
  });

  it('a clean release of the node lease lets its holds go at once', async () => {
    const c = cluster();
    const n1 = await c.node('n1');
    const n2 = await c.node('n2');
    await n1.holds.acquire(A);
    await n1.lease.release();
    assert.deepEqual(await n2.holds.acquire(A), { kind: 'mine', generation: 2 });
  });
});

describe('a renewal that timed out but landed', () => {
  it('is not taken for a fence: the record is still ours and live, so the next renewal uses its etag', async () => {
    const clock = new SimClock(1_000_000);
    const store = new MemoryStore({ clock });
    const lease = new NodeLease(store, clock, config, { nodeId: 'n1', addr: '', tenants: null, classes: ['C'] }, silentLogger());
    await lease.start(1);
    let first = true;
    store.setFaults((r) => {
      if (first && r.op === 'put') {
        first = false;
        return { timeout: { afterMs: 50, landAfterMs: 10 } };
      }
      return undefined;
    });
    await clock.advance(1_000);
    const ambiguous = lease.renew();
    await clock.advance(100);
    assert.equal(await ambiguous, 'failed');
    assert.equal(await lease.renew(), 'failed', 'a 412 against our own landed renewal');
    assert.equal(lease.fenced, false);
    assert.equal(await lease.renew(), 'renewed');
    assert.ok(lease.isValid());
  });

  it('a 412 against a record written fenced is a fence', async () => {
    const clock = new SimClock(1_000_000);
    const store = new MemoryStore({ clock });
    const lease = new NodeLease(store, clock, config, { nodeId: 'n1', addr: '', tenants: null, classes: ['C'] }, silentLogger());
    await lease.start(1);
    const obj = (await store.get(nodeKey('n1')))!;
    await store.put(nodeKey('n1'), encodeNode({ ...decodeNode(obj.body), state: 'fenced' }), { ifMatch: obj.etag });
    assert.equal(await lease.renew(), 'fenced');
    assert.equal(lease.fenced, true);
  });
});
