/**
 * diffImages (memory-image.ts): the pages of an in-memory image that differ from the image last
 * uploaded — each changed page, the pages past the old end, page 1 in the bucket's (WAL) form —
 * and nothing when no page changed.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { diffImages } from '../../src/replication/memory-image.js';

const PAGE = 512;

/** An image of `n` pages, page i filled with `fill(i)`; bytes 18 and 19 say rollback mode (1). */
function image(n: number, fill: (pgno: number) => number): Buffer {
  const b = Buffer.alloc(n * PAGE);
  for (let p = 1; p <= n; p++) b.fill(fill(p), (p - 1) * PAGE, p * PAGE);
  b[18] = 1;
  b[19] = 1;
  return b;
}

describe('diffImages', () => {
  it('nothing changed: null', () => {
    assert.equal(
      diffImages(
        image(3, (p) => p),
        image(3, (p) => p),
        PAGE,
      ),
      null,
    );
  });

  it('the changed pages and those past the old end, each with its bytes, page 1 in WAL form', () => {
    const before = image(3, (p) => p);
    const now = image(5, (p) => (p === 2 ? 9 : p));
    now[PAGE * 2 + 7] = 0xee; // one byte of page 3
    const delta = diffImages(before, now, PAGE)!;
    assert.equal(delta.pageCountAfter, 5);
    assert.deepEqual(
      delta.pages.map((p) => p.pgno),
      [2, 3, 4, 5],
    );
    for (const { pgno, data } of delta.pages) assert.deepEqual(Buffer.from(data), now.subarray((pgno - 1) * PAGE, pgno * PAGE));
    now[100] = 0x55; // page 1 changes too: it goes up as the bucket keeps it
    const withHeader = diffImages(before, now, PAGE)!;
    const page1 = withHeader.pages[0]!;
    assert.equal(page1.pgno, 1);
    assert.equal(page1.data[18], 2);
    assert.equal(page1.data[19], 2);
    assert.equal(now[18], 1, 'the image itself is left as it is');
  });

  it('an image in a view of a larger buffer is read at its own offset', () => {
    const before = image(2, () => 1);
    const backing = Buffer.concat([Buffer.alloc(PAGE, 7), image(2, (p) => (p === 2 ? 3 : 1))]);
    const now = new Uint8Array(backing.buffer, backing.byteOffset + PAGE, 2 * PAGE);
    assert.deepEqual(
      diffImages(before, now, PAGE)!.pages.map((p) => p.pgno),
      [2],
    );
  });

  it('a shorter image: the pages it keeps are compared, its new page count said', () => {
    const delta = diffImages(
      image(4, (p) => p),
      image(2, (p) => p),
      PAGE,
    )!;
    assert.deepEqual(delta.pages, []);
    assert.equal(delta.pageCountAfter, 2);
  });
});
