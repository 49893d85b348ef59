import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { checkGuestSql } from '../../src/workers/sql-guard.js';

const refused = (sql: string) => {
  try {
    checkGuestSql(sql);
    return false;
  } catch (e) {
    assert.equal((e as { code?: string }).code, 'SQL_REFUSED', String(e));
    return true;
  }
};

/** An actor's database as a handler finds it: keepwork's tables beside the guest's, inside the event's transaction. */
function actorDb() {
  const db = new Database(':memory:');
  db.exec(`CREATE TABLE _keep_meta (k TEXT PRIMARY KEY, v TEXT); INSERT INTO _keep_meta VALUES ('initialized', '1');
           CREATE TABLE log (x UNIQUE); CREATE TABLE audit (what TEXT)`);
  db.exec('BEGIN IMMEDIATE');
  return db;
}
const keepwork = (db: Database.Database) => ({
  meta: db.prepare('SELECT * FROM _keep_meta').all(),
  version: db.pragma('user_version', { simple: true }),
  appId: db.pragma('application_id', { simple: true }),
  pageSize: db.pragma('page_size', { simple: true }),
});

const TRIGGER_BODY_WITH_TRAPS = `CREATE TRIGGER logged AFTER INSERT ON log BEGIN
  INSERT INTO audit VALUES ('END; COMMIT; -- not a comment /* nor this');
  UPDATE audit SET what = CASE WHEN new.x > 1 THEN 'big' ELSE what END WHERE what = 'x';
  INSERT INTO audit SELECT "end" FROM (SELECT 'end' AS "end"); -- a comment; END
END`;

describe('guest SQL guard: PRAGMAs', () => {
  for (const sql of [
    'PRAGMA user_version = 5',
    'PRAGMA user_version(5)',
    'PRAGMA main.user_version=5',
    'PRAGMA "user_version" = 5',
    'PRAGMA application_id = 1',
    'PRAGMA page_size = 8192',
    'pragma Page_Size(1024)',
    'EXPLAIN PRAGMA user_version = 9',
    'PRAGMA journal_mode = DELETE',
    'PRAGMA writable_schema = 1',
    'PRAGMA schema_version',
    'PRAGMA table_info(_keep_meta)',
    "PRAGMA table_info('_keep_meta')",
    'PRAGMA table_info(log, audit)',
    'PRAGMA',
  ]) {
    it(`refuses ${sql}`, () => assert.ok(refused(sql)));
  }

  for (const sql of [
    'PRAGMA user_version',
    'PRAGMA main.page_size',
    'PRAGMA application_id',
    'PRAGMA table_info(log)',
    "PRAGMA table_info('log')",
    'PRAGMA table_info = log',
    'PRAGMA main.index_list(log)',
    'PRAGMA integrity_check(10)',
    'PRAGMA quick_check',
  ]) {
    it(`allows ${sql}`, () => {
      assert.ok(!refused(sql));
      actorDb().prepare(sql).all(); // real SQL, which runs
    });
  }

  it('what it refuses would have changed the database; what it allows leaves it as it was', () => {
    const db = actorDb();
    const before = keepwork(db);
    for (const sql of ['PRAGMA user_version', 'PRAGMA application_id', 'PRAGMA page_size']) db.exec(checkGuestSql(sql));
    assert.deepEqual(keepwork(db), before);
    db.exec('PRAGMA user_version(5)'); // unguarded: what the guard stops
    assert.equal(db.pragma('user_version', { simple: true }), 5);
  });
});

