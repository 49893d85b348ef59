import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { listChain } from '../../src/replication/chain.js';
import { decodeLink } from '../../src/replication/link.js';
import { readSidecar } from '../../src/replication/sidecar.js';
import { linkKey } from '../../src/replication/state-keys.js';
import { SimClock } from '../../src/core/clock.js';
import { MemoryStore } from '../../src/store/memory.js';
import { actorDbPath } from '../../src/workers/actor-db.js';
import { defineActor, type ActorContext } from '../../src/workers/define-actor.js';
import { InlineActors, okResult } from '../helpers/inline-actors.js';

const Notes = defineActor({
  init(ctx: ActorContext) {
    ctx.sql.exec('CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT); CREATE TABLE pad (b BLOB)');
    ctx.sql.prepare('INSERT INTO pad VALUES (?)').run(Buffer.alloc(64 * 1024, 1)); // snapshots outweigh small deltas
  },
  methods: {
    add: (ctx: ActorContext, text: string) => ctx.sql.prepare('INSERT INTO notes (text) VALUES (?)').run(text).changes,
    all: (ctx: ActorContext) => (ctx.sql.prepare('SELECT text FROM notes ORDER BY id').all() as { text: string }[]).map((r) => r.text),
    remove: (ctx: ActorContext) => ctx.deleteActor(),
    async slowAdd(ctx: ActorContext, text: string, ms: number) {
      ctx.sql.prepare('INSERT INTO notes (text) VALUES (?)').run(text);
      await new Promise((r) => pendingSleeps.push(() => r(undefined)));
      void ms;
    },
    async partly(ctx: ActorContext) {
      ctx.sql.prepare('INSERT INTO notes (text) VALUES (?)').run('kept');
      await ctx.checkpoint();
      ctx.sql.prepare('INSERT INTO notes (text) VALUES (?)').run('lost');
      throw new Error('after the checkpoint');
    },
  },
});

const pendingSleeps: (() => void)[] = [];
const A = 't/Notes/a';
const address = parseAddress(A);
const envs: InlineActors[] = [];
after(async () => {
  for (const e of envs) await e.cleanup();
});
function env(store: MemoryStore, options = {}): InlineActors {
  const e = new InlineActors({ Notes }, { replicationDelayMs: 20, ...options }, store);
  envs.push(e);
  return e;
}
const kinds = async (store: MemoryStore) =>
  Promise.all((await listChain(store, address)).map(async (seq) => decodeLink((await store.get(linkKey(address, seq)))!.body).header.kind));

describe('replication: the chain in the bucket', () => {
  it('a plain call replies at once and is uploaded within replicationDelayMs; the first link is a snapshot', async () => {
    const store = new MemoryStore();
    const e = env(store);
    okResult(await e.call(A, 'add', 'one'));
    assert.deepEqual(await listChain(store, address), [], 'not uploaded yet');
    await e.clock.advance(25);
    assert.deepEqual(await kinds(store), ['snapshot']);
    okResult(await e.call(A, 'add', 'two'));
    await e.clock.advance(25);
    assert.deepEqual(await kinds(store), ['snapshot', 'delta']);
  });

  it('a durable call replies only once its link is in the bucket', async () => {
    const store = new MemoryStore();
    const e = env(store);
    okResult(await e.callDurable(A, 'add', 'one'));
    assert.equal((await listChain(store, address)).length, 1);
    okResult(await e.callDurable(A, 'add', 'two'));
    assert.deepEqual(await kinds(store), ['snapshot', 'delta']);
  });

  it('another node restores the actor from the bucket alone', async () => {
    const store = new MemoryStore();
    const a = env(store);
    for (const t of ['x', 'y', 'z']) okResult(await a.callDurable(A, 'add', t));
    const b = env(store);
    const before = { ...store.counts };
    assert.deepEqual(okResult(await b.call(A, 'all')), ['x', 'y', 'z']);
    // With no local copy to trust, the take lists the chain and reads its links: no HEAD of the head.
    assert.deepEqual({ list: store.counts.list - before.list, head: store.counts.head - before.head }, { list: 1, head: 0 });
  });

  it('ctx.checkpoint() in a durable call keeps what came before it when the handler later throws', async () => {
    const store = new MemoryStore();
    const a = env(store);
    const r = await a.callDurable(A, 'partly');
    assert.equal(r.type, 'error');
    assert.deepEqual(okResult(await env(store).call(A, 'all')), ['kept']);
    assert.deepEqual(okResult(await a.call(A, 'all')), ['kept']);
    const plain = await a.call(A, 'partly');
    assert.equal(plain.type === 'error' && plain.error.code, 'BAD_REQUEST', 'only durable calls may checkpoint');
  });
});

