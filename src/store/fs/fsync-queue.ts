/**
 * The queue of the node's fsync pool (fs/fsync-pool.ts), in one SharedArrayBuffer that every
 * thread of the node holds (the main thread, and each worker through its workerData), and the
 * client side of it: `FsyncQueue`, the `FsDurability` a thread's folder bucket and new files
 * fsync through.
 *
 *   fsyncFile(fd) ─▶ claim a free slot (CAS), write the fd, mark it queued, wake one pool thread
 *                    ─▶ a pool thread takes it (CAS), fsync(2), writes the outcome, marks it done
 *                       and wakes the caller (Atomics.waitAsync: the caller's event loop goes on)
 *                 └▶ no pool thread running, the pool gone, or every slot taken: libuv's pool, as
 *                    a node without this pool would (the pool then starts a thread for the next ones)
 *
 * File descriptors are the process's, so a pool thread fsyncs an fd that any thread opened; a
 * folder is opened by the caller and closed once its fsync is done. Many threads fsyncing at once
 * share a journal commit on a journaled disk (docs/benchmarks.md): the pool's threads each take
 * the next queued slot, so a batch's fsyncs run side by side.
 *
 * Slot states (one int32 each): FREE → CLAIMED (the caller writes it) → QUEUED → RUNNING + thread
 * → DONE (the caller reads the outcome, then FREE). A caller may take back its own QUEUED slot
 * (CAS, when it finds no thread left to run it), and so may the pool when every thread has gone:
 * the slot is then DONE with NOT_RUN, and the fsync is made on libuv's pool. A slot RUNNING on a
 * thread that dies is DONE with DIED: that fsync fails (a put fails, or is AmbiguousWrite:
 * fs/commit.ts).
 *
 * A caller's thread that ends while its fsync is queued or running (a worker restarted) leaves
 * its slot taken for good: at worst the slots run out, and fsyncs then go to libuv's pool.
 *
 * Errors: the fsync's own (an Error with `code`, `errno` and `syscall` as node:fs makes them), or
 * a plain Error when the pool thread running it died.
 */
import { closeSync, openSync } from 'node:fs';
import { getSystemErrorMap } from 'node:util';
import { fsyncFd, type FsDurability } from './io.js';

/** Header words of the shared buffer (int32 indices). */
export const Word = Object.freeze({
  /** Bumped by every queued fsync; idle pool threads wait on it. */
  seq: 0,
  /** Pool threads waiting for work. */
  idle: 1,
  /** Pool threads running (each counts itself in at its start and out as it leaves). */
  live: 2,
  /** Set by close: every pool thread leaves after the fsync it is making. */
  stop: 3,
  /** Set by close, or when a pool thread died: nothing more is queued (libuv's pool takes them). */
  gone: 4,
  /** Fsyncs queued while more were queued than threads idle, since the pool last looked: it starts threads for them. */
  wanted: 5,
  /** Slots QUEUED and not taken yet. */
  queued: 6,
  /**
   * A running average of one fsync's time on a pool thread (from taking it to its outcome), in
   * µs; 0 before the first. Threads update it without a lock: a lost update only drops a sample.
   */
  serviceUs: 7,
});

export const HEADER_WORDS = 8;
/** Slots: fsyncs queued or running at once, at most; more go to libuv's pool. */
export const SLOTS = 256;
export const SLOT_WORDS = 4;
/** Within a slot: its state, the fd, the outcome (0, or -errno, or one of Outcome). */
export const Field = Object.freeze({ state: 0, fd: 1, outcome: 2 });

export const State = Object.freeze({ free: 0, claimed: 1, queued: 2, done: 3, runningBase: 16 });
/** Outcomes besides 0 (done) and a negative errno. */
export const Outcome = Object.freeze({ died: 1, notRun: 2 });

export const SHARED_BYTES = Int32Array.BYTES_PER_ELEMENT * (HEADER_WORDS + SLOTS * SLOT_WORDS);

/** The int32 index of slot `i`'s field `f`. */
export const at = (i: number, f: number): number => HEADER_WORDS + i * SLOT_WORDS + f;

/**
 * Fsyncs queued beyond the threads waiting for one would wait, at the pace the threads have kept
 * lately, longer than this: the pool starts one more thread. A thread costs ~40 ms of CPU to start
 * (and ~8 MB), so a queue the running threads clear sooner is left to them: a burst of a few
 * fsyncs, or a queue that stands only because the CPU is busy (a new actor's fsync is made in
 * under a millisecond but its thread waits for a core), gains less than the thread's start costs.
 * On a journaled disk under a folder bucket's batches, fsyncs take milliseconds each and a batch
 * queues dozens: the pool grows, and they share journal commits (docs/benchmarks.md).
 */
export const QUEUE_DELAY_MAX_MS = 10;

/** What an fsync is taken to cost before any has been timed: a journal commit. */
const SERVICE_UNKNOWN_US = 5_000;

/**
 * Whether the pool should start a thread (a pure rule, read from the shared words): no thread
 * runs yet and fsyncs are queued, or the fsyncs queued beyond the idle threads would wait longer
 * than QUEUE_DELAY_MAX_MS for the running ones, each taking the recent average time.
 */
