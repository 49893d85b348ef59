/**
 * One run of the fleet model: N live nodes (node-model.ts) and K index entries left by dead
 * nodes, on virtual time, until every alarm ran or the run's wall-clock budget is spent.
 *
 *   backlog   K alarms due over `dueSpreadMs` ending at T (one millisecond when 0), all of one
 *             tenant, written under S shards; the nodes start at T, so the first entries are
 *             readable at T + margin (lease + grace), as in bench/drain
 *   drain     T + margin → the last alarm ran; lateness = ran − due
 *   pending   with `pendingAheadMs`, the K entries are due that far ahead instead (never overdue
 *             in the run): what sweeping a large index costs when nothing is due
 */
import { resolveOptions, type KeepworkOptions } from '../../../src/core/config.js';
import { SeededRandom } from '../../../src/core/random.js';
import { OwnedShards } from '../../../src/alarms/shard-owners.js';
import type { SweepNode } from '../../../src/alarms/plan-sweep.js';
import { NodeMetrics } from '../../../src/main/metrics.js';
import { percentile, round } from '../../lib.js';
import { FleetClock } from './clock.js';
import { shardPrefix, tenantPrefix } from '../../../src/alarms/keys.js';
import { FLEET_TENANT, IndexStore, actorKey, shardOfId } from './index-store.js';
import { Cores, FleetNode, type CpuInputs, type Fleet, type Relisting } from './node-model.js';
import { S3Model, VERBS, type S3Inputs, type Verb } from './s3-model.js';

export const T0_MS = 1_800_000_000_000;

export interface RunInputs {
  nodes: number;
  shards: number;
  alarms: number;
  dueSpreadMs: number;
  /** Entries due this far after T instead of before it (the pending scenario); 0: a backlog. */
  pendingAheadMs: number;
  /** Virtual time to simulate at most (the pending scenario's length). */
  horizonMs: number;
  /** Wall-clock budget; past it the drain is extrapolated from its rate. */
  budgetMs: number;
  seed: number;
  s3: S3Inputs;
  cpu: CpuInputs;
  /** Node tunables (docs/tuning.md), beyond indexShards. */
  set: KeepworkOptions;
  /** Count what each node lists again (a debug count: RunResult.relisted). */
  relisted?: boolean;
}

export interface RunResult {
  N: number;
  S: number;
  K: number;
  /** Every alarm ran within the budget. */
  drained: boolean;
  /** T + margin → last run, s (extrapolated when not drained). */
  drainS: number;
  delivered: number;
  virtualS: number;
  wallS: number;
  latenessS: { p50: number; p99: number; max: number };
  /** Index keys listed, per alarm delivered, per node (mean over nodes that delivered). */
  keysListedPerDelivery: number;
  listsPerNodePerS: number;
  keysListedPerNodePerS: number;
  /** Modelled sweep CPU, % of one core per node. */
  sweepCpuPct: number;
  duplicates: number;
  dropped: number;
  failures: number;
  requests: Record<Verb, number>;
  refused: Record<Verb, number>;
  dollars: Record<Verb, number> & { total: number };
  batchedDeletes: number;
  peak: S3Model['counts']['peak'];
  splits: number;
  /** Alarms that ran more than once (the accounting check: 0). */
  ranTwice: number;
  heapMb: number;
  /** With `relisted`: keys listed per alarm run, by walk and what their alarm was doing (summed over the nodes). */
  relisted?: Relisting;
  /** What limits a node's rate: each figure's min / median / max over the nodes. */
  perNode: Record<string, [number, number, number]>;
}

/**
 * The partitions a run starts with, as steady traffic would have left the bucket (the model's
 * assumption, printed with its results): one per top-level prefix; the actors' holds and state
 * in `actorPartitions` ranges each; the index one partition per tenant unsharded, one per shard
 * folder sharded (arming writes spread evenly over S folders).
 */
export function steadyPartitions(alarms: number, shards: number, actorPartitions: number): string[] {
  const bounds = ['alarms/', 'holds/', 'nodes/', 'state/', tenantPrefix(FLEET_TENANT)];
  for (let i = 1; i < actorPartitions; i++) {
    const id = Math.floor((i * Math.max(alarms, actorPartitions)) / actorPartitions);
    bounds.push(`holds/${actorKey(id)}`, `state/${actorKey(id)}`);
  }
  if (shards > 1) for (let s = 0; s < shards; s++) bounds.push(shardPrefix(FLEET_TENANT, s));
  return bounds;
}

