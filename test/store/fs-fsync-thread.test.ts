/**
 * The `fsyncThread` of FsStore and SqliteStore (store/fs/fsync-thread.ts): their fsyncs run on a thread of the store's
 * own, so writes are made durable and answered while every thread of libuv's pool is held by
 * other file work (here: opens of a FIFO no one writes to, which return only when the test opens
 * it for writing). The store's promises are its bucket's: creates stay exclusive, a replace
 * checks its etag, deletes are answered. Before the thread runs, and after it is gone, the fsyncs
 * are made on the calling thread.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, constants, open, openSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ErrorCode } from '../../src/core/errors.js';
import { FsStore } from '../../src/store/fs/store.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import type { ObjectStore } from '../../src/store/types.js';
import { FsyncThread } from '../../src/store/fs/fsync-thread.js';
import { SystemClock } from '../../src/core/clock.js';
import { waitFor } from '../helpers/wait.js';
import { str, text } from '../helpers/bytes.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs('kw-fs-inline-');
const linux = process.platform === 'linux' && spawnSync('mkfifo', ['--version']).status === 0;
/** More than any thread pool this process could have been given. */
const HOLDERS = 128;

/** Holds every thread of libuv's pool until `release()`. */
function holdPool(fifo: string): { release: () => Promise<void>; held: () => number } {
  let held = 0;
  const opens = Array.from(
    { length: HOLDERS },
    () => new Promise<number>((resolve, reject) => (held++, open(fifo, 'r', (e, fd) => (held--, e ? reject(e) : resolve(fd))))),
  );
  return {
    held: () => held,
    release: async () => {
      const writer = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
      for (const fd of await Promise.all(opens)) closeSync(fd);
      closeSync(writer);
    },
  };
}

/** With every thread of libuv's pool held: a create, a create and a replace refused, a replace, a read, a delete. */
async function writeWithPoolHeld(store: ObjectStore, fifo: string): Promise<void> {
  const pool = holdPool(fifo);
  try {
    const { etag } = await store.put('nodes/n1', text('one'), { ifNoneMatch: '*' });
    await assert.rejects(store.put('nodes/n1', text('again'), { ifNoneMatch: '*' }), { code: ErrorCode.PreconditionFailed });
    await assert.rejects(store.put('nodes/n1', text('two'), { ifMatch: 'stale' }), { code: ErrorCode.PreconditionFailed });
    await store.put('nodes/n1', text('two'), { ifMatch: etag });
    assert.equal(str((await store.get('nodes/n1'))!.body), 'two');
    await store.delete('nodes/n1');
    assert.equal(await store.get('nodes/n1'), null);
    assert.equal(pool.held(), HOLDERS, 'the pool was held all along');
  } finally {
    await pool.release();
  }
}

describe('fs store with fsyncThread', { skip: !linux && 'needs Linux and mkfifo', timeout: 60_000 }, () => {
  it('refuses a value that is not a boolean', () => {
    assert.throws(() => new FsStore(join(tempDir(), 'b'), { fsyncThread: 1 as unknown as boolean }), {
      code: ErrorCode.BadConfig,
      message: /fsyncThread must be a boolean/,
    });
  });

  it('fsyncs on its thread while every thread of libuv’s pool is held, and on the caller’s before and after', async () => {
    const dir = tempDir();
    const fifo = join(dir, 'fifo');
    assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
    const fd = openSync(join(dir, 'file'), 'w');
    const thread = new FsyncThread();
    await thread.fsyncFile(fd); // on this thread; starts the thread
    await waitFor('the fsync thread to run', 30_000, () => thread.running);
    const pool = holdPool(fifo);
    try {
      await thread.fsyncFile(fd);
      await thread.fsyncFolder(dir);
      await assert.rejects(thread.fsyncFolder(join(dir, 'missing')), { code: 'ENOENT' });
      assert.ok(thread.running);
      assert.equal(pool.held(), HOLDERS, 'the pool was held all along');
      await thread.close();
      await thread.fsyncFile(fd); // on this thread again
      assert.ok(!thread.running);
    } finally {
      await pool.release();
      await thread.close();
      closeSync(fd);
    }
  });

  it('writes, replaces and deletes while every thread of libuv’s pool is held', async () => {
    const dir = tempDir();
    const fifo = join(dir, 'fifo');
    assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
    const thread = new FsyncThread();
    const store = new FsStore(join(dir, 'b'), {}, new SystemClock(), thread);
    await store.put('warm', text('up'));
    await waitFor('the fsync thread to run', 30_000, () => thread.running);
    try {
      await writeWithPoolHeld(store, fifo);
    } finally {
      await store.close();
      await thread.close();
    }
  });
});

describe('sqlite store with fsyncThread', { skip: !linux && 'needs Linux and mkfifo', timeout: 60_000 }, () => {
  it('commits, fsyncs its WAL and answers while every thread of libuv’s pool is held', async () => {
    const dir = tempDir();
    const fifo = join(dir, 'fifo');
    assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
    const store = new SqliteStore(join(dir, 'bucket.db'), { lockWaitMs: 10_000, fsyncThread: true }, new SystemClock());
    await store.put('warm', text('up'));
    try {
      await writeWithPoolHeld(store, fifo);
    } finally {
      await store.close();
    }
  });
});
