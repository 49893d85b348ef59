import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { parseAddress } from '../../src/core/address.js';
import { createActorDb, openActorDb, readMeta, removeActorDb, type Db } from '../../src/workers/actor-db.js';

const dir = mkdtempSync(join(tmpdir(), 'kw-actor-db-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const address = parseAddress('t/C/x');

const creators: [string, (path: string) => Promise<Db>][] = [
  ['on the worker thread (openActorDb)', async (path) => openActorDb(path, address, true)!],
  ['on the thread pool (createActorDb)', (path) => createActorDb(path, address)],
];

for (const [how, create] of creators)
  describe(`a new actor’s database file, created ${how}`, () => {
    it('is in WAL mode with keepwork’s tables, its address, and synchronous=NORMAL', async () => {
      const path = join(dir, how, 'new', 'x.db');
      const db = await create(path);
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

    it('a WAL left behind by an earlier file of that name is not read into it', async () => {
      const path = join(dir, how, 'stale', 'x.db');
      const old = openActorDb(path, address, true)!;
      old.pragma('wal_autocheckpoint = 0');
      old.exec("CREATE TABLE stale (v); INSERT INTO stale VALUES ('from the earlier file')");
      copyFileSync(`${path}-wal`, join(dir, 'kept-wal'));
      old.close();
      removeActorDb(path);
      copyFileSync(join(dir, 'kept-wal'), `${path}-wal`);
      const db = await create(path);
      const tables = db.prepare("SELECT name FROM sqlite_master WHERE name = 'stale'").all();
      assert.deepEqual(tables, []);
      db.close();
      const check = new Database(path, { readonly: true });
      assert.equal(check.pragma('journal_mode', { simple: true }), 'wal');
      check.close();
    });
  });
