/**
 * The chaos run's plan, a pure function of the seed and the run's shape: the operations of the
 * workload (each with its planned time, actor, node and arguments), the faults (kill -9 and
 * restart, clean stop and restart, SIGSTOP/SIGCONT past the lease — alone or followed by a cut
 * from the bucket —, a partition from the bucket (reads and writes, or writes only) or between two
 * nodes, a full data dir), each node run's bucket profile (the `fault+` wrapper's
 * schedule), its wire profile (the bucket relay's faults on its requests: S3 in namespaces only)
 * and each node run's clock offset (within skewBoundMs of every other node's). The same
 * seed gives the same plan on every machine; what real processes then make of it in time varies.
 *
 *   planRun(shape) ─▶ { ops, faults, profile(node, run), clockOffset(node, run) }
 *   fingerprint(plan) ─▶ a short hash
 *
 * Several faults overlap (a node killed while another is paused, each in its own bucket burst),
 * but at most `nodes − 1` nodes are down, paused, cut off from the bucket or out of disk at any
 * planned moment.
 * A race aimed at a long holdWrites (a staleListHold, below) gets a calm span: every other fault
 * that would keep a node busy in it is dropped from the schedule.
 */
import { createHash } from 'node:crypto';
import { SeededRandom } from '../../src/core/random.js';
import type { WireFaults } from './bucket-relay.js';

/** The nodes' timings (`--set`): a lease of 2 s, so a takeover takes seconds. */
export const TIMINGS = Object.freeze({
  leasePeriodMs: 2_000,
  graceMs: 500,
  skewBoundMs: 200,
  alarmSweepMs: 1_000,
  retryBaseMs: 200,
  retryMaxMs: 2_000,
  idleTimeoutMs: 8_000,
  forwardTimeoutMs: 2_000,
  storeRequestTimeoutMs: 5_000,
  workerThreads: 1,
});

/** lease + grace: how long after a node stops answering its actors may be taken. */
export const MARGIN_MS = TIMINGS.leasePeriodMs + TIMINGS.graceMs;

/** The protocol breakages a run can plant (test-only; each node of the run gets it). */
export const UNSAFE = [
  'earlyDurableReply',
  'noFence',
  'leaseOverstay',
  'skewBeyondBound',
  'noGenerationCheck',
  'uploadBeforeEntry',
  'deleteBeforeUpload',
  'skipIdempotencyRecord',
] as const;
export type Unsafe = (typeof UNSAFE)[number];

/**
 * `skewBeyondBound`: node 0's clock this far ahead of the machine's (the others' within the bound):
 * past lease + grace, so it reads every other node's lease as expired more than grace ago at once.
 */
export const SKEW_BEYOND_MS = TIMINGS.leasePeriodMs + TIMINGS.graceMs + 500;

export interface RunShape {
  seed: number;
  /** Length of the chaos phase. */
  chaosMs: number;
  nodes: number;
}

export type OpKind = 'apply' | 'read' | 'arm' | 'every' | 'clear' | 'destroy';

export interface Op {
  i: number;
  /** `c<seed>-<i>`: the idempotency key of a durable op, the log's op id of any. */
  id: string;
  /** Planned start, ms after the chaos phase begins. */
  at: number;
  slot: number;
  /** The actor's incarnation in its slot: a destroy moves the slot to the next one. */
  incarnation: number;
  kind: OpKind;
  durable: boolean;
  /** The node the first attempt goes to (retries go round the others). */
  via: number;
  /** arm / every: ms from the call to the alarm, the period (0: one-shot), failures before it runs. */
  inMs?: number;
  periodMs?: number;
  failTimes?: number;
  /** An op aimed at a fault's window (`aimedOps`): the fault's kind. */
  aim?: FaultKind | RelayFault['kind'];
  /** An arm at this time (ms, the machine's clock), not `inMs` from now: sent by the harness in a race (relay-faults.ts), never planned. */
  dueAt?: number;
}

