/**
 * `startNode`: the composition root of one keepwork node — options resolved, identity and epoch,
 * the bucket (requests counted), membership (lease, holds), the worker group, the Node itself,
 * then the timer refilled from the data dir, HTTP, and the sweep.
 */
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { SystemClock, type Clock } from '../core/clock.js';
import { validateTenant } from '../core/address.js';
import { createLogger } from '../core/logger.js';
import { SystemRandom } from '../core/random.js';
import { openStore, DEFAULT_BUCKET_URL } from '../store/open.js';
import { countedStore } from '../store/request-counts.js';
import { resolveClasses } from './classes.js';
import { resolveOptions } from '../core/config.js';
import { nextIdentity } from './identity.js';
import { Membership } from './membership.js';
import { NodeMetrics } from './metrics.js';
import { Node } from './node.js';
import type { FrontDoor, KeepworkNode, StartNodeOptions } from './node-api.js';
import { BadConfig } from '../core/errors.js';
import { WorkerGroup } from './worker-group.js';
import { DataDirLock } from './data-dir-lock.js';

/**
 * Starts a node; `frontDoor` serves its HTTP API when `options.port` is given (the package's
 * `startNode`, src/http/start.ts, passes src/http's server).
 */
export async function startNodeWith(options: StartNodeOptions, frontDoor?: FrontDoor): Promise<KeepworkNode> {
  if (options.port !== undefined && !frontDoor)
    throw new BadConfig('port is set but this node was started without an HTTP server (use startNode from keepwork)');
  const dataDir = resolve(options.dataDir ?? './data');
  mkdirSync(dataDir, { recursive: true });
  const dirLock = DataDirLock.acquire(dataDir); // held until stop, or until the process dies
  try {
    return await startLocked(options, dataDir, dirLock, frontDoor);
  } catch (e) {
    dirLock.release();
    throw e;
  }
}

/** The rest of the start, holding the data dir's lock (released by `Node.stop`). */
async function startLocked(options: StartNodeOptions, dataDir: string, dirLock: DataDirLock, frontDoor?: FrontDoor): Promise<KeepworkNode> {
  const { classes, classBase, bucket, dataDir: _dir, tenants, nodeId, port, host, logger, ...tunables } = options;
  const config = resolveOptions(tunables);
  const classUrls = resolveClasses(classes, classBase);
  const served = tenants?.map(validateTenant);
  const clock: Clock = new SystemClock();
  const identity = nextIdentity(dataDir, new SystemRandom(), nodeId);
  const bucketUrl = bucket ?? DEFAULT_BUCKET_URL;
  const metrics = new NodeMetrics();
  const store = countedStore(openStore(bucketUrl, { config, clock }), metrics.mainRequests);
  const baseLog = logger ?? createLogger();
  const membership = new Membership(store, clock, config, baseLog.child({ nodeId: identity.nodeId }), {
    nodeId: identity.nodeId,
    addr: '',
    tenants: served ?? null,
    classes: Object.keys(classUrls),
    dataDirId: identity.dataDirId, // we hold the data dir's lock
  });
  let node: Node | undefined;
  const epoch = await membership.start(identity.epoch, () => node?.fenced());
  const log = baseLog.child({ nodeId: identity.nodeId, epoch });
  const workers = new WorkerGroup(config, {
    dataDir,
    bucket: bucketUrl,
    classes: classUrls,
    options: tunables,
    logLevel: log.level,
    nodeId: identity.nodeId,
    epoch,
    leaseValidUntil: membership.shared,
    requestCounts: metrics.workerRequests.buffer,
  });
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
    metrics,
    dirLock,
  });
  try {
    node.refillTimer(dataDir);
    if (port !== undefined && frontDoor) await node.serveHttp(frontDoor, port, host ?? '127.0.0.1');
    node.startSweeping();
  } catch (e) {
    await node.stop();
    throw e;
  }
  log.info({ dataDir, bucket: store.description, classes: Object.keys(classUrls), workers: workers.size, url: node.url }, 'node started');
  return node;
}
