/**
 * HoldTable's invariant and its logged failures: a hold's generation never decreases, checked
 * where it is read and written; releases that fail at stop are logged, not swallowed. The take of
 * an expected hold without a read first (a conditional PUT on the etag assumed, no GET): only
 * of the exact record assumed.
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
import { decodeHold, decodeNode, encodeHold, encodeNode, holdKey, nodeKey } from '../../src/leases/records.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { ObjectStore, PutCondition } from '../../src/store/types.js';
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

describe('concurrent acquires of one actor on one node', () => {
  it('a read made stale by this node’s own take and release meanwhile is read again, not built on (no INTERNAL)', async () => {
    const n = await node();
    const n2 = { nodeId: 'n2', epoch: 1, addr: 'http://n2', tenants: null, classes: ['C'], expiresAtMs: 0, state: 'released' as const };
    await n.store.put(nodeKey('n2'), encodeNode(n2));
    await n.store.put(holdKey(A), encodeHold({ nodeId: 'n2', epoch: 1, generation: 3, state: 'held' }));
    // The first read of n2's record waits until the test lets it go.
    let reached!: () => void;
    let letGo!: () => void;
    const atGate = new Promise<void>((r) => (reached = r));
    const gate = new Promise<void>((r) => (letGo = r));
    let gated = false;
    const store = new Proxy(n.store, {
      get(target, prop, receiver) {
        if (prop === 'get')
          return async (key: string) => {
            if (key === nodeKey('n2') && !gated) {
              gated = true;
              reached();
              await gate;
            }
            return target.get(key);
          };
        return Reflect.get(target, prop, receiver) as unknown;
      },
    });
    const nodes = new NodeDirectory(store, n.clock, config, silentLogger());
    const holds = new HoldTable(store, n.clock, config, n.lease, nodes, { nodeId: 'n1' }, silentLogger());
    const slow = holds.acquire(A); // read generation 3 (n2's), then waits for n2's record
    await atGate;
    assert.deepEqual(await holds.acquire(A), { kind: 'mine', generation: 4 }); // another call wins meanwhile
    await holds.release(A); // and the actor is given back (idle, or a clean stop)
    letGo();
    assert.deepEqual(await slow, { kind: 'mine', generation: 5 });
    assert.deepEqual(decodeHold((await n.store.get(holdKey(A)))!.body), { nodeId: 'n1', epoch: 1, generation: 5, state: 'held' });
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

describe('an expected hold is taken without reading it first', () => {
  const B = parseAddress('t/C/y');
  const dead = { nodeId: 'n2', epoch: 3 };
  const held = (generation: number, holder = dead) => encodeHold({ ...holder, generation, state: 'held' });

  /** B's hold at generation 5, held by n3, whose lease is live. */
  async function heldByLiveN3(store: MemoryStore, nowMs: number) {
    const live = {
      nodeId: 'n3',
      epoch: 1,
      addr: 'http://n3',
      tenants: null,
      classes: ['C'],
      expiresAtMs: nowMs + 60_000,
      state: 'live' as const,
    };
    await store.put(nodeKey('n3'), encodeNode(live));
    await store.put(holdKey(B), held(5, { nodeId: 'n3', epoch: 1 }));
  }

  /** n1 with n2's run 3 over (its record fenced) holding A and B at generation 5; records the requests on B's hold. */
  async function afterTakeover(store0?: (s: MemoryStore) => ObjectStore) {
    const n = await node();
    const record = { nodeId: 'n2', epoch: 3, addr: 'http://n2', tenants: null, classes: ['C'], expiresAtMs: 0, state: 'fenced' as const };
    await n.store.put(nodeKey('n2'), encodeNode(record));
    n.nodes.observe(record);
    await n.store.put(holdKey(A), held(5));
    await n.store.put(holdKey(B), held(5));
    const store = store0 ? store0(n.store) : n.store;
    const holds = new HoldTable(store, n.clock, config, n.lease, n.nodes, { nodeId: 'n1' }, silentLogger());
    holds.expect(A, 5);
    assert.deepEqual(await holds.acquire(A), { kind: 'mine', generation: 6 }); // read, then take: a guess would have been right
    const onB: string[] = [];
    n.store.setFaults((r) => (r.key === holdKey(B) && onB.push(r.op), undefined));
    return { ...n, holds, onB };
  }

  it('the hold of the run the last take found over, at the entry’s generation: one PUT, no GET', async () => {
    const { holds, onB, store } = await afterTakeover();
    holds.expect(B, 5);
    assert.deepEqual(await holds.acquire(B), { kind: 'mine', generation: 6 });
    assert.deepEqual(onB, ['put']);
    assert.deepEqual(decodeHold((await store.get(holdKey(B)))!.body), { nodeId: 'n1', epoch: 1, generation: 6, state: 'held' });
  });

  it('after a released hold was read and taken, a released one of the same node and epoch is taken the same way', async () => {
    const { holds, onB, store } = await afterTakeover();
    const C = parseAddress('t/C/z');
    const released = (generation: number) => encodeHold({ ...dead, generation, state: 'released' });
    await store.put(holdKey(C), released(2));
    await store.put(holdKey(B), released(4));
    holds.expect(C, 2);
    assert.deepEqual(await holds.acquire(C), { kind: 'mine', generation: 3 }); // read: learns "n2's, released"
    onB.length = 0;
    holds.expect(B, 4);
    assert.deepEqual(await holds.acquire(B), { kind: 'mine', generation: 5 });
    assert.deepEqual(onB, ['put']);
  });

  it('a hold that moved on since the entry was written: the PUT fails, the read decides (the later hold is kept)', async () => {
    const { holds, onB, store } = await afterTakeover();
    await store.put(holdKey(B), held(8));
    onB.length = 0;
    holds.expect(B, 5);
    assert.deepEqual(await holds.acquire(B), { kind: 'mine', generation: 9 });
    assert.deepEqual(onB, ['put', 'get', 'put']);
  });

  it('after a missed guess the next expected actor is read first, until a read shows a guess would have been right', async () => {
    const { holds, store, clock } = await afterTakeover();
    const [C, D] = [parseAddress('t/C/z'), parseAddress('t/C/w')];
    await heldByLiveN3(store, clock.now()); // a live node's since: the guess misses, the read forwards
    for (const x of [C, D]) await store.put(holdKey(x), held(5));
    const onCD: string[] = [];
    const name = (key: string) => (key === holdKey(C) ? 'C' : key === holdKey(D) ? 'D' : undefined);
    store.setFaults((r) => (name(r.key) && onCD.push(`${name(r.key)} ${r.op}`), undefined));
    holds.expect(B, 5);
    assert.deepEqual(await holds.acquire(B), { kind: 'elsewhere', nodeId: 'n3', addr: 'http://n3' });
    holds.expect(C, 5);
    assert.deepEqual(await holds.acquire(C), { kind: 'mine', generation: 6 }); // read (no guess after a miss); it confirms
    holds.expect(D, 5);
    assert.deepEqual(await holds.acquire(D), { kind: 'mine', generation: 6 }); // guessed again
    assert.deepEqual(onCD, ['C get', 'C put', 'D put']);
    assert.deepEqual(holds.takes, { read: 2, expected: 1, expectedMissed: 1, created: 0, createdMissed: 0 });
  });

  it('a hold of a live node is never taken by the guess: the read finds it and the call goes there', async () => {
    const { holds, store, clock } = await afterTakeover();
    await heldByLiveN3(store, clock.now());
    holds.expect(B, 5);
    assert.deepEqual(await holds.acquire(B), { kind: 'elsewhere', nodeId: 'n3', addr: 'http://n3' });
    assert.deepEqual(decodeHold((await store.get(holdKey(B)))!.body).nodeId, 'n3');
  });

  it('an entry older than a generation this node released is not guessed from: the hold is read (no INTERNAL)', async () => {
    const { holds, onB, store } = await afterTakeover();
    holds.expect(B, 5);
    assert.deepEqual(await holds.acquire(B), { kind: 'mine', generation: 6 }); // guessed
    await holds.release(B); // this node released generation 6
    await store.put(holdKey(B), held(7)); // n2's run took it since (as far as this test goes)
    onB.length = 0;
    holds.expect(B, 5); // an entry written under generation 5, still in the index
    assert.deepEqual(await holds.acquire(B), { kind: 'mine', generation: 8 });
    assert.deepEqual(onB, ['get', 'put']);
  });

  it('a store whose etags are not the MD5 of the body: no guess, the hold is read first', async () => {
    const { holds, onB } = await afterTakeover(otherEtags);
    holds.expect(B, 5);
    assert.deepEqual(await holds.acquire(B), { kind: 'mine', generation: 6 });
    assert.deepEqual(onB, ['get', 'put']);
  });
});

