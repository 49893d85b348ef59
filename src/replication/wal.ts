/**
 * Delta capture from an actor database's WAL (docs/architecture.md): the pages committed since the
 * previous capture, read from the `-wal` file without SQLite's help. Pure over files and bytes.
 *
 *   WAL file:  [header 32][frame][frame]...      frame = [header 24][page]
 *   header:    magic 0x377f0682|3 · version · page size · ckpt seq · salt1 · salt2 · cksum1 · cksum2
 *   frame hdr: pgno · db size after commit (0: not a commit frame) · salt1 · salt2 · cksum1 · cksum2
 *
 * A frame is valid when its salts equal the header's and the cumulative checksum (seeded by the
 * header's, then each frame's, over the frame header's first 8 bytes and its page; words in the
 * byte order the magic's low bit names) matches; capture stops at the first invalid frame, so a
 * torn write is never taken. Only frames up to the last valid commit frame are taken: frames of a
 * transaction still open, or rolled back, lie past it and SQLite writes over them next time.
 *
 * Contract with the caller (one connection, autocheckpoint off):
 *  - capture after each commit you want in a link, and ALWAYS capture right before a checkpoint
 *    (or closing the database, which checkpoints): committed frames not captured before the WAL
 *    restarts are gone from the WAL, and the next capture cannot know it missed them;
 *  - a WAL whose salts differ from the cursor's was restarted: capture starts over at its first
 *    frame. Re-capturing frames already applied is harmless (a delta is the latest page images).
 * A cursor that is not on a frame boundary of its own WAL generation (a damaged sidecar) is a
 * `CorruptState`; anything invalid in the WAL itself just ends the capture, as it ends SQLite's recovery.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { CorruptState } from '../core/errors.js';
import { isValidPageSize, type PageDelta } from './pages.js';

export { applyDelta, decodeDelta, encodeDelta, type PageDelta } from './pages.js';

/** Where capture stopped: just past the last captured commit frame of the WAL generation with these salts. */
export interface WalCursor {
  offset: number;
  salt1: number;
  salt2: number;
  pageSize: number;
}

export interface WalCapture {
  /** The pages of the commits past the cursor given; null when there are none. */
  delta: PageDelta | null;
  /** Just past the last commit captured. */
  cursor: WalCursor | null;
  /** The commits the delta holds (absent when there are none). */
  commits?: number;
  /**
   * Every commit from the WAL's first frame to `cursor`, when this capture read from there or
   * continued the `known` the caller passed: what `committedImage` applies to the main file,
   * without reading the WAL from its start again. Absent when neither.
   */
  fromStart?: WalFromStart;
}

/** The commits of one WAL from its first frame up to `cursor` (captureWal's `fromStart`). */
export interface WalFromStart {
  readonly cursor: WalCursor;
  /** Their pages, as one capture of them all from the WAL's start would give (made when read). */
  readonly delta: PageDelta | null;
}

/** Each WalFromStart's pages, for the capture that continues it. */
const pagesOf = new WeakMap<WalFromStart, CommittedPages>();

/**
 * `fromStart` holds at most this many bytes of pages (16 of 4 KiB): a small actor's, whose
 * snapshots come every few links, each of which would otherwise read and checksum its WAL from
 * the start again. A larger one's WAL is read again for a snapshot.
 */
export const FROM_START_BYTES_MAX = 64 * 1024;

function fromStart(pages: CommittedPages | undefined, cursor: WalCursor): { fromStart?: WalFromStart } {
  if (!pages || pages.bytes > FROM_START_BYTES_MAX) return {};
  const f: WalFromStart = {
    cursor,
    get delta() {
      return pages.result(cursor.offset).delta;
    },
  };
  pagesOf.set(f, pages);
  return { fromStart: f };
}

function sameCursor(a: WalCursor, b: WalCursor): boolean {
  return a.offset === b.offset && a.salt1 === b.salt1 && a.salt2 === b.salt2 && a.pageSize === b.pageSize;
}

interface WalHeader {
  bigEndianChecksums: boolean;
  pageSize: number;
  salt1: number;
  salt2: number;
  checksum: Checksum;
}

/** SQLite's running WAL checksum: two unsigned 32-bit words. */
export type Checksum = [number, number];

