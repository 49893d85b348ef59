/**
 * One chaos run (docs/testing.md "The chaos run"): real node processes on one bucket, each run of
 * a node behind its own `fault+` schedule, the plan's workload and faults at once, online checks
 * while it runs, then heal, settle, stop, and check the whole history.
 *
 *   plan ─▶ small disks, network namespaces (root) ─▶ start nodes ─▶ chaos phase (workload ∥ faults ∥ online checks every 5 s)
 *        ─▶ heal (resume, restart the dead, restart every faulty bucket calm) ─▶ durable ops acknowledged
 *        ─▶ settle (alarms due have run) ─▶ clean stop ─▶ final checks + index check ─▶ report
 *
 * Each node slot runs in a network namespace of its own where root and nftables allow (a lab of
 * test/cluster/netns.ts; on S3 the nodes reach the bucket through bucket-relay.ts), so the cuts
 * between nodes, from the clients and from an S3 bucket drop packets; otherwise every node is in
 * this namespace and those cuts are switches inside the nodes, which the run says loudly.
 * Everything it starts is killed, its disks unmounted, its namespaces deleted and its temp folder
 * removed however it ends (nodes.ts, disks.ts, support/temp-dir.ts); on S3 its prefix is emptied.
 */
import { existsSync, mkdirSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { checkIndex } from '../../src/ops/index-check.js';
import { ACTOR_PROBLEMS } from '../../src/ops/index-findings.js';
import { openStore } from '../../src/store/open.js';
import type { ObjectStore } from '../../src/store/types.js';
import { makeTempDir, removeTempDir } from '../../support/temp-dir.js';
import { Lab, labUnavailable } from '../cluster/netns.js';
import { emptyBucket, uniqueBucket } from '../cluster/s3-bucket.js';
import { BucketRelay } from './bucket-relay.js';
import { chainWriters, describeChain, readActor, type ActorView } from './bucket-view.js';
import {
  ALARM_BOUND_MS,
  checkAlarms,
  checkDeleted,
  checkDurables,
  checkEarlyRuns,
  checkOnce,
  checkLinearizable,
  checkChainWriters,
  QUIET_BOUND_MS,
  setRunStart,
  type AlarmStats,
} from './checks.js';
import { SlotDisks } from './disks.js';
import { FaultInjector } from './faults.js';
import { ChaosNodes, slotHost, type ChaosNet } from './nodes.js';
import {
  actorName,
  describeWireProfile,
  fingerprint,
  MARGIN_MS,
  planRun,
  TIMINGS,
  type Plan,
  type RelayFault,
  type Unsafe,
} from './plan.js';
import { runRelayFaults, StaleListRace, type RaceTarget } from './relay-faults.js';
import { printPlan, type ChaosReport, type FinalStats } from './report.js';
import { sleep, Workload, type Violation } from './workload.js';

export interface ChaosOptions {
  seed: number;
  chaosMs: number;
  nodes: number;
  /** The bucket: a folder in the run's temp folder, or a fresh prefix of this S3 URL. */
  s3Url?: string;
  unsafe?: Unsafe;
  /** Stop the chaos phase at the first violation (how long a planted bug takes to be caught). */
  stopOnViolation: boolean;
  /** Keep the run's folder (the nodes' logs and data dirs, a folder bucket) when a check fails. */
  keepOnViolation?: boolean;
  /** Keep the run's folder whatever the outcome. */
  keep?: boolean;
  /** false: every node in this network namespace even where namespaces can be made (default: where they can). */
  netns?: boolean;
  /** Each node run's wire profile at the bucket relay (S3 in namespaces; default: on, false turns it off). */
  wire?: boolean;
  out: (line: string) => void;
}

const ONLINE_EVERY_MS = 5_000;
/** After a holdWrites fault lets its writes go, the online checks run at these delays. */
const AFTER_RELEASE_MS = [300, 1_500];

/** When the online checks run next: every ONLINE_EVERY_MS, and sooner when asked. */
class OnlineCadence {
  private wake: (() => void) | undefined;
  /** A delay of `soon` passed while a check ran: the next one starts at once. */
  private due = false;
  private readonly timers = new Set<NodeJS.Timeout>();

  /** The online checks run at each of these delays from now (or as soon as a running one ends). */
  soon(delaysMs: readonly number[]): void {
    for (const ms of delaysMs) {
      const t = setTimeout(() => {
        this.timers.delete(t);
        if (this.wake) this.wake();
        else this.due = true;
      }, ms);
      this.timers.add(t);
    }
  }

  /** Resolves after ONLINE_EVERY_MS, or sooner when `soon` asked. */
  next(): Promise<void> {
    if (this.due) {
      this.due = false;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ONLINE_EVERY_MS);
      this.wake = done;
    });
  }

  dispose(): void {
    for (const t of this.timers) clearTimeout(t);
    this.wake?.();
  }
}
const ACK_BOUND_MS = 90_000;
const CALM = { name: 'calm', query: '' } as const;

