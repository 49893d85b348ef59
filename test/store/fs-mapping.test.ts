/**
 * FsStore's keys on disk: unsafe keys are refused before anything is written, inside the root or
 * out of it; every key maps to encoded folders and an object file ending in `~`, a key and its
 * "subfolder" coexist, a batch delete removes the folders it emptied, segments longer than a file
 * name are held in order, and listings cross folders in byte order.
 */
import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { ErrorCode } from '../../src/core/errors.js';
import { etagOf } from '../../src/store/etag.js';
import {
  FORMAT_FILE_NAME,
  FsStore,
  LOCK_FILE_NAME,
  PIECE_CHARS_MAX,
  TEMP_DIR_NAME,
  decodeSegment,
  encodeSegment,
  objectNames,
} from '../../src/store/fs/store.js';
import { insideRoot } from '../../src/store/fs/paths.js';
import { SMALL_PAGES, tempRoot, tree, withStore } from './fs-fixture.js';
import { allKeys } from '../helpers/all-keys.js';
import { str, text } from '../helpers/bytes.js';

describe('fs store: path safety', () => {
  const bad = ['..', '../escape', 'a/../../escape', '/etc/passwd', '/abs', 'nul\u0000x', 'a//b', 'trailing/', './x', 'a/./b'];

  it('refuses unsafe keys with BAD_KEY and writes nothing, inside or outside the root', async () => {
    const parent = tempRoot();
    const root = join(parent, 'bucket');
    const store = new FsStore(root);
    try {
      for (const key of bad) {
        await assert.rejects(store.put(key, text('x')), { code: ErrorCode.BadKey }, key);
        await assert.rejects(store.put(key, text('x'), { ifNoneMatch: '*' }), { code: ErrorCode.BadKey }, key);
        await assert.rejects(store.put(key, text('x'), { ifMatch: etagOf(text('x')) }), { code: ErrorCode.BadKey }, key);
        await assert.rejects(store.get(key), { code: ErrorCode.BadKey }, key);
        await assert.rejects(store.head(key), { code: ErrorCode.BadKey }, key);
        await assert.rejects(store.delete(key), { code: ErrorCode.BadKey }, key);
      }
      assert.deepEqual(tree(parent), ['bucket/', `bucket/${FORMAT_FILE_NAME}`, `bucket/${LOCK_FILE_NAME}`, `bucket/${TEMP_DIR_NAME}/`]);
      assert.deepEqual(await allKeys(store, SMALL_PAGES), []);
    } finally {
      await store.close();
      rmSync(parent, { recursive: true, force: true });
    }
  });

  it('keys that look like paths or internal names stay plain files under the root', async () => {
    await withStore(async (store, root) => {
      const keys = ['...', '.x', '~tmp', '~lock.db', 'a%2F..', 'a+b', 'sp ace/x', '-/_'];
      for (const k of keys) await store.put(k, text(k));
      for (const k of keys) assert.equal(str((await store.get(k))!.body), k);
      assert.deepEqual(await allKeys(store, SMALL_PAGES), [...keys].sort());
      assert.ok(tree(root).includes('%7Etmp~'));
      assert.ok(tree(root).includes('a%252F..~'));
    });
  });
});

