/**
 * `startNode`: the composition root of one keepwork node — options resolved, class modules
 * checked, the data dir locked, identity and epoch, the worker group started (its threads boot and
 * load the classes while the rest of the start goes on). Only then does the main thread load the
 * rest of the node's code (start-locked.ts: the Node, membership, metrics, the bucket's client, and
 * the HTTP server through the front door): the HTTP port bound, the bucket (requests counted),
 * membership (lease, holds), the Node itself, then HTTP served (calls queue for the workers still
 * starting), the sweep, and once the workers are up the timer refilled from the data dir while it
 * serves.
 */
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { validateTenant } from '../core/address.js';
import { deferredLogger, type Logger } from '../core/logger.js';
import { SystemRandom } from '../core/random.js';
import { defaultBucketUrl } from '../store/open.js';
import { FsyncPool } from '../store/fs/fsync-pool.js';
import { resolveClasses } from './classes.js';
import { resolveOptions, type KeepworkOptions, type ResolvedConfig, type Tunable } from '../core/config.js';
import { checkClasses } from '../workers/class-loader.js';
import { nextIdentity, type NodeIdentity } from './identity.js';
import { WorkerShares } from './worker-shares.js';
import type { BoundHttp, FrontDoor, KeepworkNode, StartNodeOptions, UnsafeTestSeams } from './node-api.js';
import { SAFE_RULES } from '../alarms/rules.js';
import { BadConfig } from '../core/errors.js';
import { WorkerGroup, workerCount } from './worker-group.js';
import { bucketFilesOf, planFiles } from './file-budget.js';
import { readFileLimit } from './file-limit.js';
import { DataDirLock } from './data-dir-lock.js';
import { clusterKey as keyOf, type ClusterKey } from '../core/cluster-signature.js';
import { tokenSetOf } from '../core/tokens.js';
import { doorDecision } from './access-policy.js';
import { nodeAddrProblem } from '../leases/records.js';
import { parsePeersAllow, type PeersAllow } from './peers-allow.js';
import { certNames, resolveTls, type ClientTls, type ServerTls } from '../core/tls-material.js';

/**
 * The fsync pool's threads start no earlier than this after the node's start: the start's own few
 * fsyncs go to libuv's pool, and a thread's boot (~40 ms of CPU) is kept off the start, which is
 * CPU-bound on two cores (docs/benchmarks.md#restart).
 */
const FSYNC_THREADS_AFTER_MS = 1_000;

/**
 * Starts a node; `frontDoor` serves its HTTP API when `options.port` is given (the package's
 * `startNode`, src/http/start.ts, passes src/http's server). Everything that can be checked
 * locally fails the start before the node writes anything to the bucket: the options, the token
 * file, the cluster secret and whether the listen host may go without them (access-policy.ts), the
 * TLS files and the advertised URL's scheme and name (tls-material.ts), every
 * class module (loaded and checked here; the workers load them again), the data dir's lock and
 * the HTTP port (bound before the lease is written).
 */