/** The same store with etags of another form ("v-" + MD5), as an S3 with server-side encryption by KMS answers. */
function otherEtags(s: MemoryStore): ObjectStore {
  const wrap = <T extends { etag: string } | null>(o: T): T => (o ? { ...o, etag: `v-${o.etag}` } : o);
  return new Proxy(s, {
    get(target, prop, receiver) {
      if (prop === 'get') return async (key: string) => wrap(await target.get(key));
      if (prop === 'put')
        return async (key: string, body: Uint8Array, c?: PutCondition) =>
          wrap(await target.put(key, body, c && 'ifMatch' in c ? { ifMatch: c.ifMatch.replace(/^v-/, '') } : c));
      return Reflect.get(target, prop, receiver) as unknown;
    },
  });
}

describe('a new actor’s hold created without a read', () => {
  const B = parseAddress('t/C/y');
  const C = parseAddress('t/C/z');

  function countGets(store: MemoryStore): { gets: number } {
    const counted = { gets: 0 };
    const get = store.get.bind(store);
    store.get = (key, ...rest) => (counted.gets++, get(key, ...rest));
    return counted;
  }

  it('once a read found no hold, the next new actors are created with If-None-Match and no GET', async () => {
    const { store, holds } = await node();
    const counted = countGets(store);
    assert.deepEqual(await holds.acquire(A), { kind: 'mine', generation: 1 });
    assert.equal(counted.gets, 1, 'the first one is read: nothing says actors are new yet');
    assert.deepEqual(await holds.acquire(B), { kind: 'mine', generation: 1 });
    assert.deepEqual(await holds.acquire(C), { kind: 'mine', generation: 1 });
    assert.equal(counted.gets, 1, 'the next ones are not');
    assert.deepEqual(holds.takes, { read: 1, expected: 0, expectedMissed: 0, created: 2, createdMissed: 0 });
    assert.equal(decodeHold((await store.get(holdKey(C)))!.body).generation, 1);
  });

  it('an actor whose hold exists: the create fails, the read decides, and the next actor is read first', async () => {
    const { store, lease, holds } = await node();
    await holds.acquire(A); // read, none: creating
    const other = { nodeId: 'n2', epoch: lease.epoch, generation: 4, state: 'released' as const };
    await store.put(holdKey(B), encodeHold(other)); // released by another node: takeable
    const counted = countGets(store);
    assert.deepEqual(await holds.acquire(B), { kind: 'mine', generation: 5 }, 'taken at the next generation, as a read decides');
    assert.equal(counted.gets, 1);
    assert.deepEqual(holds.takes, { read: 2, expected: 0, expectedMissed: 0, created: 0, createdMissed: 1 });
    await holds.acquire(C);
    assert.equal(counted.gets, 2, 'after the miss, a new actor is read first again');
    assert.equal(holds.takes.created, 0);
  });

  it('never for an actor this node released (its hold exists at a higher generation)', async () => {
    const { store, holds } = await node();
    await holds.acquire(A);
    await holds.acquire(B); // created without a read
    await holds.release(B);
    const counted = countGets(store);
    assert.deepEqual(await holds.acquire(B), { kind: 'mine', generation: 2 });
    assert.equal(counted.gets, 1, 'read first');
    assert.deepEqual(holds.takes, { read: 2, expected: 0, expectedMissed: 0, created: 1, createdMissed: 0 });
  });
});

