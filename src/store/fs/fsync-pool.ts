/**
 * The node's fsync pool: threads of its own that make the node's fsyncs (the folder bucket's
 * writes, new actors' files), so that they never wait in libuv's pool, which the app's own file
 * work may hold (a node embedded by `node app.js` has Node's default of 4 threads there), and
 * so that a batch's fsyncs run side by side: on a journaled disk fsyncs made at once share one
 * journal commit, where one thread making them in turn waits for a commit each
 * (docs/benchmarks.md, "The folder bucket's system calls").
 *
 *   FsyncQueue (any thread of the node: fs/fsync-queue.ts) ──▶ shared slots ──▶ pool thread 1..N:
 *        │ a thread wanted: `wanted` + 1                                         take a slot (CAS),
 *        ▼                                                                       fsync(2), done,
 *   FsyncPool (the node's main thread) ─▶ starts a thread while one is wanted,   time it (serviceUs)
 *                                          one at a time, up to `threadsMax`;
 *                                          a thread idle `idleExitMs` leaves
 *
 * Threads start lazily: none until an fsync finds none running (so none on tmpfs, where fsyncs
 * are skipped: fs/io.ts `fsyncDoesNothing`) and `firstThreadAfterMs` has passed, then one more
 * each time the last one runs while one is still wanted: the fsyncs queued beyond the idle
 * threads would wait longer than QUEUE_DELAY_MAX_MS at the pace the threads keep (fsync-queue.ts
 * `wantsThread`), up to `threadsMax`. Each is a worker thread running a few lines of plain
 * JavaScript (no loader: about 8 MB and 40 ms of CPU to start) blocked in Atomics.wait while
 * idle; none keeps the process alive (a caller waiting for its fsync does, fs/fsync-queue.ts).
 * `close()` (the node's stop) ends them after the fsync each is making.
 *
 * A thread that dies (anything but leaving idle or at close) fails the fsync it was making (its
 * caller's put fails, or is AmbiguousWrite: fs/commit.ts); the pool is then gone: later fsyncs go
 * to libuv's pool, and the ones still queued when the last thread has left are made there too.
 */
import { once } from 'node:events';
import { SHARE_ENV, Worker } from 'node:worker_threads';
import { at, Field, FsyncQueue, HEADER_WORDS, Outcome, SHARED_BYTES, SLOT_WORDS, SLOTS, State, threadWanted, Word } from './fsync-queue.js';

export interface FsyncPoolOptions {
  /** Threads at most (each about 8 MB while it runs). */
  threadsMax: number;
  /** A thread idle this long leaves (another starts when fsyncs want one again). */
  idleExitMs: number;
  /**
   * No thread starts before this long after the pool is made: fsyncs until then are made on
   * libuv's pool. A node's start (start-node.ts) makes a few fsyncs, and a thread's start would
   * take ~40 ms of CPU from the workers' boot and the first calls.
   */
  firstThreadAfterMs: number;
  /**
   * TEST-ONLY: before each fsync a thread counts itself in word 1 of this buffer, then waits while
   * word 0 is 1, and dies (exit code 1) if it is 2: fsyncs held at once, and a thread that dies
   * making one.
   */
  gate?: SharedArrayBuffer;
}

export const FSYNC_POOL_DEFAULTS: Readonly<FsyncPoolOptions> = Object.freeze({ threadsMax: 16, idleExitMs: 30_000, firstThreadAfterMs: 0 });

