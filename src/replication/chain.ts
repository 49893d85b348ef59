/**
 * Chain I/O against the bucket: list an actor's links, create one, and restore a database from
 * them (docs/architecture.md).
 *
 * - `createLink`: `If-None-Match: *`, so exactly one writer wins each seq. A failed or ambiguous
 *   attempt is retried with the same key and body; a 412 whose object is our own body is a
 *   success; any other 412 is a late commit or a rival writer → `ChainConflict`, and the caller
 *   gives the actor up.
 * - `restoreChain`: the newest snapshot at or below the head (or `uptoSeq`), then every later
 *   delta in order, into a temp file the caller moves into place. A gap or a bad link is
 *   `CorruptLink`; nothing local is touched until the whole chain checked out.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Clock } from '../core/clock.js';
import { ActorGivenUp, CorruptLink, ErrorCode, isKeepworkError } from '../core/errors.js';
import type { Random } from '../core/random.js';
import { isTransientStoreError, retry } from '../core/retry.js';
import type { ActorAddress } from '../core/address.js';
import { sameBytes } from '../store/etag.js';
import { fsyncPathSync } from '../store/fs/io.js';
import { listAll } from '../store/keys.js';
import type { ObjectStore } from '../store/types.js';
import { decodeLink, type Link, type LinkHeader } from './link.js';
import { chainPrefix, linkKey, seqOfKey } from './state-keys.js';
import { imageOf } from './memory-image.js';
import { applyDelta, decodeDelta } from './wal.js';

export interface RetryDeps {
  clock: Clock;
  random: Random;
  attemptsMax: number;
  retryBaseMs: number;
}

export class ChainConflict extends ActorGivenUp {}

/** Every seq of the actor's chain, ascending. */
export async function listChain(store: ObjectStore, a: ActorAddress): Promise<number[]> {
  const seqs: number[] = [];
  for await (const key of listAll(store, { prefix: chainPrefix(a) })) {
    const seq = seqOfKey(a, key);
    if (seq !== undefined) seqs.push(seq);
  }
  return seqs;
}

export async function createLink(
  store: ObjectStore,
  a: ActorAddress,
  seq: number,
  body: Uint8Array,
  r: RetryDeps,
): Promise<{ etag: string }> {
  const key = linkKey(a, seq);
  let uncertain = false; // an earlier attempt's outcome is unknown: a 412 may be our own write
  const policy = {
    attemptsMax: r.attemptsMax,
    baseMs: r.retryBaseMs,
    retryable: isTransientStoreError,
    failed: (e: unknown) => void (uncertain ||= isKeepworkError(e, ErrorCode.AmbiguousWrite)),
  };
  try {
    return await retry(r, policy, () => store.put(key, body, { ifNoneMatch: '*' }));
  } catch (e) {
    if (isKeepworkError(e, ErrorCode.PreconditionFailed)) return settleConflict(store, a, seq, key, body, uncertain);
    throw e;
  }
}

async function settleConflict(
  store: ObjectStore,
  a: ActorAddress,
  seq: number,
  key: string,
  body: Uint8Array,
  uncertain: boolean,
): Promise<{ etag: string }> {
  const current = await store.get(key);
  if (current && sameBytes(current.body, body)) return { etag: current.etag }; // our own earlier attempt landed
  throw new ChainConflict(
    `link ${seq} of ${a.key} was written by another writer${uncertain ? ' (after an ambiguous attempt of ours)' : ''}`,
    {
      details: { key, seq },
    },
  );
}

export interface ChainHead {
  seq: number;
  etag: string;
  header: LinkHeader;
}

export type RestoreResult =
  | { state: 'empty' }
  | { state: 'deleted'; head: ChainHead }
  | { state: 'restored'; head: ChainHead; base: ChainHead; links: number; bytes: number };

type Fetched = { seq: number; etag: string; link: Link };

/**
 * The links a restore needs, newest first: from the head (or `uptoSeq`) down to the newest
 * snapshot; or the head alone when it is a tombstone (`deleted`); or nothing for an empty chain.
 */