export type Fault =
  | { at: number; kind: 'kill'; node: number; downMs: number; freshDir: boolean }
  | { at: number; kind: 'stop'; node: number; downMs: number }
  | { at: number; kind: 'pause'; node: number; pauseMs: number }
  /**
   * Cut from the bucket, 0.8 s later paused past lease + grace, and still cut until `cutMs` after
   * it resumes: the resumed node cannot learn that it was fenced (no renewal in flight at the pause
   * to come back with a 412, no listing of nodes/).
   */
  | { at: number; kind: 'pauseCut'; node: number; pauseMs: number; cutMs: number }
  /** Every bucket request of the node refused, reads and writes. */
  | { at: number; kind: 'bucketCut'; node: number; forMs: number }
  /** Every bucket write of the node refused, reads served: it cannot renew, nor learn it was fenced. */
  | { at: number; kind: 'writeCut'; node: number; forMs: number }
  /** Forwards between the node and its peer get no answer, both ways. */
  | { at: number; kind: 'peerCut'; node: number; peer: number; forMs: number }
  /** The node's data dir has no space left. */
  | { at: number; kind: 'diskFull'; node: number; forMs: number }
  /**
   * Every bucket write of the node outside the alarm index waits (its caller too) and lands when
   * the fault ends: its lease renewals, holds and link uploads. Its lease runs out, the others
   * take its actors over, and then its held uploads land.
   */
  | { at: number; kind: 'holdWrites'; node: number; forMs: number }
  /** The node's fsyncs of the folder bucket fail with EIO. */
  | { at: number; kind: 'fsyncFail'; node: number; forMs: number };

export type FaultKind = Fault['kind'];

/**
 * A fault the S3 bucket's relay makes (relay-faults.ts; S3 with the nodes in namespaces only), its
 * `holdMs` drawn from a stream of its own. A plan with no holdWrites long enough for one is what
 * it was before relay faults existed (ops, faults, fingerprint); one with such a hold plans the
 * race's actors and ops and drops the faults in its calm span, whatever the bucket.
 *
 *   staleListHold  from `at` for `forMs`: the first stale removal's listing of one of the race's
 *                  own actors (`slots`, armed through the held node, raceOps) a node sends is held
 *                  while another node sets that alarm time again, and lands after (the race R3
 *                  guards); the other node is then held `holdMs`. A race lost (no removal) is
 *                  tried again on the next such listing in the window
 */
export interface RelayFault {
  at: number;
  kind: 'staleListHold';
  forMs: number;
  holdMs: number;
  /** The node whose writes are held (the holdWrites fault the race is aimed at). */
  node: number;
  /** The race's own actors (RACE_ACTORS slots past the workload's): only their listings are held. */
  slots: number[];
  /**
   * The span, ms after the chaos phase begins, that the planned faults leave free (planRun drops
   * every other fault that would keep a node busy in it) and in which every node's bucket runs
   * calm (its `fault+` profile off: no refusals, ambiguous or late writes, stalls).
   */
  calm: { from: number; to: number };
}

/** A node run's bucket faults: the query of its `fault+` URL (empty: no wrapper). */
export interface BucketProfile {
  name: 'calm' | 'bursts' | 'ambiguous' | 'late' | 'stall' | 'outage' | 'mixed';
  query: string;
}

export interface Plan {
  shape: RunShape;
  slots: number;
  ops: Op[];
  faults: Fault[];
  /** The profile of a node's `run`-th start (0: the first), from the seed. */
  profile(node: number, run: number): BucketProfile;
  /** The clock offset of a node's `run`-th start: within ±skewBoundMs/2, so any two differ by the bound at most. */
  clockOffset(node: number, run: number): number;
  /** How the `i`-th fault is cut on the wire when the nodes run in network namespaces. */
  wireCut(i: number): WireCut;
  /** The bucket relay's faults on a node's `run`-th start's requests (S3 in namespaces only). Not in the fingerprint. */
  wire(node: number, run: number): WireProfile;
  /** The bucket relay's faults (S3 in namespaces only), in time order. */
  relayFaults: RelayFault[];
}

/**
 * A cut as packets dropped in a node's network namespace (faults.ts; nodes in namespaces only).
 * Drawn from a stream of its own, so that a seed's plan is the same with namespaces or without.
 *
 *   peerCut    `peers`: between the node and its peer; `client`: between the node and the harness
 *              (the clients: the node serves its peers, but no call of the workload reaches it)
 *   bucketCut  between the node and the bucket (an S3 bucket; a folder is no network)
 *
 * `direction`, at the node: `both`; `in`: what it receives is dropped, so its requests land and
 * their answers never come (a write applied that its sender cannot know of); `out`: what it sends.
 */
