/**
 * What a chaos run prints: at the start the seed, the plan's fingerprint and its fault schedule
 * (the same seed prints the same); at the end a summary (operations by kind, faults by kind,
 * violations, alarm lateness) and, on a violation, the first one with the requests around it
 * and the command that replays the plan.
 */
import type { AlarmStats } from './checks.js';
import { percentile, QUIET_BOUND_MS, rel } from './checks.js';
import type { AnyWindow } from './faults.js';
import {
  actorName,
  describeFault,
  describeRelayFault,
  describeWireProfile,
  fingerprint,
  MARGIN_MS,
  SKEW_BEYOND_MS,
  TIMINGS,
  type Plan,
  type Unsafe,
} from './plan.js';
import type { Attempt, Outcome, Violation } from './workload.js';

export interface FinalStats {
  alarms: AlarmStats;
  /** Destroyed actors re-created by requests that landed after their destroy. */
  recreated: number;
}

export interface ChaosReport {
  seed: number;
  fingerprint: string;
  plan: Plan;
  startedAt: number;
  durationMs: number;
  outcomes: Outcome[];
  violations: Violation[];
  /** From the start of the chaos phase to the first violation. */
  caughtAfterMs: number | undefined;
  /** Undefined when the run stopped at its first violation. */
  final: FinalStats | undefined;
  faults: Record<string, number>;
  /** The clock offset of every node run, ms. */
  clockOffsets: number[];
  windows: AnyWindow[];
  leftovers: { processes: number; tempDir: boolean; network: string[] };
}

export function printPlan(plan: Plan, o: { unsafe?: Unsafe; s3Url?: string; wire?: boolean; out: (line: string) => void }): void {
  const { seed, chaosMs, nodes } = plan.shape;
  o.out(
    `SEED=${seed} nodes=${nodes} chaos=${chaosMs / 1_000}s bucket=${o.s3Url ? 's3' : 'folder'}${o.unsafe ? ` UNSAFE=${o.unsafe}` : ''} plan=${fingerprint(plan)}`,
  );
  o.out(`actors: ${plan.slots} slots; ops planned: ${plan.ops.length}; lease+grace ${MARGIN_MS} ms`);
  for (let n = 0; n < nodes; n++)
    o.out(
      `n${n} first bucket profile: ${plan.profile(n, 0).name} ${plan.profile(n, 0).query}; clock ${o.unsafe === 'skewBeyondBound' && n === 0 ? `+${SKEW_BEYOND_MS} (beyond the bound)` : plan.clockOffset(n, 0)} ms`,
    );
  if (o.s3Url && o.wire === true)
    for (let n = 0; n < nodes; n++) o.out(`n${n} first wire profile (S3 in namespaces only): ${describeWireProfile(plan.wire(n, 0))}`);
  o.out(`fault schedule (${plan.faults.length}):`);
  for (const f of plan.faults) o.out(`  ${describeFault(f)}`);
  if (plan.relayFaults.length > 0) o.out(`bucket relay faults (S3 in namespaces only; ${plan.relayFaults.length}):`);
  for (const f of plan.relayFaults) o.out(`  ${describeRelayFault(f)}`);
}

