/**
 * FsStore: the shared conformance suite on a fresh temp folder per case, plus what only a folder
 * can get wrong: path safety, the on-disk mapping, temp files, file:// URLs, the host lock
 * between two clients of one process.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import fc from 'fast-check';
import { ErrorCode } from '../../src/core/errors.js';
import { etagOf } from '../../src/store/etag.js';
import { validatePrefix } from '../../src/store/keys.js';
import {
  FORMAT_FILE_NAME,
  FsStore,
  LOCK_FILE_NAME,
  PIECE_CHARS_MAX,
  TEMP_DIR_NAME,
  decodeSegment,
  encodeSegment,
  objectNames,
  parseFsUrl,
} from '../../src/store/fs/store.js';
import { runConformance } from './conformance.js';
import { elapse } from '../helpers/wait.js';
import { tsWorkerEntry } from '../helpers/ts-worker.js';
import { allKeys } from '../helpers/all-keys.js';
import { str, text } from '../helpers/bytes.js';
import { tempDirs } from '../helpers/temp.js';

const tempRoot = tempDirs('kw-fs-');
/** Listings in pages of 7 keys: a listing of more crosses pages. */
const SMALL_PAGES = { pageKeys: 7 };

/** Every path under `dir`, relative, sorted. */
function tree(dir: string, rel = ''): string[] {
  return readdirSync(join(dir, rel), { withFileTypes: true })
    .flatMap((d) => [join(rel, d.name) + (d.isDirectory() ? '/' : ''), ...(d.isDirectory() ? tree(dir, join(rel, d.name)) : [])])
    .sort();
}

async function withStore(fn: (store: FsStore, root: string) => Promise<void>): Promise<void> {
  const root = tempRoot();
  const store = new FsStore(root);
  try {
    await fn(store, root);
  } finally {
    await store.close();
    rmSync(root, { recursive: true, force: true });
  }
}

