/**
 * FsStore options: `FsStoreOptions` (all optional) → `FS_STORE_DEFAULTS` →
 * `resolveFsOptions`, which refuses unknown names and out-of-range values with `BadConfig`.
 */
import { BadConfig } from '../../core/errors.js';
import { LARGE_FOLDER_BYTES } from './list.js';

export interface FsStoreOptions {
  /** fsync temp files and folders (turn off only for throwaway data). */
  fsync?: boolean;
  /** How long a replace or delete waits for the host lock before `StoreUnavailable`. */
  lockWaitMs?: number;
  /** Attempts of an I/O step that fails with a transient error (EMFILE, EAGAIN, ...). */
  attemptsMax?: number;
  /** First delay between those attempts (doubles). */
  retryBaseMs?: number;
  /** Retries of a write whose folder a concurrent delete removed. */
  folderRacesMax?: number;
  /** Keys removed per lock acquisition in `deleteMany`. */
  deleteBatchKeys?: number;
  /**
   * A folder whose size (st_size) is over this is listed as a large one: streamed a chunk of
   * names at a time and cut as it goes to the page it serves (fs/list.ts). 0 lists every folder
   * that way.
   */
  largeFolderBytes?: number;
  /**
   * Open the folder for reading only: nothing is ever created or written in it (no `~tmp`, no
   * `~lock.db`, no format stamp); puts and deletes are refused with BadRequest, and a folder that
   * is not a bucket already (an empty one included) is refused with BadConfig.
   */
  readOnly?: boolean;
  /** Files a put, a folder sync or a listing keeps open at once, at most (fs/file-gate.ts); more wait. */
  openFilesMax?: number;
  /** Puts made durable together by one group commit, at most (fs/commit.ts). */
  putBatchObjectsMax?: number;
  /** Bytes of bodies in one group commit, at most; a larger body is committed on its own. */
  putBatchBytesMax?: number;
  /**
   * fsync on a thread of the store's own (fs/fsync-thread.ts) rather than on libuv's thread pool:
   * the store's writes then never wait behind other file work of the process. For a store of a
   * few small writes that must not be held up: the node's lease.
   */
  fsyncThread?: boolean;
}

/** The default of openFilesMax: plenty for the threads that fsync (fs/fsync-pool.ts) to work with. */
export const FS_OPEN_FILES_MAX = 32;

export const FS_STORE_DEFAULTS = Object.freeze({
  fsync: true,
  lockWaitMs: 10_000,
  attemptsMax: 4,
  retryBaseMs: 50,
  folderRacesMax: 16,
  deleteBatchKeys: 256,
  largeFolderBytes: LARGE_FOLDER_BYTES,
  openFilesMax: FS_OPEN_FILES_MAX,
  putBatchObjectsMax: FS_OPEN_FILES_MAX,
  putBatchBytesMax: 16 * 1024 * 1024,
  readOnly: false,
  fsyncThread: false,
});

const SWITCHES = new Set(['fsync', 'readOnly', 'fsyncThread']);
/** Options that may be 0. */
const ZERO_ALLOWED = new Set(['retryBaseMs', 'largeFolderBytes']);

export type FsConfig = {
  -readonly [K in keyof typeof FS_STORE_DEFAULTS]: (typeof FS_STORE_DEFAULTS)[K] extends boolean ? boolean : number;
};

export function resolveFsOptions(options: FsStoreOptions = {}): FsConfig {
  const merged: FsConfig = { ...FS_STORE_DEFAULTS };
  for (const [name, value] of Object.entries(options)) {
    if (!(name in FS_STORE_DEFAULTS))
      throw new BadConfig(`unknown FsStore option ${name}; known: ${Object.keys(FS_STORE_DEFAULTS).join(', ')}`);
    if (value === undefined) continue;
    if (SWITCHES.has(name)) {
      if (typeof value !== 'boolean') throw new BadConfig(`${name} must be a boolean, got ${JSON.stringify(value)}`);
    } else if (!Number.isSafeInteger(value) || (value as number) < (ZERO_ALLOWED.has(name) ? 0 : 1)) {
      throw new BadConfig(
        `${name} must be a ${ZERO_ALLOWED.has(name) ? 'non-negative' : 'positive'} integer, got ${JSON.stringify(value)}`,
      );
    }
    (merged as Record<string, unknown>)[name] = value;
  }
  return merged;
}
