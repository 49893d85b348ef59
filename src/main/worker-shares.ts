/**
 * Shared memory the worker threads are given as they start, made before the main thread loads the
 * rest of the node (start-node.ts): what they count into, read by NodeMetrics' series at each
 * scrape, and the lease's share (Membership writes it, each worker reads it).
 */
import { RequestCounts } from '../store/request-counts.js';
import { ThrottleStats } from '../store/throttle/stats.js';
import { RULES } from '../core/config.js';

export class WorkerShares {
  /** Counted by the main thread and every worker (src/store/request-counts.ts). */
  readonly mainRequests = new RequestCounts();
  readonly workerRequests = new RequestCounts();
  /** Throttle answers and windows, like the request counts (src/store/throttle/stats.ts). */
  readonly mainThrottle = new ThrottleStats();
  readonly workerThrottle = new ThrottleStats();
  /** One int32 slot per worker thread (as many as workerThreads may be), each written by its worker: its window in ms. */
  readonly replicationWindowsBuffer = new SharedArrayBuffer(4 * RULES.workerThreads.max!);
  /** The lease's share (`Membership.shared`). */
  readonly leaseValidUntil = leaseShare();
}

/** The lease's share with the workers: written by Membership, read by each worker. */
export function leaseShare(): SharedArrayBuffer {
  return new SharedArrayBuffer(16);
}
