/**
 * Nodes started together on one host open a new bucket at the same instant (a systemd unit per
 * node, a process manager). Eight processes (test/fixtures/bucket-opener.ts) are released at once
 * onto a bucket nobody has opened yet, round after round; each must open it, write and read back
 * an object. Two openers of a new SQLite file both ask for the lock that switches it to WAL, and
 * SQLite answers one of them busy without waiting: the store must wait for it, not fail.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, describe, it } from 'node:test';
import { tempDirs } from '../helpers/temp.js';

const OPENERS = 8;
const ROUNDS = 20;

/** One opener process and the lines it has printed but nobody has taken yet. */
class Opener {
  readonly child: ChildProcess;
  readonly #lines: string[] = [];
  #wake: (() => void) | undefined;
  #stderr = '';
  #exited = false;

  constructor(id: number) {
    this.child = spawn(
      process.execPath,
      ['--import', 'tsx', '--import', './support/die-with-parent.mjs', 'test/fixtures/bucket-opener.ts', String(id)],
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      this.#lines.push(line);
      this.#wake?.();
    });
    this.child.stderr!.on('data', (d) => (this.#stderr += String(d)));
    this.child.on('exit', () => {
      this.#exited = true;
      this.#wake?.();
    });
  }

  /** The next line it prints; rejects if it exits first. */
  async next(): Promise<string> {
    while (this.#lines.length === 0) {
      if (this.#exited) throw new Error(`opener exited; stderr: ${this.#stderr}`);
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
    return this.#lines.shift()!;
  }

  send(line: string): void {
    this.child.stdin!.write(`${line}\n`);
  }
}

const KINDS = {
  sqlite: (dir: string) => `sqlite:${join(dir, 'bucket.db')}`,
  folder: (dir: string) => join(dir, 'bucket'),
};

for (const [kind, bucketIn] of Object.entries(KINDS))
  describe(`the first open of a new ${kind} bucket by ${OPENERS} processes at once`, { timeout: 180_000 }, () => {
    const tempDir = tempDirs(`kw-first-open-${kind}-`);
    const openers: Opener[] = [];
    after(() => {
      for (const o of openers) o.child.kill('SIGKILL');
    });

    it(`${ROUNDS} rounds: every process opens the bucket, writes and reads back`, async () => {
      openers.push(...Array.from({ length: OPENERS }, (_, i) => new Opener(i)));
      for (const o of openers) assert.equal(await o.next(), 'ready');
      const failures: string[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const url = bucketIn(tempDir());
        // The barrier: every process is idle and waiting on stdin; the lines go out together.
        for (const o of openers) o.send(url);
        const answers = await Promise.all(openers.map((o) => o.next()));
        answers.forEach((a, i) => a === 'ok' || failures.push(`round ${round}, process ${i}: ${a}`));
      }
      assert.deepEqual(failures, [], `${failures.length} of ${OPENERS * ROUNDS} opens failed`);
    });
  });
