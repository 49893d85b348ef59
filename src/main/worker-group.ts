/**
 * The event workers: one single-thread Piscina pool per worker, and each actor always routed to
 * the same one (a hash of its address), so an actor's database is open in one thread only.
 * A task is one event, or a batch of one actor's events (`runBatch`), so batching keeps the pinning.
 * Queues are bounded (`maxQueue`); a task past its hard time limit is aborted by restarting its
 * worker (`submit`: a new pool in place of the stuck one). Each task carries a start gate
 * (workers/start-gate.ts), so a task lost with the old worker says which of its events had begun.
 */
import { Piscina } from 'piscina';
import { availableParallelism } from 'node:os';
import type { ActorAddress } from '../core/address.js';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import type { KeepworkOptions, Settings } from '../core/config.js';
import { ActorGivenUp, KeepworkError, OutcomeUnknown, Overloaded, reviveError } from '../core/errors.js';
import {
  toWire,
  type ActorEvent,
  type BatchOutcome,
  type EventBatch,
  type EventResult,
  type FinalOutcome,
  type PostedTask,
} from '../workers/messages.js';
import { newStartGate, revokeTask } from '../workers/start-gate.js';
import type { WorkerSetup } from '../workers/event-worker.js';

export type WorkerGroupSettings = Settings<'actorQueueMax' | 'workerConcurrency' | 'workerThreads' | 'workerYoungGenerationMb'>;

/**
 * A batch's outcome on the main thread: a `pending` one (a durable call whose link is in flight)
 * carries its `final`; `notStarted`: its worker was restarted before the event's handler began.
 */
export type RunOutcome = (BatchOutcome & { final?: Promise<BatchOutcome> }) | { type: 'notStarted' };

/**
 * An event that never began on a worker restarted under it: running it again is safe (the
 * EventRunner does, once). Its code is OVERLOADED: a caller that gets it may retry.
 */
export class NeverStarted extends Overloaded {}

/**
 * Tells a task's worker to restart (the task's hard limit, event-runner.ts): what `submit` needs
 * of an AbortSignal, without building one and its event-target listeners per event on the main
 * thread (an AbortController, its signal and the listener cost about as much as posting the task).
 * One listener at a time.
 */
export class StopSignal {
  stopped = false;
  private listener: (() => void) | undefined;

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    const listener = this.listener;
    this.listener = undefined;
    listener?.();
  }

  /** `f` runs once the signal stops (at once if it has); the function returned removes it. */
  listen(f: () => void): () => void {
    if (this.stopped) {
      f();
      return () => undefined;
    }
    this.listener = f;
    return () => {
      if (this.listener === f) this.listener = undefined;
    };
  }
}

/** How long a lost task's answer waits for the old thread to end. */
const RETIRE_WAIT_MS = 5_000;

const FROM_SOURCE = import.meta.url.endsWith('.ts');
const WORKER_URL = new URL('../workers/event-worker' + (FROM_SOURCE ? '.ts' : '.js'), import.meta.url).href;
/**
 * The workers' Node options: inherited from the process (undefined), unless it runs the TypeScript
 * sources without tsx loaded, when the workers, and the .ts class modules they load, need it added.
 * An explicit list is checked by Node, which refuses V8 options in it: handing the workers
 * `process.execArgv` would make `node --max-old-space-size=512 … keepwork start` fail at its first
 * worker ("Initiated Worker with invalid execArgv flags"). Inherited, they apply as they do to the
 * main thread.
 */
export const WORKER_EXEC_ARGV: string[] | undefined =
  FROM_SOURCE && !process.execArgv.join(' ').includes('tsx') ? [...process.execArgv, '--import', 'tsx'] : undefined;

/** The node's worker threads: workerThreads, or one per core, at most 4. */
export function workerCount(config: Settings<'workerThreads'>): number {
  return config.workerThreads || Math.min(4, availableParallelism());
}

export class WorkerGroup {
  private readonly pools: Piscina[];
  /** Pools replaced by a restart → their retirement: the old thread's exit, or RETIRE_WAIT_MS (one stuck in native code, a runaway query, never ends). */
  private readonly retired = new WeakMap<Piscina, Promise<void>>();
  /** Per worker, while its replaced thread has not ended (at most RETIRE_WAIT_MS): what its new tasks wait for. */
  private readonly settling: (Promise<void> | undefined)[] = [];
  /** Events each worker has finished (event-worker.ts counts them). */
  private readonly finished: Int32Array;

  constructor(
    private readonly config: WorkerGroupSettings,
    private readonly setup: Omit<WorkerSetup, 'worker' | 'options' | 'progress'> & { options: KeepworkOptions },
  ) {
    const n = workerCount(config);
    this.finished = new Int32Array(new SharedArrayBuffer(4 * n));
    this.pools = Array.from({ length: n }, (_, worker) => this.makePool(worker));
  }

