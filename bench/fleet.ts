/**
 * bench/fleet: a model of a keepwork fleet — N live nodes draining K overdue alarms left by dead
 * nodes, in one process on virtual time, running the real sweep, planner, shard owners, timer and
 * delivery queue over a modelled S3 (bench/support/fleet/: clock, s3-model, index-store,
 * node-model, run, arming). For both layouts (S = 1, and S chosen per N) and each N it prints the
 * drain time, index keys listed per delivered alarm per node, requests and dollars by verb, peak
 * per-partition rates and 503s, lateness; then one tenant's arming rate against 503s, and the
 * per-node sweep cost with a large index of pending (not overdue) alarms. The model's inputs are
 * printed and written with its results.
 *
 *   npm run bench -- fleet [--quick] [--n 10,100,1000] [--k 1000000] [--pending-k 10000000]
 *                          [--shards-per-node 2] [--budget-s 240] [--calibrate] [--seed 1]
 *                          [--skip drain,pending,arming,s1] [--machine-cores 2] [--nodes-per-machine 1]
 *                          [--cpu-per-alarm-ms 1.3-2.0] [--latency-ms per-verb] [--out fleet] [--relisted]
 *                          [--due-spread-s 0]
 *
 * Writes bench/results/<out>.json and <out>.svg (drain time against N, both layouts); out is
 * fleet (fleet-quick with --quick) unless given.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { benchArgs, numbers, quick, round, table, writeResult } from './lib.js';
import { lineChart } from './support/svg-chart.js';
import { ARMING_DELAYS, runArming, type ArmingResult } from './support/fleet/arming.js';
import { REAL_RUNS, realInputs } from './support/fleet/calibration.js';
import type { CpuInputs } from './support/fleet/node-model.js';
import { runFleet, steadyPartitions, type RunInputs, type RunResult } from './support/fleet/run.js';
import { AWS_LATENCY, S3_STANDARD_PRICES, type S3Inputs } from './support/fleet/s3-model.js';

// A million-entry index makes garbage fast: a larger young generation halves the collector's share.
if (!process.execArgv.some((a) => a.startsWith('--max-semi-space-size'))) {
  const r = spawnSync(
    process.execPath,
    ['--max-semi-space-size=64', ...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)],
    {
      stdio: 'inherit',
    },
  );
  process.exit(r.status ?? 1);
}

const args = benchArgs({
  n: { type: 'string' },
  k: { type: 'string' },
  'pending-k': { type: 'string' },
  'shards-per-node': { type: 'string', default: '2' },
  'budget-s': { type: 'string' },
  calibrate: { type: 'boolean' },
  seed: { type: 'string', default: '1' },
  skip: { type: 'string' },
  'machine-cores': { type: 'string', default: '2' },
  'nodes-per-machine': { type: 'string', default: '1' },
  'cpu-per-alarm-ms': { type: 'string' },
  out: { type: 'string' },
  relisted: { type: 'boolean' },
  'latency-ms': { type: 'string' },
  'due-spread-s': { type: 'string', default: '0' },
});
/** Parts of the run to leave out: drain, pending, arming, s1 (the drains with S = 1); e.g. one drain alone, to look at one row. */
const skip = new Set(args.skip?.split(',') ?? []);

const ns = numbers(args.n) ?? (quick ? [3, 10] : [10, 100, 1000]);
const k = Number(args.k ?? (quick ? 20_000 : 1_000_000));
const pendingK = Number(args['pending-k'] ?? (quick ? 100_000 : 10_000_000));
const budgetMs = Number(args['budget-s'] ?? (quick ? 8 : 240)) * 1000;
const seed = Number(args.seed);
const shardsPerNode = Number(args['shards-per-node']);

/** S for N nodes: the power of two at or above shardsPerNode · N (tuning.md: between N and 4·N), at most 4,096. */
const shardsFor = (n: number) => Math.min(4096, 2 ** Math.ceil(Math.log2(Math.max(2, shardsPerNode * n))));

/** Actors' holds and state are spread over this many partitions each (the steady bucket). */
const ACTOR_PARTITIONS = 256;

/** A delivery's CPU, ms: a range (`min-max`, each delivery a uniform draw) or one figure. */
const [deliveryMinMs, deliveryMaxMs] = (args['cpu-per-alarm-ms'] ?? '1.3-2.0').split('-').map(Number) as [number, number?];

/** A node's CPU: by default a machine of 2 cores of its own. */
const CPU: CpuInputs = {
  cores: Number(args['machine-cores']),
  nodesPerMachine: Number(args['nodes-per-machine']),
  deliveryMinMs,
  deliveryMaxMs: deliveryMaxMs ?? deliveryMinMs,
  duplicateMs: 0.5,
  listMs: 0.6,
  keyUs: 5,
  weightNs: 100,
};

function s3For(alarms: number, shards: number): S3Inputs {
  return {
    latency: args['latency-ms'] === undefined ? AWS_LATENCY : { fixedMs: Number(args['latency-ms']) },
    writesPerSecond: 3500,
    readsPerSecond: 5500,
    splitAfterS: 60,
    partitionBounds: steadyPartitions(alarms, shards, ACTOR_PARTITIONS),
    pricePer1000: S3_STANDARD_PRICES,
  };
}

