/**
 * `keepwork bench drain|calls` end to end: the bench's place in the bucket (refused unless
 * empty), each run of the plan on fresh nodes — once per swept value, `reps` times, ascending
 * then descending so a drift of the machine falls on every value alike — and the report.
 *
 *   for each run: start nodes ─▶ measure ─▶ stop every node ─▶ empty the bench's place
 *   at the end, on an error and on the abort (Ctrl-C): every node stopped, the place emptied
 *   (and removed if the bench created it), the report written with what was measured
 *
 * On running nodes (`--targets`, remote-nodes.ts) the place is theirs: it is checked to hold
 * only node records and tenant `bench`, each run starts only the node that dies, and what a run
 * made is removed by destroying each actor it called through the targets, not by deleting keys
 * under nodes that may still hold them.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { runCalls } from './calls.js';
import { BenchAborted, pendingEntries, runDrain, type BenchEnv, type DrainingNode } from './drain.js';
import { LocalNodes } from './local-nodes.js';
import { callActor, inLanes } from './node-calls.js';
import { ProgressLine } from './progress-line.js';
import { connectTargets } from './remote-nodes.js';
import { writeReport, type BenchReport, type BenchRun, type SweepReport } from './report.js';
import { mean, recommend } from './stats.js';
import { assertEmpty, benchTarget, emptyTarget, openTarget, removeCreated } from './target.js';
import type { ObjectStore } from '../store/types.js';

export interface BenchPlan {
  kind: 'drain' | 'calls';
  bucket: string;
  prefix: string | undefined;
  set: Readonly<Record<string, number | boolean>>;
  sweep: { name: string; values: readonly number[] } | undefined;
  reps: number;
  outDir: string;
  /** Running nodes to measure (base URLs), instead of nodes of the bench's own; and their token. */
  targets: readonly string[] | undefined;
  token: string | undefined;
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
  let targets: DrainingNode[] | undefined;
  try {
    await assertEmpty(store, target.url, plan.targets !== undefined);
    if (plan.targets) targets = await connectTargets(plan.targets, plan.token, store, target.url);
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
      const env: BenchEnv = {
        local: new LocalNodes(runRoot),
        bucketUrl: target.url,
        store,
        progress,
        signal,
        targets,
        runTag: targets ? `r${Date.now().toString(36)}-` : '',
        touched: new Set(),
      };
      try {
        if (plan.kind === 'drain') runs.push({ kind: 'drain', ...(await runDrain({ ...plan.drain, set, label }, env)) });
        else runs.push({ kind: 'calls', ...(await runCalls({ ...plan.calls, set, label }, env)) });
      } finally {
        progress.end();
        await env.local.stopAll();
        if (targets) {
          await destroyTouched(targets, env.touched, progress);
          await awaitEntriesGone(store, env.runTag, progress, signal);
        } else await emptyTarget(store);
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
    targets: targets?.map((t) => `${t.url} (${t.nodeId})`) ?? null,
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

/**
 * Destroys every actor a run called, through the running nodes in turn (also after Ctrl-C: the
 * targets did not get it; a second Ctrl-C ends the process and leaves them). A failure is
 * counted and named, not thrown: the measures stand.
 */
async function destroyTouched(targets: readonly DrainingNode[], touched: ReadonlySet<string>, progress: ProgressLine): Promise<void> {
  const addresses = [...touched];
  const failed: string[] = [];
  let done = 0;
  await inLanes(addresses.length, 32, new AbortController().signal, async (i) => {
    try {
      await callActor(targets[i % targets.length]!, addresses[i]!, 'destroy', []);
    } catch (e) {
      failed.push(`${addresses[i]}: ${(e as Error).message}`);
    }
    progress.update('removing the bench actors', ++done, addresses.length, 'destroyed', NaN);
  });
  progress.end();
  if (failed.length > 0)
    progress.note(`warning: ${failed.length} of ${addresses.length} bench actors could not be destroyed, e.g. ${failed[0]}`);
}

/** How long, after destroying a run's actors, the bench waits for the running nodes to remove their index entries. */
const ENTRIES_GONE_WAIT_MS = 60_000;

/**
 * Waits until no index entry of the run's actors is left in the bucket. A delivered alarm's entry
 * goes in a delete batched across actors once the link that replaced it is up, and a batched
 * delete that failed leaves it for the holder's next sweep to remove as stale: the running nodes
 * remove them, at their pace. Past the wait, a warning says how many are left; it does not throw.
 * After Ctrl-C it does not wait.
 */
async function awaitEntriesGone(store: ObjectStore, runTag: string, progress: ProgressLine, signal: AbortSignal): Promise<void> {
  const deadline = Date.now() + ENTRIES_GONE_WAIT_MS;
  const first = await pendingEntries(store, runTag);
  for (let left = first; left > 0 && !signal.aborted; left = await pendingEntries(store, runTag)) {
    if (Date.now() >= deadline) {
      progress.note(`warning: ${left} index entries of the bench actors are still in the bucket after ${ENTRIES_GONE_WAIT_MS / 1000} s`);
      return;
    }
    progress.update("the nodes removing the bench actors' index entries", first - left, first, 'removed', NaN);
    await sleep(500);
  }
  progress.end();
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
