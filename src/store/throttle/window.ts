/**
 * One request class's concurrency window (additive increase, multiplicative decrease), as a pure
 * state machine: no clock, no timers; the caller passes `nowMs` and does the waiting.
 *
 *   admit()      a request may be sent: fewer than `size` in flight and no pause in force
 *   succeeded()  size += 1 / size            (one more per window's worth of successes, TCP's
 *                                            congestion avoidance: about one per round trip)
 *   throttled()  size = max(1, ⌊min(size, in flight) / 2⌋), once per window: a throttle of a
 *                request sent before the last decrease does not halve again (it answered the
 *                window already halved); a Retry-After pauses the class until then
 *   released()   any other outcome: the slot is freed, the size stays
 *
 * The size starts at `max` (a bucket that never throttles is never held back) and never leaves
 * [1, max]. `decreases` numbers the decreases; each ticket remembers the one it was sent under.
 */

export interface WindowTicket {
  /** `decreases` when the request was admitted. */
  readonly sentUnder: number;
}

export class AimdWindow {
  /** Fractional: additive increase adds 1/size per success. */
  private sizeNow: number;
  private flying = 0;
  private decreaseCount = 0;
  private pausedUntil = 0;

  constructor(readonly max: number) {
    if (!Number.isSafeInteger(max) || max < 1) throw new RangeError(`window max must be a positive integer, got ${max}`);
    this.sizeNow = max;
  }

  /** Requests that may be in flight now. */
  get size(): number {
    return Math.floor(this.sizeNow);
  }

  get inFlight(): number {
    return this.flying;
  }

  /** Times the window has been halved. */
  get decreases(): number {
    return this.decreaseCount;
  }

  /** When a Retry-After pause ends (0 or a past time: none). */
  get pausedUntilMs(): number {
    return this.pausedUntil;
  }

  /** Whether a request may be sent at `nowMs`. */
  canSend(nowMs: number): boolean {
    return this.flying < this.size && nowMs >= this.pausedUntil;
  }

  /** Takes a slot; the caller checked `canSend`. */
  admit(): WindowTicket {
    this.flying++;
    return { sentUnder: this.decreaseCount };
  }

  succeeded(_ticket: WindowTicket): void {
    this.flying--;
    this.sizeNow = Math.min(this.max, this.sizeNow + 1 / this.size);
  }

  /** A throttle answer at `nowMs`, with the server's Retry-After when it sent one. */
  throttled(ticket: WindowTicket, nowMs: number, retryAfterMs?: number): void {
    const inFlight = this.flying; // this request included
    this.flying--;
    if (retryAfterMs !== undefined && retryAfterMs > 0) this.pausedUntil = Math.max(this.pausedUntil, nowMs + retryAfterMs);
    if (ticket.sentUnder !== this.decreaseCount) return;
    this.sizeNow = Math.max(1, Math.floor(Math.min(this.size, inFlight) / 2));
    this.decreaseCount++;
  }

  released(_ticket: WindowTicket): void {
    this.flying--;
  }
}
