/**
 * The replica's pure decisions (docs/architecture.md), out of the I/O class (replica.ts):
 *
 *   nextLinkKind   snapshot or delta: a snapshot when the chain (re)starts, when there is no delta
 *                  to send, every snapshotEveryLinks links, or once the deltas since the last
 *                  snapshot would outweigh it; a delta otherwise
 *   checkpointDue  fold the WAL into the file every checkpointEveryLinks links, or once the WAL
 *                  captured so far reaches checkpointWalBytes
 *   pruneBelow     retention: the links before a snapshot that is not the newest and is older than
 *                  linkRetentionMs are needed by no restore (nor a point-in-time one within it)
 */
import type { Settings } from '../core/config.js';

/** What the replica counts since its last snapshot (kept in the sidecar). */
export interface SinceSnapshot {
  linksSinceSnapshot: number;
  deltaBytesSinceSnapshot: number;
  snapshotBytes: number;
}

/**
 * `first`: the chain (re)starts (no head, or after a tombstone); `deltaBytes`: the size of the
 * encoded delta captured, null when there is none.
 */
export function nextLinkKind(
  first: boolean,
  deltaBytes: number | null,
  since: SinceSnapshot,
  s: Settings<'snapshotEveryLinks'>,
): 'snapshot' | 'delta' {
  if (first || deltaBytes === null) return 'snapshot';
  const due = since.linksSinceSnapshot + 1 >= s.snapshotEveryLinks;
  const outweighs = since.deltaBytesSinceSnapshot + deltaBytes > since.snapshotBytes;
  return due || outweighs ? 'snapshot' : 'delta';
}

/** `walBytes`: how far into the WAL the capture cursor stands (0 with no cursor). */
export function checkpointDue(
  linksSinceCheckpoint: number,
  walBytes: number,
  s: Settings<'checkpointEveryLinks' | 'checkpointWalBytes'>,
): boolean {
  return linksSinceCheckpoint >= s.checkpointEveryLinks || walBytes >= s.checkpointWalBytes;
}

/** The seq below which links may be deleted, given the newest snapshots known (oldest first); undefined: none. */
export function pruneBelow(
  snapshots: readonly { seq: number; atMs: number }[],
  nowMs: number,
  s: Settings<'linkRetentionMs'>,
): number | undefined {
  const older = snapshots.slice(0, -1).filter((snap) => snap.atMs <= nowMs - s.linkRetentionMs);
  return older[older.length - 1]?.seq;
}
