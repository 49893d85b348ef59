/**
 * The event workers: one single-thread Piscina pool per worker, and each actor always routed to
 * the same one (a hash of its address), so an actor's database is open in one thread only.
 * Queues are bounded (`maxQueue`); a task past its hard time limit is aborted, which ends that
 * worker thread (Piscina starts a new one).
 */
import { Piscina } from 'piscina';
import { MessageChannel } from 'node:worker_threads';
import { availableParallelism } from 'node:os';
import { formatAddress } from '../core/address.js';
import { ActorGivenUp } from '../core/errors.js';
import type { KeepworkOptions, Settings } from '../core/config.js';

export type WorkerGroupSettings = Settings<'actorQueueMax' | 'workerConcurrency' | 'workerThreads'>;
import type { ActorEvent, EventResult } from '../workers/messages.js';
import type { WorkerSetup } from '../workers/event-worker.js';

const FROM_SOURCE = import.meta.url.endsWith('.ts');
const WORKER_URL = new URL('../workers/event-worker' + (FROM_SOURCE ? '.ts' : '.js'), import.meta.url).href;
/** Running from TypeScript sources (tsx): workers, and the .ts class modules they load, need tsx too. */
const EXEC_ARGV = FROM_SOURCE && !process.execArgv.join(' ').includes('tsx') ? [...process.execArgv, '--import', 'tsx'] : process.execArgv;

export class WorkerGroup {
  private readonly pools: Piscina[];

  constructor(config: WorkerGroupSettings, setup: Omit<WorkerSetup, 'worker' | 'options'> & { options: KeepworkOptions }) {
    const n = config.workerThreads || Math.min(4, availableParallelism());
    this.pools = Array.from(
      { length: n },
      (_, worker) =>
        new Piscina({
          filename: WORKER_URL,
          minThreads: 1,
          maxThreads: 1,
          concurrentTasksPerWorker: config.workerConcurrency,
          maxQueue: config.actorQueueMax * 64,
          workerData: { ...setup, worker } satisfies WorkerSetup,
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

  /** `committed`: a durable call's early result once its commit is done (pipeline.ts, OnCommitted), through a port of its own. */
  async run(event: ActorEvent, signal?: AbortSignal, committed?: (early: EventResult) => void): Promise<EventResult> {
    const pool = 'address' in event ? this.pools[fnv1a(formatAddress(event.address)) % this.pools.length]! : this.pools[0]!;
    if (!committed || event.type !== 'request') return pool.run(event, { signal }) as Promise<EventResult>;
    const { port1, port2 } = new MessageChannel();
    // The final result of a call whose task ended at its commit; a port closed without one (the
    // worker ended) fails the call: it is never acknowledged without its link.
    const final = new Promise<EventResult>((resolve) => {
      port1.once('message', resolve);
      port1.once('close', () => resolve(lostResult()));
    });
    try {
      const r = (await pool.run({ ...event, committedPort: port2 }, { signal, transferList: [port2] })) as EventResult;
      if (r.type !== 'ok' || !r.pending) return r;
      const { pending: _, ...early } = r;
      committed(early);
      return await final;
    } finally {
      port1.close();
    }
  }

  /** Runs `event` on every worker (e.g. closeAll). */
  async broadcast(event: ActorEvent): Promise<void> {
    await Promise.all(this.pools.map((p) => p.run(event)));
  }

  async destroy(): Promise<void> {
    await Promise.all(this.pools.map((p) => p.destroy()));
  }
}

function lostResult(): EventResult {
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
