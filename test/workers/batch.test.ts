import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { runBatch } from '../../src/workers/batch.js';
import { defineActor, type ActorContext } from '../../src/workers/define-actor.js';
import type { ActorEvent, BatchOutcome } from '../../src/workers/messages.js';
import { runEvent, type OnCommitted } from '../../src/workers/pipeline.js';
import { beginEvent, newStartGate, revokeTask } from '../../src/workers/start-gate.js';
import { InlineActors } from '../helpers/inline-actors.js';

const Counter = defineActor({
  init(ctx: ActorContext) {
    ctx.sql.exec('CREATE TABLE counter (n INTEGER NOT NULL); INSERT INTO counter VALUES (0)');
  },
  methods: {
    add(ctx: ActorContext, by: number) {
      ctx.sql.prepare('UPDATE counter SET n = n + ?').run(by);
      return (ctx.sql.prepare('SELECT n FROM counter').get() as { n: number }).n;
    },
    addThenFail(ctx: ActorContext, by: number) {
      ctx.sql.prepare('UPDATE counter SET n = n + ?').run(by);
      throw new Error('boom');
    },
    async addThenHang(ctx: ActorContext, by: number) {
      ctx.sql.prepare('UPDATE counter SET n = n + ?').run(by);
      await new Promise(() => {});
    },
    get: (ctx: ActorContext) => (ctx.sql.prepare('SELECT n FROM counter').get() as { n: number }).n,
  },
});

const A = 't/Counter/a';
const actors = new InlineActors({ Counter }, { handlerTimeoutMs: 50 });
after(() => actors.cleanup());

function request(method: string, args: unknown[], extra: Partial<Extract<ActorEvent, { type: 'request' }>> = {}): ActorEvent {
  return { type: 'request', address: parseAddress(A), method, args, durable: false, generation: 0, ...extra };
}

/** Runs a batch through the real pipeline, moving the SimClock until it is done (a handler may hang). */
async function batch(events: ActorEvent[]): Promise<{ outcomes: BatchOutcome[]; ran: number }> {
  let ran = 0;
  let done = false;
  const p = runBatch(
    (e) => runEvent(actors.deps, e),
    events,
    () => ran++,
  ).finally(() => (done = true));
  for (let i = 0; !done && i < 1_000; i++) await actors.clock.advance(10);
  return { outcomes: (await p).outcomes, ran };
}

const value = (o: BatchOutcome | undefined) =>
  o?.type === 'ok' ? o.result : o?.type === 'error' || o?.type === 'thrown' ? o.error.code : o;

describe('runBatch: several events of one actor in one task', () => {
  it('runs them in order, each its own transaction: a failing or timed-out event rolls back alone, its neighbours commit', async () => {
    const { outcomes, ran } = await batch([
      request('add', [1]),
      request('add', [2]),
      request('addThenFail', [100]),
      request('add', [3]),
      request('addThenHang', [1_000]),
      request('add', [4]),
      request('noSuchMethod', []),
      request('get', []),
    ]);
    assert.deepEqual(outcomes.map(value), [1, 3, 'HANDLER_FAILED', 6, 'HANDLER_TIMEOUT', 10, 'NOT_FOUND', 10]);
    assert.equal(ran, 8, 'every event counted as finished');
    const r = await actors.call(A, 'get');
    assert.equal(r.type === 'ok' && r.result, 10, 'nothing of the failed events committed');
  });

  it('an idempotency key is its own per event: a repeat in the same batch answers from the record', async () => {
    const before = await actors.call(A, 'get');
    const n = before.type === 'ok' ? (before.result as number) : NaN;
    const once = (key: string) => request('add', [5], { durable: true, idempotencyKey: key });
    const { outcomes } = await batch([once('k1'), request('add', [1]), once('k1'), once('k2')]);
    assert.deepEqual(outcomes.map(value), [n + 5, n + 6, n + 5, n + 11]);
    assert.deepEqual(
      outcomes.map((o) => o.type === 'ok' && o.ran),
      [true, true, false, true],
      'the repeat did not run the handler',
    );
  });

  it('durable calls hand back their result at the commit and go on: pending outcomes, their finals once their links land', async () => {
    const before = await actors.call(A, 'get');
    const n = before.type === 'ok' ? (before.result as number) : NaN;
    const durable = (k: number) => request('add', [k], { durable: true });
    let done = false;
    const p = runBatch((e, committed) => runEvent(actors.deps, e, committed), [durable(1), request('add', [10]), durable(100)]).finally(
      () => (done = true),
    );
    for (let i = 0; !done && i < 1_000; i++) await actors.clock.advance(10);
    const { outcomes, later } = await p;
    assert.deepEqual(outcomes.map(value), [n + 1, n + 11, n + 111]);
    assert.deepEqual(
      outcomes.map((o) => o.type === 'ok' && o.pending === true),
      [true, false, true],
      'the durable ones are pending: their links were not awaited',
    );
    assert.deepEqual([...later.keys()], [0, 2]);
    let settled = false;
    const finals = Promise.all(later.values()).finally(() => (settled = true));
    for (let i = 0; !settled && i < 1_000; i++) await actors.clock.advance(10);
    assert.deepEqual((await finals).map(value), [n + 1, n + 111], 'each final is its own result, once its link is up');
  });

  it('a task given up on its start gate: the handlers that had not begun never run, and the count says which began', async () => {
    const n = await actors.call(A, 'get').then((r) => (r.type === 'ok' ? (r.result as number) : NaN));
    const gate = newStartGate();
    const events = [request('add', [1]), request('noSuchMethod', []), request('add', [10]), request('add', [100])];
    let revokedAt = -1;
    const run = (e: ActorEvent, committed?: OnCommitted, begin?: () => boolean) => {
      if (e === events[3]) revokedAt = revokeTask(gate); // the main thread gives the task up while event 2 has run
      return runEvent(actors.deps, e, committed, begin);
    };
    const { outcomes } = await runBatch(run, events, undefined, (i) => beginEvent(gate, i));
    assert.equal(revokedAt, 3, 'events 0 to 2 may have run (the handler of 2 began)');
    assert.deepEqual(outcomes.map(value).slice(0, 3), [n + 1, 'NOT_FOUND', n + 11]);
    assert.equal(outcomes[3]!.type, 'error', 'the last one was refused before its handler');
    const r = await actors.call(A, 'get');
    assert.equal(r.type === 'ok' && r.result, n + 11, 'nothing of it ran: it can run again elsewhere');
  });

  it('an event that throws outside the pipeline fails alone', async () => {
    const events = [request('add', [1]), request('add', [1]), request('add', [1])];
    const run = (e: ActorEvent) => (e === events[1] ? Promise.reject(new Error('worker broke')) : runEvent(actors.deps, e));
    const { outcomes } = await runBatch(run, events);
    assert.deepEqual(
      outcomes.map((o) => o.type),
      ['ok', 'thrown', 'ok'],
    );
    assert.equal(outcomes[1]!.type === 'thrown' && outcomes[1]!.error.message, 'worker broke');
  });
});
