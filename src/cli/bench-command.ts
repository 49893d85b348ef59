/**
 * `keepwork bench drain|calls`: checks the flags (every tunable, the swept one at each of its
 * values, before any node starts), runs the plan (src/bench/run-bench.ts) with Ctrl-C wired to
 * stop it cleanly, and prints a table of the runs, the sweep's recommendation and where the JSON
 * and HTML reports are. Exit 0; 1 on an error (the report of what ran is still written); 130
 * after Ctrl-C (SIGINT) or SIGTERM, which stop it the same way.
 */
import { BadConfig } from '../core/errors.js';
import { resolveOptions } from '../core/config.js';
import { runBench, type BenchPlan } from '../bench/run-bench.js';
import type { BenchReport } from '../bench/report.js';
import { ProgressLine } from '../bench/progress-line.js';
import { parseTargets } from '../bench/remote-nodes.js';
import { parseTunable } from './tunables-help.js';

export interface BenchFlags {
  bucket: string;
  prefix?: string;
  targets?: string;
  set?: Record<string, number | boolean>;
  sweep?: string;
  reps: number;
  out: string;
  alarms?: number;
  nodes?: number;
  keys?: number;
  durable?: boolean;
  seconds?: number;
  concurrency?: number;
}

/** `name=v1,v2,…` → the tunable and its integer values, each checked as `--set name=v` would be. */
export function parseSweep(text: string, set: Readonly<Record<string, number | boolean>>): { name: string; values: number[] } {
  const m = /^([A-Za-z]+)=(.+)$/.exec(text);
  if (!m) throw new BadConfig(`--sweep expects name=v1,v2,…, e.g. deliveryConcurrencyMax=32,128; got ${JSON.stringify(text)}`);
  const name = m[1]!;
  const values = m[2]!.split(',').map((v) => {
    const parsed = parseTunable(`${name}=${v.trim()}`);
    if (!parsed || typeof parsed[1] !== 'number')
      throw new BadConfig(`--sweep ${name}: every value must be an integer, got ${JSON.stringify(v)}`);
    resolveOptions({ ...set, [name]: parsed[1] });
    return parsed[1];
  });
  if (new Set(values).size !== values.length) throw new BadConfig(`--sweep ${name}: a value is repeated; use --reps to repeat runs`);
  return { name, values };
}

export async function benchCommand(kind: 'drain' | 'calls', o: BenchFlags): Promise<void> {
  const set = o.set ?? {};
  resolveOptions(set);
  const targets = o.targets === undefined ? undefined : parseTargets(o.targets);
  if (targets && o.sweep !== undefined)
    throw new BadConfig('--sweep needs nodes the bench starts: running nodes (--targets) keep the tunables they were started with');
  if (targets && o.nodes !== undefined) throw new BadConfig('--nodes counts nodes the bench starts; with --targets the targets drain');
  if (targets && kind === 'calls' && Object.keys(set).length > 0)
    throw new BadConfig('--set: with --targets `calls` starts no node, so no tunable applies (drain applies them to the node it kills)');
  const plan: BenchPlan = {
    kind,
    bucket: o.bucket,
    prefix: o.prefix,
    set,
    sweep: o.sweep === undefined ? undefined : parseSweep(o.sweep, set),
    reps: o.reps,
    outDir: o.out,
    targets,
    token: process.env.KEEPWORK_TOKEN || undefined,
    drain: { alarms: o.alarms ?? 2000, nodes: o.nodes ?? 2 },
    calls: { keys: o.keys ?? 1, durable: o.durable === true, seconds: o.seconds ?? 10, inFlight: o.concurrency ?? 32 },
  };
  const progress = new ProgressLine();
  const abort = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    progress.note(`stopping on ${signal}: the nodes are stopped and what was measured is written`);
    abort.abort(signal);
  };
  process.once('SIGINT', onSignal).once('SIGTERM', onSignal);
  try {
    const { report, files } = await runBench(plan, abort.signal, progress);
    console.log(summary(report));
    console.log(`report: ${files.html}\njson:   ${files.json}`);
    if (abort.signal.aborted) process.exitCode = 130;
  } catch (e) {
    const files = (e as { files?: { json: string; html: string } }).files;
    if (files) console.error(`the report of what ran: ${files.html}\njson: ${files.json}`);
    throw e;
  } finally {
    process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
  }
}

/** The runs as a table, then the sweep's metric per value and its recommendation. */
export function summary(r: BenchReport): string {
  const lines: string[] = [];
  for (const run of r.runs) {
    if (run.kind === 'drain')
      lines.push(
        `${run.label}: ${run.delivered}/${run.alarms} alarms, ${run.ratePerSec} alarms/s, drained ${run.drainSeconds} s after due, ` +
          `lateness p50 ${run.latenessMs?.p50 ?? '-'} ms p99 ${run.latenessMs?.p99 ?? '-'} ms, ` +
          `${run.requests.perUnit} bucket requests/alarm ($${run.requests.usdPerMillion} per million on S3)`,
      );
    else
      lines.push(
        `${run.label}: ${run.calls} calls, ${run.callsPerSec} calls/s, latency p50 ${run.latencyMs?.p50 ?? '-'} ms p99 ${run.latencyMs?.p99 ?? '-'} ms, ` +
          `${run.requests.perUnit} bucket requests/call ($${run.requests.usdPerMillion} per million on S3)`,
      );
  }
  if (r.sweep) {
    lines.push('', `${r.sweep.name}\t${r.sweep.metric} (${r.sweep.unit}, mean of the runs)`);
    for (const p of r.sweep.points) lines.push(`${p.value}\t${Number.isFinite(p.mean) ? Math.round(p.mean * 10) / 10 : '-'}`);
    const rec = r.sweep.recommendation;
    lines.push('', rec ? `recommendation: ${r.sweep.name}=${rec.value} (${rec.why})` : 'recommendation: none (no value was measured)');
  }
  if (!r.complete) lines.push(`incomplete: ${r.stopped}`);
  return lines.join('\n');
}
