/**
 * The Piscina worker entry: a thin adapter that builds the pipeline's dependencies once per
 * thread (real clock and randomness, a DB cache, the class loader) and runs each event.
 */
import { workerData } from 'node:worker_threads';
import { SystemClock } from '../core/clock.js';
import { createLogger } from '../core/logger.js';
import { SystemRandom } from '../core/random.js';
import { resolveOptions, type KeepworkOptions } from '../main/config.js';
import { classLoader } from './class-loader.js';
import { NonceSource } from '../alarms/keys.js';
import { openStore } from '../store/open.js';
import { countingStore } from '../store/counting.js';
import { SharedStoreCounts } from '../store/shared-counts.js';
import { ActorSlots } from './actor-slots.js';
import type { ActorEvent, EventResult } from './messages.js';
import { runEvent, type PipelineDeps } from './pipeline.js';

export interface WorkerSetup {
  dataDir: string;
  /** Class name → module URL. */
  classes: Record<string, string>;
  options: KeepworkOptions;
  logLevel: string;
  nodeId: string;
  epoch: number;
  /** The bucket URL; each worker opens its own client. */
  bucket: string;
  /** One int64 the main thread keeps at "lease valid until" (ms): the LeaseView's lease half. */
  leaseValidUntil: SharedArrayBuffer;
  worker: number;
  /** Where this worker counts its store requests by operation (the node's metrics read it). */
  storeCounts?: SharedArrayBuffer;
}

const setup = workerData as WorkerSetup;
const config = resolveOptions(setup.options);
const clock = new SystemClock();
const random = new SystemRandom();
const log = createLogger({ level: setup.logLevel, base: { nodeId: setup.nodeId, worker: setup.worker } });
const counts = setup.storeCounts ? new SharedStoreCounts(setup.storeCounts) : undefined;
const opened = openStore(setup.bucket, { config, clock, random });
const store = counts ? countingStore(opened, (op) => counts.inc(op)) : opened;
const writer = { nodeId: setup.nodeId, epoch: setup.epoch };
const validUntil = new BigInt64Array(setup.leaseValidUntil);
const leaseValid = () => clock.now() < Number(Atomics.load(validUntil, 0));
const deps: PipelineDeps = {
  clock,
  random,
  config,
  log,
  store,
  nonces: new NonceSource(random),
  slots: new ActorSlots(setup.dataDir, config.dbCacheMax, { store, clock, random, config, log, writer, leaseValid }),
  loadClass: classLoader(setup.classes),
};

export default function handle(event: ActorEvent): Promise<EventResult> {
  return runEvent(deps, event);
}
