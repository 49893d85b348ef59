/**
 * The SQLite bucket (src/store/sqlite/store.ts): the conformance suite, with a second connection as the
 * other "node"; then its own promises — writes share fsyncs (one per batch), no write is answered
 * before the fsync that covers it, a failed fsync makes the writes it covered ambiguous, and a
 * write lock held elsewhere is waited for off the thread, then given up on.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { SystemClock } from '../../src/core/clock.js';
import { ErrorCode, isKeepworkError } from '../../src/core/errors.js';
import { openStore } from '../../src/store/open.js';
import { SqliteStore, parseSqliteUrl, prefixEnd, type SqliteStoreSettings } from '../../src/store/sqlite/store.js';
import { runConformance } from './conformance.js';
import { text } from '../helpers/bytes.js';

const roots: string[] = [];
after(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

function tempFile(): string {
  const root = mkdtempSync(join(tmpdir(), 'kw-sqlite-store-'));
  roots.push(root);
  return join(root, 'bucket.db');
}

const clock = new SystemClock();
const open = (file: string, settings: Partial<SqliteStoreSettings> = {}) =>
  new SqliteStore(file, { lockWaitMs: 2_000, ...settings }, clock);

runConformance('sqlite', async () => {
  const file = tempFile();
  const store = open(file);
  const others: SqliteStore[] = [];
  return {
    store,
    reopen: async () => {
      const other = open(file);
      others.push(other);
      return other;
    },
    cleanup: async () => {
      await store.close();
      for (const o of others) await o.close();
    },
  };
});

/** An fsync seam that counts the syncs and holds each until the test lets it go. */
function heldSyncs() {
  const waiting: (() => void)[] = [];
  let fail: Error | undefined;
  return {
    count: () => waiting.length,
    fsyncWal: () => new Promise<void>((resolve, reject) => waiting.push(() => (fail ? reject(fail) : resolve()))),
    releaseAll: () => {
      for (const go of waiting.splice(0)) go();
    },
    failWith: (e: Error) => (fail = e),
    waiting,
  };
}

/** Lets queued promise callbacks and one turn of the event loop run. */
const settle = () => new Promise((r) => setImmediate(r));

