/**
 * Runs the test files with node's test runner under tsx (Node 20's `--test` does not expand globs
 * itself), then ends with the list of failed and skipped tests.
 *
 *   tsx scripts/run-tests.ts                    every suite, in order unit → integration → cluster
 *   tsx scripts/run-tests.ts --suite=unit       one suite (scripts/test-suites.ts says which file is in which)
 *   tsx scripts/run-tests.ts test/store [file]  just these files or folders (any suite)
 *
 * Other arguments go to node's runner, e.g. `--test-name-pattern=fs`.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { SUITES, suiteOf, type Suite } from './test-suites.js';

/** What scripts/test-summary-reporter.mjs writes, one JSON line per test. */
interface SummaryLine {
  kind: 'failed' | 'skipped' | 'todo';
  file: string;
  path: string[];
  reason: string;
}

function collect(dir: string, out: string[]): string[] {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) collect(path, out);
    else if (name.endsWith('.test.ts')) out.push(path);
  }
  return out;
}

const args = process.argv.slice(2);
const suiteArg = args.find((a) => a.startsWith('--suite='))?.slice('--suite='.length);
if (suiteArg !== undefined && !(SUITES as readonly string[]).includes(suiteArg)) {
  console.error(`--suite must be one of ${SUITES.join(', ')}`);
  process.exit(2);
}
const paths = args.filter((a) => !a.startsWith('-'));
const flags = args.filter((a) => a.startsWith('-') && !a.startsWith('--suite='));
const files = (paths.length ? paths : ['test']).flatMap((p) => (statSync(p).isDirectory() ? collect(p, []) : [p]));

// Named paths run together; otherwise each suite in turn (the chosen one, or all).
const runs: Array<{ name: string; files: string[] }> = paths.length
  ? [{ name: 'selected', files }]
  : (suiteArg ? [suiteArg as Suite] : SUITES).map((s) => ({ name: s, files: files.filter((f) => suiteOf(f) === s) }));
if (runs.every((r) => r.files.length === 0)) {
  console.error('no test files found');
  process.exit(1);
}

const userReporter = flags.some((f) => f.startsWith('--test-reporter'));
const scratch = mkdtempSync(join(tmpdir(), 'kw-run-tests-'));
/**
 * Per-file time limits. Cluster files start real node processes and arm up to 1,000 actors
 * (test/cluster/sweep-orphans.test.ts): with two CPU-bound processes beside `npm test` on 2 cores,
 * a file of several such tests can run past 300 s although each of its tests passes.
 */
const TIMEOUT_MS: Record<string, number> = { unit: 300_000, integration: 300_000, cluster: 600_000 };

const summary: SummaryLine[] = [];
let status = 0;
const started = Date.now();
const times: string[] = [];
for (const run of runs) {
  if (run.files.length === 0) continue;
  console.log(`running ${run.files.length} test files (${run.name}): ${run.files.map((f) => relative('test', f)).join(' ')}`);
  const out = join(scratch, `${run.name}.jsonl`);
  const reporters = [
    ...(userReporter ? [] : [`--test-reporter=${process.stdout.isTTY ? 'spec' : 'tap'}`, '--test-reporter-destination=stdout']),
    '--test-reporter=./scripts/test-summary-reporter.mjs',
    `--test-reporter-destination=${out}`,
  ];
  const t0 = Date.now();
  const result = spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      '--test',
      '--test-concurrency=2',
      `--test-timeout=${TIMEOUT_MS[run.name] ?? 300_000}`,
      ...reporters,
      ...flags,
      ...run.files,
    ],
    { stdio: 'inherit' },
  );
  times.push(`${run.name} ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  if (result.status !== 0) status = result.status ?? 1;
  try {
    for (const l of readFileSync(out, 'utf8').split('\n')) if (l) summary.push(JSON.parse(l) as SummaryLine);
  } catch {
    summary.push({ kind: 'failed', file: '', path: [run.name], reason: 'the runner wrote no summary (did it crash?)' });
    status ||= 1;
  }
}
rmSync(scratch, { recursive: true, force: true });

const name = (s: SummaryLine) =>
  [s.file ? relative(process.cwd(), s.file) : '', ...s.path.filter((p) => p !== s.file)].filter(Boolean).join(' › ');
console.log(`\n==== summary: ${times.join(', ')}; ${((Date.now() - started) / 1000).toFixed(1)} s in all`);
// Tests a --test-name-pattern left out are not news.
const unpicked = (s: SummaryLine) => s.kind === 'skipped' && s.reason === 'test name does not match pattern';
const filtered = summary.filter(unpicked).length;
if (filtered) console.log(`not picked by the name pattern: ${filtered}`);
for (const kind of ['skipped', 'todo', 'failed'] as const) {
  const of = summary.filter((s) => s.kind === kind && !unpicked(s));
  console.log(`${kind}: ${of.length}`);
  for (const s of of) console.log(`  ${name(s)}${s.reason ? ` — ${s.reason}` : ''}`);
}
if (status !== 0 && summary.every((s) => s.kind !== 'failed')) console.log('(the runner exited non-zero without a failed test)');
process.exit(status);
