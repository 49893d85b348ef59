/**
 * How many open files the node may use, and what it spends them on (pure: `planFiles(limit,
 * workers, config, set, bucketFiles)` → sizes; file-limit.ts reads the limit).
 *
 * Every open file, socket and pipe of the process counts against one limit (RLIMIT_NOFILE). Past it
 * every open fails with EMFILE, on whichever thread asks next: the main thread's lease renewal as
 * readily as a worker's new actor. So the node plans its use at start, within the limit:
 *
 *   reserve    RESERVE_MAIN (the process's own: stdio, the data dir's lock, logs, the main thread's
 *              bucket files and forwards, lease renewals) + RESERVE_PER_WORKER per worker thread
 *              (its event loop) + `bucketFiles` per thread, main and workers, each with a bucket
 *              client of its own: storeSocketsMax sockets on S3, a folder's openFilesMax
 *   http       httpConnectionsMax
 *   spares     spareActorFiles per worker (each open while it is written: spare-files.ts)
 *   databases  FILES_PER_DB (the file and its -wal) per open actor database: per worker at
 *              most dbCacheMax kept, plus workerConcurrency in use past the LRU's bound
 *              (actor-slots.ts never evicts an actor an event is using)
 *
 * When the whole fits, nothing changes. When it does not, the options the user did not set shrink
 * to fit: httpConnectionsMax to at most a quarter of what is left after the reserve,
 * spareActorFiles to at most an eighth (over the workers), and the databases take the rest, split
 * evenly between the LRU (dbCacheMax) and the actors in use (workerConcurrency). Options the user
 * did set are kept as given; if they cannot fit, the start is refused with BAD_CONFIG naming them
 * and the limit (a node that ran out of files mid-burst would lose its lease while it looked
 * healthy; a refusal at start is the cheaper surprise).
 */
import type { Settings, Tunable } from '../core/config.js';
import { BadConfig } from '../core/errors.js';
import { FS_OPEN_FILES_MAX } from '../store/fs/options.js';

/** The file descriptors of one open actor database: the file and its WAL (EXCLUSIVE locking mode keeps
 *  the WAL's index in memory, no -shm file: actor-db.ts). */
export const FILES_PER_DB = 2;
/** The process's own files beside the workers' (measured: an idle node with no worker holds about 25). */
export const RESERVE_MAIN = 64;
/** Each worker thread's own files beside its databases (an idle worker adds about 4). */
export const RESERVE_PER_WORKER = 16;

/** The options the plan sizes. */
export type FileSized = 'dbCacheMax' | 'workerConcurrency' | 'spareActorFiles' | 'httpConnectionsMax';
export type FileBudgetSettings = Settings<FileSized>;

export interface FilePlan {
  /** The sizes to run with (the given ones when they fit). */
  sizes: Pick<FileBudgetSettings, FileSized>;
  /** Files the plan may use at most; never over `limit`. */
  files: number;
  /** The options shrunk to fit (empty when the given sizes fit). */
  shrunk: FileSized[];
}

/**
 * The sizes that fit `limit` open files with `workers` worker threads. `set`: the options the user
 * gave (kept as given); `bucketFiles`: the files or sockets each thread's bucket client keeps
 * open at most (bucketFilesOf). Throws BadConfig when no sizes fit.
 */
