/**
 * Small helpers shared by the benchmarks: timing, percentiles, tables, result files.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { request, type Agent } from 'node:http';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { fileURLToPath } from 'node:url';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { filesystemOf } from './support/filesystem.js';
import { parseTunable } from '../src/cli/tunables-help.js';
import { resolveOptions } from '../src/core/config.js';

export const quick = process.argv.includes('--quick');

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * A bench's command line (node:util parseArgs): its own options, plus `--quick` every bench
 * takes. Unknown options are refused with parseArgs' message, so a typo never runs the full plan.
 */
type Parsed<O extends Options> = ReturnType<typeof parseArgs<{ args: string[]; options: O; strict: true }>>['values'];

export function benchArgs<O extends Options>(options: O): Parsed<O> {
  return parseArgs({ args: process.argv.slice(2), options: { quick: { type: 'boolean' }, ...options }, strict: true }).values as Parsed<O>;
}

/** The same, for a bench that also takes positional arguments (files, a count, name=value pairs). */
export function benchCommand<O extends Options>(options: O): { values: Parsed<O>; positionals: string[] } {
  const r = parseArgs({
    args: process.argv.slice(2),
    options: { quick: { type: 'boolean' }, ...options },
    strict: true,
    allowPositionals: true,
  });
  return { values: r.values as Parsed<O>, positionals: r.positionals };
}

/**
 * `--set name=value` (repeatable): tunables for the bench's keepwork nodes (docs/tuning.md),
 * checked here, before any node starts: a pair that is not name=integer (name=true|false for a
 * switch), an unknown name or a value out of range is refused.
 */
export function setPairs(pairs: readonly string[] = []): Record<string, number | boolean> {
  const set = Object.fromEntries(
    pairs.map((pair) => {
      const parsed = parseTunable(pair);
      if (!parsed) throw new Error(`--set expects name=integer or name=true|false, got ${JSON.stringify(pair)}`);
      return parsed;
    }),
  );
  resolveOptions(set);
  return set;
}

/** `--k 1000,10000` → [1000, 10000]; undefined when the option was not given. */
export const numbers = (v: string | undefined) => v?.split(',').map(Number);
/** `--store fs,s3` → ['fs', 's3']. */
export const words = (v: string | undefined) => v?.split(',');

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Runs `op(i)` `total` times with `inFlight` at once; returns ops/s and latency percentiles (ms). */
export async function measure(total: number, inFlight: number, op: (i: number) => Promise<unknown>) {
  const latencies: number[] = [];
  let next = 0;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const lane = async () => {
    while (next < total) {
      const i = next++;
      const s = performance.now();
      await op(i);
      latencies.push(performance.now() - s);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  latencies.sort((a, b) => a - b);
  return {
    ops: total,
    opsPerSec: Math.round(total / seconds),
    /** CPU of this process (every thread) per op, ms: the client's cost where the server runs elsewhere. */
    cpuMsPerOp: round((cpu.user + cpu.system) / 1000 / total, 3),
    p50Ms: round(percentile(latencies, 50)),
    p99Ms: round(percentile(latencies, 99)),
  };
}

/**
 * Arms every name with one due time that comes after all of them are armed: the arming rate is
 * measured on the first 64 (armed an hour ahead, then again with the rest), and the due time is
 * `leadMs` plus half as much again as that rate says the whole lot takes. The caller checks
 * `armedBy` against `at` (a slower stretch can still run past it).
 */
export async function armAllBefore(
  names: readonly string[],
  inFlight: number,
  leadMs: number,
  arm: (name: string, at: number) => Promise<unknown>,
): Promise<{ at: number; startedAt: number; armedBy: number }> {
  const startedAt = Date.now();
  const first = names.slice(0, 64);
  await measure(first.length, inFlight, (i) => arm(first[i]!, startedAt + 3_600_000));
  const perCallMs = (Date.now() - startedAt) / Math.max(1, first.length);
  const at = Date.now() + leadMs + Math.ceil(perCallMs * names.length * 1.5);
  await measure(names.length, inFlight, (i) => arm(names[i]!, at));
  return { at, startedAt, armedBy: Date.now() };
}

export const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;

export function table(rows: Record<string, unknown>[]): string {
  if (rows.length === 0) return '(no rows)';
  const cols = Object.keys(rows[0]!);
  const cells = rows.map((r) => cols.map((c) => String(r[c] ?? '')));
  const widths = cols.map((c, i) => Math.max(c.length, ...cells.map((r) => r[i]!.length)));
  const line = (vals: string[]) => '| ' + vals.map((v, i) => v.padEnd(widths[i]!)).join(' | ') + ' |';
  return [line(cols), '|' + widths.map((w) => '-'.repeat(w + 2)).join('|') + '|', ...cells.map(line)].join('\n');
}

/** Writes bench/results/<name>.json with the fields every result carries (bench, at, quick, node, the data's file system). */
export function writeResult(name: string, data: Record<string, unknown>): string {
  const dir = fileURLToPath(new URL('./results', import.meta.url));
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.json`);
  const envelope = { bench: name, at: new Date().toISOString(), quick, node: process.version, filesystem: filesystemOf(tmpdir()).summary };
  writeFileSync(path, JSON.stringify({ ...envelope, ...data }, null, 2) + '\n');
  return path;
}

/** POSTs `body` to `url` through `agent`; rejects unless the answer is 200. */
export function httpPost(agent: Agent, url: string, body: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`HTTP ${res.statusCode}`))));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