function inputs(nodes: number, shards: number, alarms: number, extra: Partial<RunInputs> = {}): RunInputs {
  return {
    nodes,
    shards,
    alarms,
    dueSpreadMs: Number(args['due-spread-s']) * 1000,
    pendingAheadMs: 0,
    horizonMs: 3_600_000,
    budgetMs,
    seed,
    s3: s3For(alarms, shards),
    cpu: CPU,
    set: {},
    relisted: args.relisted ?? false,
    ...extra,
  };
}

const usd = (n: number) => `$${n < 0.01 ? n.toFixed(4) : n.toFixed(2)}`;

function drainRow(r: RunResult) {
  return {
    N: r.N,
    S: r.S,
    K: r.K.toLocaleString('en'),
    'drain s': r.drained ? r.drainS : `~${r.drainS} (extrapolated: ${r.delivered.toLocaleString('en')} ran in ${r.virtualS} s)`,
    'late p50/p99 s': `${r.latenessS.p50} / ${r.latenessS.p99}`,
    'keys listed per alarm per node': r.keysListedPerDelivery,
    'LISTs/node/s': r.listsPerNodePerS,
    'sweep CPU % of a core': r.sweepCpuPct,
    'GET / PUT / LIST / DeleteObjects': `${r.requests.GET} / ${r.requests.PUT} / ${r.requests.LIST} / ${r.requests.DeleteObjects}`,
    $: `${usd(r.dollars.total)} (${usd(r.dollars.PUT)} PUT, ${usd(r.dollars.LIST)} LIST, ${usd(r.dollars.GET)} GET)`,
    'peak index r/w per s': `${r.peak.index.reads} / ${r.peak.index.writes}`,
    'peak actors r/w per s': `${r.peak.actors.reads} / ${r.peak.actors.writes}`,
    '503s': Object.values(r.refused).reduce((a, b) => a + b, 0),
    'dup / dropped': `${r.duplicates} / ${r.dropped}`,
    wall: `${r.wallS} s`,
  };
}

function perNodeRow(r: RunResult) {
  return { N: r.N, S: r.S, ...Object.fromEntries(Object.entries(r.perNode).map(([k, v]) => [k, v.join(' / ')])) };
}

function pendingRow(r: RunResult) {
  return {
    N: r.N,
    S: r.S,
    'pending entries': r.K.toLocaleString('en'),
    'LISTs/node/s': r.listsPerNodePerS,
    'keys listed/node/s': r.keysListedPerNodePerS,
    'sweep CPU % of a core': r.sweepCpuPct,
    'LIST $/hour (fleet)': usd(((r.requests.LIST / r.virtualS) * 3600 * S3_STANDARD_PRICES.LIST) / 1000),
    wall: `${r.wallS} s`,
  };
}

/**
 * The model against each real run of bench/drain it can read (support/fleet/calibration.ts): the
 * same nodes on one machine of this machine's cores, the run's CPU per alarm, its fixed latency,
 * no request limits.
 */
async function calibrate(progress: (line: string) => void) {
  const cores = availableParallelism();
  const rows = [];
  for (const run of REAL_RUNS) {
    const real = realInputs(run);
    if (!real) {
      console.log(`\ncalibration: bench/results/${run.out}.json (with a CPU curve) is missing; run ${run.command}`);
      continue;
    }
    const s3 = { ...s3For(real.alarms, 1), latency: { fixedMs: run.latencyMs }, writesPerSecond: Infinity, readsPerSecond: Infinity };
    const cpu = { ...CPU, cores, nodesPerMachine: real.nodes, deliveryMinMs: real.cpuPerAlarmMs, deliveryMaxMs: real.cpuPerAlarmMs };
    const model = await runFleet({ ...inputs(real.nodes, 1, real.alarms), s3, cpu }, progress);
    rows.push({
      real,
      model,
      inputs: { machineCores: cores, nodesPerMachine: real.nodes, cpuPerAlarmMs: real.cpuPerAlarmMs, latencyMs: run.latencyMs },
    });
  }
  console.log(
    `\nCalibration: the model given each real run's nodes (on one machine of ${cores} cores), CPU per alarm and latency; S = 1, no request limits\n` +
      table(
        rows.map(({ real, model }) => ({
          'real run': `${real.run.out}.json (${real.at.slice(0, 10)})`,
          N: real.nodes,
          K: real.alarms.toLocaleString('en'),
          'latency ms': real.run.latencyMs,
          'CPU ms per alarm (real, all threads)': real.cpuPerAlarmMs,
          'real drain s': real.drainS,
          'model drain s': model.drainS,
          'model / real': round(model.drainS / real.drainS, 2),
          'model late p50/p99 s': `${model.latenessS.p50} / ${model.latenessS.p99}`,
        })),
      ),
  );
  return rows;
}

