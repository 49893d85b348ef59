/**
 * The take path of an actor's replica (docs/architecture.md): before the database opens, bring the local
 * file in line with the bucket's chain and set the replica's `ChainPosition` from what it found.
 *
 *   take()          nothing to do (the sidecar's link is the head) · adopt local commits past it ·
 *                   adopt the head as this node's own upload past the sidecar (ownLinkAfter) ·
 *                   apply the missing deltas (catchUp) · set the file aside as .replaced and
 *                   restore · first upload of a local-only file (empty bucket)
 *   takeInMemory()  the head's image for an actor kept in memory (nothing on the local disk)
 *
 * Reads the store (injected through the replica's deps) and the local file; writes the local file
 * and, through the replica's `saveSidecar`, its sidecar. Throws ActorGivenUp if the head vanishes
 * mid-take.
 */
import Database from 'better-sqlite3';
import { closeSync, existsSync, fstatSync, openSync, readSync, renameSync, rmSync } from 'node:fs';
import { ActorGivenUp } from '../core/errors.js';
import type { ActorAddress } from '../core/address.js';
import { fsyncPathSync } from '../store/fs/io.js';
import { listChain, restoreChain, restoreImage } from './chain.js';
import type { ChainPosition, Head } from './chain-position.js';
import { headerPageSize, intoMemoryForm } from './memory-image.js';
import { decodeLink } from './link.js';
import type { ReplicaDeps } from './replica-deps.js';
import { readSidecar, removeSidecar, type Sidecar } from './sidecar.js';
import { linkKey } from './state-keys.js';
import { applyDelta, captureWal, decodeDelta } from './wal.js';

export type TakeResult = 'ready' | 'absent' | 'deleted';

/** The replica a take works for: its surroundings, its position (set here), and its sidecar writer. */
export interface TakeContext {
  readonly deps: ReplicaDeps;
  readonly address: ActorAddress;
  readonly dbPath: string;
  /** The hold generation the replica writes under. */
  readonly generation: number;
  readonly pos: ChainPosition;
  /** Records `pos` in the sidecar (the replica's: not after close, nor for an actor in memory). */
  saveSidecar(): void;
}

export async function take(t: TakeContext, listed?: number[]): Promise<TakeResult> {
  const seqs = listed ?? (await listChain(t.deps.store, t.address));
  const local = existsSync(t.dbPath);
  // Without a file its sidecar says nothing (and reading a missing one throws inside readSidecar).
  const side = local ? readSidecar(t.dbPath) : undefined;
  if (seqs.length === 0) return takeEmptyBucket(t, local, side);
  const headSeq = seqs[seqs.length - 1]!;
  const trusted = local && side !== undefined && walIntact(t, side);
  if (trusted && side.seq === headSeq) {
    // Only a trusted local copy needs the head's etag (a node taking an actor it never ran
    // restores from the links at once: one request less per takeover).
    const head = await t.deps.store.head(linkKey(t.address, headSeq));
    if (!head) throw new ActorGivenUp(`head link ${headSeq} of ${t.address.key} vanished during take`);
    // The head is still the one the file was last in line with: commits past the sidecar's
    // cursor (a kill before their upload) go up as the next link, from start().
    if (side.etag === head.etag) return adopt(t, side, unuploadedCommits(t, side));
  }
  const unuploaded = trusted ? unuploadedCommits(t, side) : 0;
  if (trusted && unuploaded > 0 && side.seq + 1 === headSeq) {
    const own = await ownLinkAfter(t, side, headSeq);
    if (own) return adoptPast(t, side, own, unuploaded);
  }
  if (trusted && side.seq < headSeq && unuploaded === 0) {
    const caught = await catchUp(t, side, seqs);
    if (caught) return caught;
  }
  if (local) setAside(t, trusted ? unuploaded : undefined, headSeq);
  return restoreFully(t, seqs);
}

/**
 * Takes the actor into memory instead of a local file (an actor restored only to run an alarm):
 * the head's image, ready for `new Database(image)`; nothing is written to the local disk, and
 * every commit is uploaded from `db.serialize()` (the pages that differ from the head's image).
 */
export async function takeInMemory(t: TakeContext): Promise<{ state: TakeResult; image?: Buffer }> {
  const pos = t.pos;
  const seqs = await listChain(t.deps.store, t.address);
  if (seqs.length === 0) {
    pos.foundNothing = true;
    return { state: 'absent' };
  }
  const result = await restoreImage(t.deps.store, t.address, { seqs });
  if (result.state === 'empty') return { state: 'absent' };
  pos.head = { seq: result.head.seq, etag: result.head.etag };
  if (result.state === 'deleted') {
    pos.deleted = true;
    return { state: 'deleted' };
  }
  if (!('image' in result)) throw new Error('restoreImage returned no image');
  const image = intoMemoryForm(result.image);
  pos.memory = { pageSize: headerPageSize(image), uploaded: image, captured: null };
  pos.linksSinceSnapshot = result.links - 1;
  pos.snapshotBytes = result.base.header.size;
  pos.snapshots = [{ seq: result.base.seq, atMs: result.base.header.atMs }];
  return { state: 'ready', image };
}

