/**
 * Opens the bucket a URL names — the one place that knows every store kind:
 *
 *   file:///abs/path · file://./rel/path · ./plain/path   → FsStore
 *   s3://bucket/prefix?endpoint=http://host:port&region=r → S3Store
 *   sqlite:/abs/file · sqlite:///abs/file · sqlite:./rel   → SqliteStore (one host: every node's threads share one file;
 *                                                           the embedded default, defaultBucketUrl)
 *   memory:                                               → MemoryStore (tests; one per call)
 *   memory:<name>                                         → one MemoryStore for every thread of the process (testing/shared-memory.ts)
 *   latency+<any of these>[?ms=20]                        → LatencyStore around it (benchmarks)
 *   fault+<any of these>[?seed=…&unavailable=…&…]         → FaultStore around it (tests, benchmarks, chaos); its
 *                                                           fsyncFailFile reaches a folder bucket's fsyncs
 *
 * Whatever the URL, the store returned is a GovernedStore around it (throttle/governed-store.ts):
 * each request class's window, and a throttle answer from any layer below taken as a signal.
 */
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { SystemClock, type Clock } from '../core/clock.js';
import { BadConfig } from '../core/errors.js';
import { SeededRandom, SystemRandom, type Random } from '../core/random.js';
import { resolveOptions, type Settings } from '../core/config.js';
import { FsStore, parseFsUrl } from './fs/store.js';
import { SQLITE_SCHEME, SqliteStore, parseSqliteUrl } from './sqlite/store.js';
import { FAULT_SCHEME, FaultStore, failingFsync, parseFaultUrl } from './testing/faults.js';
import type { FsDurability } from './fs/io.js';
import { LATENCY_SCHEME, LatencyStore, parseLatencyUrl } from './testing/latency.js';
import { MemoryStore } from './memory.js';
import { openSharedMemory, sharedMemoryName } from './testing/shared-memory.js';
import { S3Store, type S3Settings } from './s3/store.js';
import { parseS3Url } from './s3/url.js';
import type { ObjectStore } from './types.js';
import { GovernedStore } from './throttle/governed-store.js';
import { Governor, type GovernorSettings } from './throttle/governor.js';
import type { ThrottleSink } from './throttle/stats.js';

/**
 * The bucket a node uses when none is given: the SQLite file `bucket.db` in its data dir, unless the
 * data dir has a folder `bucket` (a node started before the SQLite file was the default, or given
 * that folder): then that folder, since a new file beside it would hide every actor it holds. The
 * SQLite file is the default because on a disk it shares its fsyncs between writes (docs/benchmarks.md).
 */
export function defaultBucketUrl(dataDir: string): string {
  const folder = resolve(dataDir, 'bucket');
  if (statSync(folder, { throwIfNoEntry: false })?.isDirectory()) return pathToFileURL(folder).href;
  return SQLITE_SCHEME + resolve(dataDir, 'bucket.db');
}

/**
 * What every store needs: the S3 client's settings (the folder store uses the timeout as its lock
 * wait, the attempts and first retry delay as its own) and the folder store's group-commit bounds.
 */
export type StoreSettings = S3Settings & GovernorSettings & Settings<'storePutBatchObjectsMax' | 'storePutBatchBytesMax'>;

export interface OpenStoreDeps {
  config?: StoreSettings;
  clock?: Clock;
  random?: Random;
  /** Open a bucket on this machine's disk for reading only: nothing is created or written in it (the CLI's looks). */
  readOnly?: boolean;
  /** Where the governor records throttle answers and window sizes (a node's metrics). */
  throttle?: ThrottleSink;
  /**
   * A folder or SQLite bucket fsyncs on a thread of its own, never on libuv's pool or the node's fsync
   * pool (fs/fsync-thread.ts): for the node's lease, whose renewals must not wait behind other file
   * work. Other buckets ignore it.
   */
  fsyncThread?: boolean;
  /**
   * Where a folder or SQLite bucket's fsyncs are made: the node's fsync pool (fs/fsync-queue.ts);
   * libuv's thread pool when not given. Other buckets ignore it.
   */
  fsyncs?: FsDurability;
}

/**
 * The bucket on this machine's disk a URL names — a folder (FsStore) or a SQLite file — with its
 * path; null for any other URL (s3://, an unknown scheme, `memory:`, `latency+…`, `fault+…`). The CLI uses it
 * to tell a missing bucket from a typo before opening anything.
 */
export function localBucket(url: string): { kind: 'folder' | 'sqlite'; path: string } | null {
  if (url.startsWith(SQLITE_SCHEME)) return { kind: 'sqlite', path: parseSqliteUrl(url) };
  if (url === 'memory:' || (/^[a-z][a-z0-9+.-]*:\/\//i.test(url) && !/^file:\/\//i.test(url))) return null;
  return { kind: 'folder', path: parseFsUrl(url) };
}

export function openStore(url: string, deps: OpenStoreDeps = {}): GovernedStore {
  if (typeof url !== 'string' || url.trim() === '') throw new BadConfig('bucket must be a URL or a path, got an empty value');
  const clock = deps.clock ?? new SystemClock();
  const random = deps.random ?? new SystemRandom();
  const config = deps.config ?? resolveOptions();
  const bare = openBare(url, { ...deps, clock, random, config });
  return new GovernedStore(bare, new Governor(config, clock, random, deps.throttle));
}

/** The store a URL names, without the governor (the wrappers' inner stores). */
function openBare(url: string, deps: OpenStoreDeps & { clock: Clock; random: Random; config: StoreSettings }): ObjectStore {
  const { clock, config } = deps;
  if (url.startsWith(LATENCY_SCHEME)) {
    const { inner, ms } = parseLatencyUrl(url);
    return new LatencyStore(openBare(inner, deps), clock, ms);
  }
  if (url.startsWith(FAULT_SCHEME)) {
    const { inner, plan, seed } = parseFaultUrl(url);
    const random = seed === undefined ? deps.random : new SeededRandom(seed);
    const innerDeps = plan.fsyncFailFile === '' ? deps : { ...deps, fsyncs: failingFsync(plan.fsyncFailFile, deps.fsyncs) };
    return new FaultStore(openBare(inner, innerDeps), clock, random, plan);
  }
  if (url === 'memory:') return new MemoryStore({ clock });
  const shared = sharedMemoryName(url);
  if (shared !== null) return openSharedMemory(shared, clock);
  if (url.startsWith('s3://')) {
    return new S3Store({ ...parseS3Url(url), config, random: deps.random, clock });
  }
  const local = localBucket(url);
  if (local === null) {
    throw new BadConfig(`bucket URL scheme not supported: ${JSON.stringify(url)}; use file://, s3://, sqlite: or a path`);
  }
  if (local.kind === 'sqlite') {
    return new SqliteStore(
      local.path,
      { lockWaitMs: config.storeRequestTimeoutMs, fsyncThread: deps.fsyncThread === true, ...(deps.fsyncs ? { fsyncs: deps.fsyncs } : {}) },
      clock,
    );
  }
  return new FsStore(
    local.path,
    {
      lockWaitMs: config.storeRequestTimeoutMs,
      attemptsMax: config.storeAttemptsMax,
      retryBaseMs: config.storeRetryBaseMs,
      putBatchObjectsMax: config.storePutBatchObjectsMax,
      putBatchBytesMax: config.storePutBatchBytesMax,
      readOnly: deps.readOnly === true,
      fsyncThread: deps.fsyncThread === true,
    },
    clock,
    deps.fsyncs,
  );
}
