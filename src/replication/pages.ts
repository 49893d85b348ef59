/**
 * A page delta: the database pages a delta link changes, how it is encoded in a link's payload,
 * and how it is written into a plain database file (docs/architecture.md). wal.ts produces deltas.
 *
 * Encoding (all integers unsigned 32-bit big-endian; uncompressed, the link layer compresses):
 *
 *   offset  0  magic "KWPD" (0x4b575044)
 *   offset  4  format version (1)
 *   offset  8  page size in bytes (a power of two, 512..65536)
 *   offset 12  database size after the delta, in pages (>= 1)
 *   offset 16  number of pages n
 *   offset 20  n × [ pgno | page bytes ], pgno strictly increasing, 1 <= pgno <= size after
 *
 * e.g. one 4096-byte page 1 of a 3-page database: 4b575044 00000001 00001000 00000003 00000001
 * 00000001 <4096 bytes>, 4120 bytes in all. `decodeDelta` rejects anything else with a
 * `CorruptLink` naming what is wrong (so does `applyDelta` for a delta that does not fit the file
 * it is applied to); the pages it returns are views into the payload, not copies. `encodeDelta`
 * of a delta that breaks its invariants is a bug here (`INTERNAL`).
 */
import { closeSync, fstatSync, ftruncateSync, openSync, readSync, writeSync } from 'node:fs';
import { CorruptLink, Internal } from '../core/errors.js';

/** The pages changed since the cursor (latest image of each), and the database size after the last commit, in pages. */
export interface PageDelta {
  pageSize: number;
  pageCountAfter: number;
  /** Sorted by pgno, each `data` exactly `pageSize` bytes. */
  pages: Array<{ pgno: number; data: Uint8Array }>;
}

const MAGIC = 0x4b575044; // "KWPD"
const FORMAT_VERSION = 1;
const HEADER_BYTES = 20;
const PGNO_BYTES = 4;
const SQLITE_MAGIC = new TextEncoder().encode('SQLite format 3\0');
const PAGE_SIZE_MIN = 512;
const PAGE_SIZE_MAX = 65536;

export function isValidPageSize(n: number): boolean {
  return Number.isInteger(n) && n >= PAGE_SIZE_MIN && n <= PAGE_SIZE_MAX && (n & (n - 1)) === 0;
}

/** Throws `Fail` (CorruptLink unless told) when the delta breaks its own invariants (page size, order, bounds, page lengths). */
export function checkDelta(delta: PageDelta, what = 'page delta', Fail: new (message: string) => Error = CorruptLink): void {
  const { pageSize, pageCountAfter, pages } = delta;
  if (!isValidPageSize(pageSize))
    throw new Fail(`${what}: page size ${pageSize} is not a power of two in ${PAGE_SIZE_MIN}..${PAGE_SIZE_MAX}`);
  if (!Number.isInteger(pageCountAfter) || pageCountAfter < 1 || pageCountAfter > 0xffffffff) {
    throw new Fail(`${what}: page count after ${pageCountAfter} is not an integer in 1..2^32-1`);
  }
  let prev = 0;
  for (const [i, { pgno, data }] of pages.entries()) {
    if (!Number.isInteger(pgno) || pgno <= prev || pgno > pageCountAfter) {
      throw new Fail(
        `${what}: page ${i} has pgno ${pgno}; pgnos must increase strictly within 1..${pageCountAfter} (the page count after)`,
      );
    }
    if (data.length !== pageSize) throw new Fail(`${what}: page ${pgno} is ${data.length} bytes, not the page size ${pageSize}`);
    prev = pgno;
  }
}

