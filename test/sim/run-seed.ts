/**
 * One simulation run: a seed (and optionally one unsafe variant) in, a verdict out.
 *
 *   params from the seed ─▶ founding nodes start, joiners prepared ─▶ chaos phase (workload +
 *   faults, chaosMs) ─▶ healed liveness phase (livenessMs) ─▶ liveness check
 *   every 50 ms of virtual time: the index invariant (invariant.ts), no delivery before its due
 *   time, and the durable check — every acknowledged durable call's row is in the bucket's head,
 *   from its reply on (group commit's output gate); the first violation ends the run.
 *
 * Verdicts and exit codes: ok 0 · safety 1 (the invariant or an early delivery) · liveness 2 (a
 * committed alarm that did not fire within the bound after healing) · error 3 (the harness or
 * the code under test threw where it must not, or an `invariant` of src/core/invariant.ts failed:
 * the run ends at the next check, reporting the virtual time of the failure). Variants: the eight
 * unsafe rule sets of unsafe-rules.ts (SAFE_RULES with one rule off, handed to every node), its
 * unsafe setting (slowOtherShards: one tunable past the range the liveness bound assumes), and two
 * canaries that prove the harness can fail: `canary` — the harness
 * deletes an entry a committed state names (a safety verdict) — and `livenessCanary` — at healing
 * every node crashes for good, so no alarm can fire (a liveness verdict).
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SimClock } from '../../src/core/clock.js';
import type { ActorAddress } from '../../src/core/address.js';
import { SeededRandom } from '../../src/core/random.js';
import { invariantHooks } from '../../src/core/invariant.js';
import { keyOf } from '../../src/alarms/owner.js';
import { parseIndexed } from '../../src/alarms/keys.js';
import { actorDbHooks } from '../../src/workers/actor-db.js';
import { holdHooks } from '../../src/leases/holds.js';
import { decodeHold, decodeNode, HOLDS_PREFIX, NODES_PREFIX } from '../../src/leases/records.js';
import { Cluster, simAddress } from './cluster.js';
import { Drivers } from './drivers.js';
import { IndexInvariant, keysUnder } from './invariant.js';
import { Network } from './network.js';
import { DELIVERY_STREAM, drawParams, withLiveness, type SimParams } from './params.js';
import { gridTime, simActor } from './sim-actor.js';
import { configFor, rulesFor, type UnsafeSetting, type UnsafeVariant } from './unsafe-rules.js';

export type Variant = 'none' | UnsafeVariant | UnsafeSetting | 'canary' | 'livenessCanary';
export const VARIANTS: readonly Variant[] = [
  'untaggedKeys',
  'noGenerationCheck',
  'noFence',
  'uploadBeforeEntry',
  'clearOnEmptyBucket',
  'earlyDurableReply',
  'noOtherShards',
  'noStartOver',
  'slowOtherShards',
  'canary',
  'livenessCanary',
];
export type Verdict = 'ok' | 'safety' | 'liveness' | 'error';
export const EXIT_CODES: Record<Verdict, number> = { ok: 0, safety: 1, liveness: 2, error: 3 };

export const CHECK_EVERY_MS = 50;

export interface RunStats {
  takeovers: number;
  /** Takes of an orphaned alarm's actor without reading its hold (holds.ts `expect`), and those whose guess missed. */
  expectedTakes: number;
  expectedMisses: number;
  alarmsSet: number;
  alarmsFired: number;
  invariantTicks: number;
  actorChecks: number;
  knownExceptions: number;
  calls: number;
  callsOk: number;
  crashes: number;
  stops: number;
  pauses: number;
  cuts: number;
  joins: number;
  aimed: number;
  firstUploadsDelayed: number;
  /** Deliveries of an own shard's entry cut off as they started (network.ts aimAtDelivery). */
  deliveriesCut: number;
  fencedNodes: number;
  /** Fenced nodes that rejoined by themselves under a new epoch. */
  rejoins: number;
  /** Crashed nodes restarted on their data dir at once (their lease still live: fenced by the restart). */
  quickRestarts: number;
  requests: number;
  timedOut: number;
  virtualMs: number;
  wallMs: number;
}

export interface RunResult {
  seed: number;
  variant: Variant;
  params: SimParams;
  verdict: Verdict;
  message?: string;
  atMs?: number;
  stats: RunStats;
  /** A hash of everything observable at the end: equal for two runs of one seed. */
  trace: string;
}

const START_MS = 1_800_000_000_000;

function scratchRoot(): string {
  return mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'kw-sim-'));
}

class Run {
  readonly clock = new SimClock(START_MS);
  readonly random: SeededRandom;
  readonly net: Network;
  readonly cluster: Cluster;
  readonly drivers: Drivers;
  readonly invariant: IndexInvariant;
  readonly actors: ActorAddress[] = [];
  readonly early: string[] = [];
  /** Acknowledged durable calls by actor (their ids), and the first one found missing from the bucket's head. */
  readonly acked = new Map<ActorAddress, number[]>();
  lostDurable: string | undefined;
  readonly fireLog: string[] = [];
  readonly holders = new Map<string, string>();
  takeovers = 0;
  expectedTakes = 0;
  expectedMisses = 0;
  fencedNodes = 0;
  readonly nodeStates = new Map<string, string>();
  private readonly records = new Map<string, { etag: string; value: unknown }>();
  alarmsFired = 0;
  rescheduled = 0;
  /** The first failed invariant of the code under test (src/core/invariant.ts), and when. */
  internal: { message: string; atMs: number } | undefined;

