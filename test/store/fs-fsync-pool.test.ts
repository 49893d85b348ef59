/**
 * The node's fsync pool (store/fs/fsync-pool.ts, its queue store/fs/fsync-queue.ts): threads
 * started as fsyncs want them make a batch's fsyncs at once where fsyncs are slow, and one thread
 * makes them in turn where they are fast (fs-fsync-queue.test.ts has the rule); an fsync's failure is its caller's;
 * a thread that dies fails the fsync it was making and sends later ones to libuv's pool; close
 * ends the threads; idle threads leave, and keep no process alive.
 *
 * The pool's TEST-ONLY gate holds each fsync on its thread (word 0 = 1) and counts the threads
 * holding one (word 1): fsyncs made at once are seen at once, with no timing.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, constants, open, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { SystemClock } from '../../src/core/clock.js';
import { ErrorCode } from '../../src/core/errors.js';
import { FsyncPool } from '../../src/store/fs/fsync-pool.js';
import { Word } from '../../src/store/fs/fsync-queue.js';
import { FsStore } from '../../src/store/fs/store.js';
import { str, text } from '../helpers/bytes.js';
import { tempDirs } from '../helpers/temp.js';
import { waitFor } from '../helpers/wait.js';

const tempDir = tempDirs('kw-fsync-pool-');
const linux = process.platform === 'linux' && spawnSync('mkfifo', ['--version']).status === 0;
const USER = new URL('../fixtures/fsync-pool-user.ts', import.meta.url).pathname;

/** The TEST-ONLY gate: `hold()` makes every fsync wait on its thread, `held()` counts them, `release()` / `kill()` end the wait. */
function gate() {
  const shared = new SharedArrayBuffer(8);
  const words = new Int32Array(shared);
  const set = (v: number) => (Atomics.store(words, 0, v), Atomics.notify(words, 0));
  return {
    shared,
    hold: () => set(1),
    release: () => set(0),
    kill: () => set(2),
    held: () => Atomics.load(words, 1),
    recount: () => Atomics.store(words, 1, 0),
  };
}
type Gate = ReturnType<typeof gate>;

/** Sets the pool's running average of an fsync's time, as its threads would after fsyncs of `us` each. */
function paceOf(pool: FsyncPool, us: number): void {
  Atomics.store(new Int32Array(pool.shared), Word.serviceUs, us);
}

/** Fsyncs of a slow disk: every fsync queued beyond the idle threads wants one (50 ms each). */
const SLOW_US = 50_000;

function fileWith(dir: string, name: string): number {
  const fd = openSync(join(dir, name), 'w');
  writeSync(fd, name);
  return fd;
}

/**
 * A pool with `n` threads running: the first started by an fsync that found none (made on libuv's
 * pool), the others one by one while `n` fsyncs held at once wait for them.
 */
async function poolOf(n: number, g: Gate = gate()): Promise<FsyncPool> {
  const pool = new FsyncPool({ threadsMax: n, gate: g.shared });
  const fd = fileWith(tempDir(), 'warm');
  try {
    await pool.queue.fsyncFile(fd);
    await waitFor('a pool thread', 30_000, () => pool.running === 1);
    paceOf(pool, SLOW_US);
    g.hold();
    const held = Array.from({ length: n }, () => pool.queue.fsyncFile(fd));
    await waitFor(`${n} fsyncs held, each on a thread`, 30_000, () => g.held() === n);
    g.release();
    await Promise.all(held);
    g.recount();
  } finally {
    closeSync(fd);
  }
  return pool;
}

