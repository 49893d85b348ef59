/**
 * Per-seed parameters (swarm testing): every run draws its own cluster size, timings, workload
 * and fault rates from its seed, so 200 seeds cover many corners rather than one average case.
 * Printed at the start of each run; the same seed always gives the same values.
 */
import { SeededRandom } from '../../src/core/random.js';
import { DEFAULTS, type KeepworkOptions } from '../../src/core/config.js';

export interface FaultParams {
  failP: number;
  timeoutP: number;
  timeoutAfterMs: number;
  landLateMaxMs: number;
  slowP: number;
  spikeP: number;
  spikeMaxMs: number;
  aimedDelayMs: number;
  aimedCutMs: number;
  /** Chance that a link upload, or a stale removal's per-actor LIST, is where a hang cut-off starts. */
  aimLinkP: number;
  aimListP: number;
  /**
   * Chance that a delivery of an own shard's entry (offered by the node's own walk: overdue, not
   * yet anyone's) is where a 'fail' cut-off starts, its lease renewing, for `aimDeliveryCutMs`
   * (past the idle timeout, so the hold's release fails too): the delivery fails, the node still
   * holds the actor, and the entry sits behind its walk's cursor. 0 on seeds of one shard.
   */
  aimDeliveryP: number;
  aimDeliveryCutMs: number;
  /** How overdue an entry is anyone's (anyonesAfterMargins margins). */
  anyonesAfterMs: number;
  marginMs: number;
}

export interface SimParams {
  seed: number;
  nodes: number;
  /** Nodes that join later with an alarm in their own data (R4). */
  joiners: number;
  actors: number;
  /** Virtual ms of chaos, then of the healed liveness phase. */
  chaosMs: number;
  livenessMs: number;
  /** A committed alarm must have fired this long after healing (the liveness bound). */
  livenessBoundMs: number;
  /** Mean gap between client calls, and between fault events (crash, cut, pause, stop). */
  callGapMs: number;
  faultGapMs: number;
  /** Alarm times are drawn from a grid of this step, so different events reuse the same times. */
  alarmStepMs: number;
  handlerFailP: number;
  handlerSlowP: number;
  rescheduleP: number;
  config: KeepworkOptions;
  faults: FaultParams;
  /** The index's shard count nodes start with (1: unsharded), and the one nodes restarted after half the chaos take (a change of S without a stop). */
  indexShards: number;
  indexShardsLater: number;
}

/** Offset of the seed of the shard count's own random stream (far from any seed a run uses). */
const SHARDS_STREAM = 2 ** 40;
/** Offset of the seed of the aimed delivery fault's own stream (network.ts aimAtDelivery). */
export const DELIVERY_STREAM = 2 ** 41;
/** Offset of the seed of the busy worker's window's own stream (replication/upload-pace.ts). */
const UPLOADS_STREAM = 2 ** 42;

const pick = <T>(r: SeededRandom, xs: readonly T[]): T => xs[r.int(xs.length)]!;
const between = (r: SeededRandom, lo: number, hi: number) => lo + r.int(hi - lo + 1);