describe('SqliteStore: group commit', () => {
  it('writes issued together share one fsync; writes issued while it runs share the next', async () => {
    const syncs = heldSyncs();
    const store = open(tempFile(), { fsyncWal: syncs.fsyncWal });
    let answered = 0;
    const first = Array.from({ length: 20 }, (_, i) => store.put(`k/${i}`, text(`v${i}`)).then(() => answered++));
    await settle();
    assert.equal(syncs.waiting.length, 1, 'one fsync for the twenty writes');
    assert.equal(answered, 0, 'no write is answered before its fsync');
    const second = [store.put('k/a', text('a')), store.delete('k/0'), store.deleteMany(['k/1', 'k/2'])];
    await settle();
    assert.equal(syncs.waiting.length, 1, 'the next batch waits for the running one');
    syncs.releaseAll();
    await Promise.all(first);
    await settle();
    assert.equal(syncs.waiting.length, 1, 'then the three writes that queued go in one batch, one fsync');
    syncs.releaseAll();
    await Promise.all(second);
    assert.equal(await store.get('k/0'), null);
    assert.deepEqual((await store.list({ prefix: 'k/' })).keys.length, 18);
    await store.close();
  });

  it('a batch of writes whose conditions all fail syncs nothing', async () => {
    const syncs = heldSyncs();
    const store = open(tempFile(), { fsyncWal: syncs.fsyncWal });
    const made = store.put('x', text('1'), { ifNoneMatch: '*' });
    await settle();
    syncs.releaseAll();
    await made;
    await assert.rejects(store.put('x', text('2'), { ifNoneMatch: '*' }), (e: unknown) => isKeepworkError(e, ErrorCode.PreconditionFailed));
    assert.equal(syncs.waiting.length, 0);
    await store.close();
  });

  it('a failed fsync: the writes it covered are AMBIGUOUS_WRITE (and in place), a failed condition is still PRECONDITION_FAILED', async () => {
    const syncs = heldSyncs();
    const store = open(tempFile(), { fsyncWal: syncs.fsyncWal });
    const made = store.put('x', text('1'));
    await settle();
    syncs.releaseAll();
    await made;
    syncs.failWith(Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' }));
    const ambiguous = store.put('y', text('2'), { ifNoneMatch: '*' });
    const refused = store.put('x', text('3'), { ifNoneMatch: '*' });
    await settle();
    syncs.releaseAll();
    await assert.rejects(ambiguous, (e: unknown) => isKeepworkError(e, ErrorCode.AmbiguousWrite));
    await assert.rejects(refused, (e: unknown) => isKeepworkError(e, ErrorCode.PreconditionFailed));
    assert.deepEqual((await store.get('y'))?.body, text('2'), 'a read settles it: the write is in place');
    await store.close();
  });
});

describe('SqliteStore: a batch that fails midway', () => {
  it('every write of it fails with STORE_UNAVAILABLE, none is applied, and the next batch goes on', async () => {
    const file = tempFile();
    const store = open(file, { fsync: false });
    await store.put('warm', text('w'));
    const other = new Database(file);
    other.exec("CREATE TRIGGER boom BEFORE INSERT ON objects WHEN NEW.key = 'boom' BEGIN SELECT RAISE(ABORT, 'no'); END");
    const batch = [store.put('a', text('1')), store.put('boom', text('2')), store.delete('warm')];
    const settled = await Promise.allSettled(batch);
    assert.deepEqual(
      settled.map((r) => (r.status === 'rejected' ? (r.reason as { code?: string }).code : 'ok')),
      [ErrorCode.StoreUnavailable, ErrorCode.StoreUnavailable, ErrorCode.StoreUnavailable],
    );
    assert.equal(await store.get('a'), null);
    assert.notEqual(await store.get('warm'), null, 'the delete was rolled back with the rest');
    other.exec('DROP TRIGGER boom');
    other.close();
    await store.put('c', text('3'));
    assert.deepEqual((await store.list()).keys, ['c', 'warm']);
    await store.close();
  });
});

describe('SqliteStore: another connection holding the write lock', () => {
  it('a write waits for it without blocking the event loop, and lands once it is released', async () => {
    const file = tempFile();
    const store = open(file, { fsync: false });
    await store.put('warm', text('w')); // the file, its table and its WAL exist
    const other = new Database(file);
    other.exec('BEGIN IMMEDIATE');
    let landed = false;
    const write = store.put('k', text('v')).then(() => (landed = true));
    for (let i = 0; i < 5; i++) await settle(); // the event loop turns while the write waits
    assert.equal(landed, false);
    other.exec('COMMIT');
    await write;
    assert.deepEqual((await store.get('k'))?.body, text('v'));
    other.close();
    await store.close();
  });

  it('held past lockWaitMs: STORE_UNAVAILABLE, and nothing written', async () => {
    const file = tempFile();
    const store = open(file, { fsync: false, lockWaitMs: 50 });
    await store.put('warm', text('w'));
    const other = new Database(file);
    other.exec('BEGIN IMMEDIATE');
    await assert.rejects(store.put('k', text('v')), (e: unknown) => isKeepworkError(e, ErrorCode.StoreUnavailable));
    other.exec('ROLLBACK');
    other.close();
    assert.equal(await store.get('k'), null);
    await store.close();
  });
});

describe('SqliteStore: opening a file another connection has locked', () => {
  /** A new file that another connection holds exclusively, as a node does while it switches it to WAL. */
  function lockedNewFile(): { file: string; other: Database.Database } {
    const file = tempFile();
    const other = new Database(file);
    other.exec('CREATE TABLE t (x)');
    other.exec('BEGIN EXCLUSIVE');
    return { file, other };
  }

  it('opens without BAD_CONFIG; requests wait off the thread and are served once the lock is released', async () => {
    const { file, other } = lockedNewFile();
    const store = open(file, { fsync: false });
    let landed = false;
    const write = store.put('k', text('v')).then(() => (landed = true));
    const read = store.get('k');
    for (let i = 0; i < 5; i++) await settle(); // the event loop turns while the set-up waits
    assert.equal(landed, false);
    other.exec('COMMIT');
    await write;
    assert.deepEqual((await read)?.body ?? (await store.get('k'))?.body, text('v'));
    other.close();
    await store.close();
  });

  it('held past lockWaitMs: STORE_UNAVAILABLE (not BAD_CONFIG), and the next request opens it', async () => {
    const { file, other } = lockedNewFile();
    const store = open(file, { fsync: false, lockWaitMs: 50 });
    await assert.rejects(store.put('k', text('v')), (e: unknown) => isKeepworkError(e, ErrorCode.StoreUnavailable));
    other.exec('COMMIT');
    other.close();
    await store.put('k', text('v'));
    assert.deepEqual((await store.get('k'))?.body, text('v'));
    await store.close();
  });

  it('a file that is not a database is BAD_CONFIG at once', () => {
    const file = tempFile();
    writeFileSync(file, 'not a database, but long enough to be read as a header: '.repeat(4));
    assert.throws(
      () => open(file),
      (e: unknown) => isKeepworkError(e, ErrorCode.BadConfig),
    );
  });
});

describe('SqliteStore: URLs and prefixes', () => {
  it('sqlite:/abs, sqlite:///abs and sqlite:./rel name a file; a host or no path is BAD_CONFIG', () => {
    assert.equal(parseSqliteUrl('sqlite:/tmp/b.db'), '/tmp/b.db');
    assert.equal(parseSqliteUrl('sqlite:///tmp/b.db'), '/tmp/b.db');
    assert.equal(parseSqliteUrl('sqlite:./b.db'), resolve('b.db'));
    for (const bad of ['sqlite:', 'sqlite://host/b.db'])
      assert.throws(
        () => parseSqliteUrl(bad),
        (e: unknown) => isKeepworkError(e, ErrorCode.BadConfig),
        bad,
      );
  });

  it('openStore opens one; a path it cannot open is BAD_CONFIG', async () => {
    const file = tempFile();
    const store = openStore(`sqlite:${file}`);
    assert.equal(store.description, `sqlite:${file}`);
    await store.close();
    assert.throws(
      () => openStore(`sqlite:${file}/inside-a-file.db`),
      (e: unknown) => isKeepworkError(e, ErrorCode.BadConfig),
    );
  });

  it('prefixEnd: the least string above every string with the prefix', () => {
    assert.equal(prefixEnd(''), null);
    assert.equal(prefixEnd('a/'), 'a0');
    assert.equal(prefixEnd('ab'), 'ac');
    assert.equal(prefixEnd('a\ud7ff'), 'a\ue000', 'past the surrogates');
    assert.equal(prefixEnd('a\u{10ffff}'), 'b');
    assert.equal(prefixEnd('\u{10ffff}'), null);
  });
});
