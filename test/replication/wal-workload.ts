/**
 * Random workloads for a live actor database, for the WAL capture property test: ops that create,
 * index, alter and drop tables, insert, update and delete rows (blobs large enough to overflow
 * pages), big transactions committed or rolled back (they spill), savepoints, read-only and
 * same-value transactions, checkpoints and VACUUM. `runOp` says whether an op must leave no
 * frames in the WAL. `bytes` is deterministic filler from a seed.
 */
import fc from 'fast-check';
import { readMeta, writeMeta, type Db } from '../../src/workers/actor-db.js';

export function bytes(n: number, seed: number): Buffer {
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

export type Op =
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
export const opArb: fc.Arbitrary<Op> = fc.oneof(
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
export function runOp(db: Db, op: Op): boolean {
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

/** A random workload: its ops, each with a flag the test reads as it likes, and the live database's page cache in pages (small: big transactions spill). */
export const workloadArb = fc.record({
  ops: fc.array(fc.tuple(opArb, fc.boolean()), { minLength: 5, maxLength: 40 }),
  cachePages: fc.integer({ min: 4, max: 64 }),
});