export function encodeDelta(delta: PageDelta): Uint8Array {
  checkDelta(delta, 'page delta', Internal);
  const { pageSize, pageCountAfter, pages } = delta;
  const out = new Uint8Array(HEADER_BYTES + pages.length * (PGNO_BYTES + pageSize));
  const view = new DataView(out.buffer);
  view.setUint32(0, MAGIC);
  view.setUint32(4, FORMAT_VERSION);
  view.setUint32(8, pageSize);
  view.setUint32(12, pageCountAfter);
  view.setUint32(16, pages.length);
  let pos = HEADER_BYTES;
  for (const { pgno, data } of pages) {
    view.setUint32(pos, pgno);
    out.set(data, pos + PGNO_BYTES);
    pos += PGNO_BYTES + pageSize;
  }
  return out;
}

export function decodeDelta(bytes: Uint8Array): PageDelta {
  if (bytes.length < HEADER_BYTES)
    throw new CorruptLink(`delta payload is ${bytes.length} bytes, shorter than its ${HEADER_BYTES}-byte header`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const magic = view.getUint32(0);
  if (magic !== MAGIC) throw new CorruptLink(`delta payload starts with 0x${magic.toString(16).padStart(8, '0')}, not the magic "KWPD"`);
  const version = view.getUint32(4);
  if (version !== FORMAT_VERSION)
    throw new CorruptLink(`delta payload has format version ${version}; this build reads version ${FORMAT_VERSION}`);
  const pageSize = view.getUint32(8);
  if (!isValidPageSize(pageSize))
    throw new CorruptLink(`delta payload: page size ${pageSize} is not a power of two in ${PAGE_SIZE_MIN}..${PAGE_SIZE_MAX}`);
  const count = view.getUint32(16);
  const expected = HEADER_BYTES + count * (PGNO_BYTES + pageSize);
  if (bytes.length !== expected) {
    throw new CorruptLink(`delta payload is ${bytes.length} bytes; ${count} pages of ${pageSize} bytes need exactly ${expected}`);
  }
  const pages: PageDelta['pages'] = [];
  for (let pos = HEADER_BYTES; pos < expected; pos += PGNO_BYTES + pageSize) {
    const start = pos + PGNO_BYTES;
    pages.push({ pgno: view.getUint32(pos), data: bytes.subarray(start, start + pageSize) });
  }
  const delta = { pageSize, pageCountAfter: view.getUint32(12), pages };
  checkDelta(delta, 'delta payload');
  return delta;
}

/**
 * Writes each page at (pgno-1)*pageSize into the database file at `dbPath` (which must exist and
 * have no WAL of its own in use) and truncates it to `pageCountAfter` pages. Throws when the file's
 * header names another page size. Does not fsync: the caller does, before recording what the
 * file now equals (the sidecar).
 */
export function applyDelta(dbPath: string, delta: PageDelta): void {
  checkDelta(delta);
  const fd = openSync(dbPath, 'r+');
  try {
    const filePageSize = readPageSize(fd);
    if (filePageSize !== null && filePageSize !== delta.pageSize) {
      throw new CorruptLink(`${dbPath} has page size ${filePageSize}; the delta's is ${delta.pageSize}`);
    }
    for (const { pgno, data } of delta.pages) writeFully(fd, data, (pgno - 1) * delta.pageSize);
    ftruncateSync(fd, delta.pageCountAfter * delta.pageSize);
  } finally {
    closeSync(fd);
  }
}

/** The page size in a database file's header (offset 16, big-endian, 1 = 65536); null for an empty file. */
function readPageSize(fd: number): number | null {
  if (fstatSync(fd).size === 0) return null;
  const b = new Uint8Array(18);
  if (readSync(fd, b, 0, b.length, 0) !== b.length || !SQLITE_MAGIC.every((c, i) => b[i] === c)) {
    throw new CorruptLink('the file a delta is applied to is not a SQLite database (no "SQLite format 3" header)');
  }
  const n = (b[16]! << 8) | b[17]!;
  return n === 1 ? PAGE_SIZE_MAX : n;
}

function writeFully(fd: number, data: Uint8Array, position: number): void {
  let done = 0;
  while (done < data.length) done += writeSync(fd, data, done, data.length - done, position + done);
}
