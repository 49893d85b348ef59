/**
 * The local stores between OS processes: children (test/fixtures/fs-racer.ts) share one folder
 * (FsStore) or one SQLite file (SqliteStore) and race conditional creates and compare-and-swap
 * increments; one is SIGKILLed while hammering and one while holding the lock writes need (the
 * folder's host lock, the file's write lock), and the rest must still make progress.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { join } from 'node:path';
import { FsStore } from '../../src/store/fs/store.js';
import { openStore } from '../../src/store/open.js';
import type { ObjectStore } from '../../src/store/types.js';
import { makeTempDir, removeTempDir } from '../../support/temp-dir.js';
import { elapse } from '../helpers/wait.js';
import { str, text } from '../helpers/bytes.js';

const RACERS = 4;
const COUNTER_KEY = 'race/counter';

const spawned: Racer[] = [];

/** One child process and the lines it printed. */
class Racer {
  readonly child: ChildProcess;
  readonly lines: string[] = [];
  increments = 0;
  stderr = '';
  readonly exited: Promise<number | null>;
  exitCode: number | null | undefined;
  #listeners: (() => void)[] = [];

  constructor(args: string[]) {
    this.child = spawn(
      process.execPath,
      ['--expose-gc', '--import', 'tsx', '--import', './support/die-with-parent.mjs', 'test/fixtures/fs-racer.ts', ...args],
      {
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      if (line === '+') this.increments++;
      else this.lines.push(line);
      for (const l of this.#listeners) l();
    });
    this.child.stderr!.on('data', (d) => (this.stderr += String(d)));
    this.exited = new Promise((resolve) => this.child.on('exit', (code) => resolve(code)));
    this.exited.then((code) => {
      this.exitCode = code;
      for (const l of this.#listeners) l();
    });
    spawned.push(this);
  }

  /** Resolves once `test` holds over what was printed; rejects after `timeoutMs`. */
  until(test: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
    if (test()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}; stderr: ${this.stderr}`)), timeoutMs);
      const check = () => {
        const ok = test();
        if (!ok && this.exitCode === undefined) return;
        clearTimeout(timer);
        this.#listeners = this.#listeners.filter((l) => l !== check);
        if (ok) resolve();
        else reject(new Error(`racer exited (${this.exitCode}) before ${what}; stderr: ${this.stderr}`));
      };
      this.#listeners.push(check);
    });
  }

  send(line: string): void {
    this.child.stdin!.write(line + '\n');
  }

  async result<T>(): Promise<T> {
    const code = await this.exited;
    assert.equal(code, 0, `racer failed: ${this.stderr}`);
    return JSON.parse(this.lines.find((l) => l.startsWith('{'))!) as T;
  }
}

async function startAll(args: (i: number) => string[]): Promise<Racer[]> {
  const racers = Array.from({ length: RACERS }, (_, i) => new Racer(args(i)));
  await Promise.all(racers.map((r) => r.until(() => r.lines.includes('ready'), 'ready')));
  for (const r of racers) r.send('go');
  return racers;
}

async function counterValue(store: ObjectStore): Promise<number> {
  return Number(str((await store.get(COUNTER_KEY))!.body));
}

const KINDS = {
  fs: (dir: string) => dir,
  sqlite: (dir: string) => `sqlite:${join(dir, 'bucket.db')}`,
};

for (const [kind, bucketIn] of Object.entries(KINDS))
  describe(`${kind} store between processes`, { timeout: 120_000 }, () => {
    let dir: string;
    /** What the racers are given: the folder, or the SQLite file's URL. */
    let root: string;
    let store: ObjectStore;
    before(() => {
      dir = makeTempDir(`kw-${kind}-proc-`);
      root = bucketIn(dir);
      store = kind === 'fs' ? new FsStore(root) : openStore(root);
    });
    after(async () => {
      for (const r of spawned) if (r.exitCode === undefined) r.child.kill('SIGKILL');
      await Promise.all(spawned.map((r) => r.exited));
      await store.close();
      removeTempDir(dir);
    });

    it(`${RACERS} processes race If-None-Match creates: exactly one winner per key, holding its body`, async () => {
      const keys = 400;
      const racers = await startAll((i) => ['create', root, String(i), String(keys)]);
      const results = await Promise.all(racers.map((r) => r.result<{ id: string; won: number[]; lost: number[] }>()));
      for (let k = 0; k < keys; k++) {
        const winners = results.filter((r) => r.won.includes(k));
        assert.equal(winners.length, 1, `key ${k}: winners ${winners.map((w) => w.id)}`);
        assert.equal(results.filter((r) => r.lost.includes(k)).length, RACERS - 1, `key ${k}: every other racer lost`);
        assert.equal(str((await store.get(`race/create/${k}`))!.body), `racer-${winners[0]!.id}`);
      }
      const winsPerRacer = results.map((r) => r.won.length);
      console.log(`create race: ${keys} keys, wins per process ${winsPerRacer.join('/')}`);
    });

    it(`${RACERS} processes race compare-and-swap increments: no lost update`, async () => {
      await store.put(COUNTER_KEY, text('0'));
      const each = 100;
      const racers = await startAll((i) => ['cas', root, String(i), String(each)]);
      const results = await Promise.all(racers.map((r) => r.result<{ done: number; conflicts: number; ms: number }>()));
      const total = results.reduce((n, r) => n + r.done, 0);
      assert.equal(await counterValue(store), total);
      const conflicts = results.reduce((n, r) => n + r.conflicts, 0);
      const slowestMs = Math.max(...results.map((r) => r.ms));
      console.log(
        `cas race: ${total} increments by ${RACERS} processes in ${slowestMs.toFixed(0)} ms (${((total / slowestMs) * 1000).toFixed(0)} CAS/s), ${conflicts} conflicts retried`,
      );
    });

    it('a process SIGKILLed while hammering, or while holding the lock, does not stop the others', async () => {
      await store.put(COUNTER_KEY, text('0'));
      const racers = await startAll((i) => ['hammer', root, String(i)]);
      await Promise.all(racers.map((r) => r.until(() => r.increments >= 10, 'first increments')));
      const [victim, ...survivors] = racers as [Racer, ...Racer[]];
      victim.child.kill('SIGKILL');
      await victim.exited;
      await progress(survivors, 'after the hammering process was killed');

      const holder = new Racer(['hold', root]);
      await holder.until(() => holder.lines.includes('holding'), 'the lock holder');
      // The counter in the bucket, not the racers' `+` lines: on a loaded machine their pipes may
      // still hold lines of increments made before the holder took the lock.
      const frozen = await counterValue(store);
      await elapse(300); // a window in which the holder's lock must stop them
      const during = await counterValue(store);
      assert.equal(holder.exitCode, undefined, `the lock holder exited during the window: ${holder.stderr}`);
      // At most the increments already past the lock when the holder took it may land, one each.
      assert.ok(during <= frozen + survivors.length, `no progress while the lock is held: ${frozen} → ${during}`);
      holder.child.kill('SIGKILL');
      await holder.exited;
      await progress(survivors, 'after the lock holder was killed');

      for (const r of survivors) r.send('stop');
      const done = await Promise.all(survivors.map((r) => r.result<{ done: number }>()));
      const reported = done.reduce((n, r) => n + r.done, 0) + victim.increments;
      const final = await counterValue(store);
      // The victim may have renamed its last increment in place without living to print it.
      assert.ok(final === reported || final === reported + 1, `counter ${final}, increments reported ${reported}`);
    });
  });

async function progress(racers: Racer[], what: string): Promise<void> {
  const from = racers.map((r) => r.increments);
  await Promise.all(racers.map((r, i) => r.until(() => r.increments >= from[i]! + 20, `progress ${what}`)));
}