  constructor(
    readonly p: SimParams,
    readonly variant: Variant,
    readonly root: string,
  ) {
    this.random = new SeededRandom(p.seed).fork();
    this.net = new Network(this.clock, this.random.fork(), p.faults, new SeededRandom(p.seed + DELIVERY_STREAM));
    const actorClass = simActor(
      this.random.fork(),
      { stepMs: p.alarmStepMs, failP: p.handlerFailP, rescheduleP: p.rescheduleP, slowP: p.handlerSlowP, slowMaxMs: 2_000 },
      {
        fired: (actor, scheduledAtMs, nowMs) => {
          this.alarmsFired++;
          this.fireLog.push(`${actor}@${scheduledAtMs}:${nowMs}`);
          if (nowMs < scheduledAtMs)
            this.early.push(`${actor} ran its alarm of ${scheduledAtMs} at ${nowMs}, ${scheduledAtMs - nowMs} ms early`);
        },
        rescheduled: () => void this.rescheduled++,
      },
    );
    this.cluster = new Cluster(p, this.clock, this.net, this.random.fork(), root, actorClass, rulesFor(variant));
    for (let i = 0; i < p.actors; i++) this.actors.push(simAddress(`a${i}`));
    this.drivers = new Drivers(p, this.clock, this.net, this.cluster, this.actors, this.random.fork());
    this.invariant = new IndexInvariant(this.net.bucket);
    this.drivers.durableAcked = (a, id) => {
      this.acked.set(a, [...(this.acked.get(a) ?? []), id]);
      this.checkDurable(a, id, 'at its reply');
    };
  }

  /** A durable call replies only once its link is in the bucket; its effect stays there (takeovers restore it). */
  checkDurable(a: ActorAddress, id: number, when: string): void {
    if (this.lostDurable || this.invariant.headState(a)?.durableIds.has(id)) return;
    this.lostDurable = `${a.tenant}/${a.className}/${a.name}: durable call ${id} was acknowledged but its row is not in the bucket's head ${when}`;
  }

  checkAcked(): void {
    for (const [a, ids] of this.acked) for (const id of ids) this.checkDurable(a, id, 'later');
  }

  async setUp(): Promise<void> {
    for (let j = 1; j <= this.p.joiners; j++) {
      const own = Array.from({ length: 1 + this.random.int(3) }, (_, k) => simAddress(`j${j}-${k}`));
      const at = own.map(() =>
        gridTime(START_MS, this.p.alarmStepMs, 1 + this.random.int(Math.floor((0.75 * this.p.chaosMs) / this.p.alarmStepMs))),
      );
      await this.cluster.prepareJoiner(`j${j}`, own, at);
      this.actors.push(...own);
    }
    for (let i = 1; i <= this.p.nodes; i++) this.cluster.start(`n${i}`);
    this.drivers.start();
    if (this.variant === 'canary') this.clock.setTimer(this.p.chaosMs / 3, () => this.canary());
  }

  /** The canary: the harness deletes an entry some committed state names (the invariant must see it). */
  private canary(): void {
    for (const a of this.actors) {
      const head = this.invariant.headState(a);
      const named = head?.alarmMs != null ? parseIndexed(head.indexedText) : null;
      if (named && this.net.bucket.peek(keyOf(a, named))) {
        void this.net.bucket.delete(keyOf(a, named));
        return;
      }
    }
    this.clock.setTimer(500, () => this.canary());
  }

  /** Counts hold changes to another owner (nodeId + epoch), and node records fenced by another node. */
  observeHolds(): void {
    for (const key of keysUnder(this.net.bucket.keys(), HOLDS_PREFIX)) {
      const hold = this.decoded(key, decodeHold);
      const owner = `${hold.nodeId}/${hold.epoch}`;
      const last = this.holders.get(key);
      if (last !== undefined && last !== owner && hold.state === 'held') this.takeovers++;
      if (hold.state === 'held') this.holders.set(key, owner);
    }
    for (const key of keysUnder(this.net.bucket.keys(), NODES_PREFIX)) {
      const state = this.decoded(key, decodeNode).state;
      if (state === 'fenced' && this.nodeStates.get(key) !== 'fenced') this.fencedNodes++;
      this.nodeStates.set(key, state);
    }
  }

  /** A record's body decoded, once per version (etag). */
  private decoded<T>(key: string, decode: (body: Uint8Array) => T): T {
    const obj = this.net.bucket.peek(key)!;
    const seen = this.records.get(key);
    if (seen?.etag === obj.etag) return seen.value as T;
    const value = decode(obj.body);
    this.records.set(key, { etag: obj.etag, value });
    return value;
  }