describe('replication: uploads while the next event is running', () => {
  it('a new actor goes up with its first commit: no empty snapshot while its first event runs', async () => {
    const store = new MemoryStore();
    const e = env(store);
    const running = e.call(A, 'slowAdd', 'first', 0); // created, its first transaction open
    await e.clock.advance(25);
    assert.deepEqual(await listChain(store, address), [], 'nothing goes up before the first commit');
    pendingSleeps.splice(0).forEach((wake) => wake());
    okResult(await running);
    await e.clock.advance(25);
    assert.deepEqual(await kinds(store), ['snapshot'], 'one link: the creation and the first event together');
    assert.deepEqual(okResult(await env(store).call(A, 'all')), ['first']);
  });

  it('the first link is a snapshot even when the next event holds a transaction open, and holds only committed work', async () => {
    const store = new MemoryStore();
    const e = env(store);
    okResult(await e.call(A, 'add', 'committed'));
    const running = e.call(A, 'slowAdd', 'uncommitted', 0); // its transaction stays open
    await e.clock.advance(25); // the group-commit timer fires now
    assert.deepEqual(await kinds(store), ['snapshot']);
    assert.deepEqual(okResult(await env(store).call(A, 'all')), ['committed'], 'restores the committed state only');
    pendingSleeps.splice(0).forEach((wake) => wake());
    okResult(await running);
    await e.clock.advance(25);
    assert.deepEqual(okResult(await env(store).call(A, 'all')), ['committed', 'uncommitted']);
  });

  it('periodic snapshots are not starved by events that keep a transaction open', async () => {
    const store = new MemoryStore();
    const e = env(store, { snapshotEveryLinks: 2 });
    for (let i = 0; i < 4; i++) {
      okResult(await e.call(A, 'add', `v${i}`));
      const running = e.call(A, 'slowAdd', `s${i}`, 0);
      await e.clock.advance(25);
      pendingSleeps.splice(0).forEach((wake) => wake());
      okResult(await running);
    }
    await e.clock.advance(25);
    const k = await kinds(store);
    assert.ok(k.filter((x) => x === 'snapshot').length >= 2, `kinds: ${k}`);
    assert.deepEqual(okResult(await env(store).call(A, 'all')), ['v0', 's0', 'v1', 's1', 'v2', 's2', 'v3', 's3']);
  });
});

