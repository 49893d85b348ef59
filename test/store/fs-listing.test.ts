/**
 * FsStore's listings: a page from a large folder sorts only what it returns (the smallest keys
 * after startAfter, across empty folders racing deletes leave), and any prefix, startAfter and
 * page size list exactly what a sorted model of the keys holds, in byte order.
 */
import assert from 'node:assert/strict';
import { rmSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { validatePrefix } from '../../src/store/keys.js';
import { FsStore } from '../../src/store/fs/store.js';
import { SMALL_PAGES, tempRoot, withStore } from './fs-fixture.js';
import { allKeys } from '../helpers/all-keys.js';
import { text } from '../helpers/bytes.js';

describe('fs store: a listing orders only what it returns', () => {
  it('a page from a large folder is the smallest keys after startAfter, across empty folders left by racing deletes', async () => {
    await withStore(async (store, root) => {
      const keys = Array.from({ length: 120 }, (_, i) => `d/${String((i * 7919) % 1000).padStart(3, '0')}/x`);
      await Promise.all(keys.map((k) => store.put(k, text(k))));
      // empty folders (or already there)
      for (let i = 0; i < 300; i += 3) mkdirSync(join(root, 'd', String(i).padStart(3, '0')), { recursive: true });
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
            // Buffer, not TextDecoder, which would strip a BOM
            for (const k of keys.slice(0, 3)) assert.equal(Buffer.from((await store.get(k))!.body).toString('utf8'), k);
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