export interface WireCut {
  between: 'peers' | 'client';
  direction: 'both' | 'in' | 'out';
}

/**
 * A node run's wire profile: what the bucket relay does to its requests (bucket-relay.ts; S3 with
 * the nodes in namespaces only). Drawn from a stream of its own, so no other part of a seed's plan
 * changes with it (nor its fingerprint).
 *
 *   off       nothing
 *   latency   every request waits 20–200 ms at the relay (its range drawn per run, each request's
 *             wait per request)
 *   slowDown  latency, and in bursts of 1–3 s every 8–16 s a third of the writes and a tenth of
 *             the reads answered 503 SlowDown by the relay
 *   reset     latency, 3 % of the writes applied with their answer replaced by a reset, and 2 %
 *             reset before they are applied and landing 0.2–6 s later (after the node's retry,
 *             most often: a delete or a put of the past arriving late, what R1 is for)
 *   mixed     all of these
 */
export interface WireProfile {
  name: 'off' | 'latency' | 'slowDown' | 'reset' | 'mixed';
  faults?: WireFaults;
}

export const actorName = (slot: number, incarnation: number) => `chaos/ChaosLedger/a${slot}i${incarnation}`;

const OPS_PER_SECOND = 5;
const FAULT_GAP_MS = { min: 3_000, max: 9_000 };

export function planRun(shape: RunShape): Plan {
  const r = new SeededRandom(shape.seed);
  const slots = 6 + r.int(7);
  const base = planOps(shape, slots, r.fork());
  const faults = withRacesCalm(shape, planFaults(shape, r.fork()));
  const profileSeed = r.next32();
  const skewSeed = r.next32();
  const wireSeed = r.next32();
  const relayFaults = planRelayFaults(shape, faults, slots, new SeededRandom(r.next32()));
  const wireProfileSeed = r.next32();
  const ops = withAimedOps(shape, outsideQuietSpells(base, faults), [...aimedOps(shape, slots, faults), ...raceOps(shape, relayFaults)]);
  return {
    shape,
    slots: slots + relayFaults.length * RACE_ACTORS,
    ops,
    faults,
    profile: (node, run) => profileOf(new SeededRandom(profileSeed + node * 1_000 + run)),
    clockOffset: (node, run) => new SeededRandom(skewSeed + node * 1_000 + run).int(TIMINGS.skewBoundMs + 1) - TIMINGS.skewBoundMs / 2,
    wireCut: (i) => wireCutOf(new SeededRandom(wireSeed + i)),
    wire: (node, run) => wireProfileOf(new SeededRandom(wireProfileSeed + node * 1_000 + run)),
    relayFaults,
  };
}

/**
 * A staleListHold over each holdWrites long enough for its aimed alarms to be delivered by
 * another node (HELD_DELIVERY_MS): that delivery finds the actor's state naming no such entry and
 * removes it as stale, listing the actor's entries at that time (raceOps). The window runs from
 * the fault's start to a margin after its end; it needs a third node to set the time again through.
 * Each gets RACE_ACTORS actors of its own, after the workload's slots and every earlier window's.
 */
function planRelayFaults(shape: RunShape, faults: readonly Fault[], slots: number, r: SeededRandom): RelayFault[] {
  return racedHolds(shape, faults).map((f, k) => ({
    at: f.at,
    kind: 'staleListHold' as const,
    forMs: f.forMs + MARGIN_MS,
    holdMs: 3_000 + r.int(2_000),
    node: f.node,
    slots: Array.from({ length: RACE_ACTORS }, (_, j) => slots + k * RACE_ACTORS + j),
    calm: raceCalm(f),
  }));
}

/** The holdWrites faults a staleListHold race is aimed at: long enough, and a third node to set the time again through. */
function racedHolds(shape: RunShape, faults: readonly Fault[]): Extract<Fault, { kind: 'holdWrites' }>[] {
  if (shape.nodes < 3) return [];
  return faults.flatMap((f) => (f.kind === 'holdWrites' && f.forMs >= HELD_DELIVERY_MS ? [f] : []));
}

