import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { parseAddress } from '../../src/core/address.js';
import { openActorDb, readMeta, removeActorDb } from '../../src/workers/actor-db.js';

const dir = mkdtempSync(join(tmpdir(), 'kw-actor-db-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const address = parseAddress('t/C/x');

describe('actor database files', () => {
  it('a new actor’s file is in WAL mode with keepwork’s tables, its address, and synchronous=NORMAL', () => {
    const path = join(dir, 'new', 'x.db');
    const db = openActorDb(path, address, true)!;
    assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
    assert.equal(db.pragma('synchronous', { simple: true }), 1, 'NORMAL once the first commit is in');
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all();
    assert.deepEqual(tables, ['_keep_alarm', '_keep_meta']);
    assert.equal(readMeta(db, 'address'), 't/C/x');
    db.exec('CREATE TABLE t (v); INSERT INTO t VALUES (1)');
    db.close();
    assert.equal(existsSync(`${path}.new`), false, 'no temp file left behind');
    const again = openActorDb(path, address, false)!;
    assert.equal(again.prepare('SELECT v FROM t').pluck().get(), 1);
    again.close();
  });

  it('a WAL left behind by an earlier file of that name is not read into a new one', () => {
    const path = join(dir, 'stale', 'x.db');
    const old = openActorDb(path, address, true)!;
    old.pragma('wal_autocheckpoint = 0');
    old.exec("CREATE TABLE stale (v); INSERT INTO stale VALUES ('from the earlier file')");
    copyFileSync(`${path}-wal`, join(dir, 'kept-wal'));
    old.close();
    removeActorDb(path);
    copyFileSync(join(dir, 'kept-wal'), `${path}-wal`);
    const db = openActorDb(path, address, true)!;
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE name = 'stale'").all();
    assert.deepEqual(tables, []);
    db.close();
    const check = new Database(path, { readonly: true });
    assert.equal(check.pragma('journal_mode', { simple: true }), 'wal');
    check.close();
  });
});
