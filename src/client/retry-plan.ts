/**
 * When keepwork/client tries a call again (pure: the attempt's outcome and the time in, a delay or
 * no retry out).
 *
 *   attempt n failed ─▶ durable? ─no──────────────────────────────▶ give up (throw its error)
 *                          │yes (so it carries an idempotency key: a repeat is answered once)
 *                          ▼
 *                      transient? (503, no answer, OUTCOME_UNKNOWN…) ─no─▶ give up
 *                          │yes
 *                          ▼
 *                      n < callAttemptsMax and the delay ends within
 *                      callRetryTotalMs of the first attempt? ─no─▶ give up
 *                          │yes
 *                          ▼
 *                      sleep max(Retry-After, backoff n), then attempt n + 1
 *
 * The backoff after attempt n is callRetryBaseMs · 2^(n−1), capped at callRetryMaxMs, with equal
 * jitter (drawn from [½, 1] of it). A Retry-After is never cut short: one that would end past
 * callRetryTotalMs ends the retries instead.
 */
import type { KeepworkError } from '../core/errors.js';
import type { ClientSettings } from './options.js';
export { parseRetryAfter } from '../core/retry-after.js';

/** One failed attempt, as the retry decision needs it. */
export interface Failure {
  error: KeepworkError;
  /** A 503, no answer (refused, reset, timed out), or a call that may have run (attempt.ts): another attempt may succeed. */
  transient: boolean;
  /** The answer's Retry-After, in ms, when it had one. */
  retryAfterMs?: number;
}

export type RetrySettings = Pick<ClientSettings, 'callAttemptsMax' | 'callRetryBaseMs' | 'callRetryMaxMs' | 'callRetryTotalMs'>;

export interface RetryInput {
  failure: Failure;
  durable: boolean;
  /** The attempt that failed, from 1. */
  attempt: number;
  /** Since the first attempt started. */
  elapsedMs: number;
  /** A draw from [0, 1). */
  random: number;
}

/** How long to wait before the next attempt, or undefined to give up. */
export function retryDelayMs(input: RetryInput, s: RetrySettings): number | undefined {
  const { failure, durable, attempt, elapsedMs, random } = input;
  if (!durable || !failure.transient || attempt >= s.callAttemptsMax) return undefined;
  const backoff = Math.min(s.callRetryBaseMs * 2 ** (attempt - 1), s.callRetryMaxMs);
  const delay = Math.max(failure.retryAfterMs ?? 0, Math.round(backoff / 2 + (random * backoff) / 2));
  return elapsedMs + delay > s.callRetryTotalMs ? undefined : delay;
}
