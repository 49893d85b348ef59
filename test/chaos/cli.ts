/**
 * `npm run chaos -- [--minutes M] [--seed S] [--nodes 3..5] [--bucket folder|s3] [--unsafe RULE] [--keep-going] [--keep] [--no-netns] [--no-wire]`
 *
 * One chaos run (run.ts, docs/testing.md): exit 0 with no violation, 1 with one (its seed, plan,
 * first violation, the requests around it and a replay command printed), 3 when the harness
 * failed. `--unsafe` plants a breakage (plan.ts UNSAFE) and, unless
 * `--keep-going`, stops at the first violation to report how long catching it took. `--keep`
 * keeps the run's folder (logs, data dirs, bucket) even when no check failed. Each node runs in a
 * network namespace of its own where root and nftables allow; `--no-netns` keeps them all in this one.
 * On S3 in namespaces each node run meets its wire profile at the bucket relay; `--no-wire` turns them off.
 * S3: `bash scripts/s3-test-server.sh up; eval "$(bash scripts/s3-test-server.sh env)"` first.
 */
import { parseArgs } from 'node:util';
import { UNSAFE, type Unsafe } from './plan.js';
import { printReport } from './report.js';
import { runChaos } from './run.js';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '2' },
    seed: { type: 'string' },
    nodes: { type: 'string', default: '3' },
    bucket: { type: 'string', default: 'folder' },
    unsafe: { type: 'string' },
    'keep-going': { type: 'boolean', default: false },
    keep: { type: 'boolean', default: false },
    'no-netns': { type: 'boolean', default: false },
    'no-wire': { type: 'boolean', default: false },
  },
});

function fail(message: string): never {
  console.error(`chaos: ${message}`);
  process.exit(2);
}

const seed = values.seed === undefined ? Math.floor(Math.random() * 1_000_000) : Number(values.seed);
if (!Number.isSafeInteger(seed) || seed < 0) fail('--seed must be a non-negative integer');
const minutes = Number(values.minutes);
if (!(minutes > 0 && minutes <= 240)) fail('--minutes must be in (0, 240]');
const nodes = Number(values.nodes);
if (!Number.isInteger(nodes) || nodes < 3 || nodes > 5) fail('--nodes must be 3, 4 or 5');
if (values.bucket !== 'folder' && values.bucket !== 's3') fail('--bucket must be folder or s3');
const s3Url = values.bucket === 's3' ? process.env.KEEPWORK_TEST_S3_URL : undefined;
if (values.bucket === 's3' && !s3Url)
  fail('--bucket s3 needs KEEPWORK_TEST_S3_URL (bash scripts/s3-test-server.sh up; eval "$(bash scripts/s3-test-server.sh env)")');
const unsafe = values.unsafe as Unsafe | undefined;
if (unsafe !== undefined && !(UNSAFE as readonly string[]).includes(unsafe)) fail(`--unsafe must be one of ${UNSAFE.join(', ')}`);

const repro = [
  `npm run chaos -- --seed ${seed} --minutes ${minutes} --nodes ${nodes} --bucket ${values.bucket}`,
  ...(unsafe ? [`--unsafe ${unsafe}`] : []),
  ...(values['keep-going'] ? ['--keep-going'] : []),
  ...(values['no-netns'] ? ['--no-netns'] : []),
  ...(values['no-wire'] ? ['--no-wire'] : []),
].join(' ');
const out = (line: string) => console.log(line);
try {
  const report = await runChaos({
    seed,
    chaosMs: Math.round(minutes * 60_000),
    nodes,
    ...(s3Url ? { s3Url } : {}),
    ...(unsafe ? { unsafe } : {}),
    stopOnViolation: unsafe !== undefined && !values['keep-going'],
    keepOnViolation: true,
    keep: values.keep,
    netns: !values['no-netns'],
    wire: !values['no-wire'],
    out,
  });
  printReport(report, repro, out);
  process.exitCode = report.violations.length > 0 ? 1 : 0;
} catch (e) {
  console.error(`chaos: the harness failed (SEED=${seed}): ${e instanceof Error ? e.stack : String(e)}`);
  console.error(`replay: ${repro}`);
  process.exitCode = 3;
}