export async function runChaos(o: ChaosOptions): Promise<ChaosReport> {
  const plan = planRun({ seed: o.seed, chaosMs: o.chaosMs, nodes: o.nodes });
  printPlan(plan, o);
  const root = makeTempDir(`kw-chaos-${o.seed}-`);
  mkdirSync(join(root, 'logs'));
  mkdirSync(join(root, 'work'));
  const bucket = o.s3Url ? uniqueBucket(o.s3Url, `chaos-${o.seed}`) : `file://${join(root, 'bucket')}`;
  const store = openStore(bucket);
  const mounted = SlotDisks.mount(o.nodes, o.seed);
  const disks = mounted instanceof SlotDisks ? mounted : undefined;
  if (!disks) o.out(`!!! NO SMALL DISKS (${(mounted as { unavailable: string }).unavailable}): the diskFull faults are skipped !!!`);
  const net = await networkNamespaces(o, root, bucket);
  const nodes = new ChaosNodes(root, net?.relay?.nodeUrl ?? bucket, o.nodes, o.unsafe, plan.clockOffset, disks, net);
  const wire = net?.relay && o.wire !== false ? wireFaults(plan, net, nodes, o.out) : undefined;
  const violations: Violation[] = [];
  let stopped = false;
  const found = (v: Violation) => {
    if (violations.length === 0) o.out(`VIOLATION (${v.check}) at ${((v.at - startedAt) / 1_000).toFixed(1)}s: ${v.message}`);
    violations.push(v);
    if (o.stopOnViolation) stopped = true;
  };
  const workload = new Workload(plan, nodes, found);
  const cadence = new OnlineCadence();
  // Held writes land at once: the bucket is read again soon after, while a late link may still be the head.
  const injector = new FaultInjector(
    plan,
    nodes,
    (line) => o.out(`fault ${line}`),
    () => cadence.soon(AFTER_RELEASE_MS),
  );
  let startedAt = Date.now();
  const raceLog = (line: string) => o.out(`fault ${secs(startedAt)} ${line}`);
  const race = net?.relay ? staleListRace(net, nodes, workload, injector, cadence, raceLog) : undefined;
  let final: FinalStats | undefined;
  let leftovers: ChaosReport['leftovers'] = { processes: 0, tempDir: false, network: [] };
  let caughtAfterMs: number | undefined;
  try {
    await Promise.all(Array.from({ length: o.nodes }, (_, n) => nodes.start(n, plan.profile(n, 0))));
    startedAt = Date.now();
    setRunStart(startedAt);
    o.out(`${o.nodes} nodes serving; chaos phase of ${o.chaosMs / 1_000} s`);
    const online = onlineChecks(workload, store, join(root, 'work'), found, () => stopped, cadence);
    const chaosEnd = setTimeout(() => (stopped = true), o.chaosMs);
    const work = workload.run(startedAt, () => stopped);
    const faults = injector.run(startedAt, () => stopped);
    const relayFaults = relayFaultsOf(
      race,
      plan.relayFaults,
      startedAt,
      () => stopped,
      injector,
      (line) => o.out(`fault ${line}`),
      (on) => {
        net?.relay?.calm(on);
        for (let n = 0; n < nodes.count; n++) nodes.calm(n, on);
      },
    );
    await waitUntil(() => stopped);
    clearTimeout(chaosEnd);
    await faults;
    await relayFaults;
    race?.dispose();
    cadence.dispose();
    await online;
    caughtAfterMs = violations.length > 0 ? violations[0]!.at - startedAt : undefined;
    o.out(`chaos phase over at ${secs(startedAt)}`);
    if (violations.length > 0 && o.stopOnViolation) {
      workload.giveUpAfter(0);
      await work;
    } else {
      wire?.off();
      await heal(nodes, injector, net, startedAt, o);
      workload.giveUpAfter(Date.now() + ACK_BOUND_MS);
      await work;
      o.out(`every op ended at ${secs(startedAt)}; settling alarms`);
      await settle(workload, store, join(root, 'work'));
      const endAt = Date.now();
      for (let n = 0; n < nodes.count; n++) await nodes.stop(n);
      o.out(`nodes stopped at ${secs(startedAt)}; checking the whole history`);
      const views = await readViews(workload, store, join(root, 'work'));
      final = await finalChecks(workload, injector, race, views, store, join(root, 'work'), endAt, found);
      const first = violations[0];
      if (first?.actor) for (const line of await describeChain(store, first.actor, startedAt)) o.out(`  ${first.actor} ${line}`);
      caughtAfterMs ??= violations.length > 0 ? violations[0]!.at - startedAt : undefined;
    }
  } finally {
    race?.dispose();
    const killed = await nodes.disposeAll();
    if (killed > 0) o.out(`${killed} node processes killed at the end`);
    await net?.relay?.close();
    net?.lab.down();
    await store.close();
    if (o.s3Url) await emptyBucket(bucket).catch((e: unknown) => o.out(`emptying ${bucket} failed: ${String(e)}`));
    if (o.keep || (o.keepOnViolation && violations.length > 0)) {
      const kept = `${root}-kept`;
      disks?.copyInto(root);
      renameSync(root, kept); // out of the temp folders removed at exit
      o.out(`the run's folder (logs, data dirs, bucket) is kept for inspection: ${kept}`);
    } else removeTempDir(root);
    disks?.dispose();
    leftovers = { processes: nodes.all.filter((n) => n.running).length, tempDir: existsSync(root), network: net?.lab.leftovers() ?? [] };
  }
  return {
    seed: o.seed,
    fingerprint: fingerprint(plan),
    plan,
    startedAt,
    durationMs: Date.now() - startedAt,
    outcomes: workload.outcomes,
    violations,
    caughtAfterMs,
    final,
    faults: {
      ...injector.injected,
      skipped: injector.skipped.length,
      ...(injector.noDisk > 0 ? { 'diskFull skipped (no disks)': injector.noDisk } : {}),
      ...(race
        ? {
            'staleListHold windows': race.stats.windows,
            'stale listings seen in them': race.stats.listingsSeen,
            'stale listings held at the relay': race.stats.listingsHeld,
            'alarm times set again': race.stats.armed,
            'listings landed after the new entry': race.stats.raced,
            'races tried again in their window': race.stats.retried,
          }
        : {}),
      ...Object.fromEntries(Object.entries(injector.exitedInFault).map(([k, n]) => [`exits during ${k}`, n])),
      ...(wire ? wire.counts() : {}),
      ...(o.s3Url && !net?.relay && o.wire !== false ? { 'wire faults skipped (no bucket relay: S3 in namespaces only)': 1 } : {}),
      'starts refused by the bucket': nodes.startsRefused,
    },
    clockOffsets: nodes.offsetsUsed,
    windows: [...injector.windows, ...(race?.windows ?? [])],
    leftovers,
  };
}