export function drawParams(seed: number): SimParams {
  const r = new SeededRandom(seed);
  const leasePeriodMs = pick(r, [2_000, 3_000, 4_000]);
  const graceMs = pick(r, [500, 1_000]);
  const alarmSweepMs = pick(r, [500, 1_000, 2_000]);
  const retryMaxMs = pick(r, [4_000, 8_000]);
  const marginMs = leasePeriodMs + graceMs;
  const config: KeepworkOptions = {
    leasePeriodMs,
    graceMs,
    skewBoundMs: 200,
    alarmSweepMs,
    sweepAdaptive: r.int(2) === 1,
    sweepMinGapMs: 100,
    retryBaseMs: 250,
    retryMaxMs,
    idleTimeoutMs: pick(r, [1_500, 3_000, 6_000]),
    replicationDelayMs: pick(r, [5, 20, 50]),
    storeAttemptsMax: pick(r, [1, 2, 3]),
    storeRetryBaseMs: 20,
    handlerTimeoutMs: 5_000,
    snapshotEveryLinks: pick(r, [4, 16, 64]),
    checkpointEveryLinks: pick(r, [2, 8, 32]),
    linkRetentionMs: 0,
    dbCacheMax: pick(r, [4, 64]),
  };
  const faults: FaultParams = {
    failP: pick(r, [0, 0.005, 0.02, 0.05]),
    timeoutP: pick(r, [0.01, 0.04, 0.1]),
    timeoutAfterMs: pick(r, [50, 300, 1_000]),
    landLateMaxMs: pick(r, [500, 3_000, 2 * marginMs]),
    slowP: pick(r, [0.05, 0.2]),
    spikeP: pick(r, [0, 0.01, 0.03]),
    spikeMaxMs: pick(r, [500, 3_000]),
    aimedDelayMs: 2 * marginMs + 3 * alarmSweepMs + r.int(2 * alarmSweepMs),
    aimedCutMs: 3 * marginMs + 3 * alarmSweepMs,
    aimLinkP: pick(r, [0, 0.005, 0.02]),
    aimListP: pick(r, [0, 0.05, 0.2]),
    aimDeliveryP: 0, // drawn below, from a stream of its own
    aimDeliveryCutMs: 0,
    anyonesAfterMs: DEFAULTS.anyonesAfterMargins * marginMs,
    marginMs,
  };
  const params: SimParams = {
    seed,
    nodes: between(r, 2, 3),
    joiners: between(r, 0, 2),
    actors: between(r, 4, 10),
    chaosMs: 40_000,
    livenessMs: 0, // filled below from the bound
    livenessBoundMs: 4 * marginMs + retryMaxMs + 2 * alarmSweepMs + 5_000,
    callGapMs: pick(r, [100, 250, 500]),
    faultGapMs: pick(r, [2_000, 4_000, 8_000]),
    alarmStepMs: pick(r, [250, 500, 1_000]),
    handlerFailP: pick(r, [0, 0.1, 0.3]),
    handlerSlowP: pick(r, [0, 0.2, 0.5]),
    rescheduleP: pick(r, [0, 0.3, 0.6]),
    config,
    faults,
    indexShards: 1,
    indexShardsLater: 1,
  };
  // Drawn last, so every other parameter of a seed stays what it was before this one existed:
  // half the seeds take actors with no local file into memory for alarms, half restore to disk.
  config.alarmsInMemory = r.int(2) === 1;
  // Drawn after it, for the same reason: half the seeds start new actors in memory.
  config.newActorsInMemory = r.int(2) === 1;
  // The shard count comes from a stream of its own, so a seed that draws 1 keeps every parameter
  // and every later draw it had before sharding existed: half the seeds shard the index, and half
  // of those have nodes restarted after half the chaos with another count (1 among them).
  const s = new SeededRandom(seed + SHARDS_STREAM);
  if (s.int(2) === 1) {
    params.indexShards = pick(s, [2, 4, 8]);
    params.indexShardsLater =
      s.int(2) === 1
        ? pick(
            s,
            [1, 2, 4, 8].filter((n) => n !== params.indexShards),
          )
        : params.indexShards;
    config.indexShards = params.indexShards;
  }
  // The aimed delivery fault, on sharded seeds only, from a stream of its own: a seed of one shard
  // draws nothing from it and keeps its whole schedule.
  if (params.indexShards > 1) {
    const d = new SeededRandom(seed + DELIVERY_STREAM);
    faults.aimDeliveryP = pick(d, [0.2, 0.5, 1]);
    faults.aimDeliveryCutMs = config.idleTimeoutMs! + marginMs + alarmSweepMs;
  }
  // A busy worker's group-commit window (sim-node.ts cycles its load), from a stream of its own:
  // every other draw stays what it was.
  config.replicationDelayMaxMs = pick(new SeededRandom(seed + UPLOADS_STREAM), [100, 1_000, 5_000]);
  return params;
}

export function withLiveness(p: SimParams): SimParams {
  return { ...p, livenessMs: p.livenessBoundMs + 5_000 };
}

export function describeParams(p: SimParams): string {
  const f = p.faults;
  const c = p.config;
  return (
    `nodes=${p.nodes} joiners=${p.joiners} actors=${p.actors} lease=${c.leasePeriodMs} grace=${c.graceMs} sweep=${c.alarmSweepMs}` +
    ` adaptive=${c.sweepAdaptive} memory=${c.alarmsInMemory} newInMemory=${c.newActorsInMemory} idle=${c.idleTimeoutMs} calls/${p.callGapMs}ms faults/${p.faultGapMs}ms step=${p.alarmStepMs}` +
    ` fail=${f.failP} timeout=${f.timeoutP}@${f.timeoutAfterMs}ms landLate<${f.landLateMaxMs}ms spikes=${f.spikeP}` +
    ` handlerFail=${p.handlerFailP} reschedule=${p.rescheduleP} delayMax=${c.replicationDelayMaxMs}ms` +
    (p.indexShards > 1 ? ` shards=${p.indexShards}${p.indexShardsLater !== p.indexShards ? `→${p.indexShardsLater}` : ''}` : '')
  );
}
