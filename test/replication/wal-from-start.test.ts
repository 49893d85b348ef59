/**
 * A capture's `fromStart` (src/replication/wal.ts): chained from capture to capture, it holds every
 * commit since the WAL's first frame, so the committed image built from it equals the one built by
 * reading the WAL from its start, byte for byte, under random workloads (checkpoints restart it);
 * passed with a capture from another cursor it is not used; a large actor's is not kept.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { committedImage } from '../../src/replication/image.js';
import { captureWal, FROM_START_BYTES_MAX, type WalCursor, type WalFromStart } from '../../src/replication/wal.js';
import { openLive } from './wal-live.js';
import { bytes, runOp, workloadArb, type Op } from './wal-workload.js';

describe("a capture's fromStart", () => {
  it('gives the committed image that reading the WAL from its start gives, under random workloads', () => {
    let compared = 0;
    fc.assert(
      fc.property(workloadArb, ({ ops, cachePages }) => {
        const steps: Array<[Op, boolean]> = [[{ kind: 'create', t: 0 }, true], ...ops];
        const live = openLive(cachePages);
        let cursor: WalCursor | null = null;
        let known: WalFromStart | undefined;
        const capture = () => {
          const c = captureWal(live.wal, cursor, known);
          cursor = c.cursor;
          known = c.fromStart;
          return c;
        };
        try {
          for (const [i, [op, captureNow]] of steps.entries()) {
            if (op.kind === 'checkpoint' || op.kind === 'vacuum') capture(); // as the replica does before folding the WAL
            runOp(live.db, op);
            if (!captureNow) continue;
            const c = capture();
            if (!c.fromStart) continue; // more pages than FROM_START_BYTES_MAX since the WAL's start
            const fromStart = committedImage(live.path, c.fromStart);
            const reread = committedImage(live.path);
            assert.deepEqual(fromStart.cursor, reread.cursor, `step ${i} (${op.kind}): cursors differ`);
            assert.ok(Buffer.from(fromStart.image).equals(Buffer.from(reread.image)), `step ${i} (${op.kind}): images differ`);
            compared++;
          }
        } finally {
          live.db.close();
        }
      }),
      { numRuns: 100 },
    );
    assert.ok(compared > 200, `only ${compared} images compared`);
  });

  it('is not used by a capture from another cursor, and starts again with the WAL', () => {
    const live = openLive();
    try {
      live.db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, b BLOB)');
      const first = captureWal(live.wal, null);
      assert.ok(first.fromStart, 'a capture from the WAL start has its commits');
      live.db.prepare('INSERT INTO t (b) VALUES (?)').run(bytes(100, 1));
      const second = captureWal(live.wal, first.cursor, first.fromStart);
      assert.ok(second.fromStart);
      live.db.prepare('INSERT INTO t (b) VALUES (?)').run(bytes(100, 2));
      // `first.fromStart` ends at first.cursor, not second.cursor: it cannot stand for the frames between.
      assert.equal(captureWal(live.wal, second.cursor, first.fromStart).fromStart, undefined);
      assert.equal(captureWal(live.wal, second.cursor).fromStart, undefined, 'no fromStart without one passed');
      const third = captureWal(live.wal, second.cursor, second.fromStart);
      assert.ok(third.fromStart);
      assert.deepEqual(third.fromStart.delta, captureWal(live.wal, null).delta, 'the same pages as one capture from the start');
      live.db.pragma('wal_checkpoint(TRUNCATE)');
      live.db.prepare('INSERT INTO t (b) VALUES (?)').run(bytes(100, 3));
      const restarted = captureWal(live.wal, third.cursor, third.fromStart);
      assert.notEqual(restarted.cursor!.salt1, third.cursor!.salt1, 'the WAL restarted');
      assert.deepEqual(restarted.fromStart!.delta, restarted.delta, 'begun again from the new WAL');
    } finally {
      live.db.close();
    }
  });

  it('is not kept past FROM_START_BYTES_MAX of pages', () => {
    const live = openLive();
    try {
      live.db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, b BLOB)');
      const small = captureWal(live.wal, null);
      assert.ok(small.fromStart);
      live.db.prepare('INSERT INTO t (b) VALUES (?)').run(bytes(2 * FROM_START_BYTES_MAX, 4));
      const large = captureWal(live.wal, small.cursor, small.fromStart);
      assert.notEqual(large.delta, null);
      assert.equal(large.fromStart, undefined);
    } finally {
      live.db.close();
    }
  });
});