async function main() {
  const progress = (line: string) => console.error(line);
  const modelInputs = {
    cpu: CPU,
    s3: {
      ...s3For(0, 1),
      partitionBounds: `steady: top-level prefixes; holds/ and state/ in ${ACTOR_PARTITIONS} ranges each; the index one partition (S = 1) or one per shard folder (S > 1)`,
    },
    latencySource:
      'AWS S3 performance guidelines (first-byte latency of small objects: tens of ms; 3,500 PUT/COPY/POST/DELETE and 5,500 GET/HEAD per second per partitioned prefix, 503 SlowDown while scaling); RGW on this machine (docs/benchmarks.md store, s3-overhead) answers in 2–12 ms on loopback, so the model uses AWS-like figures',
    cpuSource:
      'docs/benchmarks.md "drain": 1.2–2 ms of CPU per delivered alarm on one node of a 2-core machine; s3-overhead: ~0.5 ms per SDK request (a LIST: listMs); keyUs, weightNs: parseEntryKey and a rendezvous weight on this machine',
    requestsPerDelivery: 'hold PUT, chain LIST, snapshot GET, link PUT; then the entry in a DeleteObjects batch and a release PUT',
    scenario: `every alarm due ${args['due-spread-s'] === '0' ? 'at T (one millisecond)' : `over the ${args['due-spread-s']} s before T`}; nodes start at T; drain = T + margin (15 s) → the last alarm ran`,
    machines: `${CPU.nodesPerMachine} node(s) per machine of ${CPU.cores} cores, sharing them`,
    shardsPerN: `S = the power of two ≥ ${shardsPerNode}·N`,
    budgetS: budgetMs / 1000,
    seed,
  };
  console.log('fleet model inputs:\n' + JSON.stringify(modelInputs, null, 2));

  const drains: RunResult[] = [];
  for (const n of skip.has('drain') ? [] : ns)
    for (const s of skip.has('s1') ? [shardsFor(n)] : [1, shardsFor(n)]) {
      console.error(`drain: N=${n} S=${s} K=${k}`);
      drains.push(await runFleet(inputs(n, s, k), progress));
    }
  console.log('\nDrain of K overdue alarms left by dead nodes\n' + table(drains.map(drainRow)));
  console.log('\nPer node (min / median / max over the nodes), drain start → its last delivery\n' + table(drains.map(perNodeRow)));
  for (const r of drains.filter((d) => d.relisted))
    console.log(
      `\nKeys listed per alarm run, N=${r.N} S=${r.S} (--relisted)\n` +
        table(Object.entries(r.relisted!).map(([what, n]) => ({ what, n }))),
    );

  const pending: RunResult[] = [];
  for (const n of skip.has('pending') ? [] : ns)
    for (const s of [1, shardsFor(n)]) {
      console.error(`pending: N=${n} S=${s} K=${pendingK}`);
      pending.push(
        await runFleet(inputs(n, s, pendingK, { pendingAheadMs: 3_600_000, horizonMs: 60_000, budgetMs: budgetMs * 2 }), progress),
      );
    }
  console.log('\nSweeping an index of pending (not overdue) alarms, 60 s\n' + table(pending.map(pendingRow)));

  const arming: ArmingResult[] = [];
  const seconds = quick ? 5 : 30;
  for (const s of skip.has('arming') ? [] : [1, 256])
    for (const rate of quick ? [3_000, 20_000] : [3_000, 10_000, 50_000, 200_000])
      arming.push(runArming(s, rate, seconds, s3For(0, s), seed));
  console.log(
    `\nOne tenant arming (one index PUT each, due ${ARMING_DELAYS.minDelayMs / 1000}–${ARMING_DELAYS.maxDelayMs / 1000} s ahead), ${seconds} s\n` +
      table(
        arming.map((a) => ({ S: a.S, 'PUTs/s': a.ratePerS, '503s': a.refused, 'seconds with 503s': a.secondsRefused, splits: a.splits })),
      ),
  );

  const calibration = args.calibrate ? await calibrate(progress) : [];

  const svg = lineChart({
    title: `Fleet model: draining ${k.toLocaleString('en')} overdue alarms`,
    xLabel: 'live nodes N (log10)',
    yLabel: 'drain time, s (T + margin → last alarm)',
    series: [
      {
        label: 'S = 1 (the decision record)',
        points: drains.filter((r) => r.S === 1).map((r) => [round(Math.log10(r.N), 3), r.drainS] as const),
      },
      { label: `S ≥ ${shardsPerNode}·N`, points: drains.filter((r) => r.S > 1).map((r) => [round(Math.log10(r.N), 3), r.drainS] as const) },
    ],
  });
  const out = args.out ?? (quick ? 'fleet-quick' : 'fleet');
  const chart = fileURLToPath(new URL(`./results/${out}.svg`, import.meta.url));
  writeFileSync(chart, svg);
  const path = writeResult(out, {
    inputs: modelInputs,
    drains,
    pending,
    arming,
    calibration,
    armingDelays: ARMING_DELAYS,
  });
  console.log(`\nwrote ${path}, ${chart}`);
}

await main();
