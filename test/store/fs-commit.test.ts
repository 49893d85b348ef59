/**
 * The folder bucket's group commit (src/store/fs/commit.ts), through an fsync seam that records
 * each fsync and what was in place when it ran, and holds fsyncs until the test lets them finish:
 * the puts waiting together are fsynced as one batch, a name appears only after its file's fsync,
 * a put is answered only after its folder's fsync, and a put's failure is its own.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { ErrorCode } from '../../src/core/errors.js';
import { SystemClock } from '../../src/core/clock.js';
import { fsyncFd, fsyncPath, type FsDurability } from '../../src/store/fs/io.js';
import { FsStore, type FsStoreOptions } from '../../src/store/fs/store.js';
import { objectNames } from '../../src/store/fs/paths.js';
import { etagOf } from '../../src/store/etag.js';
import { str, text } from '../helpers/bytes.js';
import { settledYet, turn } from '../helpers/settled.js';
import { tempRoot } from './fs-fixture.js';

interface Fsync {
  kind: 'file' | 'folder';
  dir?: string;
  /** The test's keys whose object was in place when this fsync started. */
  present: string[];
  finish: (err?: Error) => void;
}

/**
 * A store whose fsyncs are recorded and held: each really fsyncs once the test calls `finish`
 * (or fails with the error given). `keys` are the objects whose presence each fsync records.
 */
function heldStore(t: TestContext, keys: string[], options: FsStoreOptions = {}) {
  const root = tempRoot();
  const calls: Fsync[] = [];
  const present = () => keys.filter((k) => existsSync(join(root, ...objectNames(k))));
  const held = (kind: Fsync['kind'], real: () => Promise<void>, dir?: string) =>
    new Promise<void>((resolve, reject) =>
      calls.push({ kind, dir, present: present(), finish: (err) => (err ? reject(err) : real().then(resolve, reject)) }),
    );
  const durability: FsDurability = {
    fsyncFile: (fd) => held('file', () => fsyncFd(fd)),
    fsyncFolder: (dir) => held('folder', () => fsyncPath(dir), dir),
  };
  const store = new FsStore(root, options, new SystemClock(), durability);
  t.after(() => store.close());
  return { root, store, calls };
}

/** Turns the event loop until `cond` holds; fails after `ms` (a bound against hanging, not a wait). */
async function until(cond: () => boolean, what: string, ms = 30_000): Promise<void> {
  const deadline = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await turn();
  }
}

/** Finishes every held fsync as they come, until `done` settles. */
async function finishAll(calls: Fsync[], done: Promise<unknown>, fail?: (c: Fsync) => Error | undefined): Promise<void> {
  let settled = false;
  void done.then(
    () => (settled = true),
    () => (settled = true),
  );
  let next = 0;
  await until(() => {
    for (; next < calls.length; next++) calls[next]!.finish(fail?.(calls[next]!));
    return settled;
  }, 'every put is answered');
}

function skipWithoutFsync(t: TestContext, store: FsStore): boolean {
  if (store.fsyncs) return false;
  t.skip('fsync does nothing on the file system under TMPDIR (tmpfs): no fsync to record');
  return true;
}

