/**
 * WAL capture of a damaged log: a torn last frame, a bad checksum, salt, page number or db-size
 * field stops capture at the last intact commit, and a WAL whose header fails its checksum is
 * ignored, as SQLite ignores it; a WAL with big-endian checksums reads the same; the checksum
 * reads aligned and unaligned buffers alike.
 */
import assert from 'node:assert/strict';
import { closeSync, copyFileSync, openSync, readFileSync, statSync, truncateSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { captureWal, walChecksum, type WalCursor } from '../../src/replication/wal.js';
import { openLive, startReplica } from './wal-live.js';

describe('WAL capture: torn and corrupt frames', () => {
  /** A copy of a WAL holding a captured first commit, then a 1-row commit and a commit of many frames; tests damage the copy. */
  function walCopy(): { wal: string; cursor: WalCursor; secondEnd: number; frameBytes: number; pageSize: number } {
    const live = openLive();
    const r = startReplica(live, 'r.db');
    live.db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT)');
    r.catchUp();
    const cursor = r.cursor!;
    live.db.prepare('INSERT INTO t (a) VALUES (?)').run('second');
    const secondEnd = captureWal(live.wal, cursor).cursor!.offset;
    live.db.exec('BEGIN');
    for (let i = 0; i < 30; i++) live.db.prepare('INSERT INTO t (a) VALUES (?)').run('third'.repeat(200));
    live.db.exec('COMMIT');
    const wal = join(live.dir, 'copy-wal');
    copyFileSync(live.wal, wal);
    live.db.close();
    return { wal, cursor, secondEnd, frameBytes: 24 + cursor.pageSize, pageSize: cursor.pageSize };
  }

  function corrupt(path: string, at: number, byte = 0x5a): void {
    const fd = openSync(path, 'r+');
    const b = readFileSync(path);
    writeSync(fd, Uint8Array.of(b[at]! ^ byte), 0, 1, at);
    closeSync(fd);
  }

  it('the intact copy captures both commits', () => {
    const { wal, cursor, secondEnd } = walCopy();
    const all = captureWal(wal, cursor);
    assert.equal(all.cursor!.offset, statSync(wal).size);
    assert.ok(all.cursor!.offset > secondEnd + 2 * (24 + cursor.pageSize), 'the third commit has several frames');
  });

  it('a torn last frame is not captured: capture stops at the previous commit', () => {
    const { wal, cursor, secondEnd, frameBytes } = walCopy();
    const size = statSync(wal).size;
    for (const cut of [size - 1, size - frameBytes + 24, size - frameBytes + 3, size - frameBytes]) {
      truncateSync(wal, cut);
      const got = captureWal(wal, cursor);
      assert.equal(got.cursor!.offset, secondEnd, `cut at ${cut}`);
      assert.equal(got.delta!.pages.length >= 1, true);
    }
    truncateSync(wal, secondEnd - 100);
    assert.deepEqual(captureWal(wal, cursor), { delta: null, cursor });
  });

  it('a frame with a bad checksum (or salt, or page number 0) stops capture there', () => {
    const { wal, cursor, secondEnd, frameBytes } = walCopy();
    const pristine = readFileSync(wal);
    const damages: Array<[string, number]> = [
      ['page byte of the third commit’s 2nd frame', secondEnd + frameBytes + 24 + 1000],
      ['frame header checksum of the third commit’s 1st frame', secondEnd + 16],
      ['salt of the third commit’s last frame', statSync(wal).size - frameBytes + 9],
      ['page number of the third commit’s 1st frame', secondEnd + 3],
      ['db-size field of the third commit’s last frame', statSync(wal).size - frameBytes + 7],
    ];
    for (const [what, at] of damages) {
      writeFileSync(wal, pristine);
      corrupt(wal, at);
      assert.equal(captureWal(wal, cursor).cursor!.offset, secondEnd, what);
    }
    writeFileSync(wal, pristine);
    const fd = openSync(wal, 'r+');
    writeSync(fd, new Uint8Array(4), 0, 4, secondEnd); // page number 0
    closeSync(fd);
    assert.equal(captureWal(wal, cursor).cursor!.offset, secondEnd);
    writeFileSync(wal, pristine);
    corrupt(wal, cursor.offset + 24 + 50); // in the second commit: nothing new is captured
    assert.deepEqual(captureWal(wal, cursor), { delta: null, cursor });
    writeFileSync(wal, pristine);
    corrupt(wal, 12); // the WAL header's checksum fails: SQLite ignores such a WAL, and so does capture
    assert.deepEqual(captureWal(wal, cursor), { delta: null, cursor });
  });

  it('a WAL with big-endian checksums (magic 0x377f0683) is read the same', () => {
    const { wal, cursor } = walCopy();
    const le = readFileSync(wal);
    /** What a capture read (its `fromStart` holds a function: compared through its delta). */
    const read = (c: ReturnType<typeof captureWal>) => ({
      delta: c.delta,
      cursor: c.cursor,
      commits: c.commits,
      fromStart: c.fromStart?.delta,
    });
    const expected = read(captureWal(wal, null));
    const be = Buffer.from(le);
    be.writeUInt32BE(0x377f0683, 0);
    let sum = walChecksum(be, 0, 24, true, [0, 0]);
    be.writeUInt32BE(sum[0], 24);
    be.writeUInt32BE(sum[1], 28);
    const frameBytes = 24 + cursor.pageSize;
    for (let f = 32; f + frameBytes <= be.length; f += frameBytes) {
      sum = walChecksum(be, f, f + 8, true, sum);
      sum = walChecksum(be, f + 24, f + frameBytes, true, sum);
      be.writeUInt32BE(sum[0], f + 16);
      be.writeUInt32BE(sum[1], f + 20);
    }
    writeFileSync(wal, be);
    assert.deepEqual(read(captureWal(wal, null)), expected);
    assert.equal(captureWal(wal, cursor).cursor!.offset, expected.cursor!.offset);
    writeFileSync(wal, le);
    assert.deepEqual(read(captureWal(wal, null)), expected);
  });

  it('the checksum reads aligned and unaligned buffers alike', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 8, maxLength: 200 }), fc.integer({ min: 0, max: 3 }), fc.boolean(), (raw, shift, big) => {
        const n = raw.length - (raw.length % 8);
        const aligned = new Uint8Array(raw.subarray(0, n));
        const unaligned = new Uint8Array(n + shift).subarray(shift);
        unaligned.set(aligned);
        assert.deepEqual(walChecksum(unaligned, 0, n, big, [7, 9]), walChecksum(aligned, 0, n, big, [7, 9]));
      }),
    );
  });
});