/** How many actors of its own each staleListHold race gets: the held node takes each, and any one stale listing of them is enough. */
export const RACE_ACTORS = 3;
/** Before a raced holdWrites, when the held node takes the race's actors (a durable apply through it: acknowledged once its link is up). */
const RACE_SETUP_MS = 3_000;
/**
 * After a race's window closes (its listing held by then at the latest), how long the race may
 * still run: the alarm time set again past lease + grace, a takeover, and the new owner held at
 * most 10 s (relay-faults.ts RACE_ARM_AFTER_MS, RACE_NEW_OWNER_MAX_MS), with a margin.
 */
const RACE_TAIL_MS = 15_000;

/** The calm span of a race aimed at `f`: from before its setup until its tail ends. */
function raceCalm(f: Extract<Fault, { kind: 'holdWrites' }>): { from: number; to: number } {
  return { from: f.at - RACE_SETUP_MS - 1_500, to: f.at + f.forMs + MARGIN_MS + RACE_TAIL_MS };
}

/**
 * The faults without those that would keep a node busy in a race's calm span (the race needs
 * three nodes serving, the held one up for its setup; a pause of the lister just after its listing
 * landed loses it). A raced hold that starts in an earlier one's span is dropped with the rest.
 * Only drops: the faults kept are drawn as before.
 */
function withRacesCalm(shape: RunShape, faults: readonly Fault[]): Fault[] {
  const busy = (f: Fault, span: { from: number; to: number }) => f.at < span.to && f.at + busyMs(f) > span.from;
  const spans: { hold: Fault; from: number; to: number }[] = [];
  for (const f of racedHolds(shape, faults)) if (!spans.some((s) => busy(f, s))) spans.push({ hold: f, ...raceCalm(f) });
  return faults.filter((f) => spans.every((s) => s.hold === f || !busy(f, s)));
}

/**
 * A race's setup, on its own actors (no op of the workload reaches them, so no other node holds
 * one): a durable apply to each through the held node RACE_SETUP_MS before its writes are held,
 * so that node takes them and their state is in the bucket; then, just after its writes are held,
 * an alarm armed on each through it, due once its lease has run out (HELD_ARM_IN_MS). Its entry
 * is listed (the index is not held), the link naming it waits, and another node's sweep delivers
 * it as stale: the listing the race holds (relay-faults.ts).
 */
function raceOps(shape: RunShape, races: readonly RelayFault[]): Aimed[] {
  const out: Aimed[] = [];
  for (const f of races) {
    const node = f.node;
    f.slots.forEach((slot, j) => {
      out.push({ at: f.at - RACE_SETUP_MS + j * 20, slot, kind: 'apply', durable: true, via: node, aim: f.kind });
      out.push({
        at: f.at + 150 + j * 20,
        slot,
        kind: 'arm',
        durable: false,
        via: node,
        inMs: HELD_ARM_IN_MS + j * 20,
        periodMs: 0,
        failTimes: 0,
        aim: f.kind,
      });
    });
  }
  return out.filter((o) => o.at >= 0 && o.at < shape.chaosMs);
}

function wireProfileOf(r: SeededRandom): WireProfile {
  const seed = r.int(2 ** 31 - 1);
  const min = 20 + r.int(61);
  const latencyMs = { min, max: min + 20 + r.int(200 - min - 20 + 1) };
  const slowDown = { writes: 0.3, reads: 0.1, burstEveryMs: 8_000 + r.int(8_001), burstMs: 1_000 + r.int(2_001) };
  const reset = 0.03;
  const p = r.float();
  const late = { p: 0.02, ms: { min: 200, max: 6_000 } };
  if (p < 0.2) return { name: 'off' };
  if (p < 0.4) return { name: 'latency', faults: { seed, latencyMs } };
  if (p < 0.6) return { name: 'slowDown', faults: { seed, latencyMs, slowDown } };
  if (p < 0.8) return { name: 'reset', faults: { seed, latencyMs, reset, late } };
  return { name: 'mixed', faults: { seed, latencyMs, slowDown, reset, late } };
}