describe('replication: taking an actor (the sidecar)', () => {
  it('an actor dropped while its upload is in flight leaves no sidecar, so its next take restores the bucket', async () => {
    const clock = new SimClock(1_800_000_000_000);
    const store = new MemoryStore({ clock });
    const e = new InlineActors({ Notes }, { replicationDelayMs: 20 }, store, undefined, clock);
    envs.push(e);
    okResult(await e.callDurable(A, 'add', 'durable'));
    okResult(await e.call(A, 'add', 'uploading'));
    store.setFaults((r) => (r.op === 'put' ? { delayMs: 300 } : undefined)); // the next uploads are slow
    await e.clock.advance(25); // the group-commit upload starts and hangs in the store
    okResult(await e.call(A, 'add', 'never uploaded'));
    e.deps.slots.dropAll();
    await e.clock.advance(400); // the upload lands after the drop
    store.setFaults(undefined);
    const path = actorDbPath(e.dataDir, address);
    assert.equal(readSidecar(path), undefined, 'no sidecar for a closed replica');
    assert.deepEqual(okResult(await e.call(A, 'all')), ['durable', 'uploading'], 'the bucket’s state, not the local file');
    assert.ok(existsSync(path + '.replaced'));
  });

  it('a take whose head equals the sidecar downloads nothing', async () => {
    const store = new MemoryStore();
    const a = env(store);
    okResult(await a.callDurable(A, 'add', 'one'));
    await a.restart();
    const gets = store.counts.get;
    assert.deepEqual(okResult(await a.call(A, 'all')), ['one']);
    assert.equal(store.counts.get, gets, 'no link downloaded');
  });

  it('a take whose head is ahead applies only the missing deltas', async () => {
    const store = new MemoryStore();
    const a = env(store);
    okResult(await a.callDurable(A, 'add', 'one'));
    await a.restart();
    const b = env(store);
    okResult(await b.callDurable(A, 'add', 'two'));
    okResult(await b.callDurable(A, 'add', 'three'));
    await b.restart();
    assert.deepEqual(await kinds(store), ['snapshot', 'delta', 'delta']);
    const gets = store.counts.get;
    assert.deepEqual(okResult(await a.call(A, 'all')), ['one', 'two', 'three']);
    assert.equal(store.counts.get - gets, 2, 'downloaded links 2 and 3 only');
    assert.equal(existsSync(actorDbPath(a.dataDir, address) + '.replaced'), false);
    assert.equal(readSidecar(actorDbPath(a.dataDir, address))?.seq, 3);
  });

  it('a local file with changes the bucket never got, when the head moved on, is set aside and the bucket restored', async () => {
    const store = new MemoryStore();
    const a = env(store);
    okResult(await a.callDurable(A, 'add', 'one'));
    const b = env(store);
    okResult(await b.callDurable(A, 'add', 'from-b')); // b restored link 1 and wrote link 2
    const r = await a.callDurable(A, 'add', 'from-a'); // a's link 2 loses: a late writer
    assert.equal(r.type === 'error' && r.error.code, 'ACTOR_GIVEN_UP');
    assert.deepEqual(okResult(await a.call(A, 'all')), ['one', 'from-b'], 'a gave up and restored the bucket’s state');
    assert.ok(existsSync(actorDbPath(a.dataDir, address) + '.replaced'), 'its own copy is kept aside');
  });

  it('the first upload of a local-only actor is a snapshot at link 1', async () => {
    const first = new MemoryStore();
    const a = env(first);
    okResult(await a.callDurable(A, 'add', 'local'));
    await a.restart();
    const empty = new MemoryStore();
    const joined = new InlineActors({ Notes }, { replicationDelayMs: 20 }, empty, a.dataDir); // the same data dir, a new bucket
    assert.deepEqual(okResult(await joined.call(A, 'all')), ['local']);
    await joined.clock.advance(25);
    assert.deepEqual(await kinds(empty), ['snapshot']);
    assert.deepEqual(okResult(await env(empty).call(A, 'all')), ['local']);
  });
});

describe('replication: delete, corruption', () => {
  it('a delete writes a tombstone, and a stale local copy never brings the actor back', async () => {
    const store = new MemoryStore();
    const stale = env(store);
    okResult(await stale.callDurable(A, 'add', 'old'));
    await stale.restart();
    const b = env(store);
    const r = await b.call(A, 'remove');
    assert.equal(r.type === 'ok' && r.deleted, true);
    assert.equal((await kinds(store)).at(-1), 'tombstone');
    assert.deepEqual(okResult(await stale.call(A, 'all')), [], 'the stale node sees a new, empty actor');
    await stale.clock.advance(25);
    assert.deepEqual((await kinds(store)).slice(-2), ['tombstone', 'snapshot'], 'the new actor’s chain goes on after the tombstone');
  });

  it('nothing follows a tombstone: a sync or a scheduled upload that queues behind it uploads nothing', async () => {
    const clock = new SimClock(1_800_000_000_000);
    const slow = { seq: 0 };
    const store = new MemoryStore({
      clock,
      faults: (req) => (req.op === 'put' && slow.seq > 0 && req.key === linkKey(address, slow.seq) ? { delayMs: 100 } : undefined),
    });
    const e = new InlineActors({ Notes }, { replicationDelayMs: 20 }, store, undefined, clock);
    envs.push(e);
    okResult(await e.callDurable(A, 'add', 'one'));
    const slot = (await e.deps.slots.acquire(address, false, e.generation))!;
    slow.seq = 2;
    const tombstone = slot.replica.tombstone();
    await clock.advance(10); // the tombstone is in flight
    const late = slot.replica.sync();
    slot.replica.committed();
    await clock.advance(1_000);
    await tombstone;
    await late;
    await clock.advance(1_000);
    e.deps.slots.release(slot);
    e.deps.slots.remove(address);
    assert.deepEqual(await kinds(store), ['snapshot', 'tombstone']);
  });

  it('a corrupted link is detected: the actor is not served and nothing local is written', async () => {
    const store = new MemoryStore();
    okResult(await env(store).callDurable(A, 'add', 'one'));
    const key = linkKey(address, 1);
    const body = Uint8Array.from((await store.get(key))!.body);
    body[body.length - 5] = body[body.length - 5]! ^ 0xff;
    await store.put(key, body);
    const c = env(store);
    const r = await c.call(A, 'all');
    assert.equal(r.type === 'error' && r.error.code, 'CORRUPT_LINK');
    assert.equal(existsSync(actorDbPath(c.dataDir, address)), false);
  });

  it('a gap in the chain is detected', async () => {
    const store = new MemoryStore();
    const a = env(store);
    for (const t of ['1', '2', '3']) okResult(await a.callDurable(A, 'add', t));
    await store.delete(linkKey(address, 2));
    const r = await env(store).call(A, 'all');
    assert.equal(r.type === 'error' && r.error.code, 'CORRUPT_LINK');
  });
});