function liveSet(n: number): SweepNode[] {
  return Array.from({ length: n }, (_, i) => ({ nodeId: `n${String(i).padStart(4, '0')}`, tenants: null, classes: ['Fleet'] }));
}

/** The due times of the run's entries. */
function dueTimes(r: RunInputs, marginMs: number): Float64Array {
  const due = new Float64Array(r.alarms);
  const random = new SeededRandom(r.seed);
  if (r.pendingAheadMs > 0) {
    for (let i = 0; i < r.alarms; i++) due[i] = T0_MS + r.pendingAheadMs + Math.floor(random.float() * 3_600_000);
    return due;
  }
  for (let i = 0; i < r.alarms; i++) due[i] = T0_MS - Math.floor(random.float() * r.dueSpreadMs);
  void marginMs;
  return due;
}

export async function runFleet(r: RunInputs, onProgress?: (line: string) => void): Promise<RunResult> {
  const wall0 = Date.now();
  const config = resolveOptions({ ...r.set, indexShards: r.shards });
  const clock = new FleetClock(T0_MS);
  const random = new SeededRandom(r.seed + 1);
  const index = new IndexStore(dueTimes(r, config.marginMs), (id) => shardOfId(id, r.shards));
  const live = liveSet(r.nodes);
  const f: Fleet = {
    clock,
    s3: new S3Model(r.s3, random.fork()),
    index,
    config,
    cpu: r.cpu,
    machines: Array.from({ length: Math.ceil(r.nodes / Math.max(1, r.cpu.nodesPerMachine)) }, () => new Cores(r.cpu.cores)),
    live,
    shardOwners: new OwnedShards(),
    metrics: new NodeMetrics(),
    state: new Uint8Array(r.alarms),
    owner: new Uint16Array(r.alarms),
    ranAtMs: new Float64Array(r.alarms),
    runs: new Uint8Array(r.alarms),
    tally: { delivered: 0, duplicates: 0, dropped: 0, failures: 0, lastRanMs: 0 },
    ...(r.relisted ? { relisted: true as const } : {}),
  };
  const nodes = live.map((_, i) => new FleetNode(i, f, random.fork()));
  for (const n of nodes) n.start();
  const deadline = wall0 + r.budgetMs;
  const pending = r.pendingAheadMs > 0;
  const readableMs = T0_MS + config.marginMs;
  let lastReport = Date.now();
  const stop = () => {
    if (Date.now() - lastReport > 10_000) {
      lastReport = Date.now();
      onProgress?.(
        `  N=${r.nodes} S=${r.shards}: ${round((clock.now() - T0_MS) / 1000, 1)} s virtual, ${f.tally.delivered} of ${r.alarms} ran`,
      );
    }
    return (!pending && f.tally.delivered >= r.alarms) || Date.now() > deadline;
  };
  await clock.run(T0_MS + r.horizonMs, stop);
  for (const n of nodes) n.stop();
  const endMs = clock.now();
  const drained = !pending && f.tally.delivered >= r.alarms;
  const virtualS = (endMs - T0_MS) / 1000;
  const drainS = drained ? (f.tally.lastRanMs - readableMs) / 1000 : extrapolate(f, r.alarms, readableMs, endMs);
  const lateness = new Float64Array(f.tally.delivered);
  let j = 0;
  let ranTwice = 0;
  for (let id = 0; id < r.alarms; id++) {
    if (f.runs[id]! > 1) ranTwice++;
    if (f.runs[id]! > 0) lateness[j++] = (f.ranAtMs[id]! - index.dueMs[id]!) / 1000;
  }
  lateness.sort();
  const late = [...lateness];
  const activeS = Math.max(0.001, virtualS);
  const delivering = nodes.filter((n) => n.stats.delivered > 0);
  const perNode = (g: (n: FleetNode) => number) => nodes.reduce((s, n) => s + g(n), 0) / nodes.length;
  const dollars = f.s3.dollars();
  return {
    N: r.nodes,
    S: r.shards,
    K: r.alarms,
    drained,
    drainS: round(drainS, 1),
    delivered: f.tally.delivered,
    virtualS: round(virtualS, 1),
    wallS: round((Date.now() - wall0) / 1000, 1),
    latenessS: { p50: round(percentile(late, 50), 1), p99: round(percentile(late, 99), 1), max: round(late.at(-1) ?? NaN, 1) },
    keysListedPerDelivery: round(
      delivering.reduce((s, n) => s + n.stats.keysListed / n.stats.delivered, 0) / Math.max(1, delivering.length),
      2,
    ),
    listsPerNodePerS: round(perNode((n) => n.stats.lists) / activeS, 2),
    keysListedPerNodePerS: round(perNode((n) => n.stats.keysListed) / activeS, 1),
    sweepCpuPct: round((perNode((n) => n.stats.sweepCpuMs) / (activeS * 1000)) * 100, 2),
    duplicates: f.tally.duplicates,
    dropped: f.tally.dropped,
    failures: f.tally.failures,
    requests: { ...f.s3.counts.requests },
    refused: { ...f.s3.counts.refused },
    dollars: { ...dollars, total: VERBS.reduce((s, v) => s + dollars[v], 0) },
    batchedDeletes: f.s3.counts.batchedKeys,
    peak: structuredClone(f.s3.counts.peak),
    splits: f.s3.counts.splits,
    ranTwice,
    perNode: perNodeSpread(nodes, f, readableMs),
    ...(r.relisted ? { relisted: relistedPerAlarm(nodes, f.tally.delivered) } : {}),
    heapMb: Math.round(process.memoryUsage().heapUsed / 1e6 + process.memoryUsage().arrayBuffers / 1e6),
  };
}

