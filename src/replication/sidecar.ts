/**
 * The sidecar `<db>.chain`: which link of the bucket's chain the local database file equals,
 * and where WAL capture stopped — so a take whose head equals it downloads nothing, and changes
 * committed locally but never uploaded can be told apart (docs/architecture.md).
 *
 *   {"seq":7,"etag":"9b2…","generation":3,"cursor":{"offset":4152,"salt1":…,"salt2":…,"pageSize":4096}}
 *
 * Written atomically (temp + rename); an unreadable sidecar reads as absent.
 */
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
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

export function writeSidecar(dbPath: string, s: Sidecar): void {
  const path = sidecarPath(dbPath);
  writeFileSync(path + '.tmp', JSON.stringify(s));
  renameSync(path + '.tmp', path);
}

export function removeSidecar(dbPath: string): void {
  rmSync(sidecarPath(dbPath), { force: true });
}
