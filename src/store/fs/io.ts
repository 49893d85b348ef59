/**
 * Small file-system helpers shared by the FsStore modules: error codes, the transient-error set,
 * a sleep on the injected clock for lock polling, fsync of a path, and an unlink that treats a
 * missing file as an answer rather than an error.
 *
 * The store's steps are synchronous system calls except the ones that wait for the disk (fsync,
 * and reading a folder of thousands of names, fs/list.ts): an open, write, link, rename or
 * unlink of a small file takes microseconds, and each one sent to libuv's thread pool cost more
 * than itself in thread handoffs and promise callbacks (docs/benchmarks.md, "The folder bucket's system calls").
 * An fsync waits for the disk, so it is made off the calling thread and the event loop goes on
 * meanwhile: in a node on the node's fsync pool (fs/fsync-pool.ts), which the app's file work
 * cannot hold; the writes that must never wait behind other fsyncs (the node's lease) on a thread
 * of their store's own (fs/fsync-thread.ts); anywhere else (a store opened alone, the CLI) on
 * libuv's pool.
 */
import { closeSync, fsync, fsyncSync, openSync, statfsSync, unlinkSync, writeSync } from 'node:fs';
import { promisify } from 'node:util';
import type { Clock } from '../../core/clock.js';

export function codeOf(e: unknown): string | undefined {
  return typeof e === 'object' && e !== null && 'code' in e ? String((e as { code: unknown }).code) : undefined;
}

/** Whether `e` says the path (or one of its folders) is not there. */
export function isMissing(e: unknown): boolean {
  return codeOf(e) === 'ENOENT' || codeOf(e) === 'ENOTDIR';
}

export const TRANSIENT = new Set(['EMFILE', 'ENFILE', 'EAGAIN', 'EBUSY', 'EINTR']);

/** Sleeps `ms` on the injected clock; 0 (or less) only yields one turn of the event loop (the host lock's quick polls). */
export function sleepOn(clock: Clock, ms: number): Promise<void> {
  return ms <= 0 ? new Promise((resolve) => setImmediate(resolve)) : clock.sleep(ms);
}

/** statfs(2) types of the file systems that live in memory only: fsync(2) on them does nothing. */
const MEMORY_FILE_SYSTEMS = new Set([
  0x01021994, // tmpfs (also /dev/shm)
  0x858458f6, // ramfs
]);

/**
 * Whether fsync(2) does nothing on the file system holding `path`: tmpfs or ramfs, whose files are
 * gone at a power loss anyway, while a crashed process's writes stay in the page cache without one.
 * There an fsync would only cost its trip through libuv's thread pool: CPU over the threads
 * involved (a wake-up, a context switch, the pool's lock, a promise), a large share of a delivered
 * alarm's CPU on tmpfs (docs/benchmarks.md, "fsync on tmpfs"). False when in doubt (statfs failed:
 * the path is not there yet, or the platform has no statfs).
 */
export function fsyncDoesNothing(path: string): boolean {
  try {
    return MEMORY_FILE_SYSTEMS.has(Number(statfsSync(path).type));
  } catch {
    return false;
  }
}

/** fsync(2) of an open file, off the calling thread. */
export type FsyncFile = (fd: number) => Promise<void>;

/** fsync(2) of an open file on libuv's thread pool. */
export const fsyncFd: FsyncFile = promisify(fsync);

/** fsync(2) of a file or folder by path, on this thread (where there is no event loop to yield to: a constructor). */
export function fsyncPathSync(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export async function fsyncPath(file: string): Promise<void> {
  const fd = openSync(file, 'r');
  try {
    await fsyncFd(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * The two waits for the disk a put makes: fsync(2) of its temp file and of a folder. A test seam
 * (records their order against the link or rename between them); fs/commit.ts says when each runs.
 */
export interface FsDurability {
  fsyncFile(fd: number): Promise<void>;
  fsyncFolder(dir: string): Promise<void>;
}

export const DISK_DURABILITY: FsDurability = Object.freeze({ fsyncFile: fsyncFd, fsyncFolder: fsyncPath });

/**
 * The same two fsyncs as synchronous system calls on the calling thread: they never enter libuv's
 * pool, and the thread waits for the disk meanwhile (fs/fsync-thread.ts, until its thread runs).
 */
export const INLINE_DURABILITY: FsDurability = Object.freeze({
  fsyncFile: async (fd: number) => fsyncSync(fd),
  fsyncFolder: async (dir: string) => fsyncPathSync(dir),
});

/**
 * Writes `body` into the new, empty file open on `fd` (named `file`), fsyncs it with `fsync`
 * (null: not at all, where fsync does nothing), and closes it; on a failure the file is closed and
 * removed. Synchronous but for the fsync.
 */
export async function fillNewFile(fd: number, file: string, body: Uint8Array, fsync: FsyncFile | null): Promise<void> {
  try {
    for (let at = 0; at < body.byteLength;) at += writeSync(fd, body, at, body.byteLength - at);
    if (fsync) await fsync(fd);
  } catch (e) {
    closeSync(fd);
    unlinkQuiet(file);
    throw e;
  }
  closeSync(fd);
}

export function unlinkQuiet(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // gone already, or never made: nothing to clean up
  }
}

/** Unlinks `file`; false when it was not there. */
export function unlinkIfPresent(file: string): boolean {
  try {
    unlinkSync(file);
    return true;
  } catch (e) {
    if (isMissing(e)) return false;
    throw e;
  }
}

export function asBytes(buf: Buffer): Uint8Array {
  return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
}
