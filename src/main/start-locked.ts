/**
 * The rest of a node's start (start-node.ts), loaded once the worker threads are starting:
 * holding the data dir's lock, the port and the workers, it opens the bucket (requests counted),
 * writes the lease (membership), makes the Node and serves, then refills the timer from the data
 * dir once the workers are up.
 */
import { OffsetClock, SystemClock, type Clock } from '../core/clock.js';
import { openStore, localBucket } from '../store/open.js';
import type { ObjectStore } from '../store/types.js';
import { countedStore } from '../store/request-counts.js';
import type { ResolvedConfig } from '../core/config.js';
import { Membership } from './membership.js';
import { NodeMetrics } from './metrics.js';
import { Node } from './node.js';
import { PeerClient } from './peer-client.js';
import type { KeepworkNode, UnsafeTestSeams } from './node-api.js';
import type { DataDirLock } from './data-dir-lock.js';
import type { StartedWorkers, StartParts } from './start-node.js';

/** The rest of the start, holding the data dir's lock (released by `Node.stop`), the port and the workers. */
export async function startLocked(
  parts: StartParts,
  started: StartedWorkers,
  dataDir: string,
  dirLock: DataDirLock,
  unsafe: UnsafeTestSeams,
): Promise<KeepworkNode> {
  const { config, classUrls, served, bucketUrl, baseLog, http, fsyncPool } = parts;
  const { identity, workers, loaded } = started;
  const metrics = new NodeMetrics(started.shares);
  // TEST-ONLY (UnsafeTestSeams): a negative skew bound stretches the lease's own validity.
  const leaseConfig = unsafe.leaseOverstayMs ? { ...config, skewBoundMs: config.skewBoundMs - unsafe.leaseOverstayMs } : config;
  // TEST-ONLY (UnsafeTestSeams): a skewed clock, the workers' too.
  const clock: Clock = unsafe.clockOffsetMs ? new OffsetClock(unsafe.clockOffsetMs) : new SystemClock();
  const fsyncs = fsyncPool?.queue;
  let node: Node | undefined;
  let store: ObjectStore;
  let membership: Membership;
  let epoch: number;
  try {
    store = countedStore(
      openStore(bucketUrl, { config, clock, throttle: metrics.mainThrottle.sink(0), ...(fsyncs ? { fsyncs } : {}) }),
      metrics.mainRequests,
    );
    membership = new Membership(
      store,
      clock,
      leaseConfig,
      baseLog.child({ nodeId: identity.nodeId }),
      {
        nodeId: identity.nodeId,
        addr: parts.addr,
        tenants: served ?? null,
        classes: Object.keys(classUrls),
        dataDirId: identity.dataDirId, // we hold the data dir's lock
      },
      { leaseStore: leaseStoreOf(bucketUrl, store, config, clock, metrics), shared: started.shares.leaseValidUntil },
    );
    epoch = await membership.start(identity.epoch, () => node?.fenced());
  } catch (e) {
    await workers.destroy();
    throw e;
  }
  const log = baseLog.child({ nodeId: identity.nodeId, epoch });
  node = new Node({
    config,
    clock,
    log,
    store,
    workers,
    membership,
    identity: { nodeId: identity.nodeId, epoch },
    classes: classUrls,
    tenants: served,
    methods: parts.methods,
    metrics,
    dirLock,
    ...(fsyncPool ? { fsyncPool } : {}),
    ...(unsafe.rules ? { seams: { rules: unsafe.rules } } : {}),
    ...(parts.clusterKey ? { clusterKey: parts.clusterKey } : {}),
    ...(parts.peersAllow ? { peersAllow: parts.peersAllow } : {}),
    peers: new PeerClient(parts.peerTls, config.httpResultMaxBytes, unsafe.forwardDropped),
  });
  try {
    // Served while the workers still start: a call waits in its worker's queue, not at the door.
    // The main thread checked every class above; a worker that cannot load one fails the start.
    if (http) node.serveHttp(http);
    node.startSweeping();
    await loaded;
    // The data dir's scan once the workers are up: begun earlier, it took the CPU and the main
    // thread the first calls wait for (a thousand actor files: most of a restart under load). A
    // call's actor is opened whether or not its file was scanned yet.
    void node.refill(dataDir);
  } catch (e) {
    await node.stop();
    throw e;
  }
  log.info({ dataDir, bucket: store.description, classes: Object.keys(classUrls), workers: workers.size, url: node.url }, 'node started');
  return node;
}

/**
 * What the lease is written through. On a bucket on this host's disk (a folder or a SQLite file), a
 * store of its own whose fsyncs run on a thread of its own (fs/fsync-thread.ts): a renewal's fsyncs
 * (every leasePeriodMs / 3) then never queue behind the node's other fsyncs or the app's own file
 * work, which on a busy disk held renewals past the lease, and never share a group commit with the
 * node's other writes. Any other bucket: the node's store (its requests do not wait in a pool).
 */
function leaseStoreOf(bucketUrl: string, store: ObjectStore, config: ResolvedConfig, clock: Clock, metrics: NodeMetrics): ObjectStore {
  if (bucketUrl.startsWith('memory:') || localBucket(bucketUrl) === null) return store;
  return countedStore(openStore(bucketUrl, { config, clock, fsyncThread: true }), metrics.mainRequests);
}