async function fetchFromSnapshot(
  store: ObjectStore,
  a: ActorAddress,
  options: { seqs?: number[]; uptoSeq?: number },
): Promise<{ state: 'empty' } | { state: 'deleted'; head: ChainHead } | { state: 'links'; fetched: Fetched[] }> {
  const all = options.seqs ?? (await listChain(store, a));
  const seqs = options.uptoSeq === undefined ? all : all.filter((s) => s <= options.uptoSeq!);
  if (seqs.length === 0) return { state: 'empty' };
  const fetched: Fetched[] = [];
  for (let i = seqs.length - 1; i >= 0; i--) {
    const seq = seqs[i]!;
    if (i < seqs.length - 1 && seqs[i + 1] !== seq + 1) throw new CorruptLink(`chain of ${a.key} has a gap before link ${seqs[i + 1]}`);
    const obj = await store.get(linkKey(a, seq));
    if (!obj) throw new CorruptLink(`link ${seq} of ${a.key} vanished while restoring`, { details: { seq } });
    const link = decodeLink(obj.body, seq);
    fetched.push({ seq, etag: obj.etag, link });
    if (i === seqs.length - 1 && link.header.kind === 'tombstone')
      return { state: 'deleted', head: { seq, etag: obj.etag, header: link.header } };
    if (link.header.kind !== 'delta') break;
  }
  const base = fetched[fetched.length - 1]!;
  if (base.link.header.kind !== 'snapshot') throw new CorruptLink(`chain of ${a.key} has no snapshot at or below link ${base.seq}`);
  return { state: 'links', fetched: fetched.reverse() };
}

const headOf = (f: Fetched): ChainHead => ({ seq: f.seq, etag: f.etag, header: f.link.header });

function restored(fetched: Fetched[]): Extract<RestoreResult, { state: 'restored' }> {
  const bytes = fetched.reduce((n, f) => n + f.link.payload.byteLength, 0);
  return { state: 'restored', head: headOf(fetched[fetched.length - 1]!), base: headOf(fetched[0]!), links: fetched.length, bytes };
}

/**
 * Restores the chain up to its head (or `uptoSeq`) into `outPath` (overwritten). `seqs` is the
 * listing, when the caller has it already.
 */
export async function restoreChain(
  store: ObjectStore,
  a: ActorAddress,
  outPath: string,
  options: { seqs?: number[]; uptoSeq?: number; onProgress?: (done: number, total: number) => void } = {},
): Promise<RestoreResult> {
  const r = await fetchFromSnapshot(store, a, options);
  if (r.state !== 'links') return r;
  writeLinks(outPath, r.fetched, options.onProgress);
  return restored(r.fetched);
}

/** Restores the chain's head into memory: the database image as the bucket keeps it (WAL mode). */
export async function restoreImage(
  store: ObjectStore,
  a: ActorAddress,
  options: { seqs?: number[] } = {},
): Promise<RestoreResult | (Extract<RestoreResult, { state: 'restored' }> & { image: Buffer })> {
  const r = await fetchFromSnapshot(store, a, options);
  if (r.state !== 'links') return r;
  const base = r.fetched[0]!.link.payload; // decodeLink's own buffer: the image is built in it
  const image = imageOf(
    Buffer.from(base.buffer, base.byteOffset, base.byteLength),
    r.fetched.slice(1).map((f) => decodeDelta(f.link.payload)),
  );
  return { ...restored(r.fetched), image };
}

/** Deletes every link below `belowSeq` (retention), in batches. */
export async function deleteLinksBelow(store: ObjectStore, a: ActorAddress, belowSeq: number): Promise<number> {
  const doomed = (await listChain(store, a)).filter((s) => s < belowSeq).map((s) => linkKey(a, s));
  for (let i = 0; i < doomed.length; i += 1000) await store.deleteMany(doomed.slice(i, i + 1000));
  return doomed.length;
}

function writeLinks(outPath: string, links: Fetched[], onProgress?: (done: number, total: number) => void): void {
  mkdirSync(dirname(outPath), { recursive: true });
  rmSync(outPath, { force: true });
  writeFileSync(outPath, links[0]!.link.payload);
  for (let i = 1; i < links.length; i++) {
    applyDelta(outPath, decodeDelta(links[i]!.link.payload));
    onProgress?.(i + 1, links.length);
  }
  fsyncPathSync(outPath); // durable before the caller's rename or sidecar says it is current
}
