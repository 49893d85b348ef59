/**
 * FsStore's configuration and life: file:// URLs and plain paths, options checked before the disk
 * is touched, bad conditions and bodies refused, a closed store unavailable, and the host lock a
 * write waits for (and gives up on after lockWaitMs) when another client holds it.
 */
import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { ErrorCode } from '../../src/core/errors.js';
import { etagOf } from '../../src/store/etag.js';
import { FsStore, LOCK_FILE_NAME, parseFsUrl } from '../../src/store/fs/store.js';
import { tempRoot, withStore } from './fs-fixture.js';
import { elapse } from '../helpers/wait.js';
import { str, text } from '../helpers/bytes.js';

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
    assert.throws(() => new FsStore(never, { putBatchObjectsMax: 0 }), {
      code: ErrorCode.BadConfig,
      message: /putBatchObjectsMax must be a positive integer/,
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