export function describeWireProfile(w: WireProfile): string {
  const f = w.faults;
  if (!f) return w.name;
  const parts = [`${f.latencyMs ? `${f.latencyMs.min}–${f.latencyMs.max} ms` : 'no latency'}`];
  if (f.slowDown)
    parts.push(
      `503 SlowDown to ${f.slowDown.writes * 100} % of writes, ${f.slowDown.reads * 100} % of reads in ${f.slowDown.burstMs} ms bursts every ${f.slowDown.burstEveryMs} ms`,
    );
  if (f.reset !== undefined) parts.push(`${f.reset * 100} % of writes reset after applied`);
  if (f.late) parts.push(`${f.late.p * 100} % of writes reset before applied, landing ${f.late.ms.min}–${f.late.ms.max} ms later`);
  return `${w.name} (${parts.join('; ')})`;
}

function wireCutOf(r: SeededRandom): WireCut {
  const between = r.float() < 0.3 ? 'client' : 'peers';
  const p = r.float();
  return { between, direction: p < 0.5 ? 'both' : p < 0.8 ? 'in' : 'out' };
}

function planOps(shape: RunShape, slots: number, r: SeededRandom): Op[] {
  const ops: Op[] = [];
  const incarnation = new Array<number>(slots).fill(0);
  const count = Math.round((shape.chaosMs / 1_000) * OPS_PER_SECOND);
  for (let i = 0; i < count; i++) {
    const at = Math.floor((i / count) * shape.chaosMs) + r.int(200);
    const slot = r.int(slots);
    const p = r.float();
    const base = { i, id: `c${shape.seed}-${i}`, at, slot, incarnation: incarnation[slot]!, via: r.int(shape.nodes) };
    if (p < 0.38) ops.push({ ...base, kind: 'apply', durable: true });
    else if (p < 0.53) ops.push({ ...base, kind: 'apply', durable: false });
    else if (p < 0.63) ops.push({ ...base, kind: 'read', durable: false });
    else if (p < 0.83) {
      const failTimes = r.float() < 0.3 ? 1 + r.int(2) : 0;
      const inMs = r.float() < 0.5 ? r.int(1_000) : r.int(6_000);
      ops.push({ ...base, kind: 'arm', durable: r.float() < 0.7, inMs, periodMs: 0, failTimes });
    } else if (p < 0.87) {
      const failTimes = r.float() < 0.3 ? 1 : 0;
      ops.push({ ...base, kind: 'every', durable: true, inMs: 500 + r.int(3_000), periodMs: 1_000 + r.int(3_000), failTimes });
    } else if (p < 0.97) ops.push({ ...base, kind: 'clear', durable: r.float() < 0.5 });
    else {
      ops.push({ ...base, kind: 'destroy', durable: true });
      incarnation[slot]!++;
    }
  }
  return ops;
}

/** Faults one after the other at random gaps, each on a node picked so one at least stays up. */
function planFaults(shape: RunShape, r: SeededRandom): Fault[] {
  const faults: Fault[] = [];
  /** Until when each node is planned down or paused. */
  const busyUntil = new Array<number>(shape.nodes).fill(0);
  // The first fault after the cluster has warmed up; none in the last margin + 5 s.
  for (let at = 4_000 + r.int(3_000); at < shape.chaosMs - MARGIN_MS - 5_000; at += FAULT_GAP_MS.min + r.int(FAULT_GAP_MS.max)) {
    const free = busyUntil.map((u, n) => (u <= at ? n : -1)).filter((n) => n >= 0);
    const upElsewhere = (n: number) => busyUntil.some((u, m) => m !== n && u <= at);
    const candidates = free.filter(upElsewhere);
    if (candidates.length === 0) continue;
    const node = candidates[r.int(candidates.length)]!;
    const p = r.float();
    let fault: Fault;
    // A restart itself takes seconds (tsx), counted in the node's busy time; so does a rejoin
    // after a cut from the bucket or a full disk (the node may have been fenced, or exited).
    if (p < 0.2) fault = { at, kind: 'kill', node, downMs: r.float() < 0.3 ? 0 : r.int(4_000), freshDir: r.float() < 0.2 };
    else if (p < 0.28) fault = { at, kind: 'stop', node, downMs: r.int(3_000) };
    else if (p < 0.45) fault = { at, kind: 'pause', node, pauseMs: MARGIN_MS + 500 + r.int(3_500) };
    else if (p < 0.53) fault = { at, kind: 'pauseCut', node, pauseMs: MARGIN_MS + 500 + r.int(3_500), cutMs: 1_000 + r.int(4_000) };
    else if (p < 0.59) fault = { at, kind: 'writeCut', node, forMs: MARGIN_MS + 1_000 + r.int(5_000) };
    else if (p < 0.69) fault = { at, kind: 'bucketCut', node, forMs: 1_000 + r.int(5_000) };
    else if (p < 0.77) {
      const peer = (node + 1 + r.int(shape.nodes - 1)) % shape.nodes;
      fault = { at, kind: 'peerCut', node, peer, forMs: 3_000 + r.int(7_000) };
    } else if (p < 0.85) fault = { at, kind: 'diskFull', node, forMs: 2_000 + r.int(6_000) };
    else if (p < 0.94) fault = { at, kind: 'holdWrites', node, forMs: MARGIN_MS + 1_500 + r.int(4_000) };
    else fault = { at, kind: 'fsyncFail', node, forMs: 2_000 + r.int(4_000) };
    busyUntil[node] = at + busyMs(fault);
    faults.push(fault);
  }
  return faults;
}

