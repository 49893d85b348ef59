import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAddress, type ActorAddress } from '../../src/core/address.js';
import { SimClock } from '../../src/core/clock.js';
import { silentLogger } from '../../src/core/logger.js';
import { ActorLanes } from '../../src/main/actor-lanes.js';
import { OutcomeUnknown } from '../../src/core/errors.js';
import { EventRunner, HoldChanged, REQUEUES_MAX } from '../../src/main/event-runner.js';
import { NeverStarted, type RunOutcome, type StopSignal } from '../../src/main/worker-group.js';
import type { ActorEvent, BatchOutcome, EventResult } from '../../src/workers/messages.js';

const A = parseAddress('t/C/a');

/** Fake workers: `add(n)` answers n (alarm at n), `fail` an error result, `throw` a thrown error; the first task waits for `open`. */
function setup(options: { eventsPerTaskMax?: number; actorQueueMax?: number; created?: boolean } = {}) {
  let created = options.created === true;
  const clock = new SimClock(0);
  const tasks: string[][] = [];
  const learned: unknown[] = [];
  let generation = 7;
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  const answer = (e: ActorEvent): BatchOutcome => {
    if (e.type !== 'request') return { type: 'ok', alarmAt: 42, deleted: false, ran: true };
    if (e.method === 'fail') return { type: 'error', error: { code: 'HANDLER_FAILED', message: 'failed', details: {} }, alarmAt: null };
    if (e.method === 'throw') return { type: 'thrown', error: { code: 'INTERNAL', message: 'thrown', details: {} } };
    return { type: 'ok', result: e.args[0], alarmAt: e.args[0] as number, deleted: false, ran: true };
  };
  const name = (e: ActorEvent) =>
    e.type === 'request' ? `${e.method}${e.args.length ? e.args[0] : ''}${e.chainEmpty ? ' (chain empty)' : ''}` : e.type;
  const first = async () => {
    if (tasks.length === 1) await opened;
  };
  const runner = new EventRunner({
    clock,
    config: { handlerTimeoutMs: 1_000, eventsPerTaskMax: options.eventsPerTaskMax ?? 64 },
    log: silentLogger(),
    lanes: new ActorLanes(options.actorQueueMax ?? 256),
    workers: {
      run: async (e: ActorEvent) => {
        tasks.push([name(e)]);
        await first();
        return answer(e) as EventResult;
      },
      runBatch: async (_a: ActorAddress, events: ActorEvent[]) => {
        tasks.push(events.map(name));
        await first();
        return events.map(answer);
      },
      progress: () => 0,
    },
    holds: { held: () => generation, claimCreated: () => created && !(created = false) },
    used: () => undefined,
    learned: (_a, e, r) => learned.push([name(e), r.alarmAt]),
  });
  const call = (method: string, ...args: unknown[]) =>
    runner.submit(A, { type: 'request', address: A, method, args, durable: false, generation: 7 }).then(
      (r) => (r.type === 'ok' ? r.result : r.error.code),
      (e: { code?: string }) => e.code ?? String(e),
    );
  return { runner, tasks, learned, open, call, setGeneration: (g: number) => (generation = g) };
}

describe('EventRunner: the first event under a hold this node created', () => {
  it('goes to its worker with chainEmpty (no LIST of the chain); the events after it do not', async () => {
    const { tasks, open, call } = setup({ created: true });
    const ps = [call('add', 1)];
    await new Promise((r) => setImmediate(r));
    ps.push(call('add', 2), call('add', 3));
    open();
    await Promise.all(ps);
    assert.deepEqual(tasks, [['add1 (chain empty)'], ['add2', 'add3']]);
  });

  it('a first event that is not a request uses the claim up: the request after it lists the chain', async () => {
    const { runner, tasks, open, call } = setup({ created: true });
    open();
    await runner.submit(A, { type: 'getAlarm', address: A, generation: 7 });
    await call('add', 1);
    assert.deepEqual(tasks, [['getAlarm'], ['add1']]);
  });

  it('an event sent under a hold since changed does not use the claim', async () => {
    const { tasks, open, call, setGeneration } = setup({ created: true });
    open();
    setGeneration(8);
    assert.equal(await call('add', 1), 'LEASE_LOST'); // HoldChanged
    setGeneration(7);
    await call('add', 2);
    assert.deepEqual(tasks, [['add2 (chain empty)']]);
  });
});