/**
 * Per node, from the start of the drain (T + margin) to its last delivery: alarms delivered and
 * owned shards, the rate, mean deliveries in flight and the highest delivery limit; of the sweeps
 * that offered entries, how many a second, the share that came back full, entries offered and
 * time taken per sweep; the share of time a sweep waited for room in the delivery queue, and
 * shard walks started from their folder's beginning (the first, and each after reading through).
 */
function perNodeSpread(nodes: readonly FleetNode[], f: Fleet, readableMs: number): Record<string, [number, number, number]> {
  const spread = (g: (n: FleetNode) => number): [number, number, number] => {
    const xs = nodes.map(g).sort((a, b) => a - b);
    return [round(xs[0] ?? NaN, 2), round(xs[xs.length >> 1] ?? NaN, 2), round(xs.at(-1) ?? NaN, 2)];
  };
  const activeS = (n: FleetNode) => Math.max(0.001, (n.stats.lastRanMs - readableMs) / 1000);
  const owned = (n: FleetNode) =>
    f.config.indexShards > 1
      ? f.shardOwners.of(
          FLEET_TENANT,
          f.config.indexShards,
          f.live.map((l) => l.nodeId),
          n.self.nodeId,
        ).length
      : 0;
  return {
    delivered: spread((n) => n.stats.delivered),
    ownedShards: spread(owned),
    // A node that ran nothing (it owned no shard, and others' entries never became anyone's) has no last run.
    'last ran s': spread((n) => (n.stats.delivered > 0 ? (n.stats.lastRanMs - readableMs) / 1000 : 0)),
    'alarms/s': spread((n) => n.stats.delivered / activeS(n)),
    'in flight': spread((n) => n.stats.deliveringMs / (activeS(n) * 1000)),
    'limit max': spread((n) => n.stats.limitMax),
    'offering sweeps/s': spread((n) => n.stats.offeringSweeps / activeS(n)),
    'full %': spread((n) => (100 * n.stats.fullSweeps) / Math.max(1, n.stats.offeringSweeps)),
    'offered/sweep': spread((n) => n.stats.offered / Math.max(1, n.stats.offeringSweeps)),
    'sweep ms': spread((n) => n.stats.sweepMs / Math.max(1, n.stats.offeringSweeps)),
    'room wait %': spread((n) => (100 * n.stats.roomWaitMs) / (activeS(n) * 1000)),
    'walk starts': spread((n) => n.stats.walkStarts),
  };
}

function relistedPerAlarm(nodes: readonly FleetNode[], delivered: number): Relisting {
  const sum: Relisting = {};
  for (const n of nodes) for (const [k, v] of Object.entries(n.relisting)) sum[k] = (sum[k] ?? 0) + v;
  return Object.fromEntries(
    Object.entries(sum)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => [k, round(v / Math.max(1, delivered), 4)]),
  );
}

/** A drain cut short: the time to run the rest at the mean rate since the entries were readable. */
function extrapolate(f: Fleet, k: number, readableMs: number, endMs: number): number {
  const done = f.tally.delivered;
  const spentS = (endMs - readableMs) / 1000;
  if (done === 0 || spentS <= 0) return Infinity;
  const rate = done / spentS;
  return spentS + (k - done) / rate;
}
