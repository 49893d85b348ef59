/**
 * Delivery of index entries and stale cleanup (deliver.ts; docs/alarm-index.md "The sweep", second half, and
 * R2/R3, the owner fence, the empty-bucket rule), through the real pipeline on a memory bucket.
 * The pure rules are in test/alarms/stale.test.ts.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { entryKey, parseEntryKey } from '../../src/alarms/keys.js';
import { listChain } from '../../src/replication/chain.js';
import { decodeLink } from '../../src/replication/link.js';
import { linkKey } from '../../src/replication/state-keys.js';
import { SimClock } from '../../src/core/clock.js';
import { MemoryStore } from '../../src/store/memory.js';
import { actorDbPath } from '../../src/workers/actor-db.js';
import { defineActor, type ActorContext } from '../../src/workers/define-actor.js';
import { inlineEnvs, okResult } from '../helpers/inline-actors.js';

const fired: string[] = [];
const Rem = defineActor({
  init: (ctx: ActorContext) => ctx.sql.exec('CREATE TABLE t (v INTEGER)'),
  alarm: (ctx: ActorContext) => void fired.push(ctx.address.name),
  methods: {
    set: (ctx: ActorContext, at: number) => ctx.setAlarm(at),
    remove: (ctx: ActorContext) => ctx.deleteActor(),
  },
});
const A = 't/Rem/a';
const address = parseAddress(A);
const env = inlineEnvs({ Rem }, { replicationDelayMs: 20 });
const entries = (s: MemoryStore) =>
  s
    .keys()
    .filter((k) => k.startsWith('alarms/'))
    .map((k) => parseEntryKey(k)!);
const tagged = (dueMs: number, generation: number, nonce = 'ee') => entryKey({ address, dueMs, tag: { generation, nonce } });

describe('delivering index entries', () => {
  it('the sweep delivering an orphaned alarm: a node that never ran the actor restores it and runs its alarm', async () => {
    const store = new MemoryStore();
    const owner = env(store, 1);
    const at = owner.clock.now() + 1_000;
    okResult(await owner.callDurable(A, 'set', at));
    const [entry] = entries(store);
    fired.length = 0;
    const before = await listChain(store, address);
    // Link PUTs wait for a gate: the delivery must not answer while its alarm's link is held.
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const held = Object.create(store) as MemoryStore;
    held.put = async (key, body, condition) => {
      if (key.startsWith('state/')) await gate;
      return store.put(key, body, condition);
    };
    const other = env(held, 2); // the owner died; another node took the hold
    await other.clock.runUntil(at + 20_000);
    let answered = false;
    const delivering = other.deliver(A, entry!.dueMs).then((r) => ((answered = true), r));
    for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
    assert.deepEqual(fired, ['a'], 'the alarm ran');
    assert.equal(answered, false, 'no answer while its link is held');
    open();
    const r = await delivering;
    assert.equal(r.type === 'ok' && r.ran, true);
    assert.equal(r.type === 'ok' && r.closed, true, 'run in memory: nothing of it stays open, so letting it go needs no worker task');
    const after = await listChain(store, address);
    assert.equal(after.length, before.length + 1, 'one link more, under the new hold');
    const headerOf = async (seq: number) => decodeLink((await store.get(linkKey(address, seq)))!.body).header;
    assert.ok((await headerOf(after.at(-1)!)).generation > (await headerOf(before.at(-1)!)).generation);
    await other.clock.advance(25);
    assert.deepEqual(entries(store), [], 'the alarm fired and its entry is gone once that is uploaded');
  });

  it('stale-entry cleanup: an entry at a time that is not the committed alarm is removed; the named one stays', async () => {
    const store = new MemoryStore();
    const e = env(store, 3);
    okResult(await e.callDurable(A, 'set', 1_900_000_000_000));
    await store.put(tagged(1_800_000_000_000, 2), new Uint8Array(0)); // left by a crash between PUT and upload
    await store.put(entryKey({ address, dueMs: 1_800_000_000_000, tag: null }), new Uint8Array(0)); // and a legacy one
    okResult(await e.callDurable(A, 'set', 1_900_000_000_000)); // an upload under this hold exists
    const r = await e.deliver(A, 1_800_000_000_000);
    assert.equal(r.type === 'ok' && r.removed, 2);
    assert.equal(r.type === 'ok' && r.closed, undefined, 'an actor with a local file stays open in its worker');
    assert.deepEqual(
      entries(store).map((x) => x.dueMs),
      [1_900_000_000_000],
    );
  });

  it('R3 during cleanup: an entry a newer generation wrote is never removed', async () => {
    const store = new MemoryStore();
    const e = env(store, 3);
    okResult(await e.callDurable(A, 'set', 1_900_000_000_000));
    await store.put(tagged(1_800_000_000_000, 8), new Uint8Array(0));
    await e.deliver(A, 1_800_000_000_000);
    assert.ok(store.peek(tagged(1_800_000_000_000, 8)));
  });

  it('the owner fence: an owner that has uploaded nothing under its hold uploads owner_fence before removing, once per hold', async () => {
    const store = new MemoryStore();
    const first = env(store, 1);
    okResult(await first.callDurable(A, 'set', 1_900_000_000_000));
    await store.put(tagged(1_800_000_000_000, 1, 'a1'), new Uint8Array(0));
    await store.put(tagged(1_700_000_000_000, 1, 'a2'), new Uint8Array(0));
    const next = env(store, 2); // took the actor over, restored it, uploaded nothing yet
    const before = (await listChain(store, address)).length;
    okResult(await next.deliver(A, 1_800_000_000_000));
    const seqs = await listChain(store, address);
    assert.equal(seqs.length, before + 1, 'one fence upload');
    const head = decodeLink((await store.get(linkKey(address, seqs.at(-1)!)))!.body);
    assert.deepEqual([head.header.generation, head.header.nodeId], [2, 'inline']);
    assert.equal(store.peek(tagged(1_800_000_000_000, 1, 'a1')), undefined, 'removed after the fence');
    okResult(await next.deliver(A, 1_700_000_000_000));
    assert.equal((await listChain(store, address)).length, before + 1, 'no second fence under the same hold');
    assert.equal(store.peek(tagged(1_700_000_000_000, 1, 'a2')), undefined);
  });

  it('an entry for an actor the bucket never had stays, without creating it; it is offered again after retryMaxMs and the hold is released', async () => {
    const store = new MemoryStore();
    await store.put(tagged(1_800_000_000_000, 1), new Uint8Array(0)); // a joining node listed it, then died before its first upload
    const e = env(store, 2);
    const r = await e.deliver(A, 1_800_000_000_000);
    assert.deepEqual(r.type === 'ok' && [r.retryAtMs, r.releaseHold, r.ran], [e.clock.now() + 300_000, true, false]);
    assert.ok(store.peek(tagged(1_800_000_000_000, 1)), 'the entry stays');
    assert.deepEqual(await listChain(store, address), [], 'no chain created');
    assert.equal(existsSync(actorDbPath(e.dataDir, address)), false, 'no local database created');
  });

  it('an entry delivered for a deleted actor is removed without running it', async () => {
    const store = new MemoryStore();
    const owner = env(store, 1);
    okResult(await owner.callDurable(A, 'set', 1_900_000_000_000));
    okResult(await owner.call(A, 'remove'));
    await store.put(tagged(1_900_000_000_000, 1, '1ef7'), new Uint8Array(0)); // an entry left behind
    const other = env(store, 2);
    fired.length = 0;
    const r = await other.deliver(A, 1_900_000_000_000);
    assert.equal(r.type === 'ok' && r.removed, 1);
    assert.deepEqual(fired, []);
    assert.deepEqual(entries(store), []);
    assert.equal(existsSync(actorDbPath(other.dataDir, address)), false, 'the deleted actor is not created again');
  });
});

describe('late deletes (R1: a fresh key for every PUT)', () => {
  it('late deletes after an owner’s own reschedule and a takeover: the alarm is still delivered by a node that never ran the actor', async () => {
    const clock = new SimClock(1_800_000_000_000);
    const store = new MemoryStore({ clock }); // one bucket, one virtual time for both nodes
    const owner = env(store, 1, { clock });
    const t1 = owner.clock.now() + 60_000;
    okResult(await owner.callDurable(A, 'set', t1)); // entry E1 at t1
    let late = true;
    store.setFaults((r) => {
      if (late && r.op === 'delete' && r.key.startsWith('alarms/')) {
        late = false;
        return { timeout: { afterMs: 5, landAfterMs: 10_000 } }; // E1's delete hangs and lands much later
      }
      return undefined;
    });
    okResult(await owner.callDurable(A, 'set', t1 + 5_000)); // reschedule: PUT E2, upload, DELETE E1 (late)
    okResult(await owner.callDurable(A, 'set', t1)); // back to t1: a fresh key E3, never E1's
    await owner.clock.advance(11_000); // the late DELETE of E1 lands now
    assert.deepEqual(
      entries(store).map((x) => x.dueMs),
      [t1],
      'the entry for t1 survived the late delete',
    );
    // The owner dies; a node that never ran the actor delivers the entry.
    const other = env(store, 2, { clock });
    await clock.runUntil(t1 + 20_000);
    fired.length = 0;
    const [entry] = entries(store);
    const r = await other.deliver(A, entry!.dueMs);
    assert.equal(r.type === 'ok' && r.ran, true);
    assert.deepEqual(fired, ['a']);
  });
});