export function printReport(r: ChaosReport, repro: string, out: (line: string) => void): void {
  out('');
  out(`=== chaos run SEED=${r.seed} plan=${r.fingerprint}: ${(r.durationMs / 1_000).toFixed(0)} s ===`);
  out(`operations by kind (planned / sent / acknowledged): ${opsTable(r.outcomes)}`);
  const aimed = r.outcomes.filter((o) => o.op.aim !== undefined);
  out(
    `of them aimed at fault windows: ${aimed.length} (${aimed.filter((o) => o.attempts.some((a) => a.status === 200)).length} answered 200)`,
  );
  out(`attempts by answer: ${answers(r.outcomes)}`);
  out(
    `faults injected: ${
      Object.entries(r.faults)
        .map(([k, n]) => `${k} ${n}`)
        .join(', ') || 'none'
    }`,
  );
  const offsets = r.clockOffsets;
  if (offsets.length > 0)
    out(
      `clock offsets of the ${offsets.length} node runs: ${Math.min(...offsets)} .. ${Math.max(...offsets)} ms (skewBoundMs ${TIMINGS.skewBoundMs})`,
    );
  if (r.final) {
    const a = r.final.alarms;
    const late = [...a.lateness].sort((x, y) => x - y);
    const quiet = [...a.quiet].sort((x, y) => x - y);
    out(
      `alarm runs: ${a.runs} (${a.recurringRuns} of recurring series, ${a.retriedRuns} after failing); destroyed actors re-created by late requests: ${r.final.recreated}`,
    );
    out(`lateness, ms (run − scheduled), all runs: ${pcts(late)}`);
    out(`lateness outside fault windows (${quiet.length} runs; bound ${QUIET_BOUND_MS}): ${pcts(quiet)}`);
  }
  out(
    `leftovers: ${r.leftovers.processes} processes, temp folder ${r.leftovers.tempDir ? 'LEFT' : 'removed'}, network ${r.leftovers.network.length > 0 ? `LEFT: ${r.leftovers.network.join(', ')}` : 'removed'}`,
  );
  out(`violations: ${r.violations.length}`);
  if (r.violations.length === 0) return;
  const first = r.violations[0]!;
  out(`FIRST VIOLATION (${first.check}), ${(r.caughtAfterMs! / 1_000).toFixed(1)} s into the chaos phase: ${first.message}`);
  for (const v of r.violations.slice(1, 10)) out(`  also (${v.check}): ${v.message}`);
  out('requests around it:');
  for (const line of around(r, first)) out(`  ${line}`);
  out('fault windows:');
  for (const w of r.windows)
    out(
      `  ${w.fault.kind === 'staleListHold' ? describeRelayFault(w.fault) : describeFault(w.fault)}: ${rel(w.from)} .. ${w.to === Infinity ? '(never served again)' : rel(w.to)}${w.note ? ` ${w.note}` : ''}`,
    );
  out(`replay the plan: ${repro}`);
}

function opsTable(outcomes: readonly Outcome[]): string {
  const rows = new Map<string, [number, number, number]>();
  for (const o of outcomes) {
    const k = `${o.op.kind}${o.op.durable ? '(d)' : ''}`;
    const row = rows.get(k) ?? [0, 0, 0];
    row[0]++;
    if (o.sentAt !== undefined) row[1]++;
    if (o.ackedAt !== undefined) row[2]++;
    rows.set(k, row);
  }
  return [...rows].map(([k, [p, s, a]]) => `${k} ${p}/${s}/${a}`).join(', ');
}

function answers(outcomes: readonly Outcome[]): string {
  const counts = new Map<string, number>();
  for (const o of outcomes) for (const a of o.attempts) counts.set(answerOf(a), (counts.get(answerOf(a)) ?? 0) + 1);
  return [...counts]
    .sort((x, y) => y[1] - x[1])
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
}

const answerOf = (a: Attempt) => (a.status === 200 ? '200' : `${a.status} ${a.code ?? ''}`.trim());

function pcts(sorted: readonly number[]): string {
  if (sorted.length === 0) return 'none';
  return `p50 ${percentile(sorted, 50)} p90 ${percentile(sorted, 90)} p99 ${percentile(sorted, 99)} max ${sorted.at(-1)}`;
}

/** The attempts on the violation's actor (or op) within 5 s of it, oldest first. */
function around(r: ChaosReport, v: Violation): string[] {
  const focus = v.op === undefined ? undefined : r.outcomes[v.op];
  const t = focus?.attempts.at(-1)?.endAt ?? v.at;
  const lines: Array<[number, string]> = [];
  for (const o of r.outcomes) {
    const actor = actorName(o.op.slot, o.op.incarnation);
    if (actor !== v.actor && o !== focus) continue;
    for (const a of o.attempts) {
      if (o !== focus && Math.abs(a.sentAt - t) > 5_000) continue;
      const what = `${o.op.kind}${o.op.durable ? '(d)' : ''} ${o.op.id} #${a.n} via n${a.node}`;
      const answer = a.status === 200 ? `200 ${JSON.stringify(a.result)}` : `${a.status} ${a.code}: ${a.message ?? ''}`;
      lines.push([a.sentAt, `${rel(a.sentAt)}..${rel(a.endAt)} ${actor} ${what} → ${answer}`]);
    }
  }
  return lines
    .sort((x, y) => x[0] - y[0])
    .slice(-40)
    .map(([, l]) => l);
}
