/**
 * The event workers: one single-thread Piscina pool per worker, and each actor always routed to
 * the same one (a hash of its address), so an actor's database is open in one thread only.
 * A task is one event, or a batch of one actor's events (`runBatch`), so batching keeps the pinning.
 * Queues are bounded (`maxQueue`); a task past its hard time limit is aborted by restarting its
 * worker (`submit`: a new pool in place of the stuck one).
 */
import { Piscina } from 'piscina';
import { availableParallelism } from 'node:os';
import type { ActorAddress } from '../core/address.js';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import type { KeepworkOptions, Settings } from '../core/config.js';
import { ActorGivenUp, HandlerFailed, HandlerTimeout, reviveError } from '../core/errors.js';
import { toWire, type ActorEvent, type BatchOutcome, type EventBatch, type EventResult, type FinalOutcome } from '../workers/messages.js';
import type { WorkerSetup } from '../workers/event-worker.js';

export type WorkerGroupSettings = Settings<'actorQueueMax' | 'workerConcurrency' | 'workerThreads' | 'workerYoungGenerationMb'>;

/** A batch's outcome on the main thread: a `pending` one (a durable call whose link is in flight) carries its `final`. */
export type RunOutcome = BatchOutcome & { final?: Promise<BatchOutcome> };

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
   * stuck thread and every task it was running (they fail; the caller learns it was aborted).
   */
  private submit(worker: number, task: ActorEvent | EventBatch, signal?: AbortSignal, transferList?: MessagePort[]): Promise<unknown> {
    const pool = this.pools[worker]!;
    const ran = post(pool, task, transferList).catch((e: unknown) => {
      if (signal?.aborted)
        throw new HandlerTimeout(
          'aborted: its worker finished nothing for handlerTimeoutMs + 5 s (a handler stuck in synchronous code); the worker was restarted',
          { cause: e },
        );
      if (this.pools[worker] !== pool)
        throw new HandlerFailed(
          'its worker was restarted (another event on it was stuck past the hard limit): the outcome of this event is unknown',
          { cause: e },
        );
      throw e;
    });
    if (!signal) return ran;
    const restart = () => this.restart(worker, pool);
    if (signal.aborted) restart();
    else signal.addEventListener('abort', restart, { once: true });
    return ran.finally(() => signal.removeEventListener('abort', restart));
  }

  private restart(worker: number, pool: Piscina): void {
    if (this.pools[worker] !== pool) return; // already replaced
    this.pools[worker] = this.makePool(worker);
    void pool.destroy();
  }

  get size(): number {
    return this.pools.length;
  }

  run(event: ActorEvent, signal?: AbortSignal): Promise<EventResult> {
    return this.submit('address' in event ? this.workerOf(event.address) : 0, event, signal) as Promise<EventResult>;
  }

  /**
   * Events of one actor in one task, on that actor's worker: one outcome per event, in order. A
   * durable call's outcome may be `pending` (committed, its link in flight: workers/batch.ts), with
   * its `final` outcome to come on a port of the batch's own; a port closed before it came (the
   * worker ended) fails the call, which is never acknowledged without its link.
   */
  async runBatch(address: ActorAddress, events: ActorEvent[], signal?: AbortSignal): Promise<RunOutcome[]> {
    const worker = this.workerOf(address);
    if (!events.some((e) => e.type === 'request' && e.durable))
      return (await this.submit(worker, { type: 'batch', events }, signal)) as BatchOutcome[];
    const { port1, port2 } = new MessageChannel();
    // The port and the task's result are separate channels: a final may come (or the port close)
    // before the task's result is read here, so what arrives is kept until it is asked for.
    const arrived = new Map<number, BatchOutcome>();
    const waiting = new Map<number, (o: BatchOutcome) => void>();
    let closed = false;
    port1.on('message', ({ i, outcome }: FinalOutcome) => {
      const settle = waiting.get(i);
      if (settle) settle(outcome);
      else arrived.set(i, outcome);
    });
    port1.once('close', () => {
      closed = true;
      waiting.forEach((settle) => settle(lostOutcome()));
    });
    const finalOf = (i: number) =>
      new Promise<BatchOutcome>((resolve) => {
        const got = arrived.get(i);
        if (got) resolve(got);
        else if (closed) resolve(lostOutcome());
        else waiting.set(i, resolve);
      });
    try {
      const task: EventBatch = { type: 'batch', events, finals: port2 };
      const outcomes = (await this.submit(worker, task, signal, [port2])) as BatchOutcome[];
      const out: RunOutcome[] = outcomes.map((o, i) => (o.type === 'ok' && o.pending ? { ...o, final: finalOf(i) } : o));
      if (!out.some((o) => o.final)) port1.close();
      return out;
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

/** Every task reaches a worker through here: in its wire form (messages.ts), each address as its key. */
function post(pool: Piscina, task: ActorEvent | EventBatch, transferList?: MessagePort[]): Promise<unknown> {
  return pool.run(toWire(task), transferList ? { transferList } : {});
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