  /** Every committed alarm due before `beforeMs` is a liveness failure (it should have fired). */
  livenessFailure(beforeMs: number): string | undefined {
    for (const a of this.actors) {
      const head = this.invariant.headState(a);
      if (head?.alarmMs != null && head.alarmMs < beforeMs) {
        return `sim/${a.className}/${a.name}: committed alarm ${head.alarmMs} had not fired ${this.clock.now() - head.alarmMs} ms after it was due (healed at ${START_MS + this.p.chaosMs})`;
      }
    }
    return undefined;
  }

  trace(): string {
    const h = createHash('sha256');
    h.update(JSON.stringify([this.net.bucket.keys(), this.net.bucket.counts, this.fireLog, this.drivers.work, this.takeovers]));
    return h.digest('hex').slice(0, 16);
  }
}

export async function runSeed(seed: number, variant: Variant = 'none'): Promise<RunResult> {
  const wall0 = performance.now();
  const drawn = withLiveness(drawParams(seed));
  const p = { ...drawn, config: configFor(variant, drawn) };
  const root = scratchRoot();
  const run = new Run(p, variant, root);
  actorDbHooks.onOpen = (db) => run.cluster.handles.push(db);
  actorDbHooks.sharedLocking = true;
  holdHooks.onExpectedTake = (taken) => (taken ? run.expectedTakes++ : run.expectedMisses++);
  invariantHooks.onFailure = (e) => (run.internal ??= { message: e.stack ?? e.message, atMs: run.clock.now() - START_MS });
  let verdict: Verdict = 'ok';
  let message: string | undefined;
  let atMs: number | undefined;
  try {
    ({ verdict, message, atMs } = await simulate(run));
  } catch (e) {
    verdict = 'error';
    message = e instanceof Error ? (e.stack ?? e.message) : String(e);
  } finally {
    actorDbHooks.onOpen = undefined;
    actorDbHooks.sharedLocking = undefined;
    holdHooks.onExpectedTake = undefined;
    invariantHooks.onFailure = undefined;
    await new Promise((r) => setImmediate(r)); // let the last promise reactions run before handles close
    run.cluster.shutdown();
    rmSync(root, { recursive: true, force: true });
  }
  const c = run.cluster.stats;
  const stats: RunStats = {
    takeovers: run.takeovers,
    expectedTakes: run.expectedTakes,
    expectedMisses: run.expectedMisses,
    alarmsSet: run.drivers.work.alarmsSet + run.rescheduled,
    alarmsFired: run.alarmsFired,
    invariantTicks: run.invariant.ticks,
    actorChecks: run.invariant.actorChecks,
    knownExceptions: run.invariant.knownExceptions,
    calls: run.drivers.work.calls,
    callsOk: run.drivers.work.callsOk,
    crashes: c.crashes,
    stops: c.stops,
    pauses: c.pauses,
    cuts: run.net.stats.cuts,
    joins: c.joins,
    aimed: run.net.stats.aimed,
    firstUploadsDelayed: run.net.stats.firstUploadsDelayed,
    deliveriesCut: run.net.stats.deliveriesCut,
    fencedNodes: run.fencedNodes,
    rejoins: run.cluster.rejoins(),
    quickRestarts: run.drivers.quickRestarts,
    requests: run.net.stats.requests,
    timedOut: run.net.stats.timedOut,
    virtualMs: run.clock.now() - START_MS,
    wallMs: Math.round(performance.now() - wall0),
  };
  return { seed, variant, params: p, verdict, message, atMs, stats, trace: run.trace() };
}

async function simulate(run: Run): Promise<{ verdict: Verdict; message?: string; atMs?: number }> {
  await run.setUp();
  const healAt = START_MS + run.p.chaosMs;
  const endAt = healAt + run.p.livenessMs;
  let healed = false;
  for (let t = START_MS + CHECK_EVERY_MS; t <= endAt; t += CHECK_EVERY_MS) {
    await run.clock.runUntil(t);
    if (!healed && t >= healAt) {
      healed = true;
      if (run.variant === 'livenessCanary') run.drivers.stopEverything();
      else run.drivers.stopChaos();
    }
    if (run.internal)
      return { verdict: 'error', message: `invariant failed in the code under test: ${run.internal.message}`, atMs: run.internal.atMs };
    run.observeHolds();
    const v = run.invariant.check(run.actors);
    if (v) return { verdict: 'safety', message: `invariant: ${v.actor}: ${v.message}`, atMs: t - START_MS };
    if (run.early.length > 0) return { verdict: 'safety', message: `early delivery: ${run.early[0]}`, atMs: t - START_MS };
    run.checkAcked();
    if (run.lostDurable) return { verdict: 'safety', message: `durable: ${run.lostDurable}`, atMs: t - START_MS };
  }
  const late = run.livenessFailure(endAt - run.p.livenessBoundMs);
  if (late) return { verdict: 'liveness', message: late, atMs: endAt - START_MS };
  return { verdict: 'ok' };
}
