import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { SimClock } from '../../src/core/clock.js';
import { listChain } from '../../src/replication/chain.js';
import { SAMPLE_MS, UploadPace, windowFor } from '../../src/replication/upload-pace.js';
import { MemoryStore } from '../../src/store/memory.js';
import { defineActor, type ActorContext } from '../../src/workers/define-actor.js';
import { InlineActors, okResult } from '../helpers/inline-actors.js';

const s = { replicationDelayMs: 20, replicationDelayMaxMs: 1_000 };

describe('upload pace: the group-commit window follows the worker load', () => {
  it('is replicationDelayMs up to half busy, replicationDelayMaxMs from 0.9, linear between', () => {
    assert.equal(windowFor(0, s), 20);
    assert.equal(windowFor(0.5, s), 20);
    assert.equal(windowFor(0.7, s), 510);
    assert.equal(windowFor(0.9, s), 1_000);
    assert.equal(windowFor(1, s), 1_000);
    assert.equal(windowFor(1, { replicationDelayMs: 50, replicationDelayMaxMs: 10 }), 50, 'never below replicationDelayMs');
  });

  it('reads the load at most every SAMPLE_MS', async () => {
    const clock = new SimClock(0);
    let reads = 0;
    let busy = 1;
    const told: number[] = [];
    const pace = new UploadPace(
      s,
      () => (reads++, busy),
      clock,
      (ms) => told.push(ms),
    );
    assert.equal(pace.delayMs(), 20, 'no reading yet: the idle window');
    await clock.advance(SAMPLE_MS);
    assert.equal(pace.delayMs(), 1_000);
    busy = 0;
    await clock.advance(SAMPLE_MS - 1);
    assert.equal(pace.delayMs(), 1_000, 'the last reading holds until the next is due');
    assert.equal(reads, 1);
    await clock.advance(1);
    assert.equal(pace.delayMs(), 20);
    assert.equal(reads, 2);
    await clock.advance(SAMPLE_MS);
    pace.delayMs();
    assert.deepEqual(told, [1_000, 20], 'each new window told once (the metrics)');
  });
});

const Notes = defineActor({
  init(ctx: ActorContext) {
    ctx.sql.exec('CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)');
  },
  methods: {
    add: (ctx: ActorContext, text: string) => ctx.sql.prepare('INSERT INTO notes (text) VALUES (?)').run(text).changes,
    all: (ctx: ActorContext) => (ctx.sql.prepare('SELECT text FROM notes ORDER BY id').all() as { text: string }[]).map((r) => r.text),
  },
});

describe('upload pace: plain calls on a busy worker', () => {
  const envs: InlineActors[] = [];
  after(async () => {
    for (const e of envs) await e.cleanup();
  });
  const A = 't/Notes/a';
  const chain = (store: MemoryStore) => listChain(store, parseAddress(A));

  async function busyWorker(): Promise<{ e: InlineActors; store: MemoryStore }> {
    const store = new MemoryStore();
    const e = new InlineActors({ Notes }, s, store);
    envs.push(e);
    okResult(await e.callDurable(A, 'add', 'n0'));
    e.busy = 1;
    await e.clock.advance(SAMPLE_MS); // the next commit reads the load
    return { e, store };
  }

  it("gathers an actor's commits for replicationDelayMaxMs, then they go up in one link", async () => {
    const { e, store } = await busyWorker();
    okResult(await e.call(A, 'add', 'n1'));
    await e.clock.advance(500);
    okResult(await e.call(A, 'add', 'n2'));
    await e.clock.advance(490);
    assert.deepEqual(await chain(store), [1], 'still gathering');
    await e.clock.advance(20);
    assert.deepEqual(await chain(store), [1, 2], 'n1 and n2 in one link, replicationDelayMaxMs after n1');
    e.busy = 0;
    await e.clock.advance(SAMPLE_MS);
    okResult(await e.call(A, 'add', 'n3'));
    await e.clock.advance(25);
    assert.deepEqual(await chain(store), [1, 2, 3], 'idle again: up within replicationDelayMs');
    const fresh = new InlineActors({ Notes }, s, store);
    envs.push(fresh);
    fresh.generation = 1;
    assert.deepEqual(okResult(await fresh.call(A, 'all')), ['n0', 'n1', 'n2', 'n3']);
  });

  it('a durable call does not wait for the window, and takes the commits gathered so far', async () => {
    const { e, store } = await busyWorker();
    okResult(await e.call(A, 'add', 'n1'));
    await e.clock.advance(100);
    okResult(await e.callDurable(A, 'add', 'n2'));
    assert.deepEqual(await chain(store), [1, 2]);
    await e.clock.advance(1_100);
    assert.deepEqual(await chain(store), [1, 2], 'the window found nothing left to send');
  });
});
