/**
 * fsync(2) on threads of the caller's own: a few plain threads, started on first use, that each
 * run one `fsyncSync` at a time for the thread that owns them, so a worker's fsyncs never wait in
 * libuv's pool behind another thread's, nor make the main thread's wait (lease renewals).
 *
 *   fsync(fd) ─▶ the helper with the fewest fsyncs outstanding (one more started while every
 *                started helper is busy, up to FSYNC_THREADS_MAX) ─▶ fsyncSync(fd) ─▶ settled
 *
 * A file descriptor is the process's, so a helper can fsync one the caller opened; the caller keeps
 * it open until the promise settles. A failed fsync rejects with the system error's `code` (EIO,
 * ENOSPC…), as `fs.fsync` does. Helpers hold the process open only while an fsync is outstanding.
 */
import { Worker } from 'node:worker_threads';

/** Helpers per owning thread: fsyncs of one thread run this many at once at most. */
export const FSYNC_THREADS_MAX = 4;

const HELPER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { fsyncSync } = require('node:fs');
parentPort.on('message', ({ id, fd }) => {
  try {
    fsyncSync(fd);
    parentPort.postMessage({ id });
  } catch (e) {
    parentPort.postMessage({ id, code: e.code, message: e.message });
  }
});
`;

interface Reply {
  id: number;
  code?: string;
  message?: string;
}

interface Waiter {
  resolve: () => void;
  reject: (e: Error) => void;
}

class Helper {
  readonly waiting = new Map<number, Waiter>();
  readonly #worker: Worker;

  constructor(onExit: (helper: Helper, e: Error) => void) {
    this.#worker = new Worker(HELPER_SOURCE, { eval: true, resourceLimits: { maxOldGenerationSizeMb: 8, maxYoungGenerationSizeMb: 1 } });
    this.#worker.unref();
    this.#worker.on('message', (reply: Reply) => this.#settle(reply));
    this.#worker.on('error', (e) => onExit(this, e));
    this.#worker.on('exit', (code) => onExit(this, new Error(`fsync thread exited (${code})`)));
  }

  fsync(id: number, fd: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (this.waiting.size === 0) this.#worker.ref(); // an fsync outstanding keeps the process up
      this.waiting.set(id, { resolve, reject });
      this.#worker.postMessage({ id, fd });
    });
  }

  /** Every outstanding fsync fails with `e` (the helper is gone). */
  failAll(e: Error): void {
    for (const w of this.waiting.values()) w.reject(e);
    this.waiting.clear();
  }

  #settle({ id, code, message }: Reply): void {
    const w = this.waiting.get(id);
    if (!w) return;
    this.waiting.delete(id);
    if (this.waiting.size === 0) this.#worker.unref();
    if (code === undefined && message === undefined) w.resolve();
    else w.reject(Object.assign(new Error(message ?? 'fsync failed'), { code }));
  }
}

export class FsyncThreads {
  readonly #helpers: Helper[] = [];
  #nextId = 0;

  constructor(private readonly threadsMax: number = FSYNC_THREADS_MAX) {}

  fsync(fd: number): Promise<void> {
    return this.#pick().fsync(this.#nextId++, fd);
  }

  /** Helpers started so far. */
  get size(): number {
    return this.#helpers.length;
  }

  #pick(): Helper {
    let best: Helper | undefined;
    for (const h of this.#helpers) if (!best || h.waiting.size < best.waiting.size) best = h;
    if (best && (best.waiting.size === 0 || this.#helpers.length >= this.threadsMax)) return best;
    const helper = new Helper((gone, e) => this.#gone(gone, e));
    this.#helpers.push(helper);
    return helper;
  }

  #gone(helper: Helper, e: Error): void {
    const i = this.#helpers.indexOf(helper);
    if (i >= 0) this.#helpers.splice(i, 1);
    helper.failAll(e);
  }
}
