/**
 * Regression tests for what the simulator found (docs/simulator.md "Bugs it found"), each rebuilt
 * by hand on the real pipeline (InlineActors) or the real hold table, judged by the simulator's
 * own invariant where it applies. Each failed before its fix.
 */
import assert from 'node:assert/strict';
import { silentLogger } from '../../src/core/logger.js';
import { existsSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { entryKey } from '../../src/alarms/keys.js';
import { listChain } from '../../src/replication/chain.js';
import { MemoryStore } from '../../src/store/memory.js';
import { actorDbPath } from '../../src/workers/actor-db.js';
import { defineActor, type ActorContext } from '../../src/workers/define-actor.js';
import { InlineActors, inlineEnvs, okResult } from '../helpers/inline-actors.js';
import { SimClock } from '../../src/core/clock.js';
import { resolveOptions } from '../../src/core/config.js';
import { NodeDirectory } from '../../src/leases/directory.js';
import { HoldTable } from '../../src/leases/holds.js';
import { NodeLease } from '../../src/leases/node-lease.js';
import { decodeHold, holdKey } from '../../src/leases/records.js';
import { IndexInvariant } from './invariant.js';

const Rem = defineActor({
  init: (ctx: ActorContext) => ctx.sql.exec('CREATE TABLE t (v INTEGER)'),
  methods: { set: (ctx: ActorContext, at: number) => ctx.setAlarm(at) },
});
const A = 't/Rem/a';
const address = parseAddress(A);
const T = 1_900_000_000_000;
const U = 1_900_000_060_000;
const env = inlineEnvs({ Rem }, { replicationDelayMs: 20 });
const holds = (store: MemoryStore, e: InlineActors) => new IndexInvariant(store).check([address]);

describe('what the simulator found', () => {
  it('a hold released while its release is still in flight is taken again under a new generation, not adopted, seed 485', async () => {
    const clock = new SimClock(1_000_000);
    let slowHoldPuts = false;
    const store = new MemoryStore({
      clock,
      faults: (r) => (slowHoldPuts && r.op === 'put' && r.key.startsWith('holds/') ? { delayMs: 100 } : undefined),
    });
    const config = resolveOptions({});
    const lease = new NodeLease(store, clock, config, { nodeId: 'n1', addr: '', tenants: null, classes: ['Rem'] }, silentLogger());
    await lease.start(0);
    const holds = new HoldTable(
      store,
      clock,
      config,
      lease,
      new NodeDirectory(store, clock, config, silentLogger()),
      { nodeId: 'n1' },
      silentLogger(),
    );
    assert.deepEqual(await holds.acquire(address), { kind: 'mine', generation: 1 });
    slowHoldPuts = true;
    const releasing = holds.release(address); // its PUT lands in 100 ms
    const again = holds.acquire(address); // reads the hold before the release lands
    await clock.advance(1_000);
    await releasing;
    assert.deepEqual(await again, { kind: 'mine', generation: 2 });
    assert.equal(decodeHold((await store.get(holdKey(address)))!.body).state, 'held', 'the late release did not undo the new hold');
  });

  it('a stale removal waits until the local commits are uploaded (R2: the replicated state), seed 11', async () => {
    const store = new MemoryStore();
    const e = env(store, 1);
    okResult(await e.callDurable(A, 'set', T)); // entry at T, named by the head
    okResult(await e.call(A, 'set', U)); // committed here, its upload still in the group-commit window
    okResult(await e.deliver(A, T)); // stale for this node: T is no longer its alarm
    assert.equal(holds(store, e), undefined, 'the head named the entry at T when it was removed');
  });

  it('a fence written over the same value still uploads (re-taken under the same hold), seeds 19 and 33', async () => {
    const store = new MemoryStore();
    okResult(await env(store, 1).callDurable(A, 'set', T));
    const next = env(store, 2);
    await store.put(entryKey({ address, dueMs: T - 1_000, tag: { generation: 1, nonce: 'a1' } }), new Uint8Array(0));
    okResult(await next.deliver(A, T - 1_000)); // fences (one upload), removes the stale entry
    next.deps.slots.drop(address); // given up: the next event takes the actor again, same hold
    await store.put(entryKey({ address, dueMs: T - 2_000, tag: { generation: 1, nonce: 'a2' } }), new Uint8Array(0));
    const before = (await listChain(store, address)).length;
    okResult(await next.deliver(A, T - 2_000));
    assert.equal((await listChain(store, address)).length, before + 1, 'the new replica fenced with an upload of its own');
  });

  it('a joining node whose sidecar comes from another bucket sets its file aside rather than apply foreign deltas, seed 113', async () => {
    const solo = env(new MemoryStore(), 1);
    okResult(await solo.callDurable(A, 'set', T)); // link 1 of the solo bucket; the sidecar says seq 1
    await solo.deps.slots.closeAll();
    const shared = new MemoryStore();
    const other = env(shared, 1);
    for (const at of [U, U + 1, U + 2]) okResult(await other.callDurable(A, 'set', at)); // links 1..3 of another chain
    await other.deps.slots.closeAll();
    const joiner = env(shared, 2, { dataDir: solo.dataDir });
    assert.equal(await joiner.getAlarm(A), U + 2, "the bucket's state, not a mix");
    assert.ok(existsSync(actorDbPath(joiner.dataDir, address) + '.replaced'), 'its own copy is kept aside');
    assert.equal(holds(shared, joiner), undefined);
  });
});