const WAL_HEADER_BYTES = 32;
const FRAME_HEADER_BYTES = 24;
const WAL_MAGIC = 0x377f0682; // | 1: checksums over big-endian words
const WAL_FORMAT_VERSION = 3007000;
/** Frames are read in chunks of at most this many bytes (at least one frame). */
const READ_CHUNK_BYTES_MAX = 1 << 20;
const HOST_LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * Reads the WAL bytes added since `cursor` (null: from the WAL's start) and returns the pages of
 * the commits found there, or a null delta when there are none. A missing, empty or headerless
 * WAL is no change (the cursor is returned as given). Reads only the header, the previous
 * frame's checksum and the new bytes.
 */
export function captureWal(walPath: string, cursor: WalCursor | null, known?: WalFromStart): WalCapture {
  const fd = openIfExists(walPath);
  if (fd === null) return { delta: null, cursor };
  try {
    const size = fstatSync(fd).size;
    const header = size >= WAL_HEADER_BYTES ? parseWalHeader(readAt(fd, 0, WAL_HEADER_BYTES)) : null;
    if (header === null) return { delta: null, cursor };
    const frameBytes = FRAME_HEADER_BYTES + header.pageSize;
    const sameGeneration =
      cursor !== null && cursor.salt1 === header.salt1 && cursor.salt2 === header.salt2 && cursor.pageSize === header.pageSize;
    if (sameGeneration && (cursor.offset < WAL_HEADER_BYTES || (cursor.offset - WAL_HEADER_BYTES) % frameBytes !== 0)) {
      throw new CorruptState(
        `WAL cursor offset ${cursor.offset} is not on a frame boundary of ${walPath} (frames of ${frameBytes} bytes after a ${WAL_HEADER_BYTES}-byte header)`,
      );
    }
    const start = sameGeneration ? cursor.offset : WAL_HEADER_BYTES;
    const generation = { offset: start, salt1: header.salt1, salt2: header.salt2, pageSize: header.pageSize };
    // The pages from the WAL's first frame: begun here when this capture starts there, else
    // continued from `known` when it ends where this capture starts (a copy: `known` stays right
    // for its own cursor, should the caller not take this capture up).
    const before =
      start === WAL_HEADER_BYTES
        ? new CommittedPages(header.pageSize)
        : known && sameCursor(known.cursor, generation)
          ? pagesOf.get(known)?.copy()
          : undefined;
    if (start + frameBytes > size) return { delta: null, cursor: generation, ...fromStart(before, generation) };
    const seed = start === WAL_HEADER_BYTES ? header.checksum : readChecksum(readAt(fd, start - frameBytes + 16, 8), 0);
    const scan = scanFrames(fd, header, start, size, seed, before);
    const end = { ...generation, offset: scan.end };
    if (scan.end === start) return { delta: null, cursor: generation, ...fromStart(before, generation) };
    return { delta: scan.delta, cursor: end, commits: scan.commits, ...fromStart(before, end) };
  } finally {
    closeSync(fd);
  }
}

/** The WAL header, or null when it is not a valid one (bad magic, version, page size or checksum: SQLite then ignores the WAL too). */
function parseWalHeader(b: Uint8Array): WalHeader | null {
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const magic = view.getUint32(0);
  if ((magic & ~1) >>> 0 !== WAL_MAGIC || view.getUint32(4) !== WAL_FORMAT_VERSION) return null;
  const pageSize = view.getUint32(8);
  if (!isValidPageSize(pageSize)) return null;
  const bigEndianChecksums = (magic & 1) === 1;
  const checksum = walChecksum(b, 0, 24, bigEndianChecksums, [0, 0]);
  if (!sameChecksum(checksum, readChecksum(b, 24))) return null;
  return { bigEndianChecksums, pageSize, salt1: view.getUint32(16), salt2: view.getUint32(20), checksum };
}

/**
 * Walks the valid frames from `start`, keeping the latest image of each page as of each commit.
 * `end` is the offset just past the last commit frame (`start` when there is none).
 */
function scanFrames(
  fd: number,
  header: WalHeader,
  start: number,
  size: number,
  seed: Checksum,
  /** The commits before `start` from the WAL's first frame: this scan's commits go on in it too. */
  before?: CommittedPages,
): { end: number; delta: PageDelta | null; commits: number } {
  const { pageSize } = header;
  const frameBytes = FRAME_HEADER_BYTES + pageSize;
  const chunkFrames = Math.max(1, Math.floor(READ_CHUNK_BYTES_MAX / frameBytes));
  const pages = new CommittedPages(pageSize);
  let pending = new Map<number, Uint8Array>();
  let checksum = seed;
  let end = start;
  let pos = start;
  let commits = 0;
  while (pos + frameBytes <= size) {
    const chunk = readAt(fd, pos, Math.min(chunkFrames, Math.floor((size - pos) / frameBytes)) * frameBytes);
    const view = new DataView(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    for (let f = 0; f + frameBytes <= chunk.length; f += frameBytes, pos += frameBytes) {
      const pgno = view.getUint32(f);
      if (pgno === 0 || view.getUint32(f + 8) !== header.salt1 || view.getUint32(f + 12) !== header.salt2)
        return { ...pages.result(end), commits };
      checksum = walChecksum(chunk, f, f + 8, header.bigEndianChecksums, checksum);
      checksum = walChecksum(chunk, f + FRAME_HEADER_BYTES, f + frameBytes, header.bigEndianChecksums, checksum);
      if (!sameChecksum(checksum, readChecksum(chunk, f + 16))) return { ...pages.result(end), commits };
      pending.set(pgno, chunk.slice(f + FRAME_HEADER_BYTES, f + frameBytes));
      const sizeAfterCommit = view.getUint32(f + 4);
      if (sizeAfterCommit !== 0) {
        pages.commit(pending, sizeAfterCommit);
        before?.commit(pending, sizeAfterCommit);
        pending = new Map();
        end = pos + frameBytes;
        commits++;
      }
    }
    if (chunk.length < frameBytes) break; // the file shrank under us
  }
  return { ...pages.result(end), commits };
}

/**
 * The pages of the commits seen so far, as if each commit had been applied to a file in turn
 * (its pages written, then the file cut to its size): a commit that shrinks the database drops
 * the pages past its size, and pages it cut that a later commit regrew without writing read as
 * zeros. So one capture over several commits equals a capture after each of them.
 */
class CommittedPages {
  private sizeMin = Infinity;
  private size = 0;

  constructor(
    private readonly pageSize: number,
    private readonly pages = new Map<number, Uint8Array>(),
  ) {}

  /** The bytes of the pages held. */
  get bytes(): number {
    return this.pages.size * this.pageSize;
  }

  copy(): CommittedPages {
    const c = new CommittedPages(this.pageSize, new Map(this.pages));
    c.sizeMin = this.sizeMin;
    c.size = this.size;
    return c;
  }

  commit(frames: Map<number, Uint8Array>, sizeAfter: number): void {
    if (sizeAfter < this.size) for (const pgno of this.pages.keys()) if (pgno > sizeAfter) this.pages.delete(pgno);
    for (const [pgno, data] of frames) if (pgno <= sizeAfter) this.pages.set(pgno, data); // spilled frames past the end are dropped
    this.sizeMin = Math.min(this.sizeMin, sizeAfter);
    this.size = sizeAfter;
  }

  /** The delta so far; the pages held are left as they are (more commits may follow). */
  result(end: number): { end: number; delta: PageDelta | null } {
    if (this.size === 0) return { end, delta: null };
    const pages = new Map(this.pages);
    for (let pgno = this.sizeMin + 1; pgno <= this.size; pgno++) {
      if (!pages.has(pgno)) pages.set(pgno, new Uint8Array(this.pageSize));
    }
    const sorted = [...pages.entries()].sort((a, b) => a[0] - b[0]);
    return { end, delta: { pageSize: this.pageSize, pageCountAfter: this.size, pages: sorted.map(([pgno, data]) => ({ pgno, data })) } };
  }
}

/**
 * SQLite's WAL checksum over bytes [from, to) of `b` (a multiple of 8 bytes), continuing `seed`:
 * for each pair of 32-bit words x0, x1: s0 += x0 + s1; s1 += x1 + s0 (mod 2^32).
 */
export function walChecksum(b: Uint8Array, from: number, to: number, bigEndian: boolean, seed: Checksum): Checksum {
  let s0 = seed[0] | 0;
  let s1 = seed[1] | 0;
  const at = b.byteOffset + from;
  if (bigEndian !== HOST_LITTLE_ENDIAN && at % 4 === 0) {
    const w = new Uint32Array(b.buffer, at, (to - from) >>> 2);
    for (let i = 0; i < w.length; i += 2) {
      s0 = (s0 + w[i]! + s1) | 0;
      s1 = (s1 + w[i + 1]! + s0) | 0;
    }
  } else {
    const view = new DataView(b.buffer, at, to - from);
    const littleEndian = !bigEndian;
    for (let i = 0; i < to - from; i += 8) {
      s0 = (s0 + view.getUint32(i, littleEndian) + s1) | 0;
      s1 = (s1 + view.getUint32(i + 4, littleEndian) + s0) | 0;
    }
  }
  return [s0 >>> 0, s1 >>> 0];
}

function readChecksum(b: Uint8Array, at: number): Checksum {
  const view = new DataView(b.buffer, b.byteOffset + at, 8);
  return [view.getUint32(0), view.getUint32(4)];
}

function sameChecksum(a: Checksum, b: Checksum): boolean {
  return a[0] === b[0] && a[1] === b[1];
}

function openIfExists(path: string): number | null {
  try {
    return openSync(path, 'r');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}

/** Reads up to `length` bytes at `position` into a fresh (so 4-byte aligned) buffer; shorter at end of file. */
function readAt(fd: number, position: number, length: number): Uint8Array {
  const b = new Uint8Array(length);
  let done = 0;
  while (done < length) {
    const n = readSync(fd, b, done, length - done, position + done);
    if (n === 0) break;
    done += n;
  }
  return done === length ? b : b.subarray(0, done);
}
