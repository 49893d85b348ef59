/**
 * The fleet model's virtual time: a `Clock` (src/core/clock.ts) whose timers sit in a binary heap,
 * so a thousand nodes with thousands of timers each cost O(log n) per timer (the simulator's
 * SimClock scans its list, which suits a handful of nodes).
 *
 *   run(untilMs)  fire timers in (time, order set) up to untilMs; after each instant, let every
 *                 promise reaction run (a macrotask turn) before time moves on, so async code a
 *                 timer woke sets its next timer at the right virtual time
 */
import type { Clock, TimerHandle } from '../../../src/core/clock.js';

interface Timer {
  at: number;
  seq: number;
  fn: (() => void) | undefined;
}

const turn = () => new Promise<void>((r) => setImmediate(r));

export class FleetClock implements Clock {
  private nowMs: number;
  private seq = 0;
  private readonly heap: Timer[] = [];
  /** Timers fired so far (the model's work, for the progress line). */
  fired = 0;

  constructor(startMs: number) {
    this.nowMs = startMs;
  }

  now(): number {
    return this.nowMs;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const onAbort = () => (t.cancel(), reject(signal?.reason));
      const t = this.setTimer(ms, () => (signal?.removeEventListener('abort', onAbort), resolve()));
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  setTimer(ms: number, fn: () => void): TimerHandle {
    const t: Timer = { at: this.nowMs + Math.max(0, Math.ceil(ms)), seq: this.seq++, fn }; // whole ms, as index keys need
    this.push(t);
    return { cancel: () => void (t.fn = undefined) };
  }

  /** Fires timers up to `untilMs` (or until `stop()` says so, checked after each instant); returns the time reached. */
  async run(untilMs: number, stop: () => boolean = () => false): Promise<number> {
    await turn();
    while (this.heap.length > 0 && this.heap[0]!.at <= untilMs) {
      const at = this.heap[0]!.at;
      this.nowMs = Math.max(this.nowMs, at);
      while (this.heap.length > 0 && this.heap[0]!.at === at) {
        const t = this.pop();
        if (!t.fn) continue;
        this.fired++;
        t.fn();
      }
      await turn();
      if (stop()) return this.nowMs;
    }
    this.nowMs = Math.max(this.nowMs, Math.floor(untilMs));
    return this.nowMs;
  }

  private less(a: Timer, b: Timer): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }

  private push(t: Timer): void {
    const h = this.heap;
    h.push(t);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(h[i]!, h[p]!)) break;
      [h[p], h[i]] = [h[i]!, h[p]!];
      i = p;
    }
  }

  private pop(): Timer {
    const h = this.heap;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length === 0) return top;
    h[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && this.less(h[l]!, h[m]!)) m = l;
      if (r < h.length && this.less(h[r]!, h[m]!)) m = r;
      if (m === i) break;
      [h[m], h[i]] = [h[i]!, h[m]!];
      i = m;
    }
    return top;
  }
}
