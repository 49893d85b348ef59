/** Totals over many seeds (what CI prints: takeovers, alarms, checks; docs/simulator.md). */
import type { RunResult } from './run-seed.js';

/** The per-seed counters summed over seeds (each a number in RunStats). */
const SUMMED = [
  'takeovers',
  'expectedTakes',
  'expectedMisses',
  'alarmsSet',
  'alarmsFired',
  'invariantTicks',
  'actorChecks',
  'knownExceptions',
  'crashes',
  'cuts',
  'joins',
  'aimed',
  'firstUploadsDelayed',
  'deliveriesCut',
  'fencedNodes',
  'rejoins',
  'quickRestarts',
  'wallMs',
] as const;
type Summed = (typeof SUMMED)[number];

export type Totals = Record<Summed, number> & { seeds: number; failed: number[] };

export function newTotals(): Totals {
  const t = { seeds: 0, failed: [] as number[] } as Totals;
  for (const k of SUMMED) t[k] = 0;
  return t;
}

export function addTotals(t: Totals, r: RunResult): void {
  t.seeds++;
  if (r.verdict !== 'ok') t.failed.push(r.seed);
  for (const k of SUMMED) t[k] += r.stats[k];
}

export function formatTotals(t: Totals): string {
  return (
    `TOTAL seeds=${t.seeds} failed=${t.failed.length}${t.failed.length ? ` [${t.failed.join(',')}]` : ''} takeovers=${t.takeovers} (expected takes ${t.expectedTakes}, missed ${t.expectedMisses}) alarms=${t.alarmsSet}` +
    ` fired=${t.alarmsFired} invariantChecks=${t.invariantTicks} (actor checks ${t.actorChecks}) knownExceptions=${t.knownExceptions}` +
    ` crashes=${t.crashes} fencedNodes=${t.fencedNodes} rejoins=${t.rejoins} quickRestarts=${t.quickRestarts} cuts=${t.cuts} joins=${t.joins} aimedFaults=${t.aimed} (joiners' first uploads delayed ${t.firstUploadsDelayed}, own deliveries cut ${t.deliveriesCut}) wall=${(t.wallMs / 1000).toFixed(1)}s`
  );
}
