import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { parseAddress } from '../../src/core/address.js';
import { SimClock } from '../../src/core/clock.js';
import { silentLogger } from '../../src/core/logger.js';
import { createGuestRun } from '../../src/workers/guest-context.js';

function guest() {
  const db = new Database(':memory:');
  const sql = () => createGuestRun(db, parseAddress('t/C/a'), null, new SimClock(0), silentLogger()).ctx.sql;
  return { db, sql };
}

describe('guest SQL: statements prepared once per database and text', () => {
  it('the same SQL prepared again inside its own open iterate gets a statement of its own', () => {
    const { sql } = guest();
    const s = sql();
    s.exec('CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1), (2), (3)');
    const seen: unknown[] = [];
    for (const row of s.prepare('SELECT n FROM t ORDER BY n').iterate() as Iterable<{ n: number }>) {
      seen.push([row.n, (s.prepare('SELECT n FROM t ORDER BY n').get() as { n: number }).n]);
    }
    assert.deepEqual(seen, [
      [1, 1],
      [2, 1],
      [3, 1],
    ]);
  });

  it('a kept statement serves later events, and follows schema changes', () => {
    const { sql } = guest();
    sql().exec('CREATE TABLE t (a INTEGER)');
    sql().prepare('INSERT INTO t VALUES (?)').run(1);
    assert.deepEqual(sql().prepare('SELECT * FROM t').all(), [{ a: 1 }]);
    sql().exec('DROP TABLE t; CREATE TABLE t (a INTEGER, b TEXT)');
    sql().prepare('INSERT INTO t VALUES (?, ?)').run(2, 'x');
    assert.deepEqual(sql().prepare('SELECT * FROM t').all(), [{ a: 2, b: 'x' }]);
  });

  it('refused SQL stays refused every time, and many distinct statements stay bounded but correct', () => {
    const { sql } = guest();
    for (let i = 0; i < 2; i++) assert.throws(() => sql().prepare('SELECT * FROM _keep_meta'), { code: 'SQL_REFUSED' });
    sql().exec('CREATE TABLE t (n INTEGER)');
    for (let i = 0; i < 200; i++)
      sql()
        .prepare(`INSERT INTO t VALUES (${i % 100})`)
        .run();
    assert.deepEqual(sql().prepare('SELECT count(*) AS c, sum(n) AS s FROM t').get(), { c: 200, s: 9900 });
  });

  it('a statement of an ended event stops working, even when the next event reuses it', () => {
    const { db, sql } = guest();
    db.exec('CREATE TABLE t (n INTEGER)');
    const first = createGuestRun(db, parseAddress('t/C/a'), null, new SimClock(0), silentLogger());
    const stmt = first.ctx.sql.prepare('SELECT count(*) AS c FROM t');
    first.end();
    assert.deepEqual(sql().prepare('SELECT count(*) AS c FROM t').get(), { c: 0 });
    assert.throws(() => stmt.get(), /ended/);
  });
});
