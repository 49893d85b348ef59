/**
 * `keepwork bench drain|calls` end to end: the bench's place in the bucket (refused unless
 * empty), each run of the plan on fresh nodes — once per swept value, `reps` times, ascending
 * then descending so a drift of the machine falls on every value alike — and the report.
 *
 *   for each run: start nodes ─▶ measure ─▶ stop every node ─▶ empty the bench's place
 *   at the end, on an error and on the abort (Ctrl-C): every node stopped, the place emptied
 *   (and removed if the bench created it), the report written with what was measured
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCalls } from './calls.js';
import { BenchAborted, runDrain } from './drain.js';
import { LocalNodes } from './local-nodes.js';
import { ProgressLine } from './progress-line.js';
import { writeReport, type BenchReport, type BenchRun, type SweepReport } from './report.js';
import { mean, recommend } from './stats.js';
import { assertEmpty, benchTarget, emptyTarget, openTarget, removeCreated } from './target.js';

export interface BenchPlan {
  kind: 'drain' | 'calls';
  bucket: string;
  prefix: string | undefined;
  set: Readonly<Record<string, number | boolean>>;
  sweep: { name: string; values: readonly number[] } | undefined;
  reps: number;
  outDir: string;
  drain: { alarms: number; nodes: number };
  calls: { keys: number; durable: boolean; seconds: number; inFlight: number };
}

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** The runs of a plan: [label, tunables] in order. */
export function runOrder(plan: Pick<BenchPlan, 'kind' | 'set' | 'sweep' | 'reps'>): [string, Record<string, number | boolean>][] {
  if (!plan.sweep) return Array.from({ length: plan.reps }, () => [plan.kind, { ...plan.set }]);
  const { name, values } = plan.sweep;
  const out: [string, Record<string, number | boolean>][] = [];
  for (let rep = 0; rep < plan.reps; rep++)
    for (const v of rep % 2 === 0 ? values : [...values].reverse()) out.push([`${name}=${v}`, { ...plan.set, [name]: v }]);
  return out;
}

/** Runs the plan; resolves with the report and where it was written (also after an abort or an error, which is rethrown after writing). */
export async function runBench(
  plan: BenchPlan,
  signal: AbortSignal,
  progress = new ProgressLine(),
): Promise<{ report: BenchReport; files: { json: string; html: string } }> {
  const target = benchTarget(plan.bucket, plan.prefix);
  const store = openTarget(target);
  const startedAt = new Date();
  const runs: BenchRun[] = [];
  let stopped: string | null = null;
  let failure: unknown;
  try {
    await assertEmpty(store, target.url);
  } catch (e) {
    await store.close();
    removeCreated(target);
    throw e;
  }
  const root = mkdtempSync(join(tmpdir(), 'keepwork-bench-'));
  try {
    for (const [i, [label, set]] of runOrder(plan).entries()) {
      if (signal.aborted) break;
      // Fresh data dirs per run: a node's data dir remembers its identity in the bucket emptied since.
      const runRoot = join(root, `run${i + 1}`);
      mkdirSync(runRoot);
      const local = new LocalNodes(runRoot);
      try {
        if (plan.kind === 'drain')
          runs.push({ kind: 'drain', ...(await runDrain({ ...plan.drain, set, label }, local, target.url, store, progress, signal)) });
        else runs.push({ kind: 'calls', ...(await runCalls({ ...plan.calls, set, label }, local, target.url, progress, signal)) });
      } finally {
        progress.end();
        await local.stopAll();
        await emptyTarget(store);
      }
    }
    if (signal.aborted) stopped = stoppedBy(signal);
  } catch (e) {
    failure = e;
    stopped = e instanceof BenchAborted || signal.aborted ? stoppedBy(signal) : `failed: ${(e as Error).message}`;
  } finally {
    await store.close();
    removeCreated(target);
    if (failure === undefined || signal.aborted) rmSync(root, { recursive: true, force: true });
    else progress.note(`node data and logs kept for inspection: ${root}`);
  }
  const report: BenchReport = {
    kind: plan.kind,
    version: VERSION,
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    bucket: target.url,
    complete: stopped === null,
    stopped,
    runs,
    sweep: plan.sweep ? sweepReport(plan, runs) : null,
  };
  mkdirSync(plan.outDir, { recursive: true });
  const stem = `keepwork-bench-${plan.kind}-${startedAt.toISOString().replace(/[:.]/g, '-')}`;
  const files = writeReport(plan.outDir, stem, report);
  if (failure !== undefined && !(failure instanceof BenchAborted) && !signal.aborted) throw Object.assign(failure as Error, { files });
  return { report, files };
}

const stoppedBy = (signal: AbortSignal) => `stopped by ${typeof signal.reason === 'string' ? signal.reason : 'an abort'}`;

function sweepReport(plan: BenchPlan, runs: BenchRun[]): SweepReport {
  const { name, values } = plan.sweep!;
  const metric = plan.kind === 'drain' ? 'drain rate' : 'calls per second';
  const unit = plan.kind === 'drain' ? 'alarms/s' : 'calls/s';
  const points = values.map((value) => {
    const measured = runs
      .filter((r) => r.complete && r.set[name] === value)
      .map((r) => (r.kind === 'drain' ? r.ratePerSec : r.callsPerSec));
    return { value, runs: measured, mean: mean(measured.filter(Number.isFinite)) };
  });
  return { name, metric, unit, better: 'higher', points, recommendation: recommend(points, 'higher', metric, unit) ?? null };
}
