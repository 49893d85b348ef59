/**
 * FsStore: the embedded bucket, a folder that every process and thread of one host may share
 * (docs/architecture.md). It keeps the `ObjectStore` contract of `store/types.ts`, conditional writes
 * included, between threads and between OS processes. This file holds the store itself (reads,
 * deletes, folder pruning, error mapping) and `parseFsUrl`; the parts live beside it:
 *
 *   fs/options.ts   FsStoreOptions, FS_STORE_DEFAULTS, validation
 *   fs/paths.ts     on-disk format: key ⇄ path encoding, long-segment and due-time pieces, internal names
 *   fs/format.ts    the `~format` stamp; a folder of an older format is refused (fs/migrate.ts converts it)
 *   fs/lock.ts      the host lock (SQLite's write lock on <root>/~lock.db)
 *   fs/write.ts     temp file → object: create by link, replace under the lock; the concurrency argument
 *   fs/commit.ts    group commit: the puts waiting together fsynced, installed and answered together
 *   fs/fsync-pool.ts    the node's fsync pool (fs/fsync-queue.ts its queue): a node's stores fsync there
 *   fs/fsync-thread.ts  with `fsyncThread`: the store's fsyncs on a thread of its own (the node's lease)
 *   fs/list.ts      the byte-order listing walk
 *   fs/io.ts        small file-system helpers
 *
 * Deletes unlink under the host lock, `deleteBatchKeys` keys per acquisition, then fsync the
 * folders. Folders emptied by a delete are removed (best effort); writes that race with that
 * re-create the folder (fs/write.ts). An I/O step failing with a transient error (EMFILE, EAGAIN,
 * ...) is retried up to `attemptsMax` times, the delay doubling from `retryBaseMs`.
 *
 * Limits: one host, a local POSIX filesystem with hard links and fcntl locks (not NFS/SMB), case-
 * sensitive names; the root path plus up to 3× the key length must fit in PATH_MAX (4096).
 * Opened `readOnly` (the CLI's commands that only look), it writes nothing at all — no `~tmp`,
 * no `~lock.db`, no format stamp — refuses puts and deletes with BadRequest, and refuses a folder
 * that is not a bucket of this format already (an empty one included).
 *
 * Errors: `BadConfig` when opened on a folder of another on-disk format, or one that is not a
 * bucket (fs/format.ts);
 * `BadKey`/`BadRequest` before any I/O; `PreconditionFailed`; `StoreUnavailable` when the write
 * did not happen (or a read failed); `AmbiguousWrite` when the object became visible but the
 * folder fsync failed.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SystemClock, type Clock } from '../../core/clock.js';
import { BadConfig, BadRequest, KeepworkError, StoreUnavailable } from '../../core/errors.js';
import { retry } from '../../core/retry.js';
import { etagOf } from '../etag.js';
import { checkFormat, checkFormatReadOnly } from './format.js';
import { asBytes, codeOf, DISK_DURABILITY, fsyncDoesNothing, isMissing, TRANSIENT, unlinkIfPresent, type FsDurability } from './io.js';
import { ListWalk } from './list.js';
import { HostLock } from './lock.js';
import { resolveFsOptions, type FsConfig, type FsStoreOptions } from './options.js';
import { folderNames, insideRoot, LOCK_FILE_NAME, objectNames, TEMP_DIR_NAME, type Target } from './paths.js';
import { FolderSyncs } from './sync.js';
import { modeOf } from '../conditions.js';
import { installAll, writeTemp } from './write.js';
import { PutCommits } from './commit.js';
import { FsyncThread } from './fsync-thread.js';
import { FileGate } from './file-gate.js';
import { filesExhausted, isOutOfFiles } from '../../core/files-exhausted.js';
import { pageOf, resolveList, validateKey } from '../keys.js';
import type { ListOptions, ListPage, ObjectHead, ObjectStore, PutCondition, StoredObject } from '../types.js';

export { FS_STORE_DEFAULTS, type FsStoreOptions } from './options.js';
export { FORMAT_FILE_NAME, FS_FORMAT } from './format.js';
export { migrateFsBucket, type MigrateResult } from './migrate.js';
export { decodeSegment, encodeSegment, INTERNAL_MARK, LOCK_FILE_NAME, objectNames, PIECE_CHARS_MAX, TEMP_DIR_NAME } from './paths.js';

/** `file:///abs`, `file://./rel` or `file://../rel` (from the cwd), or a plain path → absolute path. */
export function parseFsUrl(urlOrPath: string): string {
  if (typeof urlOrPath !== 'string' || urlOrPath === '') throw new BadConfig('bucket path must be a non-empty string');
  if (!/^file:/i.test(urlOrPath)) return path.resolve(urlOrPath);
  const rest = urlOrPath.replace(/^file:\/\//i, '');
  if (rest === urlOrPath || /[?#]/.test(rest))
    throw new BadConfig(`bucket URL ${urlOrPath} must look like file:///abs/path or file://./rel/path`);
  if (rest.startsWith('./') || rest.startsWith('../') || rest === '.' || rest === '..') return path.resolve(decodeURIComponent(rest));
  try {
    return fileURLToPath(urlOrPath);
  } catch (e) {
    throw new BadConfig(`bucket URL ${urlOrPath} must look like file:///abs/path or file://./rel/path`, { cause: e });
  }
}

export class FsStore implements ObjectStore {
  readonly description: string;
  readonly root: string;
  readonly #config: FsConfig;
  /** The puts and listings under way, each holding files open while it waits for the disk. */
  readonly #files: FileGate;
  readonly #tempDir: string;
  /** None when opened read-only: creating it would write `~lock.db`. */
  readonly #lock: HostLock | undefined;
  readonly #clock: Clock;
  readonly #durability: FsDurability;
  readonly #syncs: FolderSyncs;
  /** With `fsyncThread`: the thread its fsyncs are made on. */
  readonly #thread: FsyncThread | undefined;
  /** Made on the first put (never on a store opened read-only). */
  #commits: PutCommits | undefined;
  /** `fsync` asked for, on a file system where it does something (fs/io.ts `fsyncDoesNothing`). */
  readonly #fsync: boolean;
  #closed = false;

  /**
   * `clock`: what retries and the host lock's polls sleep on (the wall clock by default);
   * `durability`: where the fsyncs of temp files and folders are made (in a node, its fsync pool:
   * fs/fsync-queue.ts; a test seam); by default on libuv's pool or, with `fsyncThread`, on a
   * thread of the store's own.
   */
  constructor(root: string, options?: FsStoreOptions, clock: Clock = new SystemClock(), durability?: FsDurability) {
    this.#config = resolveFsOptions(options);
    if (durability === undefined && this.#config.fsyncThread && !this.#config.readOnly) durability = this.#thread = new FsyncThread();
    durability ??= DISK_DURABILITY;
    this.#durability = durability;
    this.#syncs = new FolderSyncs(durability.fsyncFolder);
    this.#files = new FileGate(this.#config.openFilesMax);
    this.#clock = clock;
    this.root = parseFsUrl(root);
    this.description = `fs:${this.root}`;
    this.#tempDir = path.join(this.root, TEMP_DIR_NAME);
    if (this.#config.readOnly) {
      checkFormatReadOnly(this.root);
      this.#fsync = false;
      this.#lock = undefined;
      return;
    }
    fs.mkdirSync(this.root, { recursive: true });
    checkFormat(this.root, this.#tempDir); // before anything is written: a folder that is no bucket stays as it was
    fs.mkdirSync(this.#tempDir, { recursive: true });
    // One answer for the whole bucket: a write links its temp file into place, which fails across
    // file systems, so every object lives on the file system of the temp folder.
    this.#fsync = this.#config.fsync && !fsyncDoesNothing(this.#tempDir);
    this.#lock = new HostLock(path.join(this.root, LOCK_FILE_NAME), this.#config.lockWaitMs, clock);
  }

  /** Whether writes and deletes are fsynced: `fsync` asked for, on a file system where fsync does something. */
  get fsyncs(): boolean {
    return this.#fsync;
  }

  async get(key: string): Promise<StoredObject | null> {
    const target = this.#target(key);
    const buf = await this.#readOrNull(target.file, 'get', key);
    return buf === null ? null : { body: asBytes(buf), etag: etagOf(buf) };
  }

  async head(key: string): Promise<ObjectHead | null> {
    const target = this.#target(key);
    const buf = await this.#readOrNull(target.file, 'head', key);
    return buf === null ? null : { etag: etagOf(buf), size: buf.byteLength };
  }

  async put(key: string, body: Uint8Array, condition?: PutCondition): Promise<{ etag: string }> {
    const target = this.#target(key);
    const mode = modeOf(condition);
    if (!(body instanceof Uint8Array)) throw new BadRequest(`put ${key}: body must be a Uint8Array`);
    const lock = this.#writable('put', key);
    const commits = (this.#commits ??= this.#putCommits(lock));
    // A retry (a transient error) starts over with a new temp file: a put that failed left nothing behind.
    return this.#files.run(() =>
      this.#guard('put', key, async () => {
        await commits.commit(writeTemp(this.#tempDir, body), { target, mode, key }, body.byteLength);
        return { etag: etagOf(body) };
      }),
    );
  }

  #putCommits(lock: HostLock): PutCommits {
    const { putBatchObjectsMax, putBatchBytesMax } = this.#config;
    return new PutCommits({
      root: this.root,
      fsync: this.#fsync,
      putBatchObjectsMax,
      putBatchBytesMax,
      durability: this.#durability,
      syncs: this.#syncs,
      install: (installs) => installAll(installs, lock, this.#config),
    });
  }

  async delete(key: string): Promise<void> {
    await this.deleteMany([key]);
  }

  async deleteMany(keys: readonly string[]): Promise<void> {
    const targets = [...new Set(keys.map((k) => validateKey(k)))].map((key) => ({ key, ...this.#target(key) }));
    for (let i = 0; i < targets.length; i += this.#config.deleteBatchKeys) {
      await this.#deleteBatch(targets.slice(i, i + this.#config.deleteBatchKeys));
    }
  }

  /** Unlinks a batch under one lock acquisition, then fsyncs and prunes the folders it touched. */
  async #deleteBatch(batch: (Target & { key: string })[]): Promise<void> {
    const what = batch.length === 1 ? batch[0]!.key : `${batch.length} keys from ${batch[0]!.key}`;
    const lock = this.#writable('delete', what);
    const removed = await this.#guard('delete', what, () =>
      lock.run(() => batch.filter((t) => unlinkIfPresent(t.file)), this.#config.lockWaitMs),
    );
    const dirs = [...new Set(removed.map((t) => t.dir))];
    if (this.#fsync) await this.#guard('delete', what, () => Promise.all(dirs.map((d) => this.#syncs.sync(d))));
    this.#pruneEmpty(dirs);
  }

  async list(options?: ListOptions): Promise<ListPage> {
    const { prefix, after, maxKeys } = resolveList(options);
    this.#assertOpen();
    const segments = prefix.split('/');
    const complete = segments.slice(0, -1);
    const dir = complete.length === 0 ? this.root : insideRoot(this.root, complete.flatMap(folderNames));
    const keys = await this.#files.run(() =>
      this.#guard('list', prefix, async () => {
        const walk = new ListWalk(prefix, after, maxKeys + 1, this.#config.largeFolderBytes); // afresh for each attempt
        await walk.walk(dir, complete.length === 0 ? '' : complete.join('/') + '/');
        return walk.keys;
      }),
    );
    return pageOf(keys, maxKeys);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#lock?.close();
    await this.#thread?.close();
  }

  // --- helpers -------------------------------------------------------------------------------

  #target(key: string): Target {
    const names = objectNames(validateKey(key));
    this.#assertOpen();
    const file = insideRoot(this.root, names);
    return { file, dir: path.dirname(file) };
  }

  /** The host lock a write takes; BadRequest on a store opened read-only (nothing is written). */
  #writable(op: string, key: string): HostLock {
    if (this.#lock === undefined) throw new BadRequest(`${this.description} was opened read-only: ${op} ${key} refused`);
    return this.#lock;
  }

  #assertOpen(): void {
    if (this.#closed) throw new StoreUnavailable(`${this.description} is closed`);
  }

  /**
   * Runs an I/O step, retrying transient errors; maps unexpected errors to StoreUnavailable, and
   * running out of file descriptors past the retries to FILES_EXHAUSTED.
   */
  async #guard<T>(op: string, key: string, step: () => Promise<T>): Promise<T> {
    const { attemptsMax, retryBaseMs } = this.#config;
    const retryable = (e: unknown) => !(e instanceof KeepworkError) && TRANSIENT.has(codeOf(e) ?? '');
    try {
      return await retry({ clock: this.#clock }, { attemptsMax, baseMs: retryBaseMs, jitter: false, retryable }, step);
    } catch (e) {
      if (e instanceof KeepworkError) throw e;
      if (isOutOfFiles(e)) throw filesExhausted(`${this.description}: ${op} ${key}`, e);
      throw new StoreUnavailable(`${this.description}: ${op} ${key} failed (${codeOf(e) ?? String(e)})`, { cause: e });
    }
  }

  async #readOrNull(file: string, op: string, key: string): Promise<Buffer | null> {
    return this.#guard(op, key, async () => {
      try {
        return fs.readFileSync(file);
      } catch (e) {
        if (isMissing(e)) return null;
        throw e;
      }
    });
  }

  /**
   * Removes folders a batch of deletes left empty, up to (not including) the root: the deepest
   * first, so each folder is tried once, after every folder of the batch inside it. (Walking up
   * from each folder in turn tried a parent the batch's folders share once per folder: a failed
   * rmdir — a thrown error — per index entry a delivery deleted.)
   */
  #pruneEmpty(dirs: readonly string[]): void {
    const byDepth = new Map<number, Set<string>>();
    const candidate = (dir: string) => {
      if (!dir.startsWith(this.root + path.sep)) return;
      const depth = dir.split(path.sep).length;
      const level = byDepth.get(depth) ?? new Set<string>();
      byDepth.set(depth, level.add(dir));
    };
    dirs.forEach(candidate);
    for (let depth = Math.max(0, ...byDepth.keys()); depth > 0; depth--) {
      for (const dir of byDepth.get(depth) ?? []) {
        try {
          fs.rmdirSync(dir);
        } catch {
          continue; // ENOTEMPTY, ENOENT (a racing delete), anything else: leave it and its parents
        }
        candidate(path.dirname(dir));
      }
    }
  }
}
