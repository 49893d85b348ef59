/**
 * What a bench's raw measures say, as pure functions: percentiles, a rate per one-second bucket,
 * a histogram, the S3 price of the requests, and the recommendation of a sweep.
 *
 *   percentiles([…ms])                  → { p50, p90, p99, max }
 *   perSecond([…times], t0)             → [[second since t0, events in that second], …] from second 0
 *   histogram([…values], bins)          → [{ from, to, count }, …]
 *   s3Price({ put: n, get: n, … }, k)   → requests per alarm and $ per million alarms
 *   recommend(points, 'higher')         → the smallest value within 5 % of the best, and why
 */
import { byVerb, dollarsPerMillion } from './s3-prices.js';

export interface Percentiles {
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export const round = (n: number, digits = 2): number => Math.round(n * 10 ** digits) / 10 ** digits;

/** Nearest-rank percentile of an ascending array (NaN when empty). */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export function percentiles(values: readonly number[]): Percentiles {
  const s = [...values].sort((a, b) => a - b);
  return { p50: percentile(s, 50), p90: percentile(s, 90), p99: percentile(s, 99), max: s.at(-1) ?? NaN };
}

/** Events per whole second since `t0` (ms), from second 0 (or an earlier one with any) to the last with any; empty seconds are 0. */
export function perSecond(times: readonly number[], t0: number): [number, number][] {
  if (times.length === 0) return [];
  const secs = times.map((t) => Math.floor((t - t0) / 1000));
  const first = Math.min(0, ...secs);
  const counts = new Array<number>(Math.max(...secs) - first + 1).fill(0);
  for (const s of secs) counts[s - first]!++;
  return counts.map((n, i) => [first + i, n]);
}

export interface Bin {
  from: number;
  to: number;
  count: number;
}

/** `bins` equal bins from the smallest to the largest value (one bin when they are all equal). */
export function histogram(values: readonly number[], bins = 20): Bin[] {
  if (values.length === 0) return [];
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  const n = hi > lo ? bins : 1;
  const width = hi > lo ? (hi - lo) / n : 1;
  const out = Array.from({ length: n }, (_, i) => ({ from: round(lo + i * width), to: round(lo + (i + 1) * width), count: 0 }));
  for (const v of values) out[Math.min(n - 1, Math.floor((v - lo) / width))]!.count++;
  return out;
}

export interface RequestCost {
  /** Bucket requests per alarm (or per call), by operation. */
  perOp: Record<string, number>;
  perUnit: number;
  /** Estimated S3 request price per million alarms (or calls), in US dollars. */
  usdPerMillion: number;
}

export function s3Price(requests: Readonly<Record<string, number>>, units: number): RequestCost {
  const perOp: Record<string, number> = {};
  let all = 0;
  for (const [op, n] of Object.entries(requests)) {
    if (n === 0) continue;
    perOp[op] = n / units;
    all += n;
  }
  const usd = dollarsPerMillion(byVerb(perOp));
  for (const op of Object.keys(perOp)) perOp[op] = round(perOp[op]!, 3);
  return { perOp, perUnit: round(all / units, 3), usdPerMillion: round(usd, 2) };
}

export interface SweepPoint {
  value: number;
  /** The metric of each repetition at this value. */
  runs: readonly number[];
}

export interface Recommendation {
  value: number;
  /** The mean metric at the recommended value and at the best one. */
  metric: number;
  best: { value: number; metric: number };
  /** One sentence: what was chosen and why. */
  why: string;
}

/** Within this fraction of the best counts as as good: a smaller value costs less (memory, sockets, burst on the bucket). */
export const WITHIN = 0.05;

export const mean = (xs: readonly number[]): number => (xs.length === 0 ? NaN : xs.reduce((a, b) => a + b, 0) / xs.length);

/**
 * The smallest value whose mean metric is within 5 % of the best mean (`higher`: larger is
 * better, as a rate; `lower`: smaller is better, as a latency). Undefined without a measured point.
 */
export function recommend(
  points: readonly SweepPoint[],
  better: 'higher' | 'lower',
  metricName: string,
  unit: string,
): Recommendation | undefined {
  const measured = points
    .filter((p) => p.runs.some((r) => Number.isFinite(r)))
    .map((p) => ({ value: p.value, metric: mean(p.runs.filter(Number.isFinite)) }));
  if (measured.length === 0) return undefined;
  const best = measured.reduce((b, p) => ((better === 'higher' ? p.metric > b.metric : p.metric < b.metric) ? p : b));
  const good = (m: number) => (better === 'higher' ? m >= best.metric * (1 - WITHIN) : m <= best.metric * (1 + WITHIN));
  const chosen = [...measured].sort((a, b) => a.value - b.value).find((p) => good(p.metric))!;
  const fmt = (m: number) => `${round(m, 1)} ${unit}`;
  const smallest = Math.min(...measured.map((p) => p.value));
  const why =
    chosen.value === best.value
      ? `${chosen.value} gave the best ${metricName} (${fmt(best.metric)})${chosen.value === smallest ? ', and it is the smallest value tried' : ` and no smaller value came within ${WITHIN * 100} % of it`}`
      : `${chosen.value} is the smallest value within ${WITHIN * 100} % of the best ${metricName} (${fmt(chosen.metric)} against ${fmt(best.metric)} at ${best.value}); a larger value costs more and gains less than that`;
  return { value: chosen.value, metric: round(chosen.metric, 2), best: { value: best.value, metric: round(best.metric, 2) }, why };
}
