/**
 * The body of one chain link — the only module that builds or parses it:
 *
 *   "KWL1" | header length (u32 BE) | header (JSON, UTF-8) | payload (deflate) | sha256 of all before
 *
 *   header: { v: 1, seq, kind: snapshot|delta|tombstone, generation, nodeId, epoch, atMs (the
 *             writer's clock), pageSize, pageCount, size (payload bytes before compression),
 *             sha256 (of those bytes) }
 *
 * A snapshot's payload is the whole database image; a delta's is `encodeDelta` of the pages
 * changed since the previous link (wal.ts); a tombstone's is empty. `decodeLink` verifies the
 * magic, the version, the header's fields and the checksum, and throws `CorruptLink` otherwise.
 */
import { hash } from 'node:crypto';
import { deflateSync, inflateSync, type ZlibOptions } from 'node:zlib';
import { CorruptLink } from '../core/errors.js';

export type LinkKind = 'snapshot' | 'delta' | 'tombstone';

export interface LinkHeader {
  v: 1;
  seq: number;
  kind: LinkKind;
  generation: number;
  nodeId: string;
  epoch: number;
  atMs: number;
  pageSize: number;
  pageCount: number;
  size: number;
  sha256: string;
}

export interface Link {
  header: LinkHeader;
  payload: Uint8Array;
}

const MAGIC = Buffer.from('KWL1');
const HEADER_MAX = 64 * 1024;
const SEAL = 32;
const KINDS: readonly LinkKind[] = ['snapshot', 'delta', 'tombstone'];

export function encodeLink(fields: Omit<LinkHeader, 'v' | 'size' | 'sha256'>, payload: Uint8Array): Uint8Array {
  const header: LinkHeader = { v: 1, ...fields, size: payload.byteLength, sha256: sha256(payload) };
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const len = Buffer.alloc(4);
  len.writeUInt32BE(json.length);
  const unsealed = Buffer.concat([MAGIC, len, json, deflateSync(payload, { level: 3, chunkSize: deflateChunk(payload.byteLength) })]);
  return Buffer.concat([unsealed, hash('sha256', unsealed, 'buffer')]);
}

export function decodeLink(body: Uint8Array, expectSeq?: number): Link {
  const sealed = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (sealed.length < 8 + SEAL || !sealed.subarray(0, 4).equals(MAGIC)) throw new CorruptLink('not a keepwork link (bad magic)');
  const buf = sealed.subarray(0, sealed.length - SEAL);
  if (!hash('sha256', buf, 'buffer').equals(sealed.subarray(sealed.length - SEAL)))
    throw new CorruptLink('link checksum mismatch (damaged in storage or transit)');
  const len = buf.readUInt32BE(4);
  if (len > HEADER_MAX || 8 + len > buf.length) throw new CorruptLink(`link header length ${len} is out of range`);
  const header = parseHeader(buf.subarray(8, 8 + len));
  if (expectSeq !== undefined && header.seq !== expectSeq)
    throw new CorruptLink(`link holds seq ${header.seq}, expected ${expectSeq}`, { details: { seq: expectSeq } });
  let payload: Buffer;
  try {
    payload = inflateSync(buf.subarray(8 + len), inflateOptions(header.size));
  } catch (e) {
    const why =
      (e as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE'
        ? `payload inflates past the ${header.size} bytes its header names`
        : `payload does not decompress: ${(e as Error).message}`;
    throw new CorruptLink(`link ${header.seq}: ${why}`, { details: { seq: header.seq } });
  }
  if (payload.length !== header.size || sha256(payload) !== header.sha256) {
    throw new CorruptLink(`link ${header.seq}: payload checksum mismatch`, { details: { seq: header.seq } });
  }
  return { header, payload: new Uint8Array(payload.buffer, payload.byteOffset, payload.byteLength) };
}

/**
 * The output buffer of a link's deflate: about an eighth of the payload (database pages deflate
 * to less: a 12 KB delta to ~0.5 KB), between 1 KB and zlib's default 16 KB; more output takes
 * more chunks. zlib's default 16 KB for every link was the largest buffer most deliveries made
 * (a worker's full collections follow the bytes of buffers it allocates: docs/benchmarks.md).
 */
function deflateChunk(payloadBytes: number): number {
  return Math.min(DEFLATE_CHUNK_MAX, Math.max(DEFLATE_CHUNK_MIN, payloadBytes >> 3));
}
const DEFLATE_CHUNK_MIN = 1024;
const DEFLATE_CHUNK_MAX = 16 * 1024;

/**
 * Inflating into one buffer of the payload's size: the default 16 KB chunks, then a
 * concatenation of them, would allocate each image about three times.
 */
const ONE_CHUNK_MAX = 64 * 1024 * 1024;
function inflateOptions(size: number): ZlibOptions {
  // One byte of room past the payload: with none, zlib reports the output full and Node adds a chunk.
  return { chunkSize: Math.min(Math.max(size + 1, 64), ONE_CHUNK_MAX), maxOutputLength: Math.max(size, 1) };
}

function parseHeader(bytes: Buffer): LinkHeader {
  let h: Partial<LinkHeader>;
  try {
    h = JSON.parse(bytes.toString('utf8')) as Partial<LinkHeader>;
  } catch {
    throw new CorruptLink('link header is not JSON');
  }
  const ints = ['seq', 'generation', 'epoch', 'atMs', 'pageSize', 'pageCount', 'size'] as const;
  if (h.v !== 1) throw new CorruptLink(`unsupported link format version ${String(h.v)}`);
  for (const k of ints) if (!Number.isSafeInteger(h[k]) || (h[k] as number) < 0) throw new CorruptLink(`link header field ${k} is invalid`);
  if (!KINDS.includes(h.kind as LinkKind)) throw new CorruptLink(`link kind ${String(h.kind)} is unknown`);
  if (typeof h.nodeId !== 'string' || typeof h.sha256 !== 'string') throw new CorruptLink('link header lacks nodeId or sha256');
  return h as LinkHeader;
}

/** One-shot (`crypto.hash`): a Hash object per call cost about as much as hashing a small link. */
function sha256(bytes: Uint8Array): string {
  return hash('sha256', bytes, 'hex');
}
