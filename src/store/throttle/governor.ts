/**
 * The governor: every request of a store goes through its class's AIMD window (window.ts), and a
 * throttle answer (signal.ts) is a signal to slow that class down, not an error to retry on the
 * request's own schedule:
 *
 *   run(class, send) ─ lease? ───────────────────────────────▶ send ─┐  (no window, never queued)
 *        │                                                           │
 *        └▶ window open and nobody waiting? ─no─▶ wait in the class's FIFO (≤ storeWaitingMax)
 *                     │yes                              │ woken when a slot frees or a pause ends
 *                     ▼                                 ▼
 *                   send ─ ok ──────▶ window grows (+1 per window of successes) ─▶ result
 *                     ├─ throttled ─▶ window halves (once per window), a Retry-After pauses the
 *                     │               class; sleep max(Retry-After, jittered backoff) and queue
 *                     │               again, at most storeThrottleAttemptsMax sends in all
 *                     └─ any other failure ─▶ slot freed, the error as it was
 *
 * Backoff after throttle n: storeRetryBaseMs · 2^(n−1), capped at storeThrottleDelayMaxMs, equal
 * jitter; a Retry-After longer than that cap is cut to it. Lease requests wait the backoff alone
 * (a Retry-After longer than the lease would fence the node). Time and randomness are injected.
 * A request still throttled after its last attempt rejects with StoreUnavailable (not throttled:
 * the caller meets an outage, as it would from a store's own spent retries).
 */
import type { Clock, TimerHandle } from '../../core/clock.js';
import type { Settings } from '../../core/config.js';
import { StoreUnavailable } from '../../core/errors.js';
import type { Random } from '../../core/random.js';
import { retryDelayMs } from '../../core/retry.js';
import { REQUEST_CLASSES, type RequestClass } from './classes.js';
import { throttleOf } from './signal.js';
import { NO_THROTTLE_SINK, type ThrottleSink } from './stats.js';
import { AimdWindow, type WindowTicket } from './window.js';

export type GovernorSettings = Settings<
  'storeWindowMax' | 'storeWaitingMax' | 'storeThrottleAttemptsMax' | 'storeThrottleDelayMaxMs' | 'storeRetryBaseMs'
>;

interface Lane {
  window: AimdWindow;
  waiting: Array<(ticket: WindowTicket) => void>;
  /** Armed while a Retry-After pause holds requests back. */
  pauseTimer: TimerHandle | undefined;
}

export class Governor {
  private readonly lanes: Record<RequestClass, Lane>;

  constructor(
    private readonly config: GovernorSettings,
    private readonly clock: Clock,
    private readonly random: Random,
    private readonly sink: ThrottleSink = NO_THROTTLE_SINK,
  ) {
    const lane = (): Lane => ({ window: new AimdWindow(config.storeWindowMax), waiting: [], pauseTimer: undefined });
    this.lanes = Object.fromEntries(REQUEST_CLASSES.map((cls) => [cls, lane()])) as Record<RequestClass, Lane>;
    for (const cls of REQUEST_CLASSES) sink.window(cls, config.storeWindowMax);
  }

  /** The window of a class (for tests and the status of a store). */
  window(cls: RequestClass): AimdWindow {
    return this.lanes[cls].window;
  }

  /** Sends `send` through `cls`'s window, sending it again after each throttle answer (see the diagram). */
  async run<T>(cls: RequestClass | 'lease', what: () => string, send: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const lane = cls === 'lease' ? undefined : this.lanes[cls];
      const ticket = lane ? await this.admit(cls as RequestClass, lane) : undefined;
      let result: T;
      try {
        result = await send();
      } catch (e) {
        const throttle = throttleOf(e);
        if (lane && ticket) {
          if (throttle) lane.window.throttled(ticket, this.clock.now(), this.cappedRetryAfter(throttle.retryAfterMs));
          else lane.window.released(ticket);
          this.changed(cls as RequestClass, lane);
        }
        if (!throttle) throw e;
        this.sink.throttled(cls);
        if (attempt >= this.config.storeThrottleAttemptsMax) {
          this.sink.exhausted(cls);
          throw new StoreUnavailable(`${what()}: throttled by the bucket ${attempt} times in a row`, { cause: e });
        }
        // A lease renewal that waited out a long Retry-After could outlive the lease: backoff alone.
        await this.clock.sleep(this.delayMs(attempt, lane ? throttle.retryAfterMs : undefined));
        continue;
      }
      if (lane && ticket) {
        lane.window.succeeded(ticket);
        this.changed(cls as RequestClass, lane);
      }
      return result;
    }
  }

  /** Stops the pause timers (nothing is left running once the store is closed). */
  close(): void {
    for (const cls of REQUEST_CLASSES) this.lanes[cls].pauseTimer?.cancel();
  }

  private admit(cls: RequestClass, lane: Lane): WindowTicket | Promise<WindowTicket> {
    if (lane.waiting.length === 0 && lane.window.canSend(this.clock.now())) return lane.window.admit();
    if (lane.waiting.length >= this.config.storeWaitingMax)
      throw new StoreUnavailable(`${lane.waiting.length} ${cls} requests wait for the bucket already (storeWaitingMax)`);
    const admitted = new Promise<WindowTicket>((resolve) => lane.waiting.push(resolve));
    this.pump(cls, lane);
    return admitted;
  }

  /** A slot freed or the size changed: record it, and let waiters in. */
  private changed(cls: RequestClass, lane: Lane): void {
    this.sink.window(cls, lane.window.size);
    this.pump(cls, lane);
  }

  /** Admits waiters in order while the window has room; arms a timer for the end of a pause. */
  private pump(cls: RequestClass, lane: Lane): void {
    const now = this.clock.now();
    while (lane.waiting.length > 0 && lane.window.canSend(now)) lane.waiting.shift()!(lane.window.admit());
    const pausedFor = lane.window.pausedUntilMs - now;
    if (lane.waiting.length > 0 && pausedFor > 0 && lane.pauseTimer === undefined) {
      lane.pauseTimer = this.clock.setTimer(pausedFor, () => {
        lane.pauseTimer = undefined;
        this.pump(cls, lane);
      });
    }
  }

  private cappedRetryAfter(ms: number | undefined): number | undefined {
    return ms === undefined ? undefined : Math.min(ms, this.config.storeThrottleDelayMaxMs);
  }

  private delayMs(attempt: number, retryAfterMs: number | undefined): number {
    const { storeRetryBaseMs, storeThrottleDelayMaxMs } = this.config;
    const backoff = retryDelayMs(
      { attemptsMax: Infinity, baseMs: storeRetryBaseMs, maxDelayMs: storeThrottleDelayMaxMs, retryable: () => true },
      attempt,
      this.random,
    );
    return Math.max(backoff, this.cappedRetryAfter(retryAfterMs) ?? 0);
  }
}