/** How long a fault keeps its node from serving, as planned (a restart takes seconds). */
function busyMs(f: Fault): number {
  switch (f.kind) {
    case 'pause':
      return f.pauseMs;
    case 'pauseCut':
      return f.pauseMs + f.cutMs;
    case 'kill':
    case 'stop':
      return f.downMs + 6_000;
    case 'peerCut':
      return f.forMs;
    case 'bucketCut':
    case 'writeCut':
    case 'diskFull':
    case 'holdWrites':
    case 'fsyncFail':
      return f.forMs + 6_000;
  }
}

/** A partial op the plan aims at a fault: its index, id and incarnation come when it is merged. */
type Aimed = Omit<Op, 'i' | 'id' | 'incarnation'>;

/** Spacing of the reads aimed at a cut node, and how many each actor gets. */
const AIMED_READ_GAP_MS = 600;
const AIMED_READS = 3;
/**
 * Into a holdWrites fault, when the reads aimed at the held node begin: after the durable applies
 * through another node (lease + grace + 0.5 s and + 1 s) have had time to take its actors over.
 */
const HELD_READS_FROM_MS = MARGIN_MS + 1_600;
/**
 * How far ahead the alarm armed through a held node is due: past the held node's own lease
 * validity (its last renewal went out by the fault's start, so lease − skew after it at most),
 * so it cannot run the alarm itself and the entry waits for another node's sweep.
 */
const HELD_ARM_IN_MS = TIMINGS.leasePeriodMs;
/**
 * A holdWrites fault this long gets the alarms: their entries come due by another node's sweep
 * (lease + grace after their time, within a sweep) before the held writes land.
 */
const HELD_DELIVERY_MS = HELD_ARM_IN_MS + MARGIN_MS + 2 * TIMINGS.alarmSweepMs;

/**
 * Ops aimed at the windows the random workload seldom meets (docs/testing.md "Aimed ops"):
 *
 *   pauseCut, bucketCut (long enough for a takeover)  a durable apply to every actor through
 *       another node soon after the fault begins — acknowledged once another node took the actor
 *       over —, then reads of every actor through the faulted node while it serves and cannot
 *       yet learn it was fenced: a node that believes its lease longer than it is answers from
 *       its stale copy (the stale-read check)
 *   holdWrites shorter than HELD_DELIVERY_MS   durable applies to every actor through another
 *       node once the held node's lease has run out (they take its actors over), then reads of
 *       every actor through the held node: its writes wait rather than fail, so it neither learns
 *       that it was fenced nor gives its actors up, and answers from its open copies for as long
 *       as it believes its lease valid (the stale-read check)
 *   holdWrites of HELD_DELIVERY_MS or longer   an alarm armed on every actor through the held node
 *       just after its writes are held, due once its lease has run out (so it cannot run it): where
 *       it holds the actor, the entry is listed (the index is not held) and the link naming it
 *       waits. With the random workload quiet meanwhile (outsideQuietSpells), another node's sweep
 *       delivers the entry, taking the actor over, and removes it as stale — after the owner fence,
 *       which the held link then cannot pass; without the fence the link lands as the head, naming
 *       the removed entry (the index check's `missing`)
 */
