/**
 * One configuration's row from what its run measured: lateness and rates from the read-back
 * firing times (or the drain curve), store requests per delivery from the survivors' counters
 * before and after, the store's ceiling at the concurrency seen, CPU and memory per node.
 */
import { percentile, round } from '../../lib.js';
import { ceiling, type Rates } from '../ceiling.js';
import { byVerb, dollarsPerMillion } from '../s3-prices.js';
import { byLabel, diff, total, type Scrape } from '../prom.js';
import type { DrainRow } from './rows.js';
import { reached, secondHalfCpu, type Sample } from './sampling.js';
import { MARGIN_MS, MODES, type Mode } from './scenario.js';

export interface RunData {
  storeKind: string;
  mode: Mode;
  k: number;
  m: number;
  at: number;
  copyEnd: number;
  drainedAt: number;
  samples: Sample[];
  before: Scrape[];
  after: Scrape[];
  cpuSec: number[];
  mainCpuSec: number[];
  /** The survivors' CPU ms (summed) when the watch began. */
  cpu0Ms: number;
  wallS: number;
  rss: number[];
  exact: { firedAt: number[]; duplicates: number } | undefined;
  rates: Rates;
  inFlight: number;
}

const perDelivery = (ops: Record<string, number>, k: number) =>
  Object.fromEntries(Object.entries(ops).map(([op, n]) => [op, round(n / k, 3)]));

/** The counts of each key, summed over the records. */
export function sumOps(list: Record<string, number>[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of list) for (const [k, v] of Object.entries(r)) out[k] = (out[k] ?? 0) + v;
  return out;
}

/**
 * Per survivor, the index entries its sweeps read (keepwork_sweep_entries_read_total: every walk,
 * own shards, the unsharded layout and other nodes' folders) per alarm it ran; 0 for a node that
 * ran none.
 */
export function entriesReadPerDelivery(d: Pick<RunData, 'before' | 'after'>): number[] {
  return d.after.map((_, i) => {
    const ran = delta(d, i, 'keepwork_alarm_deliveries_total', 'outcome="ran"');
    return ran > 0 ? round(delta(d, i, 'keepwork_sweep_entries_read_total') / ran, 2) : 0;
  });
}

/** Per survivor, its sweeps of the drain's tenant, and the entries each read and offered on average. */
export function sweepsPerNode(d: Pick<RunData, 'before' | 'after'>): { sweeps: number; readPerSweep: number; offeredPerSweep: number }[] {
  return d.after.map((_, i) => {
    const sweeps = delta(d, i, 'keepwork_sweep_duration_seconds_count');
    const per = (family: string) => (sweeps > 0 ? round(delta(d, i, family) / sweeps, 1) : 0);
    return { sweeps, readPerSweep: per('keepwork_sweep_entries_read_total'), offeredPerSweep: per('keepwork_sweep_entries_offered_total') };
  });
}

/** A counter's growth on survivor `i` over the drain (every series of `family` whose labels contain `labels`). */
function delta(d: Pick<RunData, 'before' | 'after'>, i: number, family: string, labels = ''): number {
  return total(d.after[i]!, family, labels) - total(d.before[i]!, family, labels);
}

export function summarize(d: RunData): DrainRow {
  const { k, m, at } = d;
  const fired = d.exact?.firedAt;
  const firstAt = fired ? fired[0]! : reached(d.samples, 1);
  const lastAt = fired ? fired.at(-1)! : reached(d.samples, k);
  const q = (p: number) => (fired ? percentile(fired, p) : reached(d.samples, Math.ceil((p / 100) * k)));
  const ops = (thread: string) => {
    const where = `thread="${thread}"`;
    return sumOps(
      d.after.map((s, i) =>
        diff(byLabel(s, 'keepwork_store_requests_total', 'op', where), byLabel(d.before[i]!, 'keepwork_store_requests_total', 'op', where)),
      ),
    );
  };
  const counted = (family: string) => d.after.reduce((n, s, i) => n + total(s, family) - total(d.before[i]!, family), 0);
  const main = perDelivery(ops('main'), k);
  const worker = perDelivery(ops('worker'), k);
  const all = sumOps([main, worker]);
  const verbs = Object.fromEntries(Object.entries(byVerb(all)).map(([v, n]) => [v, round(n, 3)]));
  const ceil = ceiling(d.rates, all);
  const burstS = Math.max(0.001, (lastAt - firstAt) / 1000);
  return {
    store: d.storeKind,
    mode: MODES[d.mode].label,
    K: k,
    M: m,
    copyEndedBeforeTMs: at - d.copyEnd,
    drainMs: d.drainedAt - at,
    firstFiredMs: firstAt - at,
    lastFiredMs: lastAt - at,
    perNodePerSecBurst: round(k / m / burstS, 1),
    perNodePerSecSinceReadable: round(k / m / Math.max(0.001, (lastAt - at - MARGIN_MS) / 1000), 1),
    lateness: { p50: q(50) - at, p99: q(99) - at, max: lastAt - at, source: fired ? 'read back' : 'curve' },
    sinceReadable: { p50: q(50) - at - MARGIN_MS, p99: q(99) - at - MARGIN_MS },
    ...(d.exact ? { duplicates: d.exact.duplicates } : {}),
    deliveries: sumOps(
      d.after.map((s, i) =>
        diff(byLabel(s, 'keepwork_alarm_deliveries_total', 'outcome'), byLabel(d.before[i]!, 'keepwork_alarm_deliveries_total', 'outcome')),
      ),
    ),
    requestsPerDelivery: {
      main,
      worker,
      total: round(
        Object.values(all).reduce((a, b) => a + b, 0),
        2,
      ),
    },
    throttledPerDelivery: round(counted('keepwork_store_throttled_total') / k, 3),
    throttleExhausted: counted('keepwork_store_throttle_exhausted_total'),
    entriesReadPerDelivery: entriesReadPerDelivery(d),
    sweepsPerNode: sweepsPerNode(d),
    requestsByVerb: verbs,
    dollarsPerMillion: round(dollarsPerMillion(verbs), 2),
    storeRates: d.rates,
    inFlight: d.inFlight,
    ceilingPerSec: Math.round(ceil),
    ratioToCeiling: round(k / burstS / ceil, 3),
    cpuSecPerNode: d.cpuSec.map((s) => round(s, 1)),
    cpuPercentPerNode: d.cpuSec.map((s) => Math.round((100 * s) / d.wallS)),
    mainThreadCpuSecPerNode: d.mainCpuSec.map((s) => round(s, 1)),
    cpuMsPerAlarmSecondHalf: secondHalfCpu(d.samples, k),
    peakRssMbPerNode: d.rss,
    curve: [[0, 0], ...d.samples.map((s): [number, number] => [round((s.t - at) / 1000, 2), s.ran])],
    cpuCurve: d.samples.map((s): [number, number] => [round((s.t - at) / 1000, 2), round((s.cpuMs - d.cpu0Ms) / 1000, 2)]),
  };
}
