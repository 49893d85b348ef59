/**
 * FsStore's layout for due-time segments, so that a sweep's listing of the alarm index reads only
 * the folders its page needs however many entries are due: a 15-digit segment is cut into nested
 * folders, a listing reads only the folders its page needs, the listing equals the memory store's
 * for random key sets of the index's shapes, and a folder of the older format is refused until
 * `migrateFsBucket` converts it.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, rmSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ErrorCode } from '../../src/core/errors.js';
import { LARGE_FOLDER_BYTES, ListWalk } from '../../src/store/fs/list.js';
import { FORMAT_FILE_NAME, FsStore, migrateFsBucket, objectNames } from '../../src/store/fs/store.js';
import { BUCKET_TOP_FOLDERS } from '../../src/store/fs/format.js';
import { INDEX_PREFIX } from '../../src/alarms/keys.js';
import { HOLDS_PREFIX, NODES_PREFIX } from '../../src/leases/records.js';
import { linkKey } from '../../src/replication/state-keys.js';
import { parseAddress } from '../../src/core/address.js';
import { treeOf } from '../helpers/tree.js';
import { validatePrefix } from '../../src/store/keys.js';
import { MemoryStore } from '../../src/store/memory.js';
import { allKeys } from '../helpers/all-keys.js';
import { text } from '../helpers/bytes.js';
import { tempDirs } from '../helpers/temp.js';

const byteOrder = (x: string, y: string) => Buffer.compare(Buffer.from(x), Buffer.from(y));

const tempRoot = tempDirs('kw-fs-layout-');

/** Index keys as src/alarms/keys.ts builds them (not imported: the store sits below alarms). */
const entry = (tenant: string, dueMs: number, name = '6a6f65', tag = '00000000000000000001-ab') =>
  `alarms/${tenant}/${String(dueMs).padStart(15, '0')}/C.t/${name}/${tag}`;