export async function startNodeWith(options: StartNodeOptions, frontDoor?: FrontDoor, unsafe: UnsafeTestSeams = {}): Promise<KeepworkNode> {
  if (options.port !== undefined && !frontDoor)
    throw new BadConfig('port is set but this node was started without an HTTP server (use startNode from keepwork)');
  const {
    classes,
    classBase,
    bucket,
    dataDir: dir,
    tenants,
    nodeId,
    port,
    host,
    advertise,
    peersAllow: peersAllowText,
    logger,
    auth,
    clusterSecret,
    insecureNoAuth,
    tls: tlsOptions,
    ...tunables
  } = options;
  const baseLog = logger ?? deferredLogger();
  const config = fitFiles(resolveOptions(tunables), tunables, bucket ?? '', baseLog);
  const listenHost = host ?? '127.0.0.1';
  const tokens = auth === undefined ? undefined : tokenSetOf(auth);
  const clusterKey = clusterSecret === undefined ? undefined : keyOf(clusterSecret, config.skewBoundMs);
  const doors = doorDecision({ host: listenHost, tokens: !!tokens, clusterSecret: !!clusterKey, insecureNoAuth: insecureNoAuth === true });
  if (!doors.start) throw new BadConfig(doors.why);
  const tls = resolveTls(tlsOptions, Date.now());
  checkAdvertise(listenHost, advertise, tls.server);
  const peersAllow = peersAllowText === undefined ? undefined : parsePeersAllow(peersAllowText);
  const classUrls = resolveClasses(classes, classBase);
  const served = tenants?.map(validateTenant);
  const methods = await checkClasses(classUrls);
  const dataDir = resolve(dir ?? './data');
  mkdirSync(dataDir, { recursive: true });
  const dirLock = DataDirLock.acquire(dataDir); // held until stop, or until the process dies
  for (const w of doors.warnings) baseLog.warn({ host: listenHost }, w);
  let http: BoundHttp | undefined;
  let fsyncPool: FsyncPool | undefined;
  let started: StartedWorkers | undefined;
  try {
    const bucketUrl = bucket ?? defaultBucketUrl(dataDir);
    fsyncPool =
      config.fsyncThreadsMax > 0
        ? new FsyncPool({ threadsMax: config.fsyncThreadsMax, firstThreadAfterMs: FSYNC_THREADS_AFTER_MS })
        : undefined;
    started = startWorkers({ config, tunables, classUrls, bucketUrl, nodeId, baseLog, fsyncPool }, dataDir, unsafe);
    if (port !== undefined && frontDoor) {
      const access = { ...(tokens ? { tokens } : {}), ...(clusterKey ? { clusterKey } : {}), ...(tls.server ? { tls: tls.server } : {}) };
      http = await frontDoor({ port, host: listenHost, bodyMaxBytes: config.httpBodyMaxBytes, limits: config, log: baseLog, ...access });
    }
    const addr = advertise ?? http?.url ?? '';
    const parts = {
      config,
      classUrls,
      methods,
      served,
      bucketUrl,
      baseLog,
      http,
      clusterKey,
      addr,
      peersAllow,
      peerTls: tls.client,
      fsyncPool,
    };
    // The rest of the node's code (the Node, membership, metrics, the bucket's client) loads while
    // the workers boot: loaded before them, it kept the second core idle for most of a start.
    const { startLocked } = await import('./start-locked.js');
    const workers = started;
    started = undefined; // startLocked's from here
    return await startLocked(parts, workers, dataDir, dirLock, unsafe);
  } catch (e) {
    await started?.workers.destroy();
    await fsyncPool?.close();
    await http?.close();
    dirLock.release();
    throw e;
  }
}

/** What startWorkers made before the port is bound and the lease written. */
export interface StartedWorkers {
  identity: NodeIdentity;
  shares: WorkerShares;
  workers: WorkerGroup;
  /** The workers' loading of the classes; awaited once the node serves. */
  loaded: Promise<void>;
}

/**
 * The worker threads, started as soon as the data dir is held: their threads boot and load the
 * classes (most of a start's CPU) while the main thread binds the port, opens the bucket and
 * writes the lease. They post nothing to the bucket before the main thread sends them an event,
 * which it does once the lease is live. The node's identity (its epoch bumped in the data dir)
 * comes first, as the workers are told the node's id.
 */
function startWorkers(
  parts: Pick<StartParts, 'config' | 'classUrls' | 'bucketUrl' | 'baseLog' | 'fsyncPool'> & {
    tunables: KeepworkOptions;
    nodeId: string | undefined;
  },
  dataDir: string,
  unsafe: UnsafeTestSeams,
): StartedWorkers {
  const { config, tunables, classUrls, bucketUrl, baseLog, fsyncPool } = parts;
  const identity = nextIdentity(dataDir, new SystemRandom(), parts.nodeId);
  const shares = new WorkerShares();
  const workers = new WorkerGroup(config, {
    dataDir,
    bucket: bucketUrl,
    classes: classUrls,
    options: {
      ...tunables,
      dbCacheMax: config.dbCacheMax,
      spareActorFiles: config.spareActorFiles,
      workerConcurrency: config.workerConcurrency,
    },
    logLevel: baseLog.level,
    nodeId: identity.nodeId,
    leaseValidUntil: shares.leaseValidUntil,
    requestCounts: shares.workerRequests.buffer,
    throttleStats: shares.workerThrottle.buffer,
    replicationWindows: shares.replicationWindowsBuffer,
    ...(fsyncPool ? { fsyncPool: fsyncPool.shared } : {}),
    rules: unsafe.rules ?? SAFE_RULES,
    ...(unsafe.clockOffsetMs ? { clockOffsetMs: unsafe.clockOffsetMs } : {}),
  });
  const loaded = workers.loadClasses(Object.keys(classUrls));
  loaded.catch(() => undefined); // awaited once the node serves
  return { identity, shares, workers, loaded };
}

