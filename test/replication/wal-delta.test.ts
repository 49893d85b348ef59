/**
 * The page delta's encoding and application: decode(encode(d)) is d, malformed payloads are
 * refused naming the fault, and applyDelta writes pages, truncates, and refuses a file of another
 * page size or one that is not a SQLite database.
 */
import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { applyDelta, decodeDelta, encodeDelta } from '../../src/replication/wal.js';
import { root } from './wal-live.js';

describe('delta encoding', () => {
  const deltaArb = fc
    .record({
      pageSize: fc.constantFrom(512, 1024, 4096),
      pageCountAfter: fc.integer({ min: 1, max: 50 }),
      pgnos: fc.uniqueArray(fc.integer({ min: 1, max: 50 }), { maxLength: 8 }),
    })
    .chain(({ pageSize, pageCountAfter, pgnos }) => {
      const sorted = pgnos.filter((p) => p <= pageCountAfter).sort((a, b) => a - b);
      return fc.tuple(...sorted.map(() => fc.uint8Array({ minLength: pageSize, maxLength: pageSize }))).map((datas) => ({
        pageSize,
        pageCountAfter,
        pages: sorted.map((pgno, i) => ({ pgno, data: datas[i]! })),
      }));
    });

  it('decode(encode(d)) is d', () => {
    fc.assert(
      fc.property(deltaArb, (d) => {
        const bytes = encodeDelta(d);
        assert.equal(bytes.length, 20 + d.pages.length * (4 + d.pageSize));
        const back = decodeDelta(bytes);
        assert.deepEqual({ ...back, pages: back.pages.map((p) => ({ pgno: p.pgno, data: new Uint8Array(p.data) })) }, d);
      }),
    );
  });

  it('malformed payloads are rejected with a message naming the fault', () => {
    const page = (pgno: number) => ({ pgno, data: new Uint8Array(512).fill(pgno) });
    const good = encodeDelta({ pageSize: 512, pageCountAfter: 5, pages: [page(1), page(3)] });
    const edit = (at: number, value: number) => {
      const b = new Uint8Array(good);
      new DataView(b.buffer).setUint32(at, value);
      return b;
    };
    const cases: Array<[Uint8Array, RegExp]> = [
      [good.subarray(0, 10), /shorter than its 20-byte header/],
      [good.subarray(0, good.length - 1), /need exactly/],
      [Uint8Array.of(...good, 0), /need exactly/],
      [edit(0, 0x12345678), /magic/],
      [edit(4, 2), /format version 2/],
      [edit(8, 1000), /page size 1000/],
      [edit(8, 1024), /need exactly/],
      [edit(12, 0), /page count after 0/],
      [edit(12, 2), /pgno 3/],
      [edit(16, 3), /need exactly/],
      [edit(20, 0), /pgno 0/],
      [edit(20 + 516, 1), /pgno 1; pgnos must increase/],
    ];
    for (const [bytes, message] of cases) assert.throws(() => decodeDelta(bytes), message);
    assert.throws(() => encodeDelta({ pageSize: 512, pageCountAfter: 5, pages: [page(3), page(1)] }), /increase strictly/);
    assert.throws(() => encodeDelta({ pageSize: 512, pageCountAfter: 5, pages: [{ pgno: 1, data: new Uint8Array(10) }] }), /10 bytes/);
  });

  it('applyDelta writes pages, truncates, and refuses a file of another page size', () => {
    const path = join(root, 'apply.db');
    const header = new Uint8Array(1024);
    header.set(new TextEncoder().encode('SQLite format 3\0'));
    header[16] = 4; // page size 1024, big-endian
    writeFileSync(path, Buffer.concat([header, new Uint8Array(3 * 1024).fill(1)]));
    applyDelta(path, {
      pageSize: 1024,
      pageCountAfter: 6,
      pages: [
        { pgno: 2, data: new Uint8Array(1024).fill(2) },
        { pgno: 6, data: new Uint8Array(1024).fill(6) },
      ],
    });
    const b = readFileSync(path);
    assert.equal(b.length, 6 * 1024);
    assert.deepEqual([b[0], b[1024], b[2048], b[4 * 1024], b[5 * 1024 + 7]], [0x53, 2, 1, 0, 6]);
    applyDelta(path, { pageSize: 1024, pageCountAfter: 2, pages: [] });
    assert.equal(statSync(path).size, 2 * 1024);
    assert.throws(() => applyDelta(path, { pageSize: 4096, pageCountAfter: 1, pages: [] }), /page size 1024; the delta's is 4096/);
    writeFileSync(path, new Uint8Array(1024));
    assert.throws(() => applyDelta(path, { pageSize: 1024, pageCountAfter: 1, pages: [] }), /not a SQLite database/);
    writeFileSync(path, '');
    applyDelta(path, { pageSize: 1024, pageCountAfter: 1, pages: [{ pgno: 1, data: header }] });
    assert.deepEqual(readFileSync(path), Buffer.from(header));
  });
});
