/** Totals over many seeds (what CI prints and the ADR compares: takeovers, alarms, checks). */
import type { RunResult } from './run-seed.js';

export interface Totals {
  seeds: number;
  failed: number[];
  takeovers: number;
  alarmsSet: number;
  alarmsFired: number;
  invariantTicks: number;
  actorChecks: number;
  knownExceptions: number;
  crashes: number;
  cuts: number;
  joins: number;
  aimed: number;
  firstUploadsDelayed: number;
  fencedNodes: number;
  wallMs: number;
}

export function newTotals(): Totals {
  return { seeds: 0, failed: [], takeovers: 0, alarmsSet: 0, alarmsFired: 0, invariantTicks: 0, actorChecks: 0, knownExceptions: 0, crashes: 0, cuts: 0, joins: 0, aimed: 0, firstUploadsDelayed: 0, fencedNodes: 0, wallMs: 0 };
}

export function addTotals(t: Totals, r: RunResult): void {
  const s = r.stats;
  t.seeds++;
  if (r.verdict !== 'ok') t.failed.push(r.seed);
  t.takeovers += s.takeovers;
  t.alarmsSet += s.alarmsSet;
  t.alarmsFired += s.alarmsFired;
  t.invariantTicks += s.invariantTicks;
  t.actorChecks += s.actorChecks;
  t.knownExceptions += s.knownExceptions;
  t.crashes += s.crashes;
  t.cuts += s.cuts;
  t.joins += s.joins;
  t.aimed += s.aimed;
  t.firstUploadsDelayed += s.firstUploadsDelayed;
  t.fencedNodes += s.fencedNodes;
  t.wallMs += s.wallMs;
}

export function formatTotals(t: Totals): string {
  return (
    `TOTAL seeds=${t.seeds} failed=${t.failed.length}${t.failed.length ? ` [${t.failed.join(',')}]` : ''} takeovers=${t.takeovers} alarms=${t.alarmsSet}` +
    ` fired=${t.alarmsFired} invariantChecks=${t.invariantTicks} (actor checks ${t.actorChecks}) knownExceptions=${t.knownExceptions}` +
    ` crashes=${t.crashes} fencedNodes=${t.fencedNodes} cuts=${t.cuts} joins=${t.joins} aimedFaults=${t.aimed} (joiners' first uploads delayed ${t.firstUploadsDelayed}) wall=${(t.wallMs / 1000).toFixed(1)}s`
  );
}
