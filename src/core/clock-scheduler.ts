/**
 * An RxJS `SchedulerLike` driven by an injected `Clock`: the seam that lets the
 * node's RxJS schedules (the sweep, lease renewal, idle reaping) run on virtual time in the
 * deterministic simulator. Production passes nothing and RxJS keeps its own async scheduler.
 *
 *   interval(ms, new ClockScheduler(clock))  ─▶ clock.setTimer(ms, …) ─▶ work() ─▶ reschedule
 *
 * Contract: `schedule(work, delayMs, state)` runs `work` once after `delayMs` on the clock; the
 * action may reschedule itself (as RxJS's periodic operators do); unsubscribing cancels the timer.
 */
import { Subscription, type SchedulerAction, type SchedulerLike } from 'rxjs';
import type { Clock, TimerHandle } from './clock.js';

class ClockAction<T> extends Subscription implements SchedulerAction<T> {
  private handle: TimerHandle | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly work: (this: SchedulerAction<T>, state?: T) => void,
  ) {
    super(() => {
      this.handle?.cancel();
      this.handle = undefined;
    });
  }

  schedule(state?: T, delayMs = 0): Subscription {
    if (this.closed) return this;
    this.handle?.cancel();
    this.handle = this.clock.setTimer(delayMs, () => {
      this.handle = undefined;
      if (!this.closed) this.work.call(this, state);
    });
    return this;
  }
}

export class ClockScheduler implements SchedulerLike {
  constructor(private readonly clock: Clock) {}

  now(): number {
    return this.clock.now();
  }

  schedule<T>(work: (this: SchedulerAction<T>, state?: T) => void, delayMs = 0, state?: T): Subscription {
    return new ClockAction(this.clock, work).schedule(state, delayMs);
  }
}