/** A pool thread's code: CommonJS, nothing to load (fs/fsync-queue.ts is the layout it shares). */
const SOURCE = `
const { workerData } = require('node:worker_threads');
const { fsyncSync } = require('node:fs');
const w = new Int32Array(workerData.shared);
const running = ${State.runningBase} + workerData.index;
let next = 0;
function take() {
  if (Atomics.load(w, ${Word.queued}) === 0) return -1;
  for (let k = 0; k < ${SLOTS}; k++) {
    const i = (next + k) % ${SLOTS};
    const state = ${HEADER_WORDS} + i * ${SLOT_WORDS};
    if (Atomics.load(w, state) === ${State.queued} && Atomics.compareExchange(w, state, ${State.queued}, running) === ${State.queued}) {
      Atomics.sub(w, ${Word.queued}, 1);
      next = i + 1;
      return i;
    }
  }
  return -1;
}
const gate = workerData.gate && new Int32Array(workerData.gate);
function run(i) {
  const state = ${HEADER_WORDS} + i * ${SLOT_WORDS};
  const started = performance.now();
  if (gate) {
    Atomics.add(gate, 1, 1);
    while (Atomics.load(gate, 0) === 1) Atomics.wait(gate, 0, 1);
    if (Atomics.load(gate, 0) === 2) process.exit(1);
  }
  let outcome = 0;
  try {
    fsyncSync(Atomics.load(w, state + ${Field.fd}));
  } catch (e) {
    outcome = typeof e.errno === 'number' && e.errno < 0 ? e.errno : -5;
  }
  const us = Math.round((performance.now() - started) * 1000);
  const average = Atomics.load(w, ${Word.serviceUs});
  Atomics.store(w, ${Word.serviceUs}, average === 0 ? us : Math.round(average + (us - average) / 8));
  Atomics.store(w, state + ${Field.outcome}, outcome);
  Atomics.store(w, state, ${State.done});
  Atomics.notify(w, state);
}
let live = true;
Atomics.add(w, ${Word.live}, 1);
while (Atomics.load(w, ${Word.stop}) === 0) {
  const seq = Atomics.load(w, ${Word.seq});
  const i = take();
  if (i >= 0) {
    run(i);
    continue;
  }
  if (Atomics.load(w, ${Word.gone}) !== 0) break;
  Atomics.add(w, ${Word.idle}, 1);
  const woke = Atomics.wait(w, ${Word.seq}, seq, workerData.idleExitMs);
  Atomics.sub(w, ${Word.idle}, 1);
  if (woke !== 'timed-out') continue;
  // Idle: leave, but first take any fsync queued by a caller that saw this thread live.
  Atomics.sub(w, ${Word.live}, 1);
  const late = take();
  if (late < 0) {
    live = false;
    break;
  }
  Atomics.add(w, ${Word.live}, 1);
  run(late);
}
if (live) Atomics.sub(w, ${Word.live}, 1);
`;

export class FsyncPool {
  /** The queue's shared buffer: a worker thread makes its own FsyncQueue of it. */
  readonly shared = new SharedArrayBuffer(SHARED_BYTES);
  /** This thread's queue. */
  readonly queue: FsyncQueue;
  readonly #words = new Int32Array(this.shared);
  readonly #o: FsyncPoolOptions;
  /** Running threads by index (an index is reused once its thread has left). */
  readonly #threads = new Map<number, Worker>();
  readonly #exits = new Set<Promise<unknown>>();
  #closed = false;
  #closing: Promise<void> | undefined;
  /** Whether `#watch` runs (it stops while `threadsMax` threads run). */
  #watching = false;
  readonly #createdAt = performance.now();