runConformance('fs', async () => {
  const root = tempRoot();
  const store = new FsStore(root);
  const others: FsStore[] = [];
  return {
    store,
    reopen: async () => {
      const other = new FsStore(root);
      others.push(other);
      return other;
    },
    cleanup: async () => {
      await store.close();
      for (const o of others) await o.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
});

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

describe('fs store: a listing orders only what it returns (issue 15)', () => {
  it('a page from a large folder is the smallest keys after startAfter, across empty folders left by racing deletes', async () => {
    await withStore(async (store, root) => {
      const keys = Array.from({ length: 120 }, (_, i) => `d/${String((i * 7919) % 1000).padStart(3, '0')}/x`);
      await Promise.all(keys.map((k) => store.put(k, text(k))));
      for (let i = 0; i < 300; i += 3) mkdirSync(join(root, 'd', String(i).padStart(3, '0')), { recursive: true }); // empty (or already there)
      const sorted = [...keys].sort();
      assert.deepEqual(await allKeys(store, { ...SMALL_PAGES, prefix: 'd/' }), sorted);
      for (const start of ['d/', 'd/0', 'd/100/x', 'd/5', 'd/999/x']) {
        for (const maxKeys of [1, 3, 50]) {
          const expected = sorted.filter((k) => k > start).slice(0, maxKeys);
          assert.deepEqual((await store.list({ prefix: 'd/', startAfter: start, maxKeys })).keys, expected, `${start} ${maxKeys}`);
        }
      }
    });
  });
});

describe('fs store: temp files and foreign files', () => {
  it('never lists temp files, the lock file or files it did not write', async () => {
    await withStore(async (store, root) => {
      await store.put('k/1', text('1'));
      writeFileSync(join(root, TEMP_DIR_NAME, 'orphan-from-a-killed-writer'), 'partial');
      writeFileSync(join(root, 'k', 'stray.txt'), 'not ours');
      writeFileSync(join(root, 'k', '%41~'), 'non-canonical');
      mkdirSync(join(root, 'k', 'sub dir'));
      writeFileSync(join(root, 'k', 'sub dir', 'x~'), 'not ours');
      assert.deepEqual(await allKeys(store, SMALL_PAGES), ['k/1']);
      assert.equal(readdirSync(join(root, TEMP_DIR_NAME)).length, 1, 'only the orphan');
    });
  });

  it('leaves no temp file behind after successful and failed writes', async () => {
    await withStore(async (store, root) => {
      const { etag } = await store.put('t', text('1'));
      await store.put('t', text('2'), { ifMatch: etag });
      await assert.rejects(store.put('t', text('3'), { ifMatch: etag }), { code: ErrorCode.PreconditionFailed });
      await assert.rejects(store.put('t', text('4'), { ifNoneMatch: '*' }), { code: ErrorCode.PreconditionFailed });
      await store.put('u', text('5'), { ifNoneMatch: '*' });
      await store.put('u', text('6')); // an unconditional replace
      await store.put('v', text('7')); // an unconditional create
      assert.deepEqual(readdirSync(join(root, TEMP_DIR_NAME)), []);
    });
  });

  it('a reader racing writers only ever sees whole bodies', async () => {
    await withStore(async (store) => {
      const bodies = ['x'.repeat(300_000), 'y'.repeat(200_000), 'z'.repeat(100_000)].map(text);
      await store.put('big', bodies[0]!);
      let stop = false;
      const writer = (async () => {
        for (let i = 0; i < 30; i++) await store.put('big', bodies[i % 3]!);
        stop = true;
      })();
      let reads = 0;
      while (!stop) {
        await new Promise((resolve) => setImmediate(resolve)); // a read may finish without a pool round trip: let the writer on
        const got = await store.get('big');
        assert.ok(got && bodies.some((b) => Buffer.compare(b, got.body) === 0), 'a whole body');
        assert.equal(got.etag, etagOf(got.body));
        reads++;
      }
      await writer;
      assert.ok(reads > 0);
    });
  });
});

describe('fs store: options, URLs, lifecycle', () => {
  it('parses file:// URLs and plain paths', () => {
    assert.equal(parseFsUrl('file:///var/data/bucket'), '/var/data/bucket');
    assert.equal(parseFsUrl('file:///var/my%20bucket'), '/var/my bucket');
    assert.equal(parseFsUrl('file://localhost/var/b'), '/var/b');
    assert.equal(parseFsUrl('file://./data/bucket'), resolve(process.cwd(), 'data/bucket'));
    assert.equal(parseFsUrl('file://../up'), resolve(process.cwd(), '../up'));
    assert.equal(parseFsUrl('data/bucket'), resolve(process.cwd(), 'data/bucket'));
    assert.equal(parseFsUrl('/abs/path'), '/abs/path');
    for (const bad of ['', 'file://host/x', 'file:relative', 'file:///x?y=1']) {
      assert.throws(() => parseFsUrl(bad), { code: ErrorCode.BadConfig }, bad);
    }
  });

  it('accepts a file:// URL as its root', async () => {
    const root = tempRoot();
    const store = new FsStore(`file://${root}/b`);
    try {
      assert.equal(store.root, join(root, 'b'));
      assert.equal(store.description, `fs:${join(root, 'b')}`);
    } finally {
      await store.close();
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('validates its options before touching the disk', () => {
    const never = join(tmpdir(), `kw-fs-never-created-${process.pid}`);
    assert.throws(() => new FsStore(never, { lockWaitMs: 0 }), {
      code: ErrorCode.BadConfig,
      message: /lockWaitMs must be a positive integer/,
    });
    assert.throws(() => new FsStore(never, { fsync: 'yes' as unknown as boolean }), { code: ErrorCode.BadConfig });
    assert.throws(() => new FsStore(never, { lockWaitMS: 5 } as never), { code: ErrorCode.BadConfig, message: /unknown FsStore option/ });
    assert.ok(!existsSync(never));
  });

  it('refuses bad conditions and bodies with BAD_REQUEST', async () => {
    await withStore(async (store) => {
      await assert.rejects(store.put('k', text('x'), { ifNoneMatch: 'etag' } as never), { code: ErrorCode.BadRequest });
      await assert.rejects(store.put('k', text('x'), { ifNoneMatch: '*', ifMatch: 'e' } as never), { code: ErrorCode.BadRequest });
      await assert.rejects(store.put('k', 'x' as never), { code: ErrorCode.BadRequest });
      assert.equal(await store.get('k'), null);
    });
  });

  it('a closed store rejects with STORE_UNAVAILABLE', async () => {
    await withStore(async (store) => {
      await store.close();
      await assert.rejects(store.get('k'), { code: ErrorCode.StoreUnavailable });
      await assert.rejects(store.put('k', text('x')), { code: ErrorCode.StoreUnavailable });
      await assert.rejects(store.list(), { code: ErrorCode.StoreUnavailable });
    });
  });

  it('a write waits for the host lock held by another client, and gives up after lockWaitMs', async () => {
    await withStore(async (store, root) => {
      await store.put('k', text('w'));
      const Database = (await import('better-sqlite3')).default;
      const holder = new Database(join(root, LOCK_FILE_NAME), { timeout: 0 });
      holder.prepare('BEGIN IMMEDIATE').run();
      const impatient = new FsStore(root, { lockWaitMs: 50 });
      try {
        await assert.rejects(impatient.put('k', text('x')), { code: ErrorCode.StoreUnavailable, message: /lockWaitMs/ });
        await assert.rejects(impatient.put('k', text('x'), { ifMatch: etagOf(text('w')) }), { code: ErrorCode.StoreUnavailable });
        await impatient.put('c', text('creates need no lock'), { ifNoneMatch: '*' });
        await impatient.put('u', text('nor an unconditional write of an absent key'));
        assert.equal(str((await store.get('u'))!.body), 'nor an unconditional write of an absent key');
        assert.equal(str((await store.get('k'))!.body), 'w', 'the refused writes changed nothing');
        const waiting = store.put('k', text('y'));
        await elapse(30); // a window in which the write must not land
        assert.equal(str((await store.get('k'))!.body), 'w', 'still waiting');
        holder.prepare('COMMIT').run();
        await waiting;
        assert.equal(str((await store.get('k'))!.body), 'y');
      } finally {
        holder.close();
        await impatient.close();
      }
    });
  });
});

describe('fs store between worker threads', () => {
  it('4 threads race compare-and-swap increments through their own clients: no lost update', async () => {
    await withStore(async (store, root) => {
      await store.put('race/counter', text('0'));
      const each = 50;
      const racer = new URL('../fixtures/fs-racer.ts', import.meta.url);
      const results = await Promise.all(
        Array.from({ length: 4 }, (_, i) => {
          const worker = new Worker(tsWorkerEntry(racer), { eval: true, workerData: { mode: 'cas', root, id: String(i), count: each } });
          return new Promise<{ done: number }>((resolve, reject) => {
            worker.once('message', resolve);
            worker.once('error', reject);
            worker.once('exit', (code) => code === 0 || reject(new Error(`thread exited with ${code}`)));
          });
        }),
      );
      assert.equal(
        results.reduce((n, r) => n + r.done, 0),
        4 * each,
      );
      assert.equal(str((await store.get('race/counter'))!.body), String(4 * each));
    });
  });
});

describe('fs store: listing matches a sorted model (property)', () => {
  const byteOrder = (x: string, y: string) => Buffer.compare(Buffer.from(x), Buffer.from(y));
  const segment = fc.oneof(
    { weight: 8, arbitrary: fc.stringMatching(/^[ab.~%\-é😀\u{feff}]{1,4}$/u).filter((s) => s !== '.' && s !== '..') },
    { weight: 1, arbitrary: fc.constantFrom('a'.repeat(239), 'a'.repeat(240), 'a'.repeat(241), 'a'.repeat(240) + 'é', '😀'.repeat(21)) },
  );
  const key = fc.array(segment, { minLength: 1, maxLength: 3 }).map((s) => s.join('/'));
  const chop = (k: string) => [...k].slice(0, -1).join(''); // by code point: never a lone surrogate
  const bound = fc.oneof(key, key.map(chop), fc.constant(''));
  /** keys.ts refuses prefixes that look like a `.`/`..` segment (e.g. "."), though a key ".x" has it. */
  const listable = (prefix: string) => {
    try {
      return validatePrefix(prefix);
    } catch {
      return '';
    }
  };

  it('list with any prefix, startAfter and page size returns exactly the model keys, in byte order', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(key, { minLength: 1, maxLength: 25 }),
        bound,
        bound,
        fc.integer({ min: 1, max: 6 }),
        async (keys, prefix, startAfter, pageKeys) => {
          const root = tempRoot();
          const store = new FsStore(root, { fsync: false });
          try {
            await Promise.all(keys.map((k) => store.put(k, text(k))));
            const p = listable(prefix);
            const expected = keys.filter((k) => k.startsWith(p) && byteOrder(k, startAfter) > 0).sort(byteOrder);
            const got = await allKeys(store, { prefix: p || undefined, startAfter: startAfter || undefined, pageKeys });
            assert.deepEqual(got, expected);
            for (const k of keys.slice(0, 3)) assert.equal(Buffer.from((await store.get(k))!.body).toString('utf8'), k); // TextDecoder would strip a BOM
          } finally {
            await store.close();
            rmSync(root, { recursive: true, force: true });
          }
        },
      ),
      { numRuns: 40 },
    );
  });
});