/**
 * The bucket relay's race (relay-faults.ts): the alarm time set again through the first node up
 * that is not the held one nor in (or just out of) a fault of its own, else through any node up;
 * the bucket checked soon after the listing lands.
 */
function staleListRace(
  net: ChaosNet & { relay?: BucketRelay },
  nodes: ChaosNodes,
  workload: Workload,
  injector: FaultInjector,
  cadence: OnlineCadence,
  log: (line: string) => void,
): StaleListRace {
  const ipOf = (n: number) => net.lab.host(slotHost(n)).ip;
  const byIp = new Map(Array.from({ length: nodes.count }, (_, n) => [ipOf(n), n] as const));
  // A node in a fault, or out of one for less than a margin (fenced, maybe, and rejoining), takes no actor over.
  const inFault = (n: number) => injector.windows.some((w) => w.fault.node === n && w.to > Date.now() - MARGIN_MS - 1_000);
  const slotOf = (t: RaceTarget): [number, number] | undefined => {
    const m = /^a(\d+)i(\d+)$/.exec(t.name);
    if (!m || `${t.tenant}/${t.className}/${t.name}` !== actorName(Number(m[1]), Number(m[2]))) return undefined;
    return [Number(m[1]), Number(m[2])];
  };
  const eligible = (t: RaceTarget, f: RelayFault) => {
    const s = slotOf(t);
    return s !== undefined && f.slots.includes(s[0]) && workload.mayArm(...s);
  };
  const arm = (t: RaceTarget, held: number): number | undefined => {
    const m = slotOf(t);
    if (!m) return undefined;
    const up = Array.from({ length: nodes.count - 1 }, (_, k) => (held + 1 + k) % nodes.count).filter((n) => nodes.state(n) === 'up');
    const via = up.find((n) => !inFault(n)) ?? up[0];
    if (via === undefined || !workload.armAt(m[0], m[1], t.dueMs, via, 'staleListHold')) return undefined;
    log(`${t.tenant}/${t.className}/${t.name}: its alarm set again for ${t.dueMs} through n${via}`);
    return via;
  };
  return new StaleListRace(net.relay!, ipOf, (ip) => byIp.get(ip), { eligible, arm, raced: () => cadence.soon(RACED_CHECKS_MS), log });
}