  constructor(options: Partial<FsyncPoolOptions> = {}) {
    this.#o = { ...FSYNC_POOL_DEFAULTS, ...options };
    if (!Number.isSafeInteger(this.#o.threadsMax) || this.#o.threadsMax < 1) throw new Error('threadsMax must be a positive integer');
    this.queue = new FsyncQueue(this.shared);
    void this.#watch();
  }

  /** Threads running or starting. */
  get threads(): number {
    return this.#threads.size;
  }

  /** Threads running (started, and not left). */
  get running(): number {
    return Atomics.load(this.#words, Word.live);
  }

  /** Whether the pool has gone (closed, or a thread died): every fsync goes to libuv's pool. */
  get gone(): boolean {
    return Atomics.load(this.#words, Word.gone) !== 0;
  }

  /** Ends every thread after the fsync it is making; fsyncs queued meanwhile are made on libuv's pool. */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#closed = true;
    Atomics.store(this.#words, Word.gone, 1);
    Atomics.store(this.#words, Word.stop, 1);
    Atomics.notify(this.#words, Word.seq);
    Atomics.notify(this.#words, Word.wanted);
    for (const worker of this.#threads.values()) worker.ref(); // their exits are awaited
    await Promise.all(this.#exits);
    this.#sweep(() => true);
  }

  /**
   * Starts threads while fsyncs wait for one, one at a time: whenever fsyncs want one (a
   * waitAsync: this thread's event loop goes on) and, once the last started runs, again while
   * one is still wanted. A short burst (a worker's spare files) then gets the few threads that
   * clear it, a folder bucket's drain on a journaled disk all of `threadsMax` within a second.
   */
  async #watch(): Promise<void> {
    this.#watching = true;
    try {
      const after = this.#createdAt + this.#o.firstThreadAfterMs - performance.now();
      if (after > 0) await new Promise((resolve) => setTimeout(resolve, after).unref());
      while (!this.#closed && !this.gone && this.#threads.size < this.#o.threadsMax) {
        if (!this.#backlog()) {
          const wait = Atomics.waitAsync(this.#words, Word.wanted, 0);
          if (wait.async) await wait.value;
          if (this.#closed || this.gone) return;
          Atomics.store(this.#words, Word.wanted, 0); // the fsyncs that want one after this wake the next round
          if (this.#threads.size > 0 && !this.#backlog()) continue; // taken meanwhile
        }
        await this.#start();
      }
    } finally {
      this.#watching = false;
    }
  }

  /** Fsyncs wait for a thread longer than the pool lets them (fsync-queue.ts `wantsThread`). */
  #backlog(): boolean {
    return threadWanted(this.#words);
  }

  /** Starts a thread; resolves once it runs (or has left). */
  #start(): Promise<unknown> {
    let index = 0;
    while (this.#threads.has(index)) index++;
    const worker = new Worker(SOURCE, {
      eval: true,
      workerData: { shared: this.shared, index, idleExitMs: this.#o.idleExitMs, gate: this.#o.gate },
      env: SHARE_ENV,
      execArgv: [],
      stdout: false,
      stderr: false,
      trackUnmanagedFds: false,
    });
    worker.unref();
    this.#threads.set(index, worker);
    worker.on('error', () => undefined); // its exit (code 1) says it died
    const exit = once(worker, 'exit').then(([code]) => this.#left(index, code as number));
    this.#exits.add(exit);
    void exit.finally(() => this.#exits.delete(exit));
    return Promise.race([once(worker, 'online').catch(() => undefined), exit]); // an error before: its exit follows
  }

  /** A thread has left: the fsync it was making fails, unless it left between two (idle, or at close). */
  #left(index: number, code: number): void {
    this.#threads.delete(index);
    this.#sweep((state) => state === State.runningBase + index);
    if (code !== 0 && !this.#closed) {
      Atomics.store(this.#words, Word.gone, 1);
      Atomics.notify(this.#words, Word.seq); // the others leave once nothing is queued
      Atomics.notify(this.#words, Word.wanted);
    }
    if (this.#threads.size === 0 && this.gone) this.#sweep(() => true);
    if (!this.#watching) void this.#watch(); // below threadsMax again
  }

  /**
   * Answers the slots `which` picks among those no thread will finish: RUNNING ones (their
   * thread has left) fail, QUEUED ones go back to their callers for libuv's pool.
   */
  #sweep(which: (state: number) => boolean): void {
    const w = this.#words;
    for (let i = 0; i < SLOTS; i++) {
      const state = at(i, Field.state);
      const s = Atomics.load(w, state);
      if (!which(s)) continue;
      const queued = s === State.queued;
      if (!queued && s < State.runningBase) continue;
      if (Atomics.compareExchange(w, state, s, State.claimed) !== s) continue; // taken or withdrawn meanwhile
      if (queued) Atomics.sub(w, Word.queued, 1);
      Atomics.store(w, at(i, Field.outcome), queued ? Outcome.notRun : Outcome.died);
      Atomics.store(w, state, State.done);
      Atomics.notify(w, state);
    }
  }
}
