/**
 * bench/drain's tables: the console table, the requests-per-delivery breakdown, and
 * bench/results/drain.md (the same tables in markdown, plus the BullMQ rows and the command).
 */
import { round, table } from '../../lib.js';
import type { PeerResult } from '../../peer-bullmq.js';
import type { DrainRow } from './rows.js';
import { S3_STANDARD_DOLLARS_PER_1000, S3_VERBS } from '../s3-prices.js';

const s = (ms: number) => round(ms / 1000, 1);

export function mainRows(rows: DrainRow[]): Record<string, unknown>[] {
  return rows.map((r) => ({
    store: r.store,
    mode: r.mode,
    K: r.K,
    M: r.M,
    'drain s': s(r.drainMs),
    'late p50 s': s(r.lateness.p50),
    'late p99 s': s(r.lateness.p99),
    '/s/node burst': r.perNodePerSecBurst,
    '/s/node since readable': r.perNodePerSecSinceReadable,
    'req/delivery': r.requestsPerDelivery.total,
    'entries read/alarm/node': r.entriesReadPerDelivery?.join(' ') ?? '',
    'sweeps: n, read, offered per node':
      r.sweepsPerNode?.map((x) => `${x.sweeps}: ${x.readPerSweep}, ${x.offeredPerSweep}`).join('; ') ?? '',
    'in flight': r.inFlight ?? '',
    'ceiling /s': r.ceilingPerSec,
    'rate/ceiling': r.ratioToCeiling,
    'BullMQ /s/worker': r.bullmqPerWorkerPerSec ?? '',
    'keepwork/BullMQ': r.ratioToBullmq ?? '',
    'cpu s per node': r.cpuSecPerNode.join(' '),
    'cpu ms/alarm': round((1000 * r.cpuSecPerNode.reduce((a, b) => a + b, 0)) / r.K, 2),
    'main thread': r.mainThreadCpuSecPerNode ? round((1000 * r.mainThreadCpuSecPerNode.reduce((a, b) => a + b, 0)) / r.K, 2) : '',
    '2nd half': r.cpuMsPerAlarmSecondHalf ?? '',
    'peak RSS MB': r.peakRssMbPerNode.join(' '),
  }));
}

export const drainTable = (rows: DrainRow[]) => table(mainRows(rows));

const fmtOps = (o: Record<string, number>) =>
  Object.entries(o)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([op, n]) => `${op} ${n}`)
    .join(', ') || '—';

export function opRows(rows: DrainRow[]): Record<string, unknown>[] {
  return rows.map((r) => ({
    store: r.store,
    mode: r.mode,
    K: r.K,
    M: r.M,
    'main thread per delivery': fmtOps(r.requestsPerDelivery.main),
    'workers per delivery': fmtOps(r.requestsPerDelivery.worker),
    total: r.requestsPerDelivery.total,
    'throttled per delivery (given up)': `${r.throttledPerDelivery ?? '-'} (${r.throttleExhausted ?? '-'})`,
    'store ops/s (get put list delete)': `${r.storeRates.get} ${r.storeRates.put} ${r.storeRates.list} ${r.storeRates.delete}`,
    deliveries: fmtOps(r.deliveries),
  }));
}

export const perOpText = (rows: DrainRow[]) =>
  'store requests per delivered alarm, by operation:\n' + table(opRows(rows)) + '\n\n' + PRICE_NOTE + '\n' + table(verbRows(rows));

const PRICE_NOTE =
  'bucket requests per delivered alarm by S3 request, and dollars per million delivered alarms at S3 Standard list prices ' +
  `(per 1,000: ${Object.entries(S3_STANDARD_DOLLARS_PER_1000)
    .map(([v, p]) => `${v} $${p}`)
    .join(', ')}; src/bench/s3-prices.ts):`;

/** Requests per delivered alarm by S3 verb, and their price per million alarms. */
export function verbRows(rows: DrainRow[]): Record<string, unknown>[] {
  return rows.map((r) => ({
    store: r.store,
    mode: r.mode,
    K: r.K,
    M: r.M,
    ...Object.fromEntries(S3_VERBS.map((v) => [v, r.requestsByVerb?.[v] ?? 0])),
    total: r.requestsPerDelivery.total,
    '$ per million alarms': r.dollarsPerMillion ?? '',
  }));
}

export function peerRows(peers: PeerResult[]): Record<string, unknown>[] {
  return peers.map((p) => ({
    K: p.K,
    'M workers': p.M,
    concurrency: p.concurrency,
    'drain s': round(p.drainMs / 1000, 2),
    '/s/worker': p.perWorkerPerSec,
    'wait p50 s': round(p.wait.p50 / 1000, 2),
    'wait p99 s': round(p.wait.p99 / 1000, 2),
    'cpu s per worker': p.cpuSecPerWorker.join(' '),
    'peak RSS MB': p.peakRssMbPerWorker.join(' '),
  }));
}

export function drainMarkdown(rows: DrainRow[], peers: PeerResult[], o: { quick: boolean; durationMs: number; argv: string[] }): string {
  return [
    `# bench/drain — ${new Date().toISOString()}`,
    '',
    `\`npm run bench -- drain ${o.argv.join(' ')}\` — ${round(o.durationMs / 1000, 1)} s. Lateness = fired − due time T ` +
      `(due alarms become readable at T + lease + grace = T + 15 s). "burst": first → last firing. ` +
      `Ceiling: the store's own ops/s at the delivery concurrency, priced by the requests per delivery below.`,
    '',
    table(mainRows(rows)),
    '',
    '## Store requests per delivered alarm',
    '',
    table(opRows(rows)),
    '',
    '## Bucket requests per delivered alarm by S3 request, priced',
    '',
    PRICE_NOTE,
    '',
    table(verbRows(rows)),
    '',
    '## BullMQ peer (K due delayed jobs, one SQLite write each)',
    '',
    peers.length ? table(peerRows(peers)) : '(not run: --no-peer)',
    '',
    `Charts: ${[...new Set(rows.map((r) => `drain-${r.store}-${r.K}.svg`))].join(', ')}.`,
    '',
  ].join('\n');
}