/**
 * Each node run's wire profile (plan.ts) set at the relay for its address as it starts; all off
 * for the heal and after. Counts: the relay's faults by kind, and the node runs by profile.
 */
function wireFaults(
  plan: Plan,
  net: ChaosNet & { relay?: BucketRelay },
  nodes: ChaosNodes,
  out: (line: string) => void,
): { off: () => void; counts: () => Record<string, number> } {
  const relay = net.relay!;
  const ipOf = (n: number) => net.lab.host(slotHost(n)).ip;
  const runs = new Map<string, number>();
  let off = false;
  nodes.onStart = (n, run) => {
    const w = off ? { name: 'off' as const } : plan.wire(n, run);
    relay.wire(ipOf(n), w.faults);
    if (off) return;
    runs.set(w.name, (runs.get(w.name) ?? 0) + 1);
    out(`wire n${n} run ${run}: ${describeWireProfile(w)}`);
  };
  return {
    off: () => {
      off = true;
      for (let n = 0; n < nodes.count; n++) relay.wire(ipOf(n), undefined);
    },
    counts: () => ({
      'wire503 (503 SlowDown answered at the relay)': relay.wireCounts.wire503,
      'wireReset (writes applied, answer reset)': relay.wireCounts.wireReset,
      'wireLatency (requests delayed)': relay.wireCounts.wireLatency,
      'wireLate (writes reset before applied, landed later)': relay.wireCounts.wireLate,
      ...Object.fromEntries([...runs].map(([name, k]) => [`node runs on wire profile ${name}`, k])),
    }),
  };
}

/** After a held listing landed behind a newer owner's entry, the online checks run at these delays. */
const RACED_CHECKS_MS = [400, 1_200, 2_400];