export function wantsThread(s: { queued: number; idle: number; live: number; serviceUs: number }): boolean {
  const waiting = s.queued - s.idle;
  if (waiting <= 0) return false;
  if (s.live <= 0) return true;
  const serviceMs = (s.serviceUs > 0 ? s.serviceUs : SERVICE_UNKNOWN_US) / 1000;
  return (waiting * serviceMs) / s.live > QUEUE_DELAY_MAX_MS;
}

/** wantsThread of the queue's words now. */
export function threadWanted(w: Int32Array): boolean {
  return wantsThread({
    queued: Atomics.load(w, Word.queued),
    idle: Atomics.load(w, Word.idle),
    live: Atomics.load(w, Word.live),
    serviceUs: Atomics.load(w, Word.serviceUs),
  });
}

/** A never-firing timer, referenced only while this thread waits for an fsync (as libuv's request would). */
function keepAlive(): NodeJS.Timeout {
  const timer = setInterval(() => undefined, 2 ** 31 - 1);
  timer.unref();
  return timer;
}

/** The error node:fs would have made for fsync(2) failing with `errno` (negative). */
function fsyncError(errno: number): Error {
  const [code, text] = getSystemErrorMap().get(errno) ?? ['EIO', 'i/o error'];
  return Object.assign(new Error(`${code}: ${text}, fsync`), { errno, code, syscall: 'fsync' });
}

export class FsyncQueue implements FsDurability {
  readonly #words: Int32Array;
  /** Where the next claim starts looking: slots are taken round the ring. */
  #hint = 0;
  #waiting = 0;
  #alive: NodeJS.Timeout | undefined;

  constructor(shared: SharedArrayBuffer) {
    if (shared.byteLength !== SHARED_BYTES) throw new Error(`an fsync queue is ${SHARED_BYTES} bytes, got ${shared.byteLength}`);
    this.#words = new Int32Array(shared);
  }

  // Bound: the store passes them on as functions (fs/sync.ts).
  readonly fsyncFile = (fd: number): Promise<void> => this.#fsync(fd);

  readonly fsyncFolder = async (dir: string): Promise<void> => {
    const fd = openSync(dir, 'r');
    try {
      await this.#fsync(fd);
    } finally {
      closeSync(fd);
    }
  };

  async #fsync(fd: number): Promise<void> {
    const w = this.#words;
    if (Atomics.load(w, Word.gone) !== 0) return fsyncFd(fd);
    if (Atomics.load(w, Word.live) === 0) {
      this.#want();
      return fsyncFd(fd);
    }
    const slot = this.#claim();
    if (slot < 0) return fsyncFd(fd);
    Atomics.store(w, at(slot, Field.fd), fd);
    Atomics.store(w, at(slot, Field.outcome), 0);
    Atomics.store(w, at(slot, Field.state), State.queued);
    Atomics.add(w, Word.queued, 1);
    Atomics.add(w, Word.seq, 1);
    Atomics.notify(w, Word.seq, 1);
    if (threadWanted(w)) this.#want();
    // No thread left to take it (the last one left idle, or the pool went meanwhile): take it back.
    if ((Atomics.load(w, Word.live) === 0 || Atomics.load(w, Word.gone) !== 0) && this.#withdraw(slot)) {
      Atomics.store(w, at(slot, Field.state), State.free);
      return fsyncFd(fd);
    }
    const outcome = await this.#done(slot);
    if (outcome === Outcome.notRun) return fsyncFd(fd);
    if (outcome === Outcome.died) throw new Error(`fsync of fd ${fd}: the fsync pool's thread making it died`);
    if (outcome < 0) throw fsyncError(outcome);
  }

  /** A free slot, now CLAIMED; -1 when every slot is taken. */
  #claim(): number {
    const w = this.#words;
    for (let k = 0; k < SLOTS; k++) {
      const i = (this.#hint + k) % SLOTS;
      if (Atomics.compareExchange(w, at(i, Field.state), State.free, State.claimed) === State.free) {
        this.#hint = i + 1;
        return i;
      }
    }
    return -1;
  }

  #withdraw(slot: number): boolean {
    const w = this.#words;
    if (Atomics.compareExchange(w, at(slot, Field.state), State.queued, State.claimed) !== State.queued) return false;
    Atomics.sub(w, Word.queued, 1);
    return true;
  }

  /** Waits, without blocking this thread, until the slot is DONE; its outcome, the slot freed. */
  async #done(slot: number): Promise<number> {
    const w = this.#words;
    const state = at(slot, Field.state);
    if (this.#waiting++ === 0) (this.#alive ??= keepAlive()).ref();
    try {
      for (let s = Atomics.load(w, state); s !== State.done; s = Atomics.load(w, state)) {
        const wait = Atomics.waitAsync(w, state, s);
        if (wait.async) await wait.value;
      }
    } finally {
      if (--this.#waiting === 0) this.#alive!.unref();
    }
    const outcome = Atomics.load(w, at(slot, Field.outcome));
    Atomics.store(w, state, State.free);
    return outcome;
  }

  #want(): void {
    Atomics.add(this.#words, Word.wanted, 1);
    Atomics.notify(this.#words, Word.wanted);
  }
}