describe('fsync pool', { timeout: 180_000 }, () => {
  it('starts no thread until an fsync wants one, then makes a slow batch’s fsyncs at once', async () => {
    const g = gate();
    const pool = new FsyncPool({ threadsMax: 4, gate: g.shared });
    assert.equal(pool.threads, 0);
    const dir = tempDir();
    const fds = ['a', 'b', 'c', 'd'].map((n) => fileWith(dir, n));
    try {
      await pool.queue.fsyncFile(fds[0]!); // no thread running: on libuv's pool, and one is started
      await waitFor('a pool thread', 30_000, () => pool.running === 1);
      paceOf(pool, SLOW_US);
      g.hold();
      const batch = fds.map((fd) => pool.queue.fsyncFile(fd));
      // One thread was idle: the other three fsyncs wanted one each, and got it.
      await waitFor('four fsyncs held at once, each on a thread', 30_000, () => g.held() === 4);
      assert.equal(pool.threads, 4);
      g.release();
      await Promise.all(batch);
      await Promise.all(fds.map((fd) => pool.queue.fsyncFile(fd))); // threads idle: taken at once
      await pool.queue.fsyncFolder(dir);
    } finally {
      g.release();
      await pool.close();
      fds.forEach((fd) => closeSync(fd));
    }
  });

  it('leaves a batch of fast fsyncs to the thread it has: a thread costs more to start than they wait', async () => {
    const g = gate();
    const pool = new FsyncPool({ threadsMax: 4, gate: g.shared });
    const dir = tempDir();
    const fds = ['a', 'b', 'c', 'd'].map((n) => fileWith(dir, n));
    try {
      await pool.queue.fsyncFile(fds[0]!);
      await waitFor('a pool thread', 30_000, () => pool.running === 1);
      paceOf(pool, 100); // 0.1 ms each: the three behind the first wait 0.3 ms
      g.hold();
      const batch = fds.map((fd) => pool.queue.fsyncFile(fd));
      await waitFor('the first fsync held on the thread', 30_000, () => g.held() === 1);
      g.release();
      await Promise.all(batch);
      assert.equal(g.held(), 4, 'all four made on the one thread');
      assert.equal(pool.threads, 1);
    } finally {
      g.release();
      await pool.close();
      fds.forEach((fd) => closeSync(fd));
    }
  });

  it('answers a failed fsync with its error, and goes on', async () => {
    const pool = await poolOf(2);
    const dir = tempDir();
    const fd = fileWith(dir, 'closed');
    closeSync(fd);
    try {
      await assert.rejects(pool.queue.fsyncFile(fd), { code: 'EBADF', syscall: 'fsync' });
      await assert.rejects(pool.queue.fsyncFolder(join(dir, 'missing')), { code: 'ENOENT' });
      const ok = fileWith(dir, 'ok');
      await pool.queue.fsyncFile(ok);
      closeSync(ok);
      assert.equal(pool.gone, false);
    } finally {
      await pool.close();
    }
  });

  it('fails the fsyncs of a thread that dies, and makes later ones on libuv’s pool', async () => {
    const g = gate();
    const pool = await poolOf(2, g);
    const fd = fileWith(tempDir(), 'f');
    try {
      g.hold();
      const dying = [pool.queue.fsyncFile(fd), pool.queue.fsyncFile(fd)];
      await waitFor('two fsyncs held', 30_000, () => g.held() === 2);
      g.kill();
      for (const r of await Promise.allSettled(dying)) {
        assert.equal(r.status, 'rejected');
        assert.match(String((r as PromiseRejectedResult).reason), /thread making it died/);
      }
      await waitFor('the threads gone', 30_000, () => pool.threads === 0);
      assert.equal(pool.gone, true);
      g.release();
      await pool.queue.fsyncFile(fd); // on libuv's pool
      assert.equal(g.held(), 2, 'no pool thread made it');
      assert.equal(pool.threads, 0, 'and none was started');
    } finally {
      g.release();
      await pool.close();
      closeSync(fd);
    }
  });

  it('close waits for the fsyncs under way, ends the threads, and sends later fsyncs to libuv’s pool', async () => {
    const g = gate();
    const pool = await poolOf(3, g);
    const fd = fileWith(tempDir(), 'f');
    try {
      g.hold();
      const under = pool.queue.fsyncFile(fd);
      await waitFor('an fsync held', 30_000, () => g.held() === 1);
      const closed = pool.close();
      g.release();
      await under; // finished, not failed
      await closed;
      assert.equal(pool.threads, 0);
      assert.equal(pool.running, 0);
      await pool.queue.fsyncFile(fd);
      assert.equal(g.held(), 1, 'no pool thread made the later one');
    } finally {
      g.release();
      await pool.close();
      closeSync(fd);
    }
  });

  it('lets idle threads leave, and starts one again when fsyncs want it', async () => {
    const pool = new FsyncPool({ threadsMax: 2, idleExitMs: 1_000 });
    const fd = fileWith(tempDir(), 'f');
    try {
      await pool.queue.fsyncFile(fd); // none running: libuv's pool, and a thread is started
      await waitFor('a thread', 30_000, () => pool.threads > 0); // it stays for a second at least
      await waitFor('the idle thread to leave', 30_000, () => pool.threads === 0);
      await pool.queue.fsyncFile(fd);
      await waitFor('a thread again', 30_000, () => pool.running > 0);
      await pool.queue.fsyncFile(fd);
    } finally {
      await pool.close();
      closeSync(fd);
    }
  });

  it('starts no thread before firstThreadAfterMs: fsyncs until then are made on libuv’s pool', async () => {
    const pool = new FsyncPool({ threadsMax: 2, firstThreadAfterMs: 300 });
    const made = performance.now();
    const fd = fileWith(tempDir(), 'f');
    try {
      await pool.queue.fsyncFile(fd);
      await pool.queue.fsyncFile(fd);
      if (performance.now() - made < 250) assert.equal(pool.threads, 0, 'none started within the delay');
      await waitFor('a thread, once the delay is over', 30_000, () => pool.threads > 0);
      assert.ok(performance.now() - made >= 295, 'not before the delay');
      await waitFor('it runs', 30_000, () => pool.running > 0);
      await pool.queue.fsyncFile(fd);
    } finally {
      await pool.close();
      closeSync(fd);
    }
  });

  it('serves worker threads, and its idle threads keep no process alive', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', USER, tempDir()], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const killer = setTimeout(() => child.kill('SIGKILL'), 50_000);
    const [code, signal] = await once(child, 'exit');
    clearTimeout(killer);
    assert.equal(signal, null, `the process had to be killed: it did not end by itself\n${out}`);
    assert.equal(code, 0, out);
    assert.match(out, /^fsynced [1-4]\n$/);
  });

  it('a folder bucket on it writes while every thread of libuv’s pool is held', { skip: !linux && 'needs Linux and mkfifo' }, async (t) => {
    const dir = tempDir();
    const fifo = join(dir, 'fifo');
    assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
    const pool = await poolOf(4);
    const store = new FsStore(join(dir, 'b'), {}, new SystemClock(), pool.queue);
    let held = 0;
    const opens = Array.from({ length: 128 }, () => {
      held++;
      return new Promise<number>((resolve, reject) => open(fifo, 'r', (e, fd) => (held--, e ? reject(e) : resolve(fd))));
    });
    try {
      if (!store.fsyncs) return t.skip('the temp folder is on tmpfs: the store makes no fsyncs');
      const { etag } = await store.put('nodes/n1', text('one'), { ifNoneMatch: '*' });
      await assert.rejects(store.put('nodes/n1', text('again'), { ifNoneMatch: '*' }), { code: ErrorCode.PreconditionFailed });
      await Promise.all(Array.from({ length: 40 }, (_, i) => store.put(`batch/${i}`, text(String(i)))));
      await store.put('nodes/n1', text('two'), { ifMatch: etag });
      assert.equal(str((await store.get('nodes/n1'))!.body), 'two');
      await store.delete('nodes/n1');
      assert.equal(held, 128, 'libuv’s pool was held all along');
    } finally {
      const writer = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
      for (const fd of await Promise.all(opens)) closeSync(fd);
      closeSync(writer);
      await store.close();
      await pool.close();
    }
  });
});