describe('guest SQL guard: triggers', () => {
  it('a CREATE TRIGGER … BEGIN … END runs, several commands in its body, strings and comments holding END and ;', () => {
    const db = actorDb();
    db.exec(checkGuestSql(TRIGGER_BODY_WITH_TRAPS + ';\nINSERT INTO log VALUES (2)'));
    assert.deepEqual(db.prepare('SELECT what FROM audit').all(), [{ what: 'END; COMMIT; -- not a comment /* nor this' }, { what: 'end' }]);
    assert.ok(db.inTransaction);
  });

  it('a statement after a trigger is checked as a statement of its own', () => {
    assert.ok(refused(TRIGGER_BODY_WITH_TRAPS + '; COMMIT'));
    assert.ok(!refused(TRIGGER_BODY_WITH_TRAPS + '; SELECT 1'));
    assert.ok(!refused('CREATE TEMP TRIGGER t AFTER DELETE ON log BEGIN DELETE FROM audit; END'));
  });

  for (const name of [
    '_keep_meta',
    '"_keep_meta"',
    '[_KEEP_meta]',
    '`_keep_Meta`',
    "'_keep_meta'",
    'main._keep_meta',
    'main . /* x */ "_keep_meta"',
  ]) {
    it(`a trigger whose body writes ${name} is refused when it is created`, () => {
      assert.ok(refused(`CREATE TRIGGER t AFTER INSERT ON log BEGIN INSERT INTO ${name} VALUES ('initialized', '0'); END`));
      assert.ok(refused(`CREATE TRIGGER t AFTER INSERT ON log BEGIN UPDATE ${name} SET v = '0'; END`));
      assert.ok(refused(`CREATE TRIGGER t AFTER INSERT ON log BEGIN DELETE FROM ${name}; END`));
    });
  }

  it("a trigger's RAISE(ROLLBACK) is refused: it would end the event's transaction", () => {
    assert.ok(refused("CREATE TRIGGER t BEFORE INSERT ON log BEGIN SELECT RAISE(ROLLBACK, 'no'); END"));
    assert.ok(!refused("CREATE TRIGGER t BEFORE INSERT ON log BEGIN SELECT RAISE(ABORT, 'no'); END"));
  });
});

describe("guest SQL guard: keepwork's tables and the event's transaction", () => {
  for (const sql of [
    "INSERT INTO '_keep_meta' VALUES ('a', 'b')",
    "UPDATE '_KEEP_META' SET v = 0",
    "DELETE FROM '_keep_meta'",
    "SELECT * FROM pragma_table_info('_keep_meta')",
    'SELECT * FROM [_keep_meta]',
    'SELECT * FROM `_KEEP_meta`',
    'ALTER TABLE log RENAME TO _keep_log',
    'INSERT OR ROLLBACK INTO log VALUES (1)',
    'CREATE TABLE u (x UNIQUE ON CONFLICT ROLLBACK)',
    'ROLLBACK',
    'END',
    'END TRANSACTION',
    'begin',
    '/* hello */ COMMIT',
    '-- hello\nCOMMIT',
    'SELECT 1; RELEASE s1',
    'SELECT 1 ;; SAVEPOINT s',
    'EXPLAIN COMMIT',
    'SELECT "load_extension"(\'x\')',
    "SELECT [load_extension]('x')",
    'VACUUM',
    "SELECT 'open",
    'SELECT "open',
  ]) {
    it(`refuses ${JSON.stringify(sql)}`, () => assert.ok(refused(sql)));
  }

  for (const sql of [
    "INSERT INTO audit VALUES ('_keep_ is a prefix')",
    "INSERT INTO audit VALUES ('ROLLBACK; COMMIT; END')",
    'SELECT 1 -- COMMIT',
    'SELECT 1 /* ROLLBACK */',
    'SELECT :_keep_value',
    'SELECT "end" FROM (SELECT 1 AS "end")',
    'SELECT CASE WHEN 1 THEN 2 END',
  ]) {
    it(`allows ${JSON.stringify(sql)}`, () => {
      assert.ok(!refused(sql));
      const db = actorDb();
      db.prepare(sql).run(...(sql.includes(':_keep_value') ? [{ _keep_value: 1 }] : []));
      assert.ok(db.inTransaction);
    });
  }

  it('an unguarded OR ROLLBACK ends the transaction, which is why it is refused', () => {
    const db = actorDb();
    db.exec('INSERT INTO log VALUES (1)');
    assert.throws(() => db.exec('INSERT OR ROLLBACK INTO log VALUES (1)'));
    assert.equal(db.inTransaction, false);
  });
});

