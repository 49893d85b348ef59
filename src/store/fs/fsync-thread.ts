/**
 * A thread of one store's own for its fsyncs: the store's writes then never wait behind other
 * fsyncs (the node's fsync pool, fs/fsync-pool.ts, busy with the folder bucket's writes and new
 * actor files; libuv's pool, with an app's own file work), and the calling thread's event loop
 * goes on while the disk works. For a store of a few small writes that must not be held up: the
 * node's lease. (Not for the node's other writes: one thread makes a batch's fsyncs one after
 * another, and on a journaled disk each then waits for a journal commit of its own, where the
 * pool's threads share one; docs/benchmarks.md.)
 *
 *   fsyncFile(fd) / fsyncFolder(dir) ─▶ thread running?  postMessage ─▶ fsync(2), synchronous,
 *                                       │                on the thread ─▶ its outcome, by id
 *                                       └▶ not yet: on the calling thread (INLINE_DURABILITY),
 *                                          and the thread is started for the next ones
 *
 * The first fsync starts the thread (a worker thread running a few lines of plain JavaScript, no
 * loader: about 10 MB and a tenth of a second to start) and is made on the calling thread meanwhile,
 * so a node's start never waits for it. The thread keeps the process alive only while an fsync
 * is under way. If it dies, the fsyncs it had are failed with its error (a put then fails, or is
 * AmbiguousWrite: fs/commit.ts) and later ones are made on the calling thread.
 */
import { Worker } from 'node:worker_threads';
import { INLINE_DURABILITY, type FsDurability } from './io.js';

/** The thread's code: CommonJS, nothing to load. A message names an open file (`fd`) or a path. */
const SOURCE = `
const { parentPort } = require('node:worker_threads');
const fs = require('node:fs');
parentPort.on('message', ({ id, fd, path }) => {
  try {
    if (path === undefined) fs.fsyncSync(fd);
    else {
      const opened = fs.openSync(path, 'r');
      try { fs.fsyncSync(opened); } finally { fs.closeSync(opened); }
    }
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

interface Waiting {
  resolve: () => void;
  reject: (e: unknown) => void;
}

export class FsyncThread implements FsDurability {
  #worker: Worker | undefined;
  #running = false;
  /** Died or closed: every fsync from now on is made on the calling thread. */
  #gone = false;
  #nextId = 0;
  readonly #waiting = new Map<number, Waiting>();

  // Bound: the store passes them on as functions (fs/sync.ts).
  readonly fsyncFile = (fd: number): Promise<void> =>
    this.#worker && this.#running ? this.#send({ fd }) : this.#inline(() => INLINE_DURABILITY.fsyncFile(fd));

  readonly fsyncFolder = (dir: string): Promise<void> =>
    this.#worker && this.#running ? this.#send({ path: dir }) : this.#inline(() => INLINE_DURABILITY.fsyncFolder(dir));

  /** Whether fsyncs go to the thread (it has started and not died). */
  get running(): boolean {
    return this.#running;
  }

  /** Stops the thread (fsyncs under way on it are failed); later fsyncs are made on the calling thread. */
  async close(): Promise<void> {
    this.#gone = true;
    const worker = this.#worker;
    this.#worker = undefined;
    this.#running = false;
    await worker?.terminate();
  }

  #inline(fsync: () => Promise<void>): Promise<void> {
    this.#start();
    return fsync();
  }

  #start(): void {
    if (this.#worker || this.#gone) return;
    const worker = new Worker(SOURCE, { eval: true, execArgv: [], stdout: false, stderr: false });
    worker.unref();
    this.#worker = worker;
    worker.once('online', () => (this.#running = this.#worker === worker));
    worker.on('message', (reply: Reply) => this.#answer(worker, reply));
    worker.once('error', (e) => this.#died(worker, e));
    worker.once('exit', (code) => this.#died(worker, new Error(`the fsync thread exited (code ${code})`)));
  }

  #send(message: { fd: number } | { path: string }): Promise<void> {
    const worker = this.#worker!;
    const id = this.#nextId++;
    return new Promise<void>((resolve, reject) => {
      this.#waiting.set(id, { resolve, reject });
      if (this.#waiting.size === 1) worker.ref(); // an fsync under way keeps the process alive, as libuv's would
      worker.postMessage({ id, ...message });
    });
  }

  #answer(worker: Worker, reply: Reply): void {
    const waiting = this.#waiting.get(reply.id);
    if (!waiting) return;
    this.#waiting.delete(reply.id);
    if (this.#waiting.size === 0) worker.unref();
    if (reply.code === undefined && reply.message === undefined) waiting.resolve();
    else waiting.reject(Object.assign(new Error(reply.message ?? 'fsync failed'), { code: reply.code }));
  }

  #died(worker: Worker, e: unknown): void {
    if (this.#worker === worker) {
      this.#worker = undefined;
      this.#running = false;
      this.#gone = true;
    }
    for (const w of this.#waiting.values()) w.reject(e);
    this.#waiting.clear();
  }
}
