/**
 * WAL capture over several commits, on WALs written here as SQLite would write them: one capture
 * over several commits equals a capture after each (shrinks, regrowth, spilled pages past the
 * end), and frames after the last commit wait for the next capture.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { applyDelta, captureWal, walChecksum, type WalCursor } from '../../src/replication/wal.js';
import { nextDir, root } from './wal-live.js';

/** A WAL as SQLite would write it (little-endian checksums): commits of frames [pgno, fill byte], the last frame of each carrying the commit's size. */
function syntheticWal(
  pageSize: number,
  commits: Array<{ frames: Array<[number, number]>; size: number }>,
): { wal: Buffer; ends: number[] } {
  const frameBytes = 24 + pageSize;
  const wal = Buffer.alloc(32 + commits.reduce((n, c) => n + c.frames.length, 0) * frameBytes);
  wal.writeUInt32BE(0x377f0682, 0);
  wal.writeUInt32BE(3007000, 4);
  wal.writeUInt32BE(pageSize, 8);
  wal.writeUInt32BE(0xdeadbeef, 16);
  wal.writeUInt32BE(0x01020304, 20);
  let sum = walChecksum(wal, 0, 24, false, [0, 0]);
  wal.writeUInt32BE(sum[0], 24);
  wal.writeUInt32BE(sum[1], 28);
  const ends: number[] = [];
  let f = 32;
  for (const { frames, size } of commits) {
    for (const [i, [pgno, fill]] of frames.entries()) {
      wal.writeUInt32BE(pgno, f);
      wal.writeUInt32BE(i === frames.length - 1 ? size : 0, f + 4);
      wal.copy(wal, f + 8, 16, 24);
      wal.fill(fill, f + 24, f + frameBytes);
      sum = walChecksum(wal, f, f + 8, false, sum);
      sum = walChecksum(wal, f + 24, f + frameBytes, false, sum);
      wal.writeUInt32BE(sum[0], f + 16);
      wal.writeUInt32BE(sum[1], f + 20);
      f += frameBytes;
    }
    ends.push(f);
  }
  return { wal, ends };
}

describe('WAL capture over several commits (synthetic WALs)', () => {
  const commitArb = fc.record({
    frames: fc.array(fc.tuple(fc.integer({ min: 2, max: 12 }), fc.integer({ min: 1, max: 255 })), { minLength: 1, maxLength: 5 }),
    size: fc.integer({ min: 1, max: 12 }),
  });

  it('one capture over several commits equals a capture after each (shrinks, regrowth, spilled pages past the end)', () => {
    const dir = nextDir();
    mkdirSync(dir);
    const pageSize = 512;
    const base = Buffer.alloc(12 * pageSize, 0xee);
    base.write('SQLite format 3\0', 0, 'latin1');
    base.writeUInt16BE(pageSize, 16);
    fc.assert(
      fc.property(fc.array(commitArb, { minLength: 1, maxLength: 6 }), (commits) => {
        const { wal, ends } = syntheticWal(pageSize, commits);
        const walPath = join(dir, 'x-wal');
        const [once, each] = [join(dir, 'once.db'), join(dir, 'each.db')];
        writeFileSync(once, base);
        writeFileSync(each, base);
        writeFileSync(walPath, wal);
        const all = captureWal(walPath, null);
        applyDelta(once, all.delta!);
        assert.equal(all.cursor!.offset, wal.length);
        assert.equal(all.delta!.pageCountAfter, commits.at(-1)!.size);
        let cursor: WalCursor | null = null;
        for (const end of ends) {
          writeFileSync(walPath, wal.subarray(0, end));
          const step = captureWal(walPath, cursor);
          applyDelta(each, step.delta!);
          cursor = step.cursor;
        }
        assert.deepEqual(readFileSync(once), readFileSync(each));
      }),
    );
  });

  it('frames after the last commit (a transaction still open) are left for the next capture', () => {
    const path = join(root, 'open-txn-wal');
    const { wal, ends } = syntheticWal(512, [
      { frames: [[2, 1]], size: 3 },
      {
        frames: [
          [3, 2],
          [2, 3],
        ],
        size: 3,
      },
    ]);
    writeFileSync(path, wal.subarray(0, ends[0]! + 536)); // the second commit's first frame only
    const first = captureWal(path, null);
    assert.equal(first.cursor!.offset, ends[0]);
    assert.deepEqual(
      first.delta!.pages.map((p) => [p.pgno, p.data[0]]),
      [[2, 1]],
    );
    writeFileSync(path, wal);
    const second = captureWal(path, first.cursor);
    assert.deepEqual(
      second.delta!.pages.map((p) => [p.pgno, p.data[0]]),
      [
        [2, 3],
        [3, 2],
      ],
    );
    assert.throws(() => captureWal(path, { ...first.cursor!, offset: 100 }), /not on a frame boundary/);
  });
});
