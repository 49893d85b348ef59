import assert from 'node:assert/strict';
import {
  closeSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import {
  applyDelta,
  captureWal,
  decodeDelta,
  encodeDelta,
  walChecksum,
  type PageDelta,
  type WalCursor,
} from '../../src/replication/wal.js';
import { openActorDb, readMeta, writeMeta, type Db } from '../../src/workers/actor-db.js';
import { parseAddress } from '../../src/core/address.js';

const root = mkdtempSync(join(tmpdir(), 'keepwork-wal-'));
after(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;
const address = parseAddress('acme/Wal/a');

/** A live database opened as actor-db.ts does, with autocheckpoint off and a small page cache so big transactions spill. */
function openLive(cachePages = 16): { db: Db; dir: string; path: string; wal: string } {
  const dir = join(root, `d${dirs++}`);
  const path = join(dir, 'live.db');
  const db = openActorDb(path, address, true)!;
  db.pragma('wal_autocheckpoint = 0');
  db.pragma(`cache_size = ${cachePages}`);
  return { db, dir, path, wal: `${path}-wal` };
}

/** A file that follows the live database: its snapshot at the start, then every captured delta (through the encoding). */
class Replica {
  cursor: WalCursor | null;
  constructor(
    readonly path: string,
    private readonly wal: string,
    snapshot: Uint8Array,
    cursor: WalCursor | null,
  ) {
    writeFileSync(path, snapshot);
    this.cursor = cursor;
  }

  catchUp(): PageDelta | null {
    const { delta, cursor } = captureWal(this.wal, this.cursor);
    if (delta) applyDelta(this.path, decodeDelta(encodeDelta(delta)));
    this.cursor = cursor;
    return delta;
  }
}

function startReplica(live: { db: Db; dir: string; wal: string }, name: string): Replica {
  return new Replica(join(live.dir, name), live.wal, live.db.serialize(), captureWal(live.wal, null).cursor);
}

/** Every schema entry and every table's rows by rowid, blobs in hex. */
function dump(db: Db): string {
  const master = db.prepare('SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name').all() as Array<{
    type: string;
    name: string;
  }>;
  const rows = master
    .filter((m) => m.type === 'table')
    .map((m) => [m.name, db.prepare(`SELECT rowid AS _rowid_, * FROM "${m.name}" ORDER BY rowid`).all()]);
  return JSON.stringify({ master, rows }, (_k, v: unknown) =>
    v && typeof v === 'object' && 'type' in v && v.type === 'Buffer'
      ? Buffer.from((v as unknown as { data: number[] }).data).toString('hex')
      : v,
  );
}

/** Opens the replica read-only, dumps it and checks its integrity, then removes the empty -wal/-shm the open leaves. */
function dumpReplica(path: string): string {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
    return dump(db);
  } finally {
    db.close();
    for (const suffix of ['-wal', '-shm']) rmSync(path + suffix, { force: true });
  }
}

function bytes(n: number, seed: number): Buffer {
  const b = Buffer.allocUnsafe(n);
  let x = (seed * 2654435761) >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    b[i] = x & 0xff;
  }
  return b;
}

// ---------------------------------------------------------------------------------------------
// Random workloads

type Op =
  | { kind: 'create'; t: number }
  | { kind: 'index'; t: number }
  | { kind: 'addColumn'; t: number }
  | { kind: 'drop'; t: number }
  | { kind: 'insert'; t: number; rows: number; blobBytes: number; seed: number }
  | { kind: 'update'; t: number; mod: number; seed: number }
  | { kind: 'delete'; t: number; mod: number; rem: number }
  | { kind: 'bigTxn'; t: number; blobs: number; blobBytes: number; seed: number; commit: boolean }
  | { kind: 'savepoint'; t: number; blobBytes: number; seed: number }
  | { kind: 'readOnly' }
  | { kind: 'sameValue' }
  | { kind: 'checkpoint'; mode: 'TRUNCATE' | 'PASSIVE' }
  | { kind: 'vacuum' };

const TABLES = 3;
const t = fc.integer({ min: 0, max: TABLES - 1 });
const seed = fc.integer({ min: 1, max: 1e9 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant('create' as const), t }), weight: 3 },
  { arbitrary: fc.record({ kind: fc.constant('index' as const), t }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('addColumn' as const), t }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('drop' as const), t }), weight: 1 },
  {
    arbitrary: fc.record({
      kind: fc.constant('insert' as const),
      t,
      rows: fc.integer({ min: 1, max: 40 }),
      blobBytes: fc.oneof(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max: 20_000 })),
      seed,
    }),
    weight: 6,
  },
  { arbitrary: fc.record({ kind: fc.constant('update' as const), t, mod: fc.integer({ min: 1, max: 5 }), seed }), weight: 3 },
  {
    arbitrary: fc.record({
      kind: fc.constant('delete' as const),
      t,
      mod: fc.integer({ min: 2, max: 5 }),
      rem: fc.integer({ min: 0, max: 4 }),
    }),
    weight: 2,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant('bigTxn' as const),
      t,
      blobs: fc.integer({ min: 1, max: 12 }),
      blobBytes: fc.integer({ min: 10_000, max: 120_000 }),
      seed,
      commit: fc.boolean(),
    }),
    weight: 3,
  },
  {
    arbitrary: fc.record({ kind: fc.constant('savepoint' as const), t, blobBytes: fc.integer({ min: 50_000, max: 200_000 }), seed }),
    weight: 1,
  },
  { arbitrary: fc.constant({ kind: 'readOnly' as const }), weight: 1 },
  { arbitrary: fc.constant({ kind: 'sameValue' as const }), weight: 1 },
  {
    arbitrary: fc.record({ kind: fc.constant('checkpoint' as const), mode: fc.constantFrom('TRUNCATE' as const, 'PASSIVE' as const) }),
    weight: 1,
  },
  { arbitrary: fc.constant({ kind: 'vacuum' as const }), weight: 1 },
);