export function planFiles(
  limit: number,
  workers: number,
  config: FileBudgetSettings,
  set: ReadonlySet<Tunable>,
  bucketFiles: number,
): FilePlan {
  const reserve = RESERVE_MAIN + RESERVE_PER_WORKER * workers + bucketFiles * (workers + 1);
  const given = pick(config);
  if (reserve + filesOf(given, workers) <= limit) return { sizes: given, files: reserve + filesOf(given, workers), shrunk: [] };
  const free = limit - reserve;
  const sizes = { ...given };
  const fits = (k: FileSized) => !set.has(k);
  if (fits('httpConnectionsMax')) sizes.httpConnectionsMax = Math.min(given.httpConnectionsMax, Math.max(1, Math.floor(free / 4)));
  if (fits('spareActorFiles')) sizes.spareActorFiles = Math.min(given.spareActorFiles, Math.max(0, Math.floor(free / 8 / workers)));
  const dbs = Math.floor((free - sizes.httpConnectionsMax - workers * sizes.spareActorFiles) / workers / FILES_PER_DB);
  if (fits('workerConcurrency') && fits('dbCacheMax')) {
    sizes.workerConcurrency = Math.min(given.workerConcurrency, Math.floor(dbs / 2));
    sizes.dbCacheMax = Math.min(given.dbCacheMax, dbs - sizes.workerConcurrency);
  } else if (fits('workerConcurrency')) {
    sizes.workerConcurrency = Math.min(given.workerConcurrency, dbs - sizes.dbCacheMax);
  } else if (fits('dbCacheMax')) {
    sizes.dbCacheMax = Math.min(given.dbCacheMax, dbs - sizes.workerConcurrency);
  }
  const files = reserve + filesOf(sizes, workers);
  if (files > limit || sizes.dbCacheMax < 1 || sizes.workerConcurrency < 1 || sizes.httpConnectionsMax < 1)
    throw refusal(limit, workers, reserve, given, set);
  const shrunk = (Object.keys(sizes) as FileSized[]).filter((k) => sizes[k] !== given[k]);
  return { sizes, files, shrunk };
}

function pick(c: FileBudgetSettings): Pick<FileBudgetSettings, FileSized> {
  const { dbCacheMax, workerConcurrency, spareActorFiles, httpConnectionsMax } = c;
  return { dbCacheMax, workerConcurrency, spareActorFiles, httpConnectionsMax };
}

/** Files the sized parts use at most, the reserve aside. */
function filesOf(s: Pick<FileBudgetSettings, FileSized>, workers: number): number {
  return s.httpConnectionsMax + workers * (s.spareActorFiles + FILES_PER_DB * (s.dbCacheMax + s.workerConcurrency));
}

function refusal(limit: number, workers: number, reserve: number, given: Pick<FileBudgetSettings, FileSized>, set: ReadonlySet<Tunable>) {
  const named = (Object.keys(given) as FileSized[]).filter((k) => set.has(k));
  const what = named.length ? named.map((k) => `${k} ${given[k]}`).join(', ') : 'the smallest sizes';
  const dbFit = Math.floor((limit - reserve - given.httpConnectionsMax - workers * given.spareActorFiles) / workers / FILES_PER_DB);
  const hint =
    set.has('dbCacheMax') && dbFit - given.workerConcurrency >= 1 ? `; dbCacheMax fits up to ${dbFit - given.workerConcurrency}` : '';
  return new BadConfig(
    `${what} with ${workers} worker threads need more open files than the process may have ` +
      `(${limit}, RLIMIT_NOFILE; ${reserve} kept for the node itself): lower ${named.length ? named.join(' or ') : 'workerThreads'}, ` +
      `or raise the limit (ulimit -n; LimitNOFILE in a systemd unit)${hint}`,
    { details: { limit, workers, reserve, ...Object.fromEntries(named.map((k) => [k, given[k]])) } },
  );
}

/**
 * The files or sockets one thread's bucket client keeps open at most: storeSocketsMax on S3, a
 * folder's openFilesMax (fs/file-gate.ts), none for a bucket in memory; a SQLite bucket's file
 * and its WAL are within the reserve.
 */
export function bucketFilesOf(bucketUrl: string, config: Settings<'storeSocketsMax'>): number {
  if (bucketUrl.startsWith('s3://')) return config.storeSocketsMax;
  if (bucketUrl.startsWith('memory:') || bucketUrl.startsWith('sqlite:')) return 0;
  return FS_OPEN_FILES_MAX;
}
