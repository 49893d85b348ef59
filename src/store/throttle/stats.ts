/**
 * Throttling counts and window sizes in shared memory, so the main thread and every worker
 * thread write into one table that /metrics reads without a message round trip (as
 * store/request-counts.ts does for requests).
 *
 *   throttled[class]        throttle answers (each one a request sent again), Atomics.add only
 *   exhausted[class]        requests that stayed throttled past storeThrottleAttemptsMax
 *   window[row × C + class] the window's size now, one row per thread (main: 0, worker n: n)
 *
 * One table per thread kind (main, workers); the window gauge is the sum over the kind's rows.
 */
import { RULES } from '../../core/config.js';
import { REQUEST_CLASSES, type RequestClass } from './classes.js';

const C = REQUEST_CLASSES.length;
/** Rows of the window table: one per worker thread at most (workerThreads' own limit), plus one. */
const ROWS = (RULES.workerThreads.max ?? 256) + 1;

export interface ThrottleSink {
  throttled(cls: RequestClass | 'lease'): void;
  exhausted(cls: RequestClass | 'lease'): void;
  window(cls: RequestClass, size: number): void;
}

export class ThrottleStats {
  readonly buffer: SharedArrayBuffer;
  private readonly counts: BigInt64Array;
  private readonly windows: Int32Array;

  constructor(buffer?: SharedArrayBuffer) {
    this.buffer = buffer ?? new SharedArrayBuffer(8 * 2 * (C + 1) + 4 * ROWS * C);
    this.counts = new BigInt64Array(this.buffer, 0, 2 * (C + 1));
    this.windows = new Int32Array(this.buffer, 8 * 2 * (C + 1), ROWS * C);
  }

  /** What one thread writes: its row of windows (0 for the main thread, n for worker n). */
  sink(row: number): ThrottleSink {
    if (!Number.isSafeInteger(row) || row < 0 || row >= ROWS) throw new RangeError(`throttle stats row must be 0..${ROWS - 1}, got ${row}`);
    const at = (cls: RequestClass | 'lease') => (cls === 'lease' ? C : REQUEST_CLASSES.indexOf(cls));
    return {
      throttled: (cls) => void Atomics.add(this.counts, at(cls), 1n),
      exhausted: (cls) => void Atomics.add(this.counts, C + 1 + at(cls), 1n),
      window: (cls, size) => void Atomics.store(this.windows, row * C + at(cls), size),
    };
  }

  /** Per class (and 'lease'): throttle answers, requests given up, and the summed window (0 for 'lease'). */
  *entries(): Generator<{ cls: RequestClass | 'lease'; throttled: number; exhausted: number; window: number }> {
    for (const [i, cls] of [...REQUEST_CLASSES, 'lease' as const].entries()) {
      let window = 0;
      if (i < C) for (let row = 0; row < ROWS; row++) window += Atomics.load(this.windows, row * C + i);
      yield {
        cls,
        throttled: Number(Atomics.load(this.counts, i)),
        exhausted: Number(Atomics.load(this.counts, C + 1 + i)),
        window,
      };
    }
  }
}

/** A sink that records nothing (a store opened outside a node: the CLI, tests, benchmarks). */
export const NO_THROTTLE_SINK: ThrottleSink = { throttled() {}, exhausted() {}, window() {} };