  private makePool(worker: number): Piscina {
    return new Piscina({
      filename: WORKER_URL,
      minThreads: 1,
      maxThreads: 1,
      concurrentTasksPerWorker: this.config.workerConcurrency,
      maxQueue: this.config.actorQueueMax * 64,
      workerData: { ...this.setup, progress: this.finished.buffer as SharedArrayBuffer, worker } satisfies WorkerSetup,
      execArgv: WORKER_EXEC_ARGV,
      resourceLimits: { maxYoungGenerationSizeMb: this.config.workerYoungGenerationMb },
      // 'sync' parks an idle worker in Atomics.wait, which also stops its timers: the
      // replicator's group-commit timer would never fire between tasks.
      atomics: 'async',
    });
  }

  /**
   * Runs a task on worker `i`. `signal` is not handed to Piscina: it runs at most one task at a
   * time on a worker whose task carries one (its balancer treats that worker as full), which
   * would cap every worker at one event whatever `workerConcurrency` says. Aborting instead
   * restarts the worker — a new single-thread pool in its place, the old one destroyed with the
   * stuck thread and every task it was running or had queued. Such a task is `Lost`: its start
   * gate (start-gate.ts) is revoked, which says how many of its events had begun their handler;
   * the answer waits (at most RETIRE_WAIT_MS) for the old thread to end, so an event run again
   * does not find the old thread's transaction still open on its actor's database. A task for a
   * worker whose old thread has not ended yet waits for that too (`settling`): the old thread holds
   * the files of the actors it had open (each in EXCLUSIVE locking mode: workers/actor-db.ts)
   * until it has closed them all, which takes a while when it had many open.
   */
  private async submit(worker: number, task: ActorEvent | EventBatch, signal?: StopSignal, transferList?: MessagePort[]): Promise<unknown> {
    const settling = this.settling[worker];
    if (settling) await settling;
    const pool = this.pools[worker]!;
    const gate = newStartGate();
    const ran = post(pool, task, gate, transferList);
    const unlisten = signal?.listen(() => this.restart(worker, pool));
    try {
      return await ran;
    } catch (e) {
      if (this.pools[worker] === pool) throw e;
      const begun = revokeTask(gate);
      await this.retired.get(pool);
      return new Lost(begun, e);
    } finally {
      unlisten?.();
    }
  }

  private restart(worker: number, pool: Piscina): void {
    if (this.pools[worker] !== pool) return; // already replaced
    this.pools[worker] = this.makePool(worker);
    const retired = endedWithin(pool.destroy(), RETIRE_WAIT_MS);
    this.retired.set(pool, retired);
    this.settling[worker] = retired;
    const settled = () => {
      if (this.settling[worker] === retired) this.settling[worker] = undefined;
    };
    void retired.then(settled, settled);
  }

  get size(): number {
    return this.pools.length;
  }

  /** One event. Its worker restarted under it: OutcomeUnknown if its handler had begun, NeverStarted if not. */
  async run(event: ActorEvent, signal?: StopSignal): Promise<EventResult> {
    const r = await this.submit('address' in event ? this.workerOf(event.address) : 0, event, signal);
    if (r instanceof Lost) throw r.begun > 0 ? outcomeUnknown(r.cause) : neverStarted(r.cause);
    return r as EventResult;
  }

  /**
   * Events of one actor in one task, on that actor's worker: one outcome per event, in order. A
   * durable call's outcome may be `pending` (committed, its link in flight: workers/batch.ts), with
   * its `final` outcome to come on a port of the batch's own; a port closed before it came (the
   * worker ended) fails the call, which is never acknowledged without its link. Its worker
   * restarted under it, the events whose handler had begun fail with OutcomeUnknown and the rest
   * are `notStarted`.
   */
  async runBatch(address: ActorAddress, events: ActorEvent[], signal?: StopSignal): Promise<RunOutcome[]> {
    const worker = this.workerOf(address);
    if (!events.some((e) => e.type === 'request' && e.durable)) {
      const r = await this.submit(worker, { type: 'batch', events }, signal);
      return r instanceof Lost ? lostBatch(events, r) : (r as BatchOutcome[]);
    }
    const { port1, port2 } = new MessageChannel();
    const finals = new Finals();
    port1.on('message', ({ i, outcome }: FinalOutcome) => finals.came(i, outcome));
    port1.once('close', () => finals.close());
    try {
      const task: EventBatch = { type: 'batch', events, finals: port2 };
      const r = await this.submit(worker, task, signal, [port2]);
      if (r instanceof Lost) {
        port1.close();
        return lostBatch(events, r);
      }
      const outcomes = r as BatchOutcome[];
      if (!outcomes.some((o) => o.type === 'ok' && o.pending)) port1.close();
      return outcomes.map((o, i) => (o.type === 'ok' && o.pending ? { ...o, final: finals.of(i) } : o));
    } catch (e) {
      port1.close();
      throw e;
    }
  }