describe('fs store: due-time segments are nested folders', () => {
  it('cuts a 15-digit segment 6 + 3 + 3 + 3, and no other', () => {
    assert.deepEqual(objectNames(entry('t', 1796115600000)), [
      'alarms',
      't',
      '001796+',
      '115+',
      '600+',
      '000',
      'C.t',
      '6a6f65',
      '00000000000000000001-ab~',
    ]);
    assert.deepEqual(objectNames('x/001796115600123'), ['x', '001796+', '115+', '600+', '123~']);
    assert.deepEqual(objectNames('x/00179611560012'), ['x', '00179611560012~'], '14 digits');
    assert.deepEqual(objectNames('x/0017961156001234'), ['x', '0017961156001234~'], '16 digits');
    assert.deepEqual(objectNames('x/00179611560012a'), ['x', '00179611560012a~']);
  });

  it('a page reads the folders of the keys it returns, not the whole index', async () => {
    const root = tempRoot();
    const store = new FsStore(root, { fsync: false });
    try {
      const n = 2_500; // one second apart: 2,500 due-time folders, more than any one group holds
      const start = 1_900_000_000_000;
      for (let i = 0; i < n; i += 100)
        await Promise.all(Array.from({ length: 100 }, (_, j) => store.put(entry('t', start + (i + j) * 1000), text(''))));
      const walk = new ListWalk('alarms/t/', 'alarms/t/', 11);
      await walk.walk(join(root, 'alarms', 't'), 'alarms/t/');
      assert.deepEqual(
        walk.keys,
        Array.from({ length: 11 }, (_, i) => entry('t', start + i * 1000)),
      );
      // Names read: the 1,000-name group of seconds the page starts in, and a few folders per key.
      assert.ok(walk.namesRead <= 1_000 + 20 * 11, `${walk.namesRead} names read for 11 keys of ${n}`);
      const later = new ListWalk('alarms/t/', entry('t', start + 2_000 * 1000), 11); // from the third group on
      await later.walk(join(root, 'alarms', 't'), 'alarms/t/');
      assert.equal(later.keys[0], entry('t', start + 2_001 * 1000));
      assert.ok(later.namesRead <= 1_000 + 20 * 11, `${later.namesRead} names read`);
    } finally {
      await store.close();
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('fs store: a large folder (many actors due at one time)', () => {
  /**
   * Runs `check` on a store whose folder `big/` holds 4,000 objects `big/<lead><24 chars>`, put in
   * a scattered order (and whatever `before` made first); `sorted` is their keys in byte order.
   */
  async function withLargeFolder(
    lead: string,
    check: (store: FsStore, root: string, sorted: string[]) => Promise<void>,
    before?: (root: string) => void,
  ): Promise<void> {
    const root = tempRoot();
    const store = new FsStore(root, { fsync: false });
    try {
      before?.(root);
      const keys = Array.from({ length: 4_000 }, (_, i) => `big/${lead}${String((i * 7919) % 4_000).padStart(24 - lead.length, '0')}`);
      for (let i = 0; i < keys.length; i += 200) await Promise.all(keys.slice(i, i + 200).map((k) => store.put(k, text(''))));
      assert.ok(statSync(join(root, 'big')).size > LARGE_FOLDER_BYTES, 'the folder is large enough to take the large-folder read');
      await check(store, root, keys.sort(byteOrder));
    } finally {
      await store.close();
      rmSync(root, { recursive: true, force: true });
    }
  }

  /** The first `n` keys of `sorted` after `startAfter`. */
  const pageOf = (sorted: string[], startAfter: string | undefined, n: number) =>
    sorted.filter((k) => startAfter === undefined || byteOrder(k, startAfter) > 0).slice(0, n);

  it('keeps about a page of its entries, not every name', async () => {
    await withLargeFolder('', async (_store, root, sorted) => {
      const walk = new ListWalk('big/', sorted[17]!, 6);
      await walk.walk(join(root, 'big'), 'big/');
      assert.deepEqual(walk.keys, pageOf(sorted, sorted[17], 6));
      assert.equal(walk.namesRead, 4_000);
      assert.ok(walk.heldMax <= 2 * 6, `${walk.heldMax} entries held at once for a page of 6`);
    });
  });

  it('is read again past the empty folders a page kept', async () => {
    // Empty folders first in order (a delete's prune that has not run yet), then objects.
    const emptyFolders = (root: string) => {
      for (let i = 0; i < 40; i++) mkdirSync(join(root, 'big', `a${String(i).padStart(23, '0')}`), { recursive: true });
    };
    await withLargeFolder(
      'b',
      async (store, _root, sorted) => {
        for (const startAfter of [undefined, 'big/a0', sorted[99]]) {
          const page = await store.list({ prefix: 'big/', startAfter, maxKeys: 5 });
          assert.deepEqual(page.keys, pageOf(sorted, startAfter, 5));
        }
      },
      emptyFolders,
    );
  });

  it('is read off the event loop and listed in order', async () => {
    await withLargeFolder('', async (store, _root, sorted) => {
      for (const startAfter of [undefined, sorted[0], sorted[1_999], 'big/1']) {
        const page = await store.list({ prefix: 'big/', startAfter, maxKeys: 5 });
        assert.deepEqual(page.keys, pageOf(sorted, startAfter, 5));
      }
    });
  });
});

describe('fs store: listing matches the memory store for index-shaped keys (property)', () => {
  /** Digit strings that share prefixes with each other and with the cut points (6, 9, 12). */
  const digits = fc.oneof(
    ...[3, 6, 7, 8, 10, 12, 13, 15, 15, 15, 15, 16].map((n) => fc.stringMatching(new RegExp(`^0{${n - 4}}[01]{4}$`))),
    fc.constantFrom('001796115600000', '001796115601000', '001796', '0017961', '001796115', '001796115601', '0017961156'),
  );
  const segment = fc.oneof(
    { weight: 6, arbitrary: digits },
    { weight: 2, arbitrary: fc.tuple(digits, fc.constantFrom('-', '.', 'a', '~', ' ', 'é', '.t')).map(([d, s]) => d + s) },
    { weight: 2, arbitrary: fc.stringMatching(/^[a-c.\-é]{1,3}$/).filter((s) => s !== '.' && s !== '..') },
    { weight: 1, arbitrary: fc.constantFrom('0'.repeat(241), '1'.repeat(240) + '0') },
  );
  const key = fc.oneof(
    fc.array(segment, { minLength: 1, maxLength: 4 }).map((s) => s.join('/')),
    fc
      .tuple(fc.constantFrom('a', 'b'), digits, fc.constantFrom('C', 'C.t'))
      .map(([t, d, c]) => `alarms/${t}/${d}/${c}/6a/00000000000000000001-ab`),
  );
  /** Any prefix of a key, cut at any character (mid-segment included). */
  const cut = fc.tuple(key, fc.nat()).map(([k, n]) => [...k].slice(0, n % (k.length + 1)).join(''));
  const listable = (prefix: string) => {
    try {
      return validatePrefix(prefix);
    } catch {
      return '';
    }
  };

  for (const [what, largeFolderBytes] of [
    ['', undefined],
    [', every folder read as a large one', 0],
  ] as const)
    it(`every prefix, startAfter and page size gives the memory store’s pages${what}`, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.uniqueArray(key, { minLength: 1, maxLength: 30 }),
          fc.oneof(cut, fc.constant('')),
          fc.oneof(cut, fc.constant('')),
          fc.integer({ min: 1, max: 7 }),
          async (keys, rawPrefix, startAfter, pageKeys) => {
            const root = tempRoot();
            const fsStore = new FsStore(root, { fsync: false, largeFolderBytes });
            const memory = new MemoryStore();
            try {
              await Promise.all(keys.flatMap((k) => [fsStore.put(k, text(k)), memory.put(k, text(k))]));
              const prefix = listable(rawPrefix) || undefined;
              const options = { prefix, startAfter: startAfter || undefined };
              const want = await allKeys(memory, { ...options, pageKeys });
              assert.deepEqual(await allKeys(fsStore, { ...options, pageKeys }), want);
              assert.deepEqual(want, [...want].sort(byteOrder));
              const page = await fsStore.list({ ...options, maxKeys: pageKeys });
              const model = await memory.list({ ...options, maxKeys: pageKeys });
              assert.deepEqual(page.keys, model.keys);
              assert.equal(page.continuation === undefined, model.continuation === undefined);
              for (const k of keys.slice(0, 3)) assert.equal(Buffer.from((await fsStore.get(k))!.body).toString('utf8'), k);
            } finally {
              await fsStore.close();
              rmSync(root, { recursive: true, force: true });
            }
          },
        ),
        { numRuns: 60 },
      );
    });
});

describe('fs store: on-disk format', () => {
  /** Writes objects where format 1 put them: every segment one folder, the last one + "~". */
  function writeFormat1(root: string, keys: string[]): void {
    for (const k of keys) {
      const segments = k.split('/');
      const dir = join(root, ...segments.slice(0, -1));
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, segments.at(-1)! + '~'), k);
    }
  }

  it('stamps a new folder, and refuses a format-1 folder with the command that converts it', async () => {
    const root = tempRoot();
    try {
      const store = new FsStore(join(root, 'new'));
      await store.close();
      assert.ok(existsSync(join(root, 'new', FORMAT_FILE_NAME)));
      writeFormat1(join(root, 'old'), [entry('t', 5)]);
      assert.throws(() => new FsStore(join(root, 'old')), { code: ErrorCode.BadConfig, message: /keepwork bucket migrate --bucket/ });
      writeFileSync(join(root, 'new', FORMAT_FILE_NAME), 'keepwork folder bucket, on-disk format 3\n');
      assert.throws(() => new FsStore(join(root, 'new')), { code: ErrorCode.BadConfig, message: /format 3/ });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('migrateFsBucket moves every due-time segment to its nested path, and can be re-run', async () => {
    const root = tempRoot();
    const keys = [
      entry('t', 1796115600000),
      entry('t', 1796115600000, '6b'),
      entry('t', 1796115601000),
      entry('u', 5),
      'alarms/t/001796115600000/C/6a6f65', // a legacy (untagged) entry
      'state/x/001796115600000', // an object named by 15 digits
      'state/x/001796115600000/y/000000000000001',
      'holds/t/C/6a6f65',
      'state/t/C/6a6f65/00000000000000000001',
      `state/long/${'0'.repeat(300)}`,
    ];
    try {
      writeFormat1(
        root,
        keys.filter((k) => !k.startsWith('state/long/')),
      );
      // A crashed earlier run: one due time half moved (its target exists, with one of its names).
      mkdirSync(join(root, 'alarms', 't', '001796+', '115+', '600+', '000', 'C.t', '6b'), { recursive: true });
      const moved = join(root, 'alarms', 't', '001796115600000', 'C.t', '6b', '00000000000000000001-ab~');
      writeFileSync(
        join(root, 'alarms', 't', '001796+', '115+', '600+', '000', 'C.t', '6b', '00000000000000000001-ab~'),
        entry('t', 1796115600000, '6b'),
      );
      rmSync(moved);
      mkdirSync(join(root, 'state', 'long', '0'.repeat(240) + '+'), { recursive: true }); // format 1 cut long segments too
      writeFileSync(join(root, 'state', 'long', '0'.repeat(240) + '+', '0'.repeat(60) + '~'), `state/long/${'0'.repeat(300)}`);

      const result = migrateFsBucket(root);
      assert.equal(result.from, 1);
      assert.ok(result.moved >= 4, `moved ${result.moved}`);
      assert.deepEqual(migrateFsBucket(root), { from: 2, moved: 0 });
      assert.ok(!readdirSync(join(root, 'alarms', 't')).includes('001796115600000'));
      const store = new FsStore(root);
      try {
        assert.deepEqual(await allKeys(store), [...keys].sort(byteOrder));
        for (const k of keys) assert.equal(Buffer.from((await store.get(k))!.body).toString('utf8'), k);
        await store.put(keys[0]!, text('again'), { ifNoneMatch: '*' }).then(
          () => assert.fail('the moved object must be found by a create'),
          (e: { code?: string }) => assert.equal(e.code, ErrorCode.PreconditionFailed),
        );
        await store.deleteMany(keys);
        assert.deepEqual(await allKeys(store), []);
      } finally {
        await store.close();
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('a folder of other files is refused as not a bucket, by a node and by migrate, and nothing is written in it', () => {
    const root = tempRoot();
    writeFileSync(join(root, 'hosts'), '127.0.0.1 localhost\n');
    mkdirSync(join(root, 'holds')); // a keepwork-like name beside it does not make a bucket
    const before = treeOf(root);
    assert.throws(() => new FsStore(root), {
      code: ErrorCode.BadConfig,
      message: /is not a keepwork bucket: it holds "hosts" \(a bucket holds only alarms\/, holds\/, nodes\/, state\/ .*\); check --bucket/,
    });
    assert.throws(() => new FsStore(root, { readOnly: true }), { code: ErrorCode.BadConfig, message: /is not a keepwork bucket/ });
    assert.throws(() => migrateFsBucket(root), { code: ErrorCode.BadRequest, message: /is not a keepwork bucket: it holds "hosts"/ });
    assert.deepEqual(treeOf(root), before);
  });

  it('read-only: reads a bucket, refuses writes, and writes nothing; an empty folder is no bucket to it', async () => {
    const root = tempRoot();
    const writer = new FsStore(root);
    await writer.put('holds/t/C/6a', text('h'));
    await writer.close();
    const before = treeOf(root);
    const reader = new FsStore(root, { readOnly: true });
    try {
      assert.deepEqual(await allKeys(reader), ['holds/t/C/6a']);
      await assert.rejects(reader.put('holds/t/C/6b', text('h')), { code: ErrorCode.BadRequest, message: /opened read-only/ });
      await assert.rejects(reader.delete('holds/t/C/6a'), { code: ErrorCode.BadRequest, message: /opened read-only/ });
    } finally {
      await reader.close();
    }
    assert.deepEqual(treeOf(root), before);
    const empty = tempRoot();
    assert.throws(() => new FsStore(empty, { readOnly: true }), { code: ErrorCode.BadConfig, message: /the folder is empty/ });
    assert.deepEqual(treeOf(empty), []);
  });

  it("a bucket's top-level folders are those its keys start with", () => {
    const tops = [INDEX_PREFIX, HOLDS_PREFIX, NODES_PREFIX, linkKey(parseAddress('t/C/x'), 1)].map((k) => k.split('/')[0]);
    assert.deepEqual([...BUCKET_TOP_FOLDERS].sort(), tops.sort());
  });
});