describe('replication: restart on its own data after a kill', () => {
  const slow = { replicationDelayMs: 1e9, checkpointEveryLinks: 1000, checkpointWalBytes: 1 << 30 }; // nothing uploads by itself
  const chainState = async (store: MemoryStore) => okResult(await env(store).call(A, 'all'));

  it('local commits past the sidecar, the head unmoved: adopted and uploaded as the next link, nothing set aside', async () => {
    const store = new MemoryStore();
    const a = env(store, slow);
    okResult(await a.callDurable(A, 'add', 'one'));
    okResult(await a.call(A, 'add', 'two')); // acknowledged, never uploaded
    a.crash({ replicationDelayMs: 20 });
    a.generation = 1; // the restarted node takes the hold under a new generation
    assert.deepEqual(okResult(await a.call(A, 'all')), ['one', 'two'], 'the local commits are served');
    await a.clock.advance(25); // no new commit: the take itself uploads them
    assert.deepEqual(await kinds(store), ['snapshot', 'delta']);
    assert.deepEqual(await chainState(store), ['one', 'two'], 'the bucket has them');
    assert.equal(existsSync(actorDbPath(a.dataDir, address) + '.replaced'), false);
  });

  it('the head is its own upload past the sidecar (killed before the sidecar was written): the file goes up as a snapshot', async () => {
    const store = new MemoryStore();
    const a = env(store, slow);
    const path = actorDbPath(a.dataDir, address);
    okResult(await a.callDurable(A, 'add', 'one'));
    const sidecarAtOne = readFileSync(path + '.chain');
    okResult(await a.callDurable(A, 'add', 'two')); // link 2 is in the bucket…
    writeFileSync(path + '.chain', sidecarAtOne); // …but the sidecar still names link 1
    okResult(await a.call(A, 'add', 'three')); // acknowledged, never uploaded
    a.crash({ replicationDelayMs: 20 });
    a.generation = 1;
    assert.deepEqual(okResult(await a.call(A, 'all')), ['one', 'two', 'three']);
    await a.clock.advance(25);
    assert.deepEqual(await kinds(store), ['snapshot', 'delta', 'snapshot']);
    assert.deepEqual(await chainState(store), ['one', 'two', 'three']);
    assert.equal(existsSync(path + '.replaced'), false);
  });

  it('the head past the sidecar is another writer’s: the file is set aside with its commits, the bucket restored', async () => {
    const store = new MemoryStore();
    const a = env(store, slow);
    const path = actorDbPath(a.dataDir, address);
    okResult(await a.callDurable(A, 'add', 'one'));
    okResult(await a.call(A, 'add', 'local')); // never uploaded
    a.crash({ replicationDelayMs: 20 });
    const b = env(store);
    b.generation = 1;
    okResult(await b.callDurable(A, 'add', 'from-b')); // another owner moved the head on
    a.generation = 2;
    assert.deepEqual(okResult(await a.call(A, 'all')), ['one', 'from-b']);
    assert.ok(existsSync(path + '.replaced'), 'its own copy is kept aside');
  });
});