describe('a hold this node created is claimed once (the first event need not list the chain)', () => {
  const B = parseAddress('t/C/y');

  it('created with a read first or without: claimed by the first event only', async () => {
    const { holds } = await node();
    await holds.acquire(A); // read, none: created
    await holds.acquire(B); // created without a read
    for (const a of [A, B]) {
      assert.equal(holds.claimCreated(a), true);
      assert.equal(holds.claimCreated(a), false, 'the next events list the chain');
      await holds.acquire(a); // held already: no new claim
      assert.equal(holds.claimCreated(a), false);
    }
  });

  it('never for a hold that existed: another node’s, or one this node released and took again', async () => {
    const { store, lease, holds } = await node();
    await store.put(holdKey(B), encodeHold({ nodeId: 'n2', epoch: lease.epoch, generation: 4, state: 'released' }));
    assert.deepEqual(await holds.acquire(B), { kind: 'mine', generation: 5 });
    assert.equal(holds.claimCreated(B), false, 'taken from another node: its chain may hold links');
    await holds.acquire(A);
    await holds.release(A); // unclaimed when released: the claim goes with the hold
    assert.deepEqual(await holds.acquire(A), { kind: 'mine', generation: 2 });
    assert.equal(holds.claimCreated(A), false, 'taken again: this node may have written its chain under generation 1');
  });

  it('not after the lease was lost (the holds are forgotten)', async () => {
    const { holds } = await node();
    await holds.acquire(A);
    holds.forgetAll();
    assert.equal(holds.claimCreated(A), false);
  });
});

