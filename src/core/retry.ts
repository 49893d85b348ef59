/**
 * The one retry loop (time and randomness injected): run an attempt; on a failure the
 * policy calls retryable, sleep on the injected Clock and try again, at most attemptsMax attempts
 * in all. The delay after failed attempt n is baseMs · 2^(n−1), capped at maxDelayMs, then
 * "equal jitter" (random.ts `jitter`: drawn from [½, 1] of it) unless the policy turns jitter off.
 *
 *   attempt 1 ─fail─▶ retryable? ─no──────────────▶ throw that error
 *                         │yes, attempts left
 *                         ▼
 *                     sleep(delay 1) ─▶ attempt 2 ─▶ … ─▶ attempt attemptsMax fails ─▶ throw it
 *
 * What to throw on giving up (a wrapped error, a read-back, …) stays with the caller: `retry`
 * throws the attempt's own error (or the abort signal's reason). Only the sleep draws from
 * `random`, one draw per delay, so a seeded run replays exactly.
 */
import type { Clock } from './clock.js';
import { ErrorCode, isKeepworkError } from './errors.js';
import { jitter, type Random } from './random.js';

export interface RetrySeams {
  clock: Clock;
  /** Needed unless the policy turns jitter off. */
  random?: Random;
}

export interface RetryPolicy {
  /** Attempts in all, the first included (≥ 1). */
  attemptsMax: number;
  /** The delay after the first failed attempt; it doubles after each next one. */
  baseMs: number;
  /** A cap on the doubled delay, before jitter (none by default). */
  maxDelayMs?: number;
  /** Equal jitter on each delay (default true); false sleeps the doubled delay itself. */
  jitter?: boolean;
  /** Whether a failure is worth another attempt (a pure classification of the error). */
  retryable(e: unknown): boolean;
  /** Told of every failed attempt before the decision (e.g. to remember that an outcome was unknown). */
  failed?(e: unknown): void;
  /** Aborting ends a sleep at once with the signal's reason; no attempt starts once it is aborted. */
  signal?: AbortSignal;
}

/** The delay after failed attempt `attempt` (from 1); draws from `random` once when jittered. */
export function retryDelayMs(p: RetryPolicy, attempt: number, random?: Random): number {
  const doubled = p.baseMs * 2 ** (attempt - 1);
  const ms = p.maxDelayMs === undefined ? doubled : Math.min(doubled, p.maxDelayMs);
  if (p.jitter === false) return ms;
  if (!random) throw new TypeError('retry: a jittered policy needs a Random');
  return jitter(random, ms);
}

/** Runs `attempt` (given its number, from 1) until it succeeds or the policy gives up. */
export async function retry<T>(seams: RetrySeams, p: RetryPolicy, attempt: (n: number) => Promise<T>): Promise<T> {
  for (let n = 1; ; n++) {
    p.signal?.throwIfAborted();
    try {
      return await attempt(n);
    } catch (e) {
      p.failed?.(e);
      if (n >= p.attemptsMax || !p.retryable(e)) throw e;
      await seams.clock.sleep(retryDelayMs(p, n, seams.random), p.signal);
    }
  }
}

/** A store error whose request may go again (the same key and body): unavailable, or outcome unknown. */
export function isTransientStoreError(e: unknown): boolean {
  return isKeepworkError(e, ErrorCode.AmbiguousWrite) || isKeepworkError(e, ErrorCode.StoreUnavailable);
}
