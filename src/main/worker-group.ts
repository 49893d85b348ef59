/**
 * The event workers: one single-thread Piscina pool per worker, and each actor always routed to
 * the same one (a hash of its address), so an actor's database is open in one thread only.
 * A task is one event, or a batch of one actor's events (`runBatch`), so batching keeps the pinning.
 * Queues are bounded (`maxQueue`); a task past its hard time limit is aborted, which ends that
 * worker thread (Piscina starts a new one).
 */
import { Piscina } from 'piscina';
import { availableParallelism } from 'node:os';
import { formatAddress, type ActorAddress } from '../core/address.js';
import type { KeepworkOptions, Settings } from '../core/config.js';

export type WorkerGroupSettings = Settings<'actorQueueMax' | 'workerConcurrency' | 'workerThreads'>;
import { MessageChannel } from 'node:worker_threads';
import { ActorGivenUp } from '../core/errors.js';
import type { ActorEvent, BatchOutcome, EventBatch, EventResult, FinalOutcome } from '../workers/messages.js';

/** A batch's outcome on the main thread: a `pending` one (a durable call whose link is in flight) carries its `final`. */
export type RunOutcome = BatchOutcome & { final?: Promise<BatchOutcome> };
import type { WorkerSetup } from '../workers/event-worker.js';

const FROM_SOURCE = import.meta.url.endsWith('.ts');
const WORKER_URL = new URL('../workers/event-worker' + (FROM_SOURCE ? '.ts' : '.js'), import.meta.url).href;
/** Running from TypeScript sources (tsx): workers, and the .ts class modules they load, need tsx too. */
const EXEC_ARGV = FROM_SOURCE && !process.execArgv.join(' ').includes('tsx') ? [...process.execArgv, '--import', 'tsx'] : process.execArgv;

export class WorkerGroup {
  private readonly pools: Piscina[];
  /** Events each worker has finished (event-worker.ts counts them). */
  private readonly finished: Int32Array;

  constructor(config: WorkerGroupSettings, setup: Omit<WorkerSetup, 'worker' | 'options' | 'progress'> & { options: KeepworkOptions }) {
    const n = config.workerThreads || Math.min(4, availableParallelism());
    const progress = new SharedArrayBuffer(4 * n);
    this.finished = new Int32Array(progress);
    this.pools = Array.from(
      { length: n },
      (_, worker) =>
        new Piscina({
          filename: WORKER_URL,
          minThreads: 1,
          maxThreads: 1,
          concurrentTasksPerWorker: config.workerConcurrency,
          maxQueue: config.actorQueueMax * 64,
          workerData: { ...setup, progress, worker } satisfies WorkerSetup,
          execArgv: EXEC_ARGV,
          // 'sync' parks an idle worker in Atomics.wait, which also stops its timers: the
          // replicator's group-commit timer would never fire between tasks.
          atomics: 'async',
        }),
    );
  }

  get size(): number {
    return this.pools.length;
  }

  run(event: ActorEvent, signal?: AbortSignal): Promise<EventResult> {
    const pool = 'address' in event ? this.pools[this.workerOf(event.address)]! : this.pools[0]!;
    return pool.run(event, { signal }) as Promise<EventResult>;
  }

  /**
   * Events of one actor in one task, on that actor's worker: one outcome per event, in order. A
   * durable call's outcome may be `pending` (committed, its link in flight: workers/batch.ts), with
   * its `final` outcome to come on a port of the batch's own; a port closed before it came (the
   * worker ended) fails the call, which is never acknowledged without its link.
   */
  async runBatch(address: ActorAddress, events: ActorEvent[], signal?: AbortSignal): Promise<RunOutcome[]> {
    const pool = this.pools[this.workerOf(address)]!;
    if (!events.some((e) => e.type === 'request' && e.durable))
      return (await pool.run({ type: 'batch', events }, { signal })) as BatchOutcome[];
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
      const outcomes = (await pool.run(task, { signal, transferList: [port2] })) as BatchOutcome[];
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
    return fnv1a(formatAddress(address)) % this.pools.length;
  }

  /** Runs `event` on every worker (e.g. closeAll). */
  async broadcast(event: ActorEvent): Promise<void> {
    await Promise.all(this.pools.map((p) => p.run(event)));
  }

  async destroy(): Promise<void> {
    await Promise.all(this.pools.map((p) => p.destroy()));
  }
}

function lostOutcome(): BatchOutcome {
  const error = new ActorGivenUp('the worker ended before the upload of this durable call landed').toJSON();
  return { type: 'error', error, alarmAt: null };
}

export function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}