describe('EventRunner: the requests of one actor in one worker task', () => {
  it('requests queued behind a running one go as one task; each gets its own result or error, in order', async () => {
    const { tasks, learned, open, call } = setup();
    const ps = [call('add', 1)];
    await new Promise((r) => setImmediate(r)); // the first task is running
    ps.push(call('add', 2), call('fail'), call('add', 3), call('throw'), call('add', 4));
    open();
    assert.deepEqual(await Promise.all(ps), [1, 2, 'HANDLER_FAILED', 3, 'INTERNAL', 4]);
    assert.deepEqual(tasks, [['add1'], ['add2', 'fail', 'add3', 'throw', 'add4']], 'two tasks: a lone one, then one batch');
    assert.deepEqual(
      learned,
      [
        ['add1', 1],
        ['add2', 2],
        ['fail', null],
        ['add3', 3],
        ['add4', 4],
      ],
      'the timer learns every result in order (not what was thrown)',
    );
  });

  it('a batch holds at most eventsPerTaskMax events', async () => {
    const { tasks, open, call } = setup({ eventsPerTaskMax: 2 });
    const ps = [call('add', 0)];
    await new Promise((r) => setImmediate(r));
    for (let i = 1; i <= 5; i++) ps.push(call('add', i));
    open();
    assert.deepEqual(await Promise.all(ps), [0, 1, 2, 3, 4, 5]);
    assert.deepEqual(tasks, [['add0'], ['add1', 'add2'], ['add3', 'add4'], ['add5']]);
  });

  it('past actorQueueMax a request is refused with OVERLOADED and never runs', async () => {
    const { tasks, open, call } = setup({ actorQueueMax: 3 });
    const ps = [call('add', 1), call('add', 2), call('add', 3), call('add', 4)];
    open();
    assert.deepEqual(await Promise.all(ps), [1, 2, 3, 'OVERLOADED']);
    assert.deepEqual(tasks.flat(), ['add1', 'add2', 'add3']);
  });

  it('an event sent under a hold no longer held fails alone with HoldChanged (withHold retries it)', async () => {
    const { runner, tasks, open, call, setGeneration } = setup();
    const ps = [call('add', 1)];
    await new Promise((r) => setImmediate(r));
    const stale = runner.submit(A, { type: 'request', address: A, method: 'add', args: [9], durable: false, generation: 6 });
    ps.push(call('add', 2));
    const staleOutcome = stale.then(
      () => 'ran',
      (e: unknown) => e instanceof HoldChanged,
    );
    open();
    assert.deepEqual(await Promise.all(ps), [1, 2]);
    assert.equal(await staleOutcome, true);
    assert.deepEqual(tasks, [['add1'], ['add2']], 'the stale event never reached a worker');
    setGeneration(8);
    assert.equal(await call('add', 3), 'LEASE_LOST', 'every event of the batch is checked');
  });

  it('other events run alone, between batches, in order', async () => {
    const { runner, tasks, open, call } = setup();
    const ps: Promise<unknown>[] = [call('add', 1)];
    await new Promise((r) => setImmediate(r));
    ps.push(call('add', 2), runner.submit(A, { type: 'alarm', address: A, generation: 7 }), call('add', 3), call('add', 4));
    open();
    await Promise.all(ps);
    assert.deepEqual(tasks, [['add1'], ['add2'], ['alarm'], ['add3', 'add4']]);
  });

  it('hard limit: a batch is aborted once its worker finished nothing for handlerTimeoutMs + 5 s, not while it makes progress', async () => {
    const clock = new SimClock(0);
    let progress = 0;
    const aborted: number[] = [];
    const lanes = new ActorLanes(256);
    let release!: () => void;
    const first = new Promise<void>((r) => (release = r));
    const runner = new EventRunner({
      clock,
      config: { handlerTimeoutMs: 1_000, eventsPerTaskMax: 64 },
      log: silentLogger(),
      lanes,
      workers: {
        run: async () => ({ type: 'ok', alarmAt: null, deleted: false, ran: true }),
        runBatch: async (_a: ActorAddress, events: ActorEvent[], signal?: StopSignal) => {
          if (events.length === 1) {
            await first; // the lone first call: it finishes once released
            return [{ type: 'ok', alarmAt: null, deleted: false, ran: true }];
          }
          return new Promise<BatchOutcome[]>((_resolve, reject) =>
            signal!.listen(() => {
              aborted.push(clock.now());
              reject(new Error('The task has been aborted'));
            }),
          );
        },
        progress: () => progress,
      },
      holds: { held: () => 7 },
      used: () => undefined,
      learned: () => undefined,
    });
    const call = (n: number) =>
      runner.submit(A, { type: 'request', address: A, method: 'add', args: [n], durable: false, generation: 7 }).then(
        () => 'ok',
        (e: Error) => e.message,
      );
    const lone = call(0);
    await new Promise((r) => setImmediate(r));
    const batch = [call(1), call(2)];
    release();
    assert.equal(await lone, 'ok');
    await clock.advance(6_000 - 1);
    progress++; // the worker finished an event meanwhile: not stuck
    await clock.advance(6_000);
    assert.deepEqual(aborted, [], 'progress keeps the batch alive');
    await clock.advance(6_000);
    assert.deepEqual(aborted, [12_000], 'the first check after the progress saw none since');
    assert.deepEqual(
      await Promise.all(batch),
      ['The task has been aborted', 'The task has been aborted'],
      'every event of an aborted batch fails',
    );
  });
});

