/**
 * Pure helpers of bench/peers: the summaries of a timed load, of the timers' firing and of the
 * writes lost across a kill -9, and the cells of the table.
 */
import { percentile, round } from '../../lib.js';

export interface LoadSummary {
  ops: number;
  errors: number;
  seconds: number;
  perSec: number;
  p50Ms: number;
  p99Ms: number;
}

/** Calls per second and latency percentiles (ms) from the latencies of the calls that succeeded. */
export function summarizeLoad(latencies: number[], errors: number, seconds: number): LoadSummary {
  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    ops: sorted.length,
    errors,
    seconds: round(seconds, 2),
    perSec: seconds > 0 ? Math.round(sorted.length / seconds) : 0,
    p50Ms: round(percentile(sorted, 50)),
    p99Ms: round(percentile(sorted, 99)),
  };
}

export interface FiringSummary {
  timers: number;
  fired: number;
  /** fired / (last firing − due), per second: all timers are due at the same instant. */
  firedPerSec: number;
  /** Firing time − due time, ms. */
  latenessP50Ms: number;
  latenessP99Ms: number;
  latenessMaxMs: number;
  /** Last firing − first firing, ms. */
  spreadMs: number;
}

/** `firedAt` holds each timer's firing time (ms since the epoch), null when it never fired. */
export function summarizeFiring(dueMs: number, firedAt: (number | null)[]): FiringSummary {
  const at = firedAt.filter((t): t is number => t !== null).sort((a, b) => a - b);
  const late = at.map((t) => t - dueMs);
  const lastMs = late.at(-1) ?? NaN;
  return {
    timers: firedAt.length,
    fired: at.length,
    firedPerSec: at.length > 0 && lastMs > 0 ? Math.round(at.length / (lastMs / 1000)) : NaN,
    latenessP50Ms: Math.round(percentile(late, 50)),
    latenessP99Ms: Math.round(percentile(late, 99)),
    latenessMaxMs: Math.round(lastMs),
    spreadMs: at.length > 0 ? at.at(-1)! - at[0]! : NaN,
  };
}

/**
 * Acknowledged writes lost: each key's counter only grows by 1 per call, so a call that answered
 * total T promises that the key reads at least T afterwards. Lost = the sum of the shortfalls.
 */
export function lostWrites(maxAcked: readonly number[], readBack: readonly (number | null)[]): { lost: number; unreadable: number } {
  let lost = 0;
  let unreadable = 0;
  maxAcked.forEach((acked, i) => {
    const got = readBack[i];
    if (got === null || got === undefined) unreadable++;
    else lost += Math.max(0, acked - got);
  });
  return { lost, unreadable };
}

/** A table cell: a number with thousands separators, '—' for a missing or NaN value. */
export function cell(n: number | undefined, suffix = ''): string {
  if (n === undefined || !Number.isFinite(n)) return '—';
  return n.toLocaleString('en-US', { maximumFractionDigits: 2 }) + suffix;
}