describe('fs store: on-disk mapping', () => {
  it('maps keys to encoded folders and object files ending in ~', () => {
    assert.deepEqual(objectNames('holds/t1/Counter/6a6f65'), ['holds', 't1', 'Counter', '6a6f65~']);
    assert.deepEqual(objectNames('x/caf\u00e9 bar'), ['x', 'caf%C3%A9%20bar~']);
    assert.equal(encodeSegment('a~b%c'), 'a%7Eb%25c');
    assert.equal(decodeSegment('a%7Eb%25c'), 'a~b%c');
    assert.equal(decodeSegment('%41'), null, 'non-canonical escape');
    assert.equal(decodeSegment('%FF'), null, 'bad UTF-8');
    assert.equal(decodeSegment('a~'), null);
  });

  it('a digit segment and a long one map to their pieces, the last a file', () => {
    assert.deepEqual(objectNames('alarms/t/001796115600000/e'), ['alarms', 't', '001796+', '115+', '600+', '000', 'e~']);
    const long = 'a'.repeat(PIECE_CHARS_MAX) + 'bc';
    assert.deepEqual(objectNames(`n/${long}`), ['n', 'a'.repeat(PIECE_CHARS_MAX) + '+', 'bc~']);
    assert.deepEqual(objectNames(`n/${long}/x`), ['n', 'a'.repeat(PIECE_CHARS_MAX) + '+', 'bc', 'x~']);
  });

  it('a path below the root is what path.resolve makes of it; one that would leave the root is refused', () => {
    const root = resolve(tempRoot(), 'bucket');
    for (const names of [['a~'], ['holds', 't1', 'Counter', '6a6f65~'], ['n', 'x+', 'y', 'z~']])
      assert.equal(insideRoot(root, names), resolve(root, ...names));
    // A long segment's last piece may be `..` as a folder: never a way out of the bucket.
    assert.throws(() => insideRoot(root, ['x+', '..', '..', 'escape~']), { code: ErrorCode.BadRequest });
    assert.equal(insideRoot(root, ['x+', '..', 'y~']), resolve(root, 'y~'));
  });

  it('a and a/b coexist; deleting either leaves the other', async () => {
    await withStore(async (store, root) => {
      await store.put('a', text('A'));
      await store.put('a/b', text('AB'));
      assert.ok(existsSync(join(root, 'a~')) && existsSync(join(root, 'a', 'b~')));
      assert.deepEqual(await allKeys(store, SMALL_PAGES), ['a', 'a/b']);
      await store.delete('a/b');
      assert.equal(str((await store.get('a'))!.body), 'A');
      assert.ok(!existsSync(join(root, 'a')), 'the emptied folder is removed');
      await store.put('a/b', text('AB2'), { ifNoneMatch: '*' });
      await store.delete('a');
      assert.equal(str((await store.get('a/b'))!.body), 'AB2');
      assert.deepEqual(await allKeys(store, SMALL_PAGES), ['a/b']);
    });
  });

  it('a batch delete removes every folder it emptied, at any depth, and keeps the ones still holding objects', async () => {
    await withStore(async (store, root) => {
      const keys = ['x/a/1', 'x/a/2', 'x/b/c/d/3', 'x/b/4', 'x/keep/5', 'y/z/6'];
      for (const k of keys) await store.put(k, text(k));
      await store.deleteMany(['y/z/6', 'x/b/4', 'x/a/1', 'x/b/c/d/3', 'x/a/2']);
      assert.deepEqual(await allKeys(store, SMALL_PAGES), ['x/keep/5']);
      for (const gone of ['x/a', 'x/b', 'y']) assert.ok(!existsSync(join(root, gone)), `${gone} was emptied and is removed`);
      assert.ok(existsSync(join(root, 'x', 'keep', '5~')), 'a folder still holding an object stays');
      await store.deleteMany(['x/keep/5']);
      assert.ok(!existsSync(join(root, 'x')), 'emptied up to the root');
      assert.ok(existsSync(root), 'the root stays');
    });
  });

  it('holds segments longer than a file name, in order, with conditional writes', async () => {
    await withStore(async (store) => {
      const hex = 'ab'.repeat(500); // a 1000-char segment: 5 pieces
      const astral = '\u{1f600}'.repeat(80); // 12 encoded chars each, cut between characters
      const keys = [
        `h/${hex}`,
        `h/${hex}/x`,
        `h/${hex.slice(0, 300)}`,
        `h/${hex.slice(0, 240)}0`,
        `h/${hex.slice(0, 240)}`,
        `h/${astral}`,
        `h/${astral}/y`,
        'h/b',
      ];
      for (const k of keys) await store.put(k, text(k), { ifNoneMatch: '*' });
      await assert.rejects(store.put(keys[0]!, text('again'), { ifNoneMatch: '*' }), { code: ErrorCode.PreconditionFailed });
      for (const k of keys) assert.equal(str((await store.get(k))!.body), k);
      const sorted = [...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
      assert.deepEqual(await allKeys(store, SMALL_PAGES), sorted);
      assert.deepEqual(
        await allKeys(store, { ...SMALL_PAGES, prefix: `h/${hex.slice(0, 250)}` }),
        sorted.filter((k) => k.startsWith(`h/${hex.slice(0, 250)}`)),
      );
      assert.deepEqual(await allKeys(store, { ...SMALL_PAGES, prefix: `h/${hex}/` }), [`h/${hex}/x`]);
      assert.deepEqual(await allKeys(store, { ...SMALL_PAGES, prefix: `h/${astral}/` }), [`h/${astral}/y`]);
      const after = await store.list({ startAfter: `h/${hex.slice(0, 241)}` });
      assert.deepEqual(
        after.keys,
        sorted.filter((k) => Buffer.compare(Buffer.from(k), Buffer.from(`h/${hex.slice(0, 241)}`)) > 0),
      );
      assert.ok(objectNames(`h/${hex}`).every((n) => n.length <= PIECE_CHARS_MAX + 1));
      await store.deleteMany(keys);
      assert.deepEqual(await allKeys(store, SMALL_PAGES), []);
    });
  });

  it('lists in byte order across many folders with startAfter and small pages', async () => {
    await withStore(async (store) => {
      const keys: string[] = [];
      for (const a of ['a', 'a.b', 'a-', 'a0', 'b', '\u00e9', '\u{1f600}']) {
        keys.push(a);
        for (const b of ['x', 'x/y', 'x.', 'y/z/w']) keys.push(`${a}/${b}`);
      }
      await Promise.all(keys.map((k) => store.put(k, text(k))));
      const sorted = [...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
      assert.deepEqual(await allKeys(store, SMALL_PAGES), sorted);
      for (const start of ['a/x', 'a/x/', 'a.', 'a0/y', '\u00e9/x.', 'zz', '']) {
        const expected = sorted.filter((k) => Buffer.compare(Buffer.from(k), Buffer.from(start)) > 0).slice(0, 9);
        assert.deepEqual((await store.list({ startAfter: start, maxKeys: 9 })).keys, expected, start);
      }
    });
  });
});