describe('EventRunner: events lost with a worker restarted at the hard limit', () => {
  const unknown: BatchOutcome = { type: 'thrown', error: new OutcomeUnknown('its worker was restarted').toJSON() };
  const notStarted: RunOutcome = { type: 'notStarted' };

  /** Fake workers answering each task from `script` (one entry per task); past it, `add(n)` answers n. */
  function lossy(script: (() => RunOutcome[] | Error)[]) {
    const tasks: string[][] = [];
    const warned: string[] = [];
    let generation = 7;
    const name = (e: ActorEvent) =>
      e.type === 'request' ? `${e.method}${e.args[0]}` : e.type + (e.type === 'alarm' && e.recordFailure ? ' (failed)' : '');
    const answer = (e: ActorEvent): BatchOutcome =>
      e.type === 'request'
        ? { type: 'ok', result: e.args[0], alarmAt: null, deleted: false, ran: true }
        : { type: 'ok', alarmAt: null, deleted: false, ran: true };
    const next = (events: ActorEvent[]) => {
      tasks.push(events.map(name));
      return script.shift()?.() ?? events.map(answer);
    };
    const log = silentLogger();
    log.warn = ((_o: unknown, msg: string) => void warned.push(msg)) as typeof log.warn;
    const runner = new EventRunner({
      clock: new SimClock(0),
      config: { handlerTimeoutMs: 1_000, eventsPerTaskMax: 64 },
      log,
      lanes: new ActorLanes(256),
      workers: {
        run: async (e: ActorEvent) => {
          const r = next([e]);
          if (r instanceof Error) throw r;
          return r[0] as EventResult;
        },
        runBatch: async (_a: ActorAddress, events: ActorEvent[]) => {
          const r = next(events);
          if (r instanceof Error) throw r;
          return r;
        },
        progress: () => 0,
      },
      holds: { held: () => generation },
      used: () => undefined,
      learned: () => undefined,
    });
    const call = (n: number) =>
      runner.submit(A, { type: 'request', address: A, method: 'add', args: [n], durable: false, generation: 7 }).then(
        (r) => (r.type === 'ok' ? r.result : r.error.code),
        (e: { code?: string }) => e.code ?? String(e),
      );
    /** Three calls made at once: one batch. */
    const threeInOneBatch = () => Promise.all([call(1), call(2), call(3)]);
    return { runner, tasks, warned, call, threeInOneBatch, setGeneration: (g: number) => (generation = g) };
  }

  it('the calls that began fail with OUTCOME_UNKNOWN; those that had not run again, in order, on the new worker', async () => {
    const { tasks, warned, threeInOneBatch } = lossy([() => [unknown, notStarted, notStarted]]);
    assert.deepEqual(await threeInOneBatch(), ['OUTCOME_UNKNOWN', 2, 3]);
    assert.deepEqual(tasks, [
      ['add1', 'add2', 'add3'],
      ['add2', 'add3'],
    ]);
    assert.deepEqual(warned, ['calls that never began run again on the restarted worker']);
  });

  it(`a call is sent again at most REQUEUES_MAX (${REQUEUES_MAX}) times: then it fails with OVERLOADED (it never ran)`, async () => {
    const { tasks, threeInOneBatch } = lossy([
      () => [unknown, notStarted, notStarted],
      () => [{ type: 'ok', alarmAt: null, deleted: false, ran: true, result: 2 }, notStarted],
    ]);
    assert.deepEqual(await threeInOneBatch(), ['OUTCOME_UNKNOWN', 2, 'OVERLOADED']);
    assert.deepEqual(
      tasks,
      [
        ['add1', 'add2', 'add3'],
        ['add2', 'add3'],
      ],
      'add3 was not sent a third time',
    );
  });

  it('a call not begun whose hold changed meanwhile is not sent again: it fails with HoldChanged', async () => {
    let change = () => undefined as unknown;
    const { tasks, threeInOneBatch, setGeneration } = lossy([
      () => {
        change();
        return [unknown, notStarted, notStarted];
      },
    ]);
    change = () => setGeneration(8);
    assert.deepEqual(await threeInOneBatch(), ['OUTCOME_UNKNOWN', 'LEASE_LOST', 'LEASE_LOST']);
    assert.equal(tasks.length, 1, 'nothing was sent again');
  });

  it('an alarm that never began runs again; one whose handler began is committed as a failed run', async () => {
    const lost = (e: Error) => () => e;
    const { runner, tasks } = lossy([lost(new NeverStarted('not begun')), lost(new OutcomeUnknown('begun'))]);
    const r = await runner.submit(A, { type: 'alarm', address: A, generation: 7 });
    assert.equal(r.type, 'ok');
    assert.deepEqual(tasks, [['alarm'], ['alarm'], ['alarm (failed)']]);
  });
});