/**
 * For an event that creates the actor when it does not exist, with no local file: when the bucket
 * has no chain for it either, the actor is new and starts as `empty` in memory (memory form, see
 * memory-image.ts; the replica's `attachNew`), its first link the snapshot of its first commit;
 * otherwise the chain's links, for `take` to restore into a local file without listing them again.
 */
export async function takeNew(t: TakeContext, empty: Buffer, listed?: number[]): Promise<{ image: Buffer } | { seqs: number[] }> {
  const seqs = listed ?? (await listChain(t.deps.store, t.address));
  if (seqs.length > 0) return { seqs };
  t.pos.foundNothing = true;
  return { image: empty };
}

/** Local commits the sidecar's cursor has not reached (never uploaded, as far as the sidecar knows). */
function unuploadedCommits(t: TakeContext, side: Sidecar): number {
  const captured = captureWal(`${t.dbPath}-wal`, side.cursor);
  return captured.delta === null ? 0 : (captured.commits ?? 1);
}

/**
 * The head is one link past the sidecar and was written by this node under the sidecar's hold
 * generation: the previous run of this node uploaded it from this very file and died before
 * its sidecar said so. One generation is one holder's, and that holder writes from one local
 * file in order, so the link holds a prefix of the commits past the cursor: the file holds all
 * of the head and more. (Another owner since would have ended the history with a link of its
 * own — the owner fence — so the head would not be ours.)
 */
async function ownLinkAfter(t: TakeContext, side: Sidecar, headSeq: number): Promise<Head | undefined> {
  const obj = await t.deps.store.get(linkKey(t.address, headSeq));
  if (!obj) return undefined;
  const { header } = decodeLink(obj.body, headSeq);
  const ours = header.nodeId === t.deps.writer.nodeId && header.generation === side.generation && header.kind !== 'tombstone';
  return ours ? { seq: headSeq, etag: obj.etag } : undefined;
}

function takeEmptyBucket(t: TakeContext, local: boolean, side: Sidecar | undefined): TakeResult {
  t.pos.foundNothing = true;
  if (!local) return 'absent';
  if (side && side.seq > 0)
    t.deps.log.warn(
      { actor: t.address.key, sidecarSeq: side.seq },
      'the bucket has no chain for a local actor with a sidecar; uploading it as link 1',
    );
  t.pos.head = null; // start() schedules the first upload, a snapshot, once the alarm is indexed (R4, docs/alarm-index.md)
  return 'ready';
}

function adopt(t: TakeContext, side: Sidecar, unuploaded: number): TakeResult {
  const pos = t.pos;
  pos.head = { seq: side.seq, etag: side.etag };
  pos.unuploaded = unuploaded;
  pos.cursor = side.cursor;
  pos.linksSinceSnapshot = side.linksSinceSnapshot ?? t.deps.config.snapshotEveryLinks;
  pos.deltaBytesSinceSnapshot = side.deltaBytesSinceSnapshot ?? 0;
  pos.snapshotBytes = side.snapshotBytes ?? 0;
  pos.snapshots = side.snapshots ?? [];
  // Under this hold's generation from now on: should the next upload land and this run die
  // before its sidecar is written, the next take knows that link for its own (ownLinkAfter).
  if (side.generation !== t.generation) t.saveSidecar();
  return 'ready';
}

/** The head is this node's own upload from this file past the sidecar (ownLinkAfter): the next link is a snapshot of the file. */
function adoptPast(t: TakeContext, side: Sidecar, head: Head, unuploaded: number): TakeResult {
  adopt(t, side, unuploaded);
  t.pos.head = head;
  t.pos.linksSinceSnapshot = t.deps.config.snapshotEveryLinks; // the delta past the cursor overlaps the head: a snapshot
  // The file up to the cursor is the sidecar's link, the head a prefix of what follows: a delta
  // from the cursor applied to the head gives the file too, so the sidecar may name the head.
  t.saveSidecar();
  t.deps.log.warn(
    { actor: t.address.key, sidecarSeq: side.seq, head: head.seq, commits: unuploaded },
    'local copy is ahead of its own last upload (the sidecar was not written); uploading it as the next link',
  );
  return 'ready';
}