  /** Events finished so far by the worker `address` is pinned to (it moves while that thread is not stuck). */
  progress(address: ActorAddress): number {
    return Atomics.load(this.finished, this.workerOf(address));
  }

  private workerOf(address: ActorAddress): number {
    return fnv1a(address.key) % this.pools.length;
  }

  /** Runs `event` on every worker (e.g. closeAll). */
  async broadcast(event: ActorEvent): Promise<void> {
    await Promise.all(this.pools.map((p) => post(p, event)));
  }

  /**
   * Every worker loads the classes now (at start) rather than at their first event, which then
   * waited for it: a module compiled and imported per thread (hundreds of ms from TypeScript).
   * Rejects with the first worker's error.
   */
  async loadClasses(classNames: string[]): Promise<void> {
    const results = (await Promise.all(this.pools.map((p) => post(p, { type: 'loadClasses', classNames })))) as EventResult[];
    const failed = results.find((r) => r.type === 'error');
    if (failed?.type === 'error') throw reviveError(failed.error);
  }

  async destroy(): Promise<void> {
    await Promise.all(this.pools.map((p) => p.destroy()));
  }
}

/** `ended`, or `ms` passed, whichever comes first. */
async function endedWithin(ended: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms).unref()));
  try {
    await Promise.race([ended, waited]);
  } finally {
    clearTimeout(timer);
  }
}

/** Every task reaches a worker through here: in its wire form (messages.ts), each address as its key. */
function post(pool: Piscina, task: ActorEvent | EventBatch, gate?: Int32Array, transferList?: MessagePort[]): Promise<unknown> {
  const posted: PostedTask = gate ? { task: toWire(task), gate } : { task: toWire(task) };
  return pool.run(posted, transferList ? { transferList } : {});
}

/** A task whose worker was restarted under it: `begun` of its events (its head) had begun their handler. */
class Lost {
  constructor(
    readonly begun: number,
    readonly cause: unknown,
  ) {}
}

function lostBatch(events: ActorEvent[], lost: Lost): RunOutcome[] {
  const unknown = outcomeUnknown(lost.cause).toJSON();
  return events.map((_, i) => (i < lost.begun ? { type: 'thrown', error: unknown } : { type: 'notStarted' }));
}

function outcomeUnknown(cause: unknown): KeepworkError {
  return new OutcomeUnknown(
    'its worker was restarted while its handler ran (a handler stuck in synchronous code on that worker past the hard limit, ' +
      'handlerTimeoutMs + 5 s): it may have committed. Retry with the same idempotency key, or only if running it twice is harmless',
    { cause },
  );
}

function neverStarted(cause: unknown): NeverStarted {
  return new NeverStarted(
    'its worker was restarted before its handler began (a handler stuck in synchronous code on that worker): it never ran; retry',
    { cause },
  );
}

/**
 * A durable batch's final outcomes, as they come on the batch's port. The port and the task's
 * result are separate channels: a final may come (or the port close) before the task's result is
 * read, so what comes is kept until it is asked for. One asked for that never came by the port's
 * close is `lost()` (made only then: an error with its stack is not made for every call).
 */
export class Finals {
  readonly #arrived = new Map<number, BatchOutcome>();
  readonly #waiting = new Map<number, (o: BatchOutcome) => void>();
  #closed = false;

  constructor(private readonly lost: () => BatchOutcome = lostOutcome) {}

  came(i: number, outcome: BatchOutcome): void {
    const settle = this.#waiting.get(i);
    if (!settle) return void this.#arrived.set(i, outcome);
    this.#waiting.delete(i);
    settle(outcome);
  }

  close(): void {
    this.#closed = true;
    for (const settle of this.#waiting.values()) settle(this.lost());
    this.#waiting.clear();
  }

  of(i: number): Promise<BatchOutcome> {
    return new Promise((resolve) => {
      const got = this.#arrived.get(i);
      if (got) resolve(got);
      else if (this.#closed) resolve(this.lost());
      else this.#waiting.set(i, resolve);
    });
  }
}

function lostOutcome(): BatchOutcome {
  const error = new ActorGivenUp('the worker ended before the upload of this durable call landed').toJSON();
  return { type: 'error', error, alarmAt: null };
}

function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}
