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
import { DbCache } from './db-cache.js';
import type { ActorEvent, EventResult } from './messages.js';
import { runEvent, type PipelineDeps } from './pipeline.js';

export interface WorkerSetup {
  dataDir: string;
  /** Class name → module URL. */
  classes: Record<string, string>;
  options: KeepworkOptions;
  logLevel: string;
  nodeId: string;
  worker: number;
}

const setup = workerData as WorkerSetup;
const config = resolveOptions(setup.options);
const deps: PipelineDeps = {
  clock: new SystemClock(),
  random: new SystemRandom(),
  config,
  log: createLogger({ level: setup.logLevel, base: { nodeId: setup.nodeId, worker: setup.worker } }),
  dbs: new DbCache(setup.dataDir, config.dbCacheMax),
  loadClass: classLoader(setup.classes),
};

export default function handle(event: ActorEvent): Promise<EventResult> {
  return runEvent(deps, event);
}