function tableExists(db: Db, i: number): boolean {
  return db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(`t${i}`) !== undefined;
}

function insertRows(db: Db, table: string, rows: number, blobBytes: number, s: number): void {
  const values = Array.from({ length: rows }, () => '(?, ?, ?)').join(', ');
  const args = Array.from({ length: rows }, (_, r) => [s + r, `v${s}-${r}`.repeat(1 + (r % 7)), bytes(blobBytes, s + r)]).flat();
  db.prepare(`INSERT INTO ${table} (k, a, b) VALUES ${values}`).run(...args);
}

/** The op's table, or the first that exists when it does not (null: none does). */
function pickTable(db: Db, op: Op): string | null {
  if (!('t' in op) || op.kind === 'create') return 't' in op ? `t${op.t}` : '';
  for (let i = 0; i < TABLES; i++) if (tableExists(db, (op.t + i) % TABLES)) return `t${(op.t + i) % TABLES}`;
  return null;
}

/** Runs one op; returns whether it must leave no frames in the WAL ("no change"). */
function runOp(db: Db, op: Op): boolean {
  const table = pickTable(db, op);
  if (table === null) return true;
  switch (op.kind) {
    case 'create':
      db.exec(`CREATE TABLE IF NOT EXISTS ${table} (id INTEGER PRIMARY KEY, k INTEGER, a TEXT, b BLOB)`);
      return false;
    case 'index':
      db.exec(`CREATE INDEX IF NOT EXISTS ${table}_k ON ${table}(k, a)`);
      return false;
    case 'addColumn': {
      const n = (db.pragma(`table_info(${table})`) as unknown[]).length;
      if (n < 10) db.exec(`ALTER TABLE ${table} ADD COLUMN c${n} TEXT DEFAULT 'd${n}'`);
      return false;
    }
    case 'drop':
      db.exec(`DROP TABLE ${table}`);
      return false;
    case 'insert':
      insertRows(db, table, op.rows, op.blobBytes, op.seed);
      return false;
    case 'update':
      db.prepare(`UPDATE ${table} SET a = ?, k = k + 1 WHERE id % ? = 0`).run(`u${op.seed}`, op.mod);
      return false;
    case 'delete':
      db.prepare(`DELETE FROM ${table} WHERE id % ? = ?`).run(op.mod, op.rem % op.mod);
      return false;
    case 'bigTxn':
      db.exec('BEGIN');
      for (let i = 0; i < op.blobs; i++) insertRows(db, table, 1, op.blobBytes, op.seed + i);
      db.prepare(`UPDATE ${table} SET k = -k WHERE id % 3 = 1`).run();
      db.exec(op.commit ? 'COMMIT' : 'ROLLBACK');
      return !op.commit;
    case 'savepoint':
      db.exec('BEGIN');
      insertRows(db, table, 1, 10, op.seed);
      db.exec('SAVEPOINT s');
      insertRows(db, table, 3, op.blobBytes, op.seed + 1);
      db.exec('ROLLBACK TO s');
      db.exec('RELEASE s');
      insertRows(db, table, 2, 100, op.seed + 7);
      db.exec('COMMIT');
      return false;
    case 'readOnly':
      db.exec('BEGIN');
      db.prepare('SELECT count(*) FROM sqlite_master').get();
      db.exec('COMMIT');
      return true;
    case 'sameValue':
      writeMeta(db, 'address', readMeta(db, 'address')!);
      db.prepare("UPDATE _keep_meta SET value = value WHERE key = 'address'").run();
      return true;
    case 'checkpoint':
      db.pragma(`wal_checkpoint(${op.mode})`);
      return true;
    case 'vacuum':
      db.exec('VACUUM');
      return false;
  }
}

describe('WAL capture (real SQLite)', () => {
  it('a replica built from the snapshot and every delta equals the live database under random workloads', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(opArb, fc.boolean()), { minLength: 5, maxLength: 40 }),
        fc.integer({ min: 4, max: 64 }),
        (ops, cachePages) => {
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
        },
      ),
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
    const expected = captureWal(wal, null);
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
    assert.deepEqual(captureWal(wal, null), expected);
    assert.equal(captureWal(wal, cursor).cursor!.offset, expected.cursor!.offset);
    writeFileSync(wal, le);
    assert.deepEqual(captureWal(wal, null), expected);
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

/**
 * A WAL as SQLite would write it (little-endian checksums): commits of frames [pgno, fill byte],
 * the last frame of each carrying the commit's size.
 */
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
    const dir = join(root, `d${dirs++}`);
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
