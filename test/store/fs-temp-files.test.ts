/**
 * FsStore and files it did not finish or did not write: temp files (a killed writer's), the lock
 * file and foreign files are never listed, no write leaves a temp file behind, and a reader racing
 * writers only ever sees whole bodies.
 */
import assert from 'node:assert/strict';
import { readdirSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ErrorCode } from '../../src/core/errors.js';
import { etagOf } from '../../src/store/etag.js';
import { TEMP_DIR_NAME } from '../../src/store/fs/store.js';
import { SMALL_PAGES, withStore } from './fs-fixture.js';
import { allKeys } from '../helpers/all-keys.js';
import { text } from '../helpers/bytes.js';

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