/** The plan's relay faults on the race's schedule (every node's bucket calm in their spans), or each said skipped without a relay. */
function relayFaultsOf(
  race: StaleListRace | undefined,
  faults: Plan['relayFaults'],
  startedAt: number,
  stopped: () => boolean,
  injector: FaultInjector,
  log: (line: string) => void,
  calm: (on: boolean) => void,
): Promise<void> {
  if (faults.length === 0) return Promise.resolve();
  if (!race) {
    injector.injected['staleListHold skipped (no bucket relay: S3 in namespaces only)'] = faults.length;
    return Promise.resolve();
  }
  return runRelayFaults(faults, race, startedAt, stopped, log, calm);
}

/** The run's lab (and an S3 bucket's relay into it), or undefined, said loudly, where namespaces cannot be made. */
async function networkNamespaces(o: ChaosOptions, root: string, bucket: string): Promise<(ChaosNet & { relay?: BucketRelay }) | undefined> {
  const unavailable = o.netns === false ? 'turned off' : labUnavailable();
  if (unavailable) {
    o.out(`!!! NO NETWORK NAMESPACES (${unavailable}): every node in this one; cuts are switches inside the nodes !!!`);
    return undefined;
  }
  const lab = Lab.up(
    Array.from({ length: o.nodes }, (_, n) => slotHost(n)),
    root,
  );
  try {
    const relay = o.s3Url ? await BucketRelay.start(bucket, lab.rootAlias()) : undefined;
    o.out(
      `network namespaces: ${Array.from({ length: o.nodes }, (_, n) => `n${n} ${lab.host(slotHost(n)).ip}`).join(', ')}${relay ? `; the bucket through ${lab.rootAlias()}` : ''}`,
    );
    return { lab, ...(relay ? { relay, bucketIp: lab.rootAlias() } : {}) };
  } catch (e) {
    lab.down();
    throw e;
  }
}

const secs = (from: number) => `${((Date.now() - from) / 1_000).toFixed(1)}s`;

/**
 * Every 5 s during the chaos phase, and soon after held writes landed: acknowledged durable ops in the committed heads, no op twice,
 * no alarm run early past the skew bound, and the index invariant.
 */
async function onlineChecks(
  workload: Workload,
  store: ObjectStore,
  workDir: string,
  found: (v: Violation) => void,
  stopped: () => boolean,
  cadence: OnlineCadence,
): Promise<void> {
  while (!stopped()) {
    await cadence.next();
    if (stopped()) return;
    const readAt = Date.now();
    const views = await readViews(workload, store, workDir).catch(() => undefined);
    if (!views) continue;
    const now = Date.now();
    for (const v of [...checkDurables(workload.outcomes, views, readAt, now), ...checkOnce(views, now), ...checkEarlyRuns(views, now)])
      found(v);
    for (const v of await indexProblems(store, workDir)) found(v);
  }
}

/** The committed heads of every actor an op was sent to. */
async function readViews(workload: Workload, store: ObjectStore, workDir: string): Promise<Map<string, ActorView>> {
  const actors = new Set<string>();
  for (const o of workload.outcomes) if (o.sentAt !== undefined) actors.add(actorName(o.op.slot, o.op.incarnation));
  const views = new Map<string, ActorView>();
  for (const a of actors) views.set(a, await readActor(store, a, workDir));
  return views;
}

/** `keepwork index check`'s walk: a committed alarm no entry lists is a violation. */
async function indexProblems(store: ObjectStore, workDir: string): Promise<Violation[]> {
  const out: Violation[] = [];
  await checkIndex({
    store,
    workDir,
    nowMs: Date.now(),
    graceMs: TIMINGS.graceMs,
    onFinding: (f) => {
      if (f.type === 'actor' && ACTOR_PROBLEMS.includes(f.kind))
        out.push({
          check: 'index',
          message: `index check: ${f.kind} alarm of ${f.actor.address.key} at ${f.actor.alarmAt} (named ${f.actor.indexedRaw})${f.actor.error ? `: ${f.actor.error}` : ''}`,
          at: Date.now(),
          actor: f.actor.address.key,
        });
    },
  });
  return out;
}

