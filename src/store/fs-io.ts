/**
 * Small file-system helpers shared by the FsStore modules: error codes, the transient-error set,
 * a sleep on the injected clock for lock polling, fsync of a path, and unlink/readdir that treat a missing
 * file as an answer rather than an error.
 *
 * The store's steps are synchronous system calls except the ones that wait for the disk (fsync,
 * and reading a folder of thousands of names): an open, write, link, rename or unlink of a small
 * file takes microseconds, and each one sent to libuv's thread pool cost more than itself in
 * thread handoffs and promise callbacks (docs/benchmarks.md, "The folder bucket's system calls").
 * An fsync waits for the disk, so it stays on the pool and the event loop goes on meanwhile.
 */
import { closeSync, fsync, openSync, readdirSync, statSync, unlinkSync, type Dirent } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { promisify } from 'node:util';
import type { Clock } from '../core/clock.js';

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

/** fsync(2) of an open file on libuv's thread pool. */
export const fsyncFd: (fd: number) => Promise<void> = promisify(fsync);

export async function fsyncPath(file: string): Promise<void> {
  const fd = openSync(file, 'r');
  try {
    await fsyncFd(fd);
  } finally {
    closeSync(fd);
  }
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

/** A folder larger than this (st_size: about its names' bytes on ext4, xfs and tmpfs) is read off the event loop. */
export const LARGE_FOLDER_BYTES = 64 * 1024;

/**
 * A folder's entries (none when it is not there): read synchronously when it is small (fs-list.ts
 * says why), in the threadpool when its size says it holds thousands of names, so one large
 * folder (many actors due at the same millisecond) does not hold the event loop.
 */
export function readDirentsQuick(dir: string): Dirent[] | Promise<Dirent[]> {
  try {
    if (statSync(dir).size <= LARGE_FOLDER_BYTES) return readdirSync(dir, { withFileTypes: true });
  } catch (e) {
    if (isMissing(e)) return [];
    throw e;
  }
  return readdir(dir, { withFileTypes: true }).catch((e: unknown) => {
    if (isMissing(e)) return [];
    throw e;
  });
}

export function asBytes(buf: Buffer): Uint8Array {
  return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
}