export interface StartParts {
  config: ResolvedConfig;
  classUrls: Record<string, string>;
  methods: Record<string, string[]>;
  served: string[] | undefined;
  bucketUrl: string;
  baseLog: Logger;
  http: BoundHttp | undefined;
  clusterKey: ClusterKey | undefined;
  /** What the lease carries for other nodes to call: `advertise`, or the listen URL. */
  addr: string;
  peersAllow: PeersAllow | undefined;
  /** What the node's calls to other nodes trust and present (tls-material.ts). */
  peerTls: ClientTls;
  /** The node's fsync pool (none with fsyncThreadsMax 0): the main thread's and the workers' fsyncs. */
  fsyncPool: FsyncPool | undefined;
}

/**
 * `advertise` must be a node address (nodeAddrProblem) of the scheme the node serves, and with TLS
 * one its certificate names (else every peer's forward fails verification); an unspecified listen
 * host has no address of its own to offer.
 */
function checkAdvertise(host: string, advertise: string | undefined, tls: ServerTls | undefined): void {
  if (advertise === undefined) {
    if (['0.0.0.0', '::', '[::]', ''].includes(host))
      throw new BadConfig(
        `host ${host || '""'} listens everywhere and names no address other nodes can call: pass advertise (--advertise URL)`,
      );
    if (tls && !certNames(tls.leaf, host))
      throw new BadConfig(
        `the certificate of tls.cert (--tls-cert) does not name the listen host ${host}: pass advertise (--advertise URL) with a name it has`,
      );
    return;
  }
  const problem = nodeAddrProblem(advertise);
  if (problem) throw new BadConfig(`advertise ${JSON.stringify(advertise)} is not a node address: ${problem}`);
  const url = new URL(advertise);
  if (tls && url.protocol !== 'https:')
    throw new BadConfig(`advertise ${JSON.stringify(advertise)} must be an https URL: this node serves TLS (tls.cert, --tls-cert)`);
  if (!tls && url.protocol !== 'http:')
    throw new BadConfig(
      `advertise ${JSON.stringify(advertise)} is https, but this node serves plain HTTP: pass tls.cert and tls.key (--tls-cert, --tls-key)`,
    );
  if (tls && !certNames(tls.leaf, url.hostname))
    throw new BadConfig(
      `advertise ${JSON.stringify(advertise)}: the certificate of tls.cert (--tls-cert) does not name ${url.hostname} (its names: ${tls.leaf.subjectAltName ?? 'none'})`,
    );
}

/**
 * The config with its file-hungry sizes fitted to the process's open-file limit (file-budget.ts);
 * BAD_CONFIG when the sizes the user set cannot fit. Logged when anything was shrunk.
 */
function fitFiles(config: ResolvedConfig, tunables: KeepworkOptions, bucketUrl: string, log: Logger): ResolvedConfig {
  const { limit, source } = readFileLimit();
  const workers = workerCount(config);
  const set = new Set(Object.keys(tunables).filter((k) => tunables[k as Tunable] !== undefined) as Tunable[]);
  const plan = planFiles(limit, workers, config, set, bucketFilesOf(bucketUrl, config));
  if (plan.shrunk.length === 0) return config;
  const sizes = Object.fromEntries(plan.shrunk.map((k) => [k, plan.sizes[k]]));
  log.warn(
    { fileLimit: limit, fileLimitSource: source, workers, files: plan.files, ...sizes },
    `options sized down to fit the open-file limit (${limit}): ${plan.shrunk.map((k) => `${k} ${config[k]} → ${plan.sizes[k]}`).join(', ')}; raise the limit (ulimit -n) for larger caches`,
  );
  return Object.freeze({ ...config, ...plan.sizes });
}