describe('fs store: group commit', () => {
  it('fsyncs a batch of files before any is linked, and answers only after their folders are fsynced', async (t) => {
    const keys = ['a/1', 'a/2', 'b/x/1', 'b/x/2', 'c/1'];
    const { store, calls, root } = heldStore(t, keys);
    if (skipWithoutFsync(t, store)) return;
    const puts = keys.map((k) => store.put(k, text(`body of ${k}`), { ifNoneMatch: '*' }));
    await turn();
    assert.equal(calls.length, keys.length, 'the puts of one turn are one batch: a file fsync each, all at once');
    assert.ok(
      calls.every((c) => c.kind === 'file' && c.present.length === 0),
      'no object is in place before its file is fsynced',
    );
    for (const c of calls.splice(0)) c.finish();
    await until(() => calls.length > 0, 'the folders are fsynced');
    const folders = calls.filter((c) => c.kind === 'folder');
    assert.equal(folders.length, calls.length, 'then only folder fsyncs');
    for (const c of folders) assert.deepEqual(c.present, keys, 'a folder is fsynced after every object of the batch is in place');
    assert.equal(new Set(folders.map((c) => c.dir)).size, folders.length, 'each folder once');
    assert.ok(folders.some((c) => c.dir === join(root, ...objectNames('a/1').slice(0, -1))));
    for (const p of puts) assert.equal(await settledYet(p), false, 'no put is answered before its folder is fsynced');
    await finishAll(calls, Promise.all(puts));
    for (const k of keys) assert.equal(str((await store.get(k))!.body), `body of ${k}`);
  });

  it('commits a lone put at once, and the puts that arrive meanwhile together after it', async (t) => {
    const keys = ['lone', 'next/1', 'next/2', 'next/3'];
    const { store, calls } = heldStore(t, keys);
    if (skipWithoutFsync(t, store)) return;
    const lone = store.put('lone', text('1'));
    await turn();
    assert.equal(calls.length, 1, 'a lone put does not wait for company');
    const rest = keys.slice(1).map((k) => store.put(k, text(k)));
    await turn();
    assert.equal(calls.length, 1, 'puts arriving during a flush wait for it to end');
    const done = Promise.all([lone, ...rest]);
    calls[0]!.finish();
    await until(() => calls.length >= 2, "the lone put's folder is fsynced");
    calls[1]!.finish(); // the lone put's folder
    await until(() => calls.slice(2).some((c) => c.kind === 'file'), 'the next batch starts');
    const second = calls.slice(2);
    assert.equal(second.filter((c) => c.kind === 'file').length, 3, 'the waiting puts make one batch');
    await finishAll(calls, done);
  });

  it('bounds a batch by putBatchObjectsMax and putBatchBytesMax, a larger body going alone', async (t) => {
    const { store, calls } = heldStore(t, [], { putBatchObjectsMax: 2, putBatchBytesMax: 10 });
    if (skipWithoutFsync(t, store)) return;
    const sizes = [4, 4, 4, 30, 1, 1, 1];
    await finishAll(calls, Promise.all(sizes.map((n, i) => store.put(`b/${i}`, new Uint8Array(n)))));
    // A batch's file fsyncs come together, then its folders': each run of file fsyncs is a batch.
    const rounds = calls
      .map((c) => c.kind)
      .join(' ')
      .split(/(?: ?folder)+ ?/)
      .filter((run) => run !== '')
      .map((run) => run.split(' ').length);
    assert.deepEqual(rounds, [2, 1, 1, 2, 1], '4+4, then 4 (4+30 is over), 30 alone, 1+1 (objects), 1');
  });

  it('keeps a conditional write that loses within a batch from failing its batch-mates', async (t) => {
    const keys = ['race/k', 'other/m', 'old/n'];
    const { store, calls } = heldStore(t, keys);
    if (skipWithoutFsync(t, store)) return;
    await finishAll(calls, store.put('old/n', text('n0')));
    const n0 = etagOf(text('n0'));
    calls.length = 0;
    const outcomes = Promise.allSettled([
      store.put('race/k', text('first'), { ifNoneMatch: '*' }),
      store.put('race/k', text('second'), { ifNoneMatch: '*' }),
      store.put('other/m', text('m')),
      store.put('old/n', text('n1'), { ifMatch: etagOf(text('wrong')) }),
      store.put('old/n', text('n2'), { ifMatch: n0 }),
      store.put('old/n', text('n3'), { ifMatch: n0 }),
    ]);
    await turn();
    assert.equal(calls.filter((c) => c.kind === 'file').length, 6, 'all six in one batch');
    await finishAll(calls, outcomes);
    const [first, second, other, wrong, n2, n3] = await outcomes;
    assert.equal(first!.status, 'fulfilled', 'the first create of the key wins');
    assert.equal(second!.status, 'rejected');
    assert.equal((second as PromiseRejectedResult).reason.code, ErrorCode.PreconditionFailed);
    assert.equal(other!.status, 'fulfilled');
    assert.equal((wrong as PromiseRejectedResult).reason.code, ErrorCode.PreconditionFailed);
    assert.equal(n2!.status, 'fulfilled', 'the first replace of the version wins');
    assert.equal((n3 as PromiseRejectedResult).reason.code, ErrorCode.PreconditionFailed, 'the second finds it replaced');
    assert.equal(str((await store.get('race/k'))!.body), 'first');
    assert.equal(str((await store.get('other/m'))!.body), 'm');
    assert.equal(str((await store.get('old/n'))!.body), 'n2');
  });

  it('fails only the put whose file fsync failed, and only the puts of a folder whose fsync failed', async (t) => {
    const keys = ['f/1', 'f/2', 'f/3', 'g/1', 'h/1'];
    const { store, calls, root } = heldStore(t, keys);
    if (skipWithoutFsync(t, store)) return;
    const outcomes = Promise.allSettled(keys.map((k) => store.put(k, text(k))));
    await turn();
    const eio = () => Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' });
    const badFolder = join(root, ...objectNames('g/1').slice(0, -1));
    let files = 0;
    await finishAll(calls, outcomes, (c) => {
      if (c.kind === 'file') return files++ === 1 ? eio() : undefined; // the second put's body
      return c.dir === badFolder ? eio() : undefined;
    });
    const codes = (await outcomes).map((o) => (o.status === 'fulfilled' ? 'ok' : (o.reason as { code: string }).code));
    assert.deepEqual(codes, ['ok', ErrorCode.StoreUnavailable, 'ok', ErrorCode.AmbiguousWrite, 'ok']);
    assert.equal(await store.get('f/2'), null, 'a put whose body was not durable never appears');
    assert.equal(str((await store.get('g/1'))!.body), 'g/1', 'an ambiguous write is in place, not yet durable');
    assert.deepEqual(readdirSync(join(root, '~tmp')), [], 'no temp file is left behind');
  });
});