function aimedOps(shape: RunShape, slots: number, faults: readonly Fault[]): Aimed[] {
  const out: Aimed[] = [];
  const other = (n: number) => (n + 1) % shape.nodes;
  const readsFrom = (f: Fault, from: number, until: number) => {
    for (let k = 0; k < AIMED_READS && from + k * AIMED_READ_GAP_MS < until; k++)
      for (let slot = 0; slot < slots; slot++)
        out.push({ at: f.at + from + k * AIMED_READ_GAP_MS + slot * 20, slot, kind: 'read', durable: false, via: f.node, aim: f.kind });
  };
  const applies = (f: Fault, from: number) => {
    for (let slot = 0; slot < slots; slot++)
      out.push({ at: f.at + from + slot * 20, slot, kind: 'apply', durable: true, via: other(f.node), aim: f.kind });
  };
  for (const f of faults) {
    if (f.kind === 'pauseCut') {
      applies(f, 500);
      readsFrom(f, f.pauseMs + 200, f.pauseMs + f.cutMs);
    } else if (f.kind === 'bucketCut' && f.forMs > MARGIN_MS + 1_000) {
      applies(f, 500);
      readsFrom(f, MARGIN_MS + 800, f.forMs);
    } else if (f.kind === 'holdWrites' && f.forMs >= HELD_DELIVERY_MS) {
      for (let slot = 0; slot < slots; slot++)
        out.push({
          at: f.at + 150 + slot * 20,
          slot,
          kind: 'arm',
          durable: false,
          via: f.node,
          inMs: HELD_ARM_IN_MS + slot * 20,
          periodMs: 0,
          failTimes: 0,
          aim: f.kind,
        });
    } else if (f.kind === 'holdWrites' && f.forMs >= HELD_READS_FROM_MS + AIMED_READ_GAP_MS) {
      applies(f, MARGIN_MS + 500);
      applies(f, MARGIN_MS + 1_000);
      readsFrom(f, HELD_READS_FROM_MS, f.forMs - 100);
    }
  }
  return out.filter((o) => o.at < shape.chaosMs);
}

/**
 * The planned ops but those a quiet spell drops: while the writes of a node are held long enough
 * for its alarms' entries to come due (HELD_DELIVERY_MS), no op of the random workload is sent,
 * so the first node to take over one of its actors is the one delivering such an entry, not one
 * a random call reached first (which would upload, taking the seq the held link needs).
 */
function outsideQuietSpells(base: readonly Op[], faults: readonly Fault[]): Op[] {
  const quiet = faults.flatMap((f) => (f.kind === 'holdWrites' && f.forMs >= HELD_DELIVERY_MS ? [{ from: f.at, to: f.at + f.forMs }] : []));
  return base.filter((o) => !quiet.some((q) => o.at >= q.from && o.at < q.to));
}

/**
 * The planned ops and the aimed ones in time order, numbered again; an aimed op goes to its
 * slot's incarnation at its time (after every destroy planned before it).
 */
function withAimedOps(shape: RunShape, base: readonly Op[], aimed: readonly Aimed[]): Op[] {
  if (aimed.length === 0) return [...base];
  const all: Aimed[] = [...base.map(({ i: _i, id: _id, incarnation: _inc, ...rest }) => rest), ...aimed];
  all.sort((a, b) => a.at - b.at); // stable: a planned op before an aimed one at the same ms
  const incarnation = new Map<number, number>();
  return all.map((o, i) => {
    const inc = incarnation.get(o.slot) ?? 0;
    if (o.kind === 'destroy') incarnation.set(o.slot, inc + 1);
    return { ...o, i, id: `c${shape.seed}-${i}`, incarnation: inc };
  });
}