describe('a hold taken across a lost lease', () => {
  /** The store of `n` with every hold PUT held until the test lets it go (a write stalled at the bucket). */
  function heldHoldPuts(n: Awaited<ReturnType<typeof node>>) {
    let reached!: () => void;
    let letGo!: () => void;
    const atGate = new Promise<void>((r) => (reached = r));
    const gate = new Promise<void>((r) => (letGo = r));
    const store = new Proxy(n.store, {
      get(target, prop, receiver) {
        if (prop === 'put')
          return async (key: string, body: Uint8Array, condition?: PutCondition) => {
            if (key === holdKey(A)) {
              reached();
              await gate;
            }
            return target.put(key, body, condition);
          };
        return Reflect.get(target, prop, receiver) as unknown;
      },
    });
    return { store, atGate, letGo };
  }

  it('a hold PUT that lands after the node was fenced and rejoined is not recorded as the new epoch’s (LEASE_LOST)', async () => {
    const n = await node();
    const { store, atGate, letGo } = heldHoldPuts(n);
    const holds = new HoldTable(store, n.clock, config, n.lease, n.nodes, { nodeId: 'n1' }, silentLogger());
    const held = holds.acquire(A); // creates the hold under epoch 1; its PUT waits
    await atGate;
    // Another node fences this one; it learns so at its next renewal and rejoins under a new epoch.
    const record = decodeNode((await n.store.get(nodeKey('n1')))!.body);
    await n.store.put(nodeKey('n1'), encodeNode({ ...record, state: 'fenced' }));
    assert.equal(await n.lease.renew(), 'fenced');
    holds.forgetAll();
    await n.lease.start(n.lease.epoch);
    assert.equal(n.lease.epoch, 2);
    letGo(); // the epoch-1 hold lands now: other nodes see a run that is over and may take it at once
    await assert.rejects(held, (e: unknown) => isKeepworkError(e, ErrorCode.LeaseLost));
    assert.equal(holds.held(A), undefined, 'not served as this node’s under the new epoch');
    assert.equal(decodeHold((await n.store.get(holdKey(A)))!.body).epoch, 1);
  });
});
