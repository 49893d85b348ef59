/**
 * The `Clock` seam: every source of time and every timer that protocol code uses
 * comes from here, so the same code runs on the wall clock in production and on virtual time in
 * the deterministic simulator.
 *
 *   SystemClock  Date.now + setTimeout            (production, tests of real processes)
 *   OffsetClock  SystemClock's time moved by a fixed offset (TEST-ONLY: the chaos run's clock skew)
 *   SimClock     virtual ms, timers fire only when advance()/runUntil() moves time
 */

export interface TimerHandle {
  cancel(): void;
}

export interface Clock {
  /** Milliseconds since the Unix epoch (virtual under SimClock). */
  now(): number;
  /** Resolves after `ms`; rejects with the signal's reason if aborted first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Calls `fn` once after `ms`; cancel() before then stops it. */
  setTimer(ms: number, fn: () => void): TimerHandle;
}

function sleepWith(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      timer.cancel();
      reject(signal?.reason);
    };
    const timer = clock.setTimer(ms, () => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    });
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export class SystemClock implements Clock {
  now(): number {
    return Date.now();
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepWith(this, ms, signal);
  }
  setTimer(ms: number, fn: () => void): TimerHandle {
    const t = setTimeout(fn, Math.max(0, ms));
    return { cancel: () => clearTimeout(t) };
  }
}

/**
 * TEST-ONLY: the wall clock read `offsetMs` ahead (negative: behind), timers as SystemClock's. The
 * chaos run (test/chaos, UnsafeTestSeams `clockOffsetMs`) starts nodes on it to skew their clocks.
 */
export class OffsetClock extends SystemClock {
  constructor(readonly offsetMs: number) {
    super();
  }
  override now(): number {
    return Date.now() + this.offsetMs;
  }
}

interface SimTimer {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

/**
 * Virtual time. Timers due at the same instant fire in the order they were set. Time moves only
 * through `advance`/`runUntil`, which also let pending promise callbacks run between timers so
 * that async code reacting to a timer can set the next one before time moves on.
 */
export class SimClock implements Clock {
  private nowMs: number;
  private seq = 0;
  private readonly timers: SimTimer[] = [];

  constructor(startMs = 1_700_000_000_000) {
    this.nowMs = startMs;
  }

  now(): number {
    return this.nowMs;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepWith(this, ms, signal);
  }

  setTimer(ms: number, fn: () => void): TimerHandle {
    const timer: SimTimer = { at: this.nowMs + Math.max(0, ms), seq: this.seq++, fn, cancelled: false };
    this.timers.push(timer);
    return { cancel: () => void (timer.cancelled = true) };
  }

  /** Number of timers still pending. */
  pending(): number {
    return this.timers.filter((t) => !t.cancelled).length;
  }

  /** Moves time forward by `ms`, firing every timer due on the way, in order. */
  async advance(ms: number): Promise<void> {
    await this.runUntil(this.nowMs + ms);
  }

  /** Fires timers in time order up to and including `untilMs`, then sets the time to `untilMs`. */
  async runUntil(untilMs: number): Promise<void> {
    for (;;) {
      await settle();
      const next = this.takeNext(untilMs);
      if (!next) break;
      this.nowMs = Math.max(this.nowMs, next.at);
      next.fn();
    }
    this.nowMs = Math.max(this.nowMs, untilMs);
    await settle();
  }

  private takeNext(untilMs: number): SimTimer | undefined {
    let best = -1;
    for (let i = 0; i < this.timers.length; i++) {
      const t = this.timers[i]!;
      if (t.cancelled || t.at > untilMs) continue;
      const b = best < 0 ? undefined : this.timers[best]!;
      if (!b || t.at < b.at || (t.at === b.at && t.seq < b.seq)) best = i;
    }
    if (best < 0) {
      for (let i = this.timers.length - 1; i >= 0; i--) if (this.timers[i]!.cancelled) this.timers.splice(i, 1);
      return undefined;
    }
    return this.timers.splice(best, 1)[0];
  }
}

/** Lets queued promise reactions run (several rounds, for chains of awaits). */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}