/** Faults healed: wire cuts removed, paused nodes resumed, dead ones started, and every node on a faulty bucket restarted calm. */
async function heal(
  nodes: ChaosNodes,
  injector: FaultInjector,
  net: ChaosNet | undefined,
  startedAt: number,
  o: ChaosOptions,
): Promise<void> {
  await injector.settled();
  for (let n = 0; n < nodes.count; n++) nodes.resume(n);
  net?.lab.heal();
  for (let n = 0; n < nodes.count; n++) {
    const down = nodes.state(n) === 'down';
    if (!down && nodes.profile(n)?.name === 'calm') continue;
    // A restart of the heal is a window as a fault's is: its alarms may wait for a takeover.
    const w = {
      fault: { at: Date.now() - startedAt, kind: 'stop' as const, node: n, downMs: 0 },
      from: Date.now(),
      to: Infinity,
      note: 'heal',
    };
    injector.windows.push(w);
    if (!down) await nodes.stop(n);
    await nodes.start(n, CALM);
    w.to = Date.now();
  }
  o.out('healed: every node serving, none behind fault+');
}

/** Waits until no committed alarm is overdue (bounded by ALARM_BOUND_MS plus a margin of time). */
async function settle(workload: Workload, store: ObjectStore, workDir: string): Promise<void> {
  const bound = Date.now() + ALARM_BOUND_MS + 10_000;
  for (;;) {
    const views = await readViews(workload, store, workDir);
    const now = Date.now();
    const overdue = [...views.values()].filter((v) => v.current && v.current.due < now - 1_000);
    if (overdue.length === 0 || now > bound) return;
    await sleep(1_000);
  }
}

async function finalChecks(
  workload: Workload,
  injector: FaultInjector,
  race: StaleListRace | undefined,
  views: Map<string, ActorView>,
  store: ObjectStore,
  workDir: string,
  endAt: number,
  found: (v: Violation) => void,
): Promise<FinalStats> {
  const now = Date.now();
  for (const v of checkDurables(workload.outcomes, views, Infinity, now)) found(v);
  for (const v of checkOnce(views, now)) found(v);
  for (const v of checkLinearizable(workload.outcomes, views, now)) found(v);
  for (const actor of views.keys()) for (const v of checkChainWriters(actor, await chainWriters(store, actor), now)) found(v);
  const deleted = checkDeleted(workload.outcomes, views, now);
  deleted.violations.forEach(found);
  const stats: AlarmStats = { runs: 0, lateness: [], quiet: [], recurringRuns: 0, retriedRuns: 0 };
  const windows = [...injector.windows, ...(race?.windows ?? [])];
  for (const view of views.values()) for (const v of checkAlarms(view, windows, endAt, stats)) found(v);
  const overQuiet = stats.quiet.filter((l) => l > QUIET_BOUND_MS);
  if (overQuiet.length > 0)
    found({
      check: 'lateness',
      message: `${overQuiet.length} alarm runs outside fault windows were later than ${QUIET_BOUND_MS} ms (max ${Math.max(...overQuiet)} ms)`,
      at: now,
    });
  for (const o of workload.outcomes)
    if (o.op.durable && o.sentAt !== undefined && o.ackedAt === undefined)
      found({
        check: 'liveness',
        message: `${o.op.kind} ${o.op.id} was never acknowledged (${o.attempts.length} attempts, last ${o.attempts.at(-1)?.code ?? o.attempts.at(-1)?.status})`,
        at: now,
        actor: actorName(o.op.slot, o.op.incarnation),
        op: o.op.i,
      });
  for (const v of await indexProblems(store, workDir)) found(v);
  return { alarms: stats, recreated: deleted.recreated };
}

async function waitUntil(cond: () => boolean): Promise<void> {
  while (!cond()) await sleep(200);
}