describe('guest SQL guard: properties', () => {
  /** A name SQLite resolves to keepwork's table, spelled any way SQLite accepts. */
  const internalName = fc
    .tuple(fc.constantFrom('_keep_meta', '_keep_alarm', '_keep_idem'), fc.array(fc.boolean(), { minLength: 11, maxLength: 11 }))
    .map(([n, ups]) => [...n].map((c, i) => (ups[i] ? c.toUpperCase() : c)).join(''))
    .chain((n) => fc.constantFrom(n, `"${n}"`, `[${n}]`, `\`${n}\``, `'${n}'`, `main.${n}`, `main./**/"${n}"`));
  const write = (name: string) =>
    fc.constantFrom(
      `INSERT INTO ${name} VALUES ('initialized', '0')`,
      `UPDATE ${name} SET v = '0'`,
      `DELETE FROM ${name}`,
      `INSERT OR REPLACE INTO ${name} SELECT 'initialized', '0'`,
    );
  const inTrigger = (s: string) => `CREATE TRIGGER tr AFTER INSERT ON log BEGIN ${s}; END; INSERT INTO log VALUES (7)`;

  it("a write to keepwork's tables is refused, however the name is spelled, alone or in a trigger", () => {
    fc.assert(
      fc.property(
        internalName.chain(write),
        fc.boolean(),
        (stmt, trigger) => void assert.ok(refused(trigger ? inTrigger(stmt) : stmt), trigger ? inTrigger(stmt) : stmt),
      ),
    );
  });

  it('a string literal holds anything: a trigger body writing it is allowed, runs, and stores it', () => {
    const literal = fc.string().filter((s) => !/^_keep_[a-z0-9_$]*$/i.test(s));
    fc.assert(
      fc.property(literal, (s) => {
        const sql = inTrigger(`INSERT INTO audit VALUES ('${s.replaceAll("'", "''")}')`);
        const db = actorDb();
        db.exec(checkGuestSql(sql));
        assert.deepEqual(db.prepare('SELECT what FROM audit').all(), [{ what: s }]);
      }),
    );
  });

  it('whatever the guard lets through leaves the transaction open and keepwork’s tables and header as they were', () => {
    const piece = fc.oneof(
      internalName.chain(write),
      fc.constantFrom(
        'INSERT INTO log VALUES (1)',
        'INSERT OR ROLLBACK INTO log VALUES (1)',
        'INSERT OR IGNORE INTO log VALUES (1)',
        "INSERT INTO audit VALUES ('COMMIT; END')",
        'PRAGMA user_version = 3',
        'PRAGMA user_version(3)',
        'PRAGMA application_id = 3',
        'PRAGMA page_size = 1024',
        'PRAGMA user_version',
        'COMMIT',
        'END',
        'ROLLBACK',
        'SAVEPOINT s',
        'RELEASE s',
        'BEGIN',
        "CREATE TRIGGER t1 BEFORE INSERT ON audit BEGIN SELECT RAISE(ROLLBACK, 'x'); END",
        "CREATE TRIGGER t2 AFTER INSERT ON audit BEGIN INSERT INTO log VALUES ('END;'); END",
        'CREATE TABLE IF NOT EXISTS u (x UNIQUE ON CONFLICT ROLLBACK)',
        'INSERT INTO u VALUES (1)',
        '/* c */',
        '-- c\n',
      ),
    );
    fc.assert(
      fc.property(fc.array(piece, { minLength: 1, maxLength: 6 }), (pieces) => {
        const sql = pieces.join(';\n');
        const db = actorDb();
        const before = keepwork(db);
        let allowed = true;
        try {
          checkGuestSql(sql);
        } catch {
          allowed = false;
        }
        if (allowed) {
          try {
            db.exec(sql);
            db.exec(sql); // twice: the second fires what the first created
          } catch {
            // a constraint or a syntax error stops it: a handler's error, rolled back by the event
          }
        }
        assert.ok(db.inTransaction, sql);
        assert.deepEqual(keepwork(db), before, sql);
      }),
    );
  });
});

describe('guest SQL guard: remembered verdicts', () => {
  it('a text it passed passes again; a refused one is refused every time, also after many others passed', () => {
    const ok = 'SELECT * FROM remembered_t WHERE id = ?';
    const bad = 'SELECT * FROM _keep_meta -- remembered';
    assert.equal(checkGuestSql(ok), ok);
    assert.equal(checkGuestSql(ok), ok);
    for (let i = 0; i < 3; i++) assert.throws(() => checkGuestSql(bad), { code: 'SQL_REFUSED' });
    for (let i = 0; i < 2_000; i++) checkGuestSql(`SELECT ${i} FROM remembered_t`);
    assert.throws(() => checkGuestSql(bad), { code: 'SQL_REFUSED' });
    assert.equal(checkGuestSql(ok), ok);
    const long = `SELECT 1 ${' '.repeat(10_000)}`;
    assert.equal(checkGuestSql(long), long);
    assert.throws(() => checkGuestSql(`${long}; ATTACH 'x' AS y`), { code: 'SQL_REFUSED' });
  });
});
