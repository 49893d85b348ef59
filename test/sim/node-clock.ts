/**
 * One simulated node's view of the shared virtual clock.
 *
 * Fault model (what a node's process can suffer, as seen by its timers):
 *   - crash   `kill()`: every timer of the node is cancelled and later ones never fire, so its
 *             sleeps never resolve: the process is gone (its requests already in flight may
 *             still land at the bucket; see network.ts);
 *   - pause   `pause()` … `resume()`: timers that come due meanwhile fire only at resume, in
 *             order (a GC pause or a stopped VM); time itself goes on for everyone.
 * Otherwise it is the SimClock: timers due at the same instant fire in the order they were set.
 */
import type { Clock, SimClock, TimerHandle } from '../../src/core/clock.js';

export class NodeClock implements Clock {
  private dead = false;
  private paused = false;
  private readonly live = new Set<TimerHandle>();
  private held: (() => void)[] = [];

  constructor(private readonly base: SimClock) {}

  now(): number {
    return this.base.now();
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const onAbort = () => {
        timer.cancel();
        reject(signal?.reason);
      };
      const timer = this.setTimer(ms, () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  setTimer(ms: number, fn: () => void): TimerHandle {
    if (this.dead) return { cancel: () => undefined };
    let cancelled = false;
    const inner = this.base.setTimer(ms, () => {
      this.live.delete(handle);
      if (cancelled || this.dead) return;
      if (this.paused) this.held.push(fn);
      else fn();
    });
    const handle: TimerHandle = {
      cancel: () => {
        cancelled = true;
        this.live.delete(handle);
        inner.cancel();
      },
    };
    this.live.add(handle);
    return handle;
  }

  get isDead(): boolean {
    return this.dead;
  }

  get isPaused(): boolean {
    return this.paused;
  }

  kill(): void {
    this.dead = true;
    for (const h of [...this.live]) h.cancel();
    this.held = [];
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    const due = this.held;
    this.held = [];
    for (const fn of due) if (!this.dead) fn();
  }
}
