/**
 * WAL capture on a real SQLite database (src/replication/wal.ts): a replica built from the
 * snapshot and every captured delta equals the live database under random workloads (captured
 * after every step or only now and then); transactions that change nothing produce no delta; a
 * rolled-back transaction that spilled is not captured; a checkpoint that restarts the log
 * restarts capture; a missing or empty WAL is no change.
 */
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { captureWal } from '../../src/replication/wal.js';
import { readMeta, writeMeta } from '../../src/workers/actor-db.js';
import { dump, dumpReplica, openLive, root, startReplica } from './wal-live.js';
import { bytes, runOp, workloadArb, type Op } from './wal-workload.js';

describe('WAL capture (real SQLite)', () => {
  it('a replica built from the snapshot and every delta equals the live database under random workloads', () => {
    fc.assert(
      fc.property(workloadArb, ({ ops, cachePages }) => {
        const steps: Array<[Op, boolean]> = [[{ kind: 'create', t: 0 }, false], ...ops];
        const live = openLive(cachePages);
        try {
          const fine = startReplica(live, 'fine.db'); // captures after every step
          const coarse = startReplica(live, 'coarse.db'); // captures when the step's flag says so, and before checkpoints
          for (const [i, [op, captureCoarse]] of steps.entries()) {
            if (op.kind === 'checkpoint') coarse.catchUp(); // (fine is caught up after every step)
            const noChange = runOp(live.db, op);
            const delta = fine.catchUp();
            if (noChange) assert.equal(delta, null, `step ${i} (${op.kind}) wrote frames`);
            if (captureCoarse) coarse.catchUp();
            if (i % 8 === 7 || i === steps.length - 1) {
              coarse.catchUp();
              const expected = dump(live.db);
              assert.equal(dumpReplica(fine.path), expected, `after step ${i}`);
              assert.deepEqual(readFileSync(coarse.path), readFileSync(fine.path), `coarse and fine replicas differ after step ${i}`);
            }
          }
          live.db.pragma('wal_checkpoint(TRUNCATE)'); // right after the last capture
          assert.deepEqual(readFileSync(fine.path), readFileSync(live.path), 'replica and checkpointed live file differ');
        } finally {
          live.db.close();
        }
      }),
      { numRuns: 100 },
    );
  });

  it('a read-only transaction, a write of identical values and a rolled-back transaction produce no delta', () => {
    const live = openLive();
    const r = startReplica(live, 'r.db');
    live.db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT)');
    live.db.prepare('INSERT INTO t (a) VALUES (?)').run('x');
    assert.notEqual(r.catchUp(), null);
    const before = r.cursor;
    live.db.transaction(() => live.db.prepare('SELECT * FROM t').all())();
    assert.equal(r.catchUp(), null);
    live.db.prepare('UPDATE t SET a = ? WHERE id = 1').run('x');
    assert.equal(r.catchUp(), null);
    writeMeta(live.db, 'address', readMeta(live.db, 'address')!);
    assert.equal(r.catchUp(), null);
    live.db.exec("BEGIN; INSERT INTO t (a) VALUES ('y'); ROLLBACK");
    assert.equal(r.catchUp(), null);
    assert.deepEqual(r.cursor, before);
    live.db.close();
  });

  it('a rolled-back transaction that spilled leaves frames past the cursor that are not captured, and the next commit writes over them', () => {
    const live = openLive(4);
    const r = startReplica(live, 'r.db');
    live.db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, b BLOB)');
    r.catchUp();
    const committedEnd = r.cursor!.offset;
    live.db.exec('BEGIN');
    for (let i = 0; i < 4; i++) live.db.prepare('INSERT INTO t (b) VALUES (?)').run(bytes(100_000, i));
    live.db.exec('ROLLBACK');
    const spilledEnd = statSync(live.wal).size;
    assert.ok(spilledEnd > committedEnd + 50 * 4120, `the rolled-back transaction spilled (${spilledEnd - committedEnd} bytes)`);
    assert.equal(r.catchUp(), null);
    assert.equal(r.cursor!.offset, committedEnd);
    live.db.prepare('INSERT INTO t (b) VALUES (?)').run(bytes(10, 9));
    assert.notEqual(r.catchUp(), null);
    assert.equal(statSync(live.wal).size, spilledEnd, 'the WAL did not grow: the commit rewound over the rolled-back frames');
    assert.ok(r.cursor!.offset < spilledEnd);
    assert.equal(dumpReplica(r.path), dump(live.db));
    live.db.close();
  });

  it('capture restarts at the WAL start when a checkpoint restarted the log (new salts), truncated or not', () => {
    for (const mode of ['TRUNCATE', 'PASSIVE', 'RESTART']) {
      const live = openLive();
      const r = startReplica(live, 'r.db');
      live.db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT)');
      for (let i = 0; i < 20; i++) live.db.prepare('INSERT INTO t (a) VALUES (?)').run('x'.repeat(500));
      r.catchUp();
      const old = r.cursor!;
      live.db.pragma(`wal_checkpoint(${mode})`);
      assert.deepEqual(captureWal(live.wal, old), { delta: null, cursor: old }, `${mode}: nothing new before the next write`);
      live.db.prepare('UPDATE t SET a = ? WHERE id = 3').run('y');
      assert.notEqual(r.catchUp(), null);
      assert.notDeepEqual([r.cursor!.salt1, r.cursor!.salt2], [old.salt1, old.salt2], mode);
      assert.equal(r.cursor!.offset < old.offset, true, mode);
      assert.equal(dumpReplica(r.path), dump(live.db), mode);
      live.db.close();
    }
  });

  it('a missing or empty WAL is no change', () => {
    const cursor = { offset: 32, salt1: 1, salt2: 2, pageSize: 4096 };
    assert.deepEqual(captureWal(join(root, 'nope-wal'), null), { delta: null, cursor: null });
    assert.deepEqual(captureWal(join(root, 'nope-wal'), cursor), { delta: null, cursor });
    const live = openLive();
    live.db.pragma('wal_checkpoint(TRUNCATE)');
    assert.equal(statSync(live.wal).size, 0);
    assert.deepEqual(captureWal(live.wal, cursor), { delta: null, cursor });
    live.db.close();
  });
});
