/**
 * The sidecar `<db>.chain`: which link of the bucket's chain the local database file equals,
 * and where WAL capture stopped — so a take whose head equals it downloads nothing, and changes
 * committed locally but never uploaded can be told apart (docs/architecture.md).
 *
 *   {"seq":7,"etag":"9b2…","generation":3,"cursor":{"offset":4152,"salt1":…,"salt2":…,"pageSize":4096}}
 *
 * Rewritten in place (`writeSidecar` says why and how); an unreadable sidecar reads as absent.
 */
import {
  closeSync,
  constants,
  fstatSync,
  ftruncateSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import type { WalCursor } from './wal.js';

export interface Sidecar {
  seq: number;
  etag: string;
  generation: number;
  cursor: WalCursor | null;
  linksSinceSnapshot?: number;
  deltaBytesSinceSnapshot?: number;
  snapshotBytes?: number;
  /** The newest snapshots this replica knows of (seq, writer's time), for retention. */
  snapshots?: { seq: number; atMs: number }[];
}

export const sidecarPath = (dbPath: string) => `${dbPath}.chain`;

export function readSidecar(dbPath: string): Sidecar | undefined {
  try {
    const s = JSON.parse(readFileSync(sidecarPath(dbPath), 'utf8')) as Sidecar;
    return Number.isSafeInteger(s.seq) && typeof s.etag === 'string' ? s : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Sidecars up to this size are rewritten in place with one `pwrite` at offset 0: one page, which
 * the kernel copies whole or not at all when the process is killed. Larger ones (a long snapshot
 * list) go through a temp file and a rename.
 */
export const SIDECAR_IN_PLACE_MAX = 4096;

/**
 * Records `s`. The sidecar is rewritten after every upload, so it is rewritten in place, not
 * renamed over: a temp file and a rename create an inode and free one each time, and on ext4
 * without a journal every inode freed in the last minutes makes each later file creation scan
 * past it (docs/benchmarks.md, "Files and system calls per actor"). A shorter record is padded with
 * spaces to the file's length (JSON allows trailing whitespace), so the file never shrinks and
 * no truncate can leave it half-written.
 */
export function writeSidecar(dbPath: string, s: Sidecar): void {
  const path = sidecarPath(dbPath);
  const json = Buffer.from(JSON.stringify(s));
  if (json.length > SIDECAR_IN_PLACE_MAX) {
    writeFileSync(path + '.tmp', json);
    renameSync(path + '.tmp', path);
    return;
  }
  const fd = openSync(path, constants.O_RDWR | constants.O_CREAT, 0o644);
  try {
    let size = fstatSync(fd).size;
    if (size > SIDECAR_IN_PLACE_MAX) {
      ftruncateSync(fd, 0); // written by a rename once: start again small
      size = 0;
    }
    const record = size > json.length ? Buffer.concat([json, Buffer.alloc(size - json.length, 0x20)]) : json;
    writeSync(fd, record, 0, record.length, 0);
  } finally {
    closeSync(fd);
  }
}

export function removeSidecar(dbPath: string): void {
  rmSync(sidecarPath(dbPath), { force: true });
}