/**
 * A sidecar with a cursor describes a WAL: if that WAL is gone, shorter, or of another
 * generation (salts), something folded it into the file (a read-write open and close outside
 * this replica) and the file may hold commits the bucket never got: it cannot be trusted.
 */
function walIntact(t: TakeContext, side: Sidecar): boolean {
  const c = side.cursor;
  if (!c) return true;
  const header = readWalHeader(`${t.dbPath}-wal`);
  return header !== undefined && header.size >= c.offset && header.salt1 === c.salt1 && header.salt2 === c.salt2;
}

/** Applies the links after the sidecar's seq onto the local file; undefined if it cannot. */
async function catchUp(t: TakeContext, side: Sidecar, seqs: number[]): Promise<TakeResult | undefined> {
  const missing = seqs.filter((s) => s > side.seq);
  if (missing[0] !== side.seq + 1 || missing.some((s, i) => s !== side.seq + 1 + i)) return undefined;
  // The local file must be this chain's link side.seq (not a link of another bucket's chain, as
  // a joining node's sidecar is): otherwise the deltas would be applied to a stranger.
  const base = await t.deps.store.head(linkKey(t.address, side.seq));
  if (!base || base.etag !== side.etag) return undefined;
  const links = [];
  for (const seq of missing) {
    const obj = await t.deps.store.get(linkKey(t.address, seq));
    if (!obj) return undefined;
    const link = decodeLink(obj.body, seq);
    if (link.header.kind !== 'delta') return undefined; // a snapshot or tombstone: restore fully
    links.push({ seq, etag: obj.etag, link });
  }
  foldWal(t.dbPath);
  for (const { link } of links) applyDelta(t.dbPath, decodeDelta(link.payload));
  fsyncPathSync(t.dbPath); // durable before the sidecar says the file holds these links
  const top = links[links.length - 1]!;
  t.pos.head = { seq: top.seq, etag: top.etag };
  t.pos.cursor = null;
  t.pos.linksSinceSnapshot = t.deps.config.snapshotEveryLinks; // unknown: the next link is a snapshot
  t.saveSidecar();
  t.deps.log.info({ actor: t.address.key, from: side.seq, to: top.seq }, 'applied missing links onto the local copy');
  return 'ready';
}

/**
 * `dropped`: the local commits the bucket never got (undefined: unknown, the sidecar is missing
 * or its WAL was folded); they stay in the `.replaced` file.
 */
function setAside(t: TakeContext, dropped: number | undefined, headSeq: number): void {
  const aside = `${t.dbPath}.replaced`;
  for (const suffix of ['', '-wal', '-shm']) {
    if (existsSync(t.dbPath + suffix)) renameSync(t.dbPath + suffix, aside + suffix);
  }
  removeSidecar(t.dbPath);
  const fields = { actor: t.address.key, aside, head: headSeq, droppedCommits: dropped ?? 'unknown' };
  if (dropped === 0) t.deps.log.info(fields, 'local copy is behind the bucket; set aside and restoring the bucket’s state');
  else
    t.deps.log.warn(
      fields,
      `the bucket's head moved on past the local copy; set aside with ${dropped ?? 'an unknown number of'} commits the bucket never got, restoring the bucket’s state`,
    );
}

async function restoreFully(t: TakeContext, seqs: number[]): Promise<TakeResult> {
  const pos = t.pos;
  const tmp = `${t.dbPath}.restore`;
  const result = await restoreChain(t.deps.store, t.address, tmp, { seqs });
  if (result.state === 'empty') return 'absent';
  pos.head = { seq: result.head.seq, etag: result.head.etag };
  if (result.state === 'deleted') {
    pos.deleted = true;
    rmSync(tmp, { force: true });
    return 'deleted';
  }
  for (const suffix of ['-wal', '-shm']) rmSync(t.dbPath + suffix, { force: true });
  renameSync(tmp, t.dbPath);
  pos.cursor = null;
  pos.linksSinceSnapshot = result.links - 1;
  pos.deltaBytesSinceSnapshot = 0;
  pos.snapshotBytes = result.base.header.size;
  pos.snapshots = [{ seq: result.base.seq, atMs: result.base.header.atMs }];
  t.saveSidecar();
  return 'ready';
}

function readWalHeader(walPath: string): { size: number; salt1: number; salt2: number } | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(walPath, 'r');
    const size = fstatSync(fd).size;
    if (size < 32) return undefined;
    const b = Buffer.alloc(32);
    readSync(fd, b, 0, 32, 0);
    return { size, salt1: b.readUInt32BE(16), salt2: b.readUInt32BE(20) };
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Folds a closed database's WAL into its file (open, checkpoint, close). */
function foldWal(dbPath: string): void {
  if (!existsSync(`${dbPath}-wal`)) return;
  const db = new Database(dbPath);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
}
