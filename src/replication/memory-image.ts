/**
 * Database images in memory, for actors that never touch the local disk (an actor restored only
 * to run one alarm): build the image from the chain's links, tell which pages a transaction
 * changed, and keep the header right in both directions.
 *
 *   links ─▶ imageOf(snapshot, deltas) ─▶ forMemory() ─▶ new Database(image) (SQLite's memdb)
 *   db.serialize() ─▶ diffImages(uploaded, now) ─▶ PageDelta ─▶ forBucket() on page 1 ─▶ link
 *
 * Bytes 18 and 19 of a database header are its file-format write/read versions: 2 means WAL.
 * Every image in the bucket is a WAL-mode database (that is how nodes keep actors on disk), but
 * SQLite refuses to open a WAL-mode image in memory (SQLITE_CANTOPEN), so an image is switched to
 * rollback mode (1) on its way into memory and back to WAL mode on its way out: the chain never
 * sees the difference.
 *
 * Restoring builds the image in the buffer the snapshot was inflated into, without copies: a
 * worker restores hundreds of actors a second, and every image-sized buffer that outlives a
 * young-generation collection counts towards V8's next full one (docs/benchmarks.md, "What
 * starts a worker's full collections").
 */
import { checkDelta, isValidPageSize, type PageDelta } from './pages.js';

const WRITE_VERSION_AT = 18;
const READ_VERSION_AT = 19;
const ROLLBACK = 1;
const WAL = 2;

/** The page size a database header names (offset 16, big-endian; 1 means 65536). */
export function headerPageSize(image: Uint8Array): number {
  if (image.length < 100) throw new Error(`a database image of ${image.length} bytes is too short to hold a header`);
  const raw = (image[16]! << 8) | image[17]!;
  const size = raw === 1 ? 65536 : raw;
  if (!isValidPageSize(size) || image.length % size !== 0)
    throw new Error(`a database image of ${image.length} bytes does not hold whole pages of ${size} bytes`);
  return size;
}

function withVersions(image: Uint8Array, version: number): Buffer {
  const out = Buffer.from(image);
  out[WRITE_VERSION_AT] = version;
  out[READ_VERSION_AT] = version;
  return out;
}

/** A copy of a bucket image that SQLite opens in memory (rollback mode). */
export function forMemory(image: Uint8Array): Buffer {
  return withVersions(image, ROLLBACK);
}

/** A bucket image the caller owns, switched to the form SQLite opens in memory in place. */
export function intoMemoryForm(image: Buffer): Buffer {
  image[WRITE_VERSION_AT] = ROLLBACK;
  image[READ_VERSION_AT] = ROLLBACK;
  return image;
}

/** A copy of an in-memory image as the bucket keeps it (WAL mode). */
export function forBucket(image: Uint8Array): Buffer {
  return withVersions(image, WAL);
}

/**
 * The snapshot `base` with every delta applied in order. `base` is the caller's and is changed in
 * place: the result is `base` itself unless a delta changes the page count.
 */
export function imageOf(base: Buffer, deltas: readonly PageDelta[]): Buffer {
  let image = base;
  for (const delta of deltas) {
    checkDelta(delta);
    const size = delta.pageCountAfter * delta.pageSize;
    if (size !== image.length) {
      const next = Buffer.alloc(size);
      image.copy(next, 0, 0, Math.min(image.length, size));
      image = next;
    }
    for (const { pgno, data } of delta.pages) image.set(data, (pgno - 1) * delta.pageSize);
  }
  return image;
}

/**
 * The pages of `now` that differ from `before` (pages past `before`'s end count as changed), as
 * the bucket keeps them (page 1 in WAL mode); null when nothing changed. Both images are in
 * memory form and share the page size.
 */
export function diffImages(before: Uint8Array, now: Uint8Array, pageSize: number): PageDelta | null {
  const count = now.length / pageSize;
  const pages: PageDelta['pages'] = [];
  const nowBytes = Buffer.from(now.buffer, now.byteOffset, now.byteLength); // compared in place: no view per page
  for (let pgno = 1; pgno <= count; pgno++) {
    const from = (pgno - 1) * pageSize;
    const to = from + pageSize;
    if (to <= before.length && nowBytes.compare(before, from, to, from, to) === 0) continue;
    const page = now.subarray(from, to);
    pages.push({ pgno, data: pgno === 1 ? forBucket(page) : page });
  }
  if (pages.length === 0 && before.length === now.length) return null;
  return { pageSize, pageCountAfter: count, pages };
}
