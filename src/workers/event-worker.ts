/**
 * The Piscina worker entry: a thin adapter that builds the pipeline's dependencies once per
 * thread (real clock and randomness, a DB cache, the class loader) and runs each event.
 */
import { workerData } from 'node:worker_threads';
import { SystemClock } from '../core/clock.js';
import { createLogger } from '../core/logger.js';
import { SystemRandom } from '../core/random.js';
import { resolveOptions, type KeepworkOptions } from '../core/config.js';
import { classLoader } from './class-loader.js';
import { NonceSource } from '../alarms/keys.js';
import { SAFE_RULES } from '../alarms/rules.js';
import { DeleteBatcher } from '../store/delete-batch.js';
import { openStore } from '../store/open.js';
import { countedStore, RequestCounts } from '../store/request-counts.js';
import { ActorSlots, slotsSettings } from './actor-slots.js';
import type { ActorEvent, EventResult } from './messages.js';
import { errorData, runEvent } from './pipeline.js';
import type { PipelineDeps } from './deps.js';

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
  /** Two int64 the main thread keeps: "lease valid until" (ms), the LeaseView's lease half, and the epoch it is for. */
  leaseValidUntil: SharedArrayBuffer;
  /** The node's worker request counts (shared by every worker). */
  requestCounts: SharedArrayBuffer;
  worker: number;
}

const setup = workerData as WorkerSetup;
const config = resolveOptions(setup.options);
const clock = new SystemClock();
const random = new SystemRandom();
const log = createLogger({ level: setup.logLevel, base: { nodeId: setup.nodeId, worker: setup.worker } });
const store = countedStore(openStore(setup.bucket, { config, clock, random }), new RequestCounts(setup.requestCounts));
const validUntil = new BigInt64Array(setup.leaseValidUntil);
/** The epoch follows the node's lease (a fenced node rejoins under a new one). */
const writer = {
  nodeId: setup.nodeId,
  get epoch(): number {
    return Number(Atomics.load(validUntil, 1)) || setup.epoch;
  },
};
const leaseValid = () => clock.now() < Number(Atomics.load(validUntil, 0));
const deps: PipelineDeps = {
  clock,
  random,
  config,
  log,
  store,
  nonces: new NonceSource(random),
  rules: SAFE_RULES,
  slots: new ActorSlots(setup.dataDir, slotsSettings(config), {
    store,
    clock,
    random,
    config,
    log,
    writer,
    leaseValid,
    deletes: new DeleteBatcher(store, clock, log),
  }),
  loadClass: classLoader(setup.classes),
};

/**
 * A durable call's task ends at its commit, with its early result marked `pending` (Piscina runs
 * one abortable task per worker at a time: a task waiting for an upload would hold the worker);
 * its final result follows on `committedPort` once the link holding the commit landed (or failed).
 */
export default function handle(event: ActorEvent): Promise<EventResult> {
  const port = event.type === 'request' ? event.committedPort : undefined;
  if (!port) return runEvent(deps, event);
  return new Promise((resolve) => {
    let early = false;
    const final = runEvent(deps, event, (r) => {
      early = true;
      resolve({ ...r, pending: true } as EventResult);
    });
    const settle = (r: EventResult) => (early ? port.postMessage(r) : resolve(r));
    void final.then(settle, (e: unknown) => settle({ type: 'error', error: errorData(e), alarmAt: null })).finally(() => port.close());
  });
}
