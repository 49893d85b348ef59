/**
 * The Piscina worker entry: a thin adapter that builds the pipeline's dependencies once per
 * thread (real clock and randomness, a DB cache, the class loader) and runs each event, or each
 * event of a batch (batch.ts), counting the events it has finished in `progress` and marking on
 * the task's start gate each event whose handler begins (start-gate.ts).
 */
import { join } from 'node:path';
import { workerData } from 'node:worker_threads';
import { OffsetClock, SystemClock } from '../core/clock.js';
import { deferredLogger } from '../core/logger.js';
import { SystemRandom } from '../core/random.js';
import { resolveOptions, type KeepworkOptions } from '../core/config.js';
import { classLoader } from './class-loader.js';
import { NonceSource } from '../alarms/keys.js';
import type { ProtocolRules } from '../alarms/rules.js';
import { DeleteBatcher } from '../store/delete-batch.js';
import { UploadPace } from '../replication/upload-pace.js';
import { fsyncDoesNothing, fsyncFd } from '../store/fs/io.js';
import { FsyncQueue } from '../store/fs/fsync-queue.js';
import { openStore } from '../store/open.js';
import { countedStore, RequestCounts } from '../store/request-counts.js';
import { ThrottleStats } from '../store/throttle/stats.js';
import { ActorSlots, slotsSettings } from './actor-slots.js';
import { newFileImage } from './actor-db.js';
import { SpareActorFiles } from './spare-files.js';
import { fromWire, type ActorEvent, type BatchOutcome, type EventResult, type FinalOutcome, type PostedTask } from './messages.js';
import { runBatch } from './batch.js';
import { runEvent, type OnCommitted } from './pipeline.js';
import { beginEvent } from './start-gate.js';
import type { PipelineDeps } from './deps.js';

export interface WorkerSetup {
  dataDir: string;
  /** Class name → module URL. */
  classes: Record<string, string>;
  options: KeepworkOptions;
  logLevel: string;
  nodeId: string;
  /** The bucket URL; each worker opens its own client. */
  bucket: string;
  /**
   * Two int64 the main thread keeps: "lease valid until" (ms), the LeaseView's lease half, and the
   * epoch it is for. The workers start while the lease is being written (both still 0): the main
   * thread publishes the epoch before the lease turns valid, and posts no event before then.
   */
  leaseValidUntil: SharedArrayBuffer;
  /** The node's worker request counts (shared by every worker). */
  requestCounts: SharedArrayBuffer;
  /** The node's worker throttle table (store/throttle/stats.ts): each worker writes row worker + 1. */
  throttleStats: SharedArrayBuffer;
  /** One int32 per worker: its group-commit window now, ms (replication/upload-pace.ts; the node's metrics). */
  replicationWindows: SharedArrayBuffer;
  /**
   * The queue of the node's fsync pool (store/fs/fsync-queue.ts): the worker's folder bucket and
   * new actor files fsync there. Absent (fsyncThreadsMax 0): on libuv's pool.
   */
  fsyncPool?: SharedArrayBuffer;
  /** One int32 per worker: events it has finished (the main thread's hard limit of a batch watches it). */
  progress: SharedArrayBuffer;
  worker: number;
  /** SAFE_RULES, but for a node of the chaos run's unsafe variants (UnsafeTestSeams, TEST-ONLY). */
  rules: ProtocolRules;
  /** TEST-ONLY (UnsafeTestSeams): the node's clock offset, the same as the main thread's. */
  clockOffsetMs?: number;
}

const setup = workerData as WorkerSetup;
const config = resolveOptions(setup.options);
const clock = setup.clockOffsetMs ? new OffsetClock(setup.clockOffsetMs) : new SystemClock();
const random = new SystemRandom();
const log = deferredLogger({ level: setup.logLevel, base: { nodeId: setup.nodeId, worker: setup.worker } });
const throttle = new ThrottleStats(setup.throttleStats).sink(setup.worker + 1);
const windows = new Int32Array(setup.replicationWindows);
Atomics.store(windows, setup.worker, config.replicationDelayMs);
const fsyncs = setup.fsyncPool ? new FsyncQueue(setup.fsyncPool) : undefined;
const store = countedStore(
  openStore(setup.bucket, { config, clock, random, throttle, ...(fsyncs ? { fsyncs } : {}) }),
  new RequestCounts(setup.requestCounts),
);
const validUntil = new BigInt64Array(setup.leaseValidUntil);
/** The epoch follows the node's lease (a fenced node rejoins under a new one). */
const writer = {
  nodeId: setup.nodeId,
  get epoch(): number {
    return Number(Atomics.load(validUntil, 1));
  },
};
const leaseValid = () => clock.now() < Number(Atomics.load(validUntil, 0));
/** The data dir on tmpfs: fsyncs of its files do nothing, and are not made (fs/io.ts). */
const newFileFsync = fsyncDoesNothing(setup.dataDir) ? null : (fsyncs?.fsyncFile ?? fsyncFd);
const spares = new SpareActorFiles(
  join(setup.dataDir, 'spare', String(setup.worker)),
  config.spareActorFiles,
  newFileImage(),
  log,
  newFileFsync,
);
spares.start();
const deps: PipelineDeps = {
  clock,
  random,
  config,
  log,
  store,
  nonces: new NonceSource(random),
  rules: Object.freeze({ ...setup.rules }),
  slots: new ActorSlots(setup.dataDir, slotsSettings(config, { createOffThread: true, newFileFsync, spares }), {
    store,
    clock,
    random,
    config,
    log,
    writer,
    leaseValid,
    deletes: new DeleteBatcher(store, clock, log),
    pace: new UploadPace(config, eventLoopBusy(), clock, (ms) => Atomics.store(windows, setup.worker, ms)),
  }),
  loadClass: classLoader(setup.classes),
};

/** The share of time this thread's event loop was busy since the last call (upload-pace.ts). */
function eventLoopBusy(): () => number {
  let last = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    const { utilization } = performance.eventLoopUtilization(now, last);
    last = now;
    return utilization;
  };
}

const progress = new Int32Array(setup.progress);
const ran = () => void Atomics.add(progress, setup.worker, 1);

/**
 * A batch's task ends once every event has run or, for a durable call, committed (Piscina runs one
 * abortable task per worker at a time: a task waiting for uploads would hold the worker); the
 * final outcomes of those follow on the batch's `finals` port as their links land, then it closes.
 */
export default async function handle({ task: posted, gate }: PostedTask): Promise<EventResult | BatchOutcome[]> {
  const task = fromWire(posted);
  const begin = gate && ((i: number) => beginEvent(gate, i));
  if (task.type === 'batch') {
    const run = (e: ActorEvent, committed?: OnCommitted, begun?: () => boolean) => runEvent(deps, e, committed, begun);
    const { outcomes, later } = await runBatch(run, task.events, ran, begin);
    const port = task.finals;
    if (port) {
      const posted = [...later].map(([i, final]) => final.then((outcome) => port.postMessage({ i, outcome } satisfies FinalOutcome)));
      void Promise.all(posted).finally(() => port.close());
    }
    return outcomes;
  }
  try {
    return await runEvent(deps, task, undefined, begin && (() => begin(0)));
  } finally {
    ran();
  }
}
