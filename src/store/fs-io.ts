/**
 * Small file-system helpers shared by the FsStore modules: error codes, the transient-error set,
 * a sleep on the injected clock for lock polling, fsync of a path, and unlink/readdir that treat a missing
 * file as an answer rather than an error.
 */
import { readdirSync, unlinkSync, type Dirent } from 'node:fs';
import { open, unlink } from 'node:fs/promises';
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

export async function fsyncPath(file: string): Promise<void> {
  const handle = await open(file, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export async function unlinkQuiet(file: string): Promise<void> {
  await unlink(file).catch(() => undefined);
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

/** A folder's entries, read synchronously (fs-list.ts says why); none when it is not there. */
export function readDirentsSync(dir: string): Dirent[] {
  try {
    return readdirSync(dir, { withFileTypes: true });
  } catch (e) {
    if (isMissing(e)) return [];
    throw e;
  }
}

export function asBytes(buf: Buffer): Uint8Array {
  return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
}
