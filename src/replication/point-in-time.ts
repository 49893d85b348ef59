/**
 * Point-in-time restore: an actor's past state — as of link `seq`, or of the
 * newest link written at or before a time — written as the chain's new head, a snapshot link.
 * A node that holds the actor finds out like any late commit: its next upload gets 412, it gives
 * the actor up, and its next take restores the new head.
 *
 *   chain 1..H ─▶ restoreChain(upto = N) ─▶ image ─▶ snapshot link H+1 (If-None-Match)
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { BadRequest, CorruptLink } from '../core/errors.js';
import type { ActorAddress } from '../core/address.js';
import type { ObjectStore } from '../store/types.js';
import { createLink, listChain, restoreChain, type RetryDeps } from './chain.js';
import { decodeLink, encodeLink } from './link.js';
import { linkKey } from './state-keys.js';

export type PointInTime = { seq: number } | { atMs: number };

export interface PitrResult {
  fromSeq: number;
  newSeq: number;
  bytes: number;
}

/** The newest seq whose link was written at or before `atMs` (binary search over link headers). */
async function seqAt(store: ObjectStore, a: ActorAddress, seqs: number[], atMs: number): Promise<number | undefined> {
  let lo = 0;
  let hi = seqs.length - 1;
  let found: number | undefined;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const obj = await store.get(linkKey(a, seqs[mid]!));
    if (!obj) throw new CorruptLink(`link ${seqs[mid]} of ${a.key} vanished while searching`);
    if (decodeLink(obj.body, seqs[mid]).header.atMs <= atMs) {
      found = seqs[mid];
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

export async function restorePointInTime(
  store: ObjectStore,
  a: ActorAddress,
  target: PointInTime,
  r: RetryDeps & {
    writer: { nodeId: string; epoch: number; generation: number };
    workDir: string;
    onProgress?: (done: number, total: number) => void;
  },
): Promise<PitrResult> {
  const seqs = await listChain(store, a);
  if (seqs.length === 0) throw new BadRequest(`${a.key} has no chain in this bucket`);
  const seq = 'seq' in target ? target.seq : await seqAt(store, a, seqs, target.atMs);
  if (seq === undefined || !seqs.includes(seq)) {
    throw new BadRequest(
      `${a.key} has no link ${'seq' in target ? target.seq : `written at or before ${new Date(target.atMs).toISOString()}`}; links ${seqs[0]}..${seqs[seqs.length - 1]} are kept`,
    );
  }
  const tmp = join(r.workDir, `pitr-${process.pid}-${seq}.db`);
  try {
    const restored = await restoreChain(store, a, tmp, { seqs, uptoSeq: seq, onProgress: r.onProgress });
    if (restored.state !== 'restored') throw new BadRequest(`${a.key} was deleted as of link ${seq}; nothing to restore`);
    const image = readFileSync(tmp);
    const pageSize = image.readUInt16BE(16) === 1 ? 65536 : image.readUInt16BE(16);
    const newSeq = seqs[seqs.length - 1]! + 1;
    const body = encodeLink(
      { seq: newSeq, kind: 'snapshot', ...r.writer, atMs: r.clock.now(), pageSize, pageCount: image.byteLength / pageSize },
      image,
    );
    await createLink(store, a, newSeq, body, r);
    return { fromSeq: seq, newSeq, bytes: image.byteLength };
  } finally {
    rmSync(tmp, { force: true });
  }
}