function profileOf(r: SeededRandom): BucketProfile {
  const seed = `seed=${r.int(2 ** 31 - 1)}`;
  const burstEveryMs = 6_000 + r.int(8_000);
  const burstMs = 1_000 + r.int(2_500);
  const bursts = `burstEveryMs=${burstEveryMs}&burstMs=${burstMs}`;
  const p = r.float();
  if (p < 0.1) return { name: 'calm', query: '' };
  if (p < 0.25) return { name: 'bursts', query: `${seed}&unavailable=0.3&on=writes&${bursts}` };
  if (p < 0.4) return { name: 'ambiguous', query: `${seed}&ambiguous=0.05&late=0.02&lateMs=2000&${bursts}` };
  // Writes that land seconds after their caller heard AMBIGUOUS_WRITE (or after a pause of its node).
  if (p < 0.55) return { name: 'late', query: `${seed}&late=0.1&lateMs=${1_000 + r.int(3_000)}` };
  // Writes in flight most of the time: a pause of the node lands them after another took over.
  if (p < 0.8) return { name: 'stall', query: `${seed}&stallWritesMs=${150 + r.int(450)}` };
  // Every write refused for 3–6 s every 15–25 s: the node's renewals fail, its lease runs out while
  // it still reads and answers, and the others take its actors over.
  if (p < 0.9)
    return { name: 'outage', query: `on=writes&unavailable=1&burstEveryMs=${15_000 + r.int(10_000)}&burstMs=${3_000 + r.int(3_000)}` };
  return { name: 'mixed', query: `${seed}&unavailable=0.2&on=all&ambiguous=0.03&late=0.01&lateMs=1500&${bursts}` };
}

/**
 * The bucket URL a node run opens: `fault+<bucket>?<profile>&cutFile=…&cutWritesFile=…` (a calm
 * profile: the cut switches alone; no switches: the bucket itself).
 */
export function faultUrl(
  bucket: string,
  profile: BucketProfile,
  cuts?: { cutFile: string; cutWritesFile: string; holdWritesFile: string; calmFile?: string; fsyncFailFile?: string },
): string {
  const switches = cuts ? Object.entries(cuts).map(([name, path]) => `${name}=${encodeURIComponent(path)}`) : [];
  const query = [profile.query, ...switches].filter((q) => q !== '').join('&');
  if (query === '') return bucket;
  return `fault+${bucket}${bucket.includes('?') ? '&' : '?'}${query}`;
}

/** A short hash of the ops, the faults and the first profiles: equal for equal plans. */
export function fingerprint(plan: Plan): string {
  const profiles = Array.from({ length: plan.shape.nodes }, (_, n) => [0, 1, 2].map((k) => plan.profile(n, k).query));
  const offsets = Array.from({ length: plan.shape.nodes }, (_, n) => [0, 1, 2].map((k) => plan.clockOffset(n, k)));
  const text = JSON.stringify({ slots: plan.slots, ops: plan.ops, faults: plan.faults, profiles, offsets });
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

export function describeFault(f: Fault): string {
  const when = `+${(f.at / 1_000).toFixed(1)}s n${f.node}`;
  if (f.kind === 'kill') return `${when} kill -9, restart after ${f.downMs} ms${f.freshDir ? ' on a fresh data dir' : ''}`;
  if (f.kind === 'stop') return `${when} SIGTERM, restart after ${f.downMs} ms`;
  if (f.kind === 'pause') return `${when} SIGSTOP for ${f.pauseMs} ms`;
  if (f.kind === 'pauseCut') return `${when} SIGSTOP for ${f.pauseMs} ms, cut from the bucket until ${f.cutMs} ms after`;
  if (f.kind === 'bucketCut') return `${when} cut off from the bucket for ${f.forMs} ms`;
  if (f.kind === 'writeCut') return `${when} bucket writes refused (reads served) for ${f.forMs} ms`;
  if (f.kind === 'peerCut') return `${when} cut off from n${f.peer} (forwards) for ${f.forMs} ms`;
  if (f.kind === 'holdWrites') return `${when} bucket writes outside the index held for ${f.forMs} ms, then landed`;
  if (f.kind === 'fsyncFail') return `${when} fsyncs of the folder bucket fail (EIO) for ${f.forMs} ms`;
  return `${when} data dir full for ${f.forMs} ms`;
}

export function describeRelayFault(f: RelayFault): string {
  return `+${(f.at / 1_000).toFixed(1)}s for ${f.forMs} ms: the first stale removal's listing held at the bucket relay while another node sets that alarm time again; that node then held ${f.holdMs} ms`;
}
