/**
 * One run of `keepwork bench drain`: how fast live nodes drain the alarms of a node that died.
 *
 *   start 1+N nodes ─▶ node A arms K alarms, all due at T (after the last is armed; see armAll)
 *     ─▶ A deleted the entries its re-arming replaced ─▶ A is killed -9
 *     ─▶ the N others take A's alarms over once A's lease and grace ran out
 *     ─▶ every second: each node's /metrics (deliveries, CPU, bucket requests) ─▶ until K ran
 *     ─▶ each actor's firing time read back (a sample of READBACK_MAX when K is larger)
 *
 * Lateness is firing − T, so it includes A's lease and grace (the time the others must wait
 * before A's alarms are theirs) plus the sweeps' pace. The drain rate is K over first → last
 * firing. An abort (Ctrl-C) ends the watch early: what was measured so far is returned with
 * `complete: false`. The nodes are stopped by the caller (LocalNodes.stopAll).
 *
 * With running nodes (`--targets`, remote-nodes.ts) only A is started here, on the bucket the
 * targets run on, and the targets drain; the actors' names then start with the run's tag, so that
 * a run never meets an earlier run's actors in the same place.
 */
import { parseEntryKey, tenantPrefix } from '../alarms/keys.js';
import { listAll } from '../store/keys.js';
import type { ObjectStore } from '../store/types.js';
import { BENCH_CLASS, type LocalNodes } from './local-nodes.js';
import { callActor, inLanes, type Endpoint } from './node-calls.js';
import type { ProgressLine } from './progress-line.js';
import { byLabel, diff, scrape, total, type Scrape } from './prom.js';
import { histogram, percentiles, perSecond, round, s3Price, type Bin, type Percentiles, type RequestCost } from './stats.js';

export const BENCH_TENANT = 'bench';
/** Actors whose firing time is read back, at most (a random sample above it). */
export const READBACK_MAX = 10_000;
const ARM_IN_FLIGHT = 32;
const WATCH_EVERY_MS = 1_000;
/** Arming stops this long before T at the latest, so that A is dead before any alarm is due. */
const ARM_STOP_BEFORE_DUE_MS = 500;
/** How often the bucket is listed while A's replaced entries are being deleted. */
const REPLACED_POLL_MS = 50;

export interface DrainConfig {
  alarms: number;
  /** Live nodes that drain (node A, which dies, comes on top). */
  nodes: number;
  /** Tunables of every node (`--set`, and the swept one). */
  set: Readonly<Record<string, number | boolean>>;
  /** The sweep's label for this run (e.g. `deliveryConcurrencyMax=32`), or `drain`. */
  label: string;
}

export interface NodeDrain {
  nodeId: string;
  delivered: number;
  /** CPU of the node's process (every thread) per alarm it delivered, ms. */
  cpuMsPerAlarm: number;
}

export interface DrainResult {
  label: string;
  set: Readonly<Record<string, number | boolean>>;
  /** Alarms armed (and drained), and alarms asked for: fewer were armed when arming ran slower than timed. */
  alarms: number;
  alarmsRequested: number;
  nodes: number;
  /** False when the run was stopped (Ctrl-C) or timed out before every alarm ran. */
  complete: boolean;
  /** Delivered by the live nodes (their keepwork_alarm_deliveries_total{outcome="ran"}). */
  delivered: number;
  /** T, when every alarm was due (ms since the epoch), and when A was killed. */
  dueAt: number;
  killedAt: number;
  /** Seconds from T to the last firing (or to the end of the watch). */
  drainSeconds: number;
  /** Alarms per second, all live nodes together, first → last firing. */
  ratePerSec: number;
  /**
   * [seconds since T, alarms per second], all live nodes together: from every actor's firing time
   * when all were read back, else from the watch's samples (about one a second).
   */
  rateOverTime: [number, number][];
  /** Firing − T, ms, over the actors read back (null when none were). */
  latenessMs: Percentiles | null;
  latenessHistogramMs: Bin[];
  /** Actors read back for the lateness (all of them up to READBACK_MAX). */
  readBack: number;
  perNode: NodeDrain[];
  /** Bucket requests of the live nodes per alarm, by operation, and their S3 price per million alarms. */
  requests: RequestCost;
}

/** A node that drains: one the bench started, or a running one (`--targets`). */
export interface DrainingNode extends Endpoint {
  readonly nodeId: string;
  /** False once a node the bench started has exited (a running node is assumed up: its scrapes say otherwise). */
  running(): boolean;
  /** Where its output went (nodes the bench started). */
  readonly logPath?: string;
}

/** Where a run happens: the nodes, the bucket, and what it leaves for the caller to clean up. */
export interface BenchEnv {
  local: LocalNodes;
  bucketUrl: string;
  store: ObjectStore;
  progress: ProgressLine;
  signal: AbortSignal;
  /** Running nodes to measure instead of nodes of the bench's own (`--targets`). */
  targets: readonly DrainingNode[] | undefined;
  /** Starts every actor name of the run ('' on nodes of the bench's own, in a place emptied after each run). */
  runTag: string;
  /** Every actor address the run called, added before its first call (the caller destroys them on running nodes). */
  touched: Set<string>;
}

export const benchAddress = (env: Pick<BenchEnv, 'runTag'>, name: string) => `${BENCH_TENANT}/${BENCH_CLASS}/${env.runTag}${name}`;

/** Runs one drain (see the header). */
export async function runDrain(c: DrainConfig, env: BenchEnv): Promise<DrainResult> {
  const { local, bucketUrl, store, progress, signal } = env;
  const ids = env.targets ? [`${env.runTag}a`] : ['a', ...Array.from({ length: c.nodes }, (_, i) => `n${i + 1}`)];
  progress.note(`${c.label}: starting ${ids.length === 1 ? 'node a' : `${ids.length} nodes`}`);
  const [a, ...started] = await Promise.all(ids.map((id) => local.start(id, bucketUrl, c.set)));
  const live: readonly DrainingNode[] = env.targets ?? started;
  const { dueAt, armed, probeAt } = await armAll(a!, c, env);
  await replacedGone(store, env.runTag, probeAt, dueAt - ARM_STOP_BEFORE_DUE_MS, progress, signal);
  const killedAt = Date.now();
  await a!.kill9();
  progress.note(
    `${c.label}: ${armed.length} alarms armed due ${new Date(dueAt).toISOString()}; node a killed -9, ${live.length} node(s) drain`,
  );
  const before = await Promise.all(live.map((n) => scrape(n)));
  const watched = await watch({ ...c, alarms: armed.length }, live, before, store, env.runTag, dueAt, progress, signal);
  // After Ctrl-C at a terminal the nodes got the SIGINT too and may be gone: the last scrapes stand.
  const after = signal.aborted ? watched.last : await Promise.all(live.map((n) => scrape(n)));
  const sample = signal.aborted
    ? []
    : await readBack(
        live[0]!,
        armed.map((i) => benchAddress(env, `a${i}`)),
        signal,
      );
  return summarize({ ...c, alarms: armed.length, nodes: live.length }, c.alarms, live, before, after, watched, sample, dueAt, killedAt);
}

/**
 * Arms the alarms through A for one T after the last is armed: the first 32 are armed an hour
 * ahead to time the calls, and T is 3 s plus twice what that rate says the whole lot takes. Should
 * arming run slower than that, it stops half a second before T (calls in flight abandoned): A
 * must be dead before any alarm is due, or it would run some itself. Resolves with T, the
 * actors armed (all K unless it stopped early) and the hour-ahead time the first 32 had first.
 */
async function armAll(a: Endpoint, c: DrainConfig, env: BenchEnv): Promise<{ dueAt: number; armed: number[]; probeAt: number }> {
  const { progress, signal } = env;
  const arm = async (i: number, at: number, signal: AbortSignal) => {
    const address = benchAddress(env, `a${i}`);
    env.touched.add(address);
    await callActor(a, address, 'arm', [at], { durable: true, signal });
  };
  const probeAt = Date.now() + 3_600_000;
  const t0 = Date.now();
  const probe = Math.min(ARM_IN_FLIGHT, c.alarms);
  await inLanes(probe, ARM_IN_FLIGHT, signal, (i) => arm(i, probeAt, signal));
  const perCallMs = (Date.now() - t0) / probe;
  const dueAt = Date.now() + 3_000 + Math.ceil(perCallMs * c.alarms * 2);
  const cut = new AbortController();
  const timer = setTimeout(() => cut.abort(), dueAt - ARM_STOP_BEFORE_DUE_MS - Date.now());
  const stop = AbortSignal.any([signal, cut.signal]);
  const armed: number[] = [];
  const start = performance.now();
  try {
    await inLanes(c.alarms, ARM_IN_FLIGHT, stop, async (i) => {
      try {
        await arm(i, dueAt, stop);
      } catch (e) {
        if (stop.aborted) return;
        throw e;
      }
      armed.push(i);
      progress.update(`${c.label}: arming`, armed.length, c.alarms, 'armed', armed.length / ((performance.now() - start) / 1000));
    });
  } finally {
    clearTimeout(timer);
    progress.end();
  }
  if (signal.aborted) throw new BenchAborted();
  if (armed.length < c.alarms)
    progress.note(`warning: arming ran slower than timed; ${armed.length} of ${c.alarms} alarms armed before T, the drain measures those`);
  return { dueAt, armed: armed.sort((x, y) => x - y), probeAt };
}

/**
 * Waits (until `deadline` at most) for A to delete the entries its re-arming replaced, the ones
 * due at `probeAt`. A deletes them in a batch shortly after each re-arming is uploaded; killed
 * before that, A would leave them for an hour, until they are due and a sweep removes them as
 * stale: on running nodes that is garbage the run leaves behind. Past the deadline a warning says
 * how many are left.
 */
async function replacedGone(
  store: ObjectStore,
  runTag: string,
  probeAt: number,
  deadline: number,
  progress: ProgressLine,
  signal: AbortSignal,
): Promise<void> {
  for (;;) {
    const left = await pendingEntries(store, runTag, probeAt);
    if (left === 0 || signal.aborted) return;
    if (Date.now() + REPLACED_POLL_MS >= deadline) {
      progress.note(`warning: node a is killed with ${left} replaced index entries not yet deleted; they stay until due, in an hour`);
      return;
    }
    await sleep(REPLACED_POLL_MS, signal);
  }
}

/** Thrown when Ctrl-C came before there was anything to measure (while arming). */
export class BenchAborted extends Error {
  constructor() {
    super('stopped before the drain began');
  }
}

interface Watched {
  /** [ms since the epoch, alarms delivered by all live nodes so far]. */
  series: [number, number][];
  complete: boolean;
  /** The live nodes' latest /metrics. */
  last: Scrape[];
}

const ran = (s: Scrape) => total(s, 'keepwork_alarm_deliveries_total', 'outcome="ran"');

/** Scrapes the live nodes every second until K alarms ran (or the index holds none of them), the abort, or the bound. */
async function watch(
  c: DrainConfig,
  live: readonly DrainingNode[],
  before: Scrape[],
  store: ObjectStore,
  runTag: string,
  dueAt: number,
  progress: ProgressLine,
  signal: AbortSignal,
): Promise<Watched> {
  const base = before.reduce((n, s) => n + ran(s), 0);
  const series: [number, number][] = [[Date.now(), 0]];
  let last = before;
  const boundMs = drainBoundMs(c);
  let lastIndexCheck = Date.now();
  // Alarms A armed in calls abandoned at the cut may have committed too: the index, listed now and then, says when all ran.
  while (!signal.aborted) {
    await sleep(WATCH_EVERY_MS, signal);
    if (signal.aborted) break;
    const dead = live.find((n) => !n.running());
    if (dead) throw new Error(`node ${dead.nodeId} exited during the drain (its log: ${dead.logPath})`);
    const scrapes = await Promise.all(live.map((n) => scrape(n)));
    last = scrapes;
    const now = Date.now();
    const delivered = scrapes.reduce((n, s) => n + ran(s), 0) - base;
    series.push([now, delivered]);
    const recent = series[Math.max(0, series.length - 6)]!;
    const rate = now > recent[0] ? ((delivered - recent[1]) / (now - recent[0])) * 1000 : NaN;
    progress.update(`${c.label}: draining`, delivered, c.alarms, 'delivered', rate);
    if (delivered >= c.alarms) return end(series, true, last, progress);
    if (now - lastIndexCheck > 10_000) {
      lastIndexCheck = now;
      if ((await pendingEntries(store, runTag)) === 0) return end(series, true, last, progress);
    }
    if (now > dueAt + boundMs) {
      progress.note(`${c.label}: ${delivered} of ${c.alarms} alarms ran within ${Math.round(boundMs / 1000)} s of T; stopping this run`);
      return end(series, false, last, progress);
    }
  }
  return end(series, false, last, progress);
}

function end(series: [number, number][], complete: boolean, last: Scrape[], progress: ProgressLine): Watched {
  progress.end();
  return { series, complete, last };
}

/** How long after T a drain may take before the run is given up: the lease and grace of A, three times, plus 50 ms an alarm, plus a minute. */
function drainBoundMs(c: DrainConfig): number {
  const lease = Number(c.set.leasePeriodMs ?? 10_000) + Number(c.set.graceMs ?? 5_000);
  return 3 * lease + 50 * c.alarms + 60_000;
}

/** Index entries of the run's actors (its class, names starting with its tag); only those due at `dueMs` if given. */
export async function pendingEntries(store: ObjectStore, runTag: string, dueMs?: number): Promise<number> {
  let n = 0;
  for await (const key of listAll(store, { prefix: tenantPrefix(BENCH_TENANT) })) {
    const entry = parseEntryKey(key);
    if (dueMs !== undefined && entry?.dueMs !== dueMs) continue;
    if (entry?.address.className === BENCH_CLASS && entry.address.name.startsWith(runTag)) n++;
  }
  return n;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });

/** When each armed actor (all, or a random sample of READBACK_MAX) fired, read through a live node. */
async function readBack(via: Endpoint, armed: readonly string[], signal: AbortSignal): Promise<number[]> {
  const which = [...armed];
  for (let i = which.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [which[i], which[j]] = [which[j]!, which[i]!];
  }
  const picked = which.slice(0, READBACK_MAX);
  const at: number[] = [];
  await inLanes(picked.length, 16, signal, async (i) => {
    const r = (await callActor(via, picked[i]!, 'fired', [], { signal })) as { at: number } | null;
    if (r) at.push(r.at);
  });
  return at;
}

function summarize(
  c: DrainConfig,
  requested: number,
  live: readonly DrainingNode[],
  before: Scrape[],
  after: Scrape[],
  w: Watched,
  firedAt: number[],
  dueAt: number,
  killedAt: number,
): DrainResult {
  const perNode = live.map((n, i) => {
    const delivered = ran(after[i]!) - ran(before[i]!);
    const cpuS = cpuSeconds(after[i]!) - cpuSeconds(before[i]!);
    return { nodeId: n.nodeId, delivered, cpuMsPerAlarm: delivered > 0 ? round((cpuS * 1000) / delivered, 3) : NaN };
  });
  const delivered = perNode.reduce((n, x) => n + x.delivered, 0);
  const requests: Record<string, number> = {};
  for (let i = 0; i < live.length; i++) {
    const d = diff(byLabel(after[i]!, 'keepwork_store_requests_total', 'op'), byLabel(before[i]!, 'keepwork_store_requests_total', 'op'));
    for (const [op, n] of Object.entries(d)) requests[op] = (requests[op] ?? 0) + n;
  }
  const sorted = [...firedAt].sort((x, y) => x - y);
  const lastAt = sorted.at(-1) ?? w.series.at(-1)![0];
  const firstAt = sorted[0] ?? w.series.find(([, n]) => n > 0)?.[0] ?? lastAt;
  const spanS = (lastAt - firstAt) / 1000;
  return {
    label: c.label,
    set: c.set,
    alarms: c.alarms,
    alarmsRequested: requested,
    nodes: c.nodes,
    complete: w.complete,
    delivered,
    dueAt,
    killedAt,
    drainSeconds: round((lastAt - dueAt) / 1000, 2),
    ratePerSec: spanS > 0 ? round(delivered / spanS, 1) : NaN,
    rateOverTime: sorted.length === c.alarms ? perSecond(sorted, dueAt) : rateOverTime(w.series, dueAt),
    latenessMs: sorted.length > 0 ? percentiles(sorted.map((t) => t - dueAt)) : null,
    latenessHistogramMs: histogram(sorted.map((t) => t - dueAt)),
    readBack: sorted.length,
    perNode,
    requests: s3Price(requests, Math.max(1, delivered)),
  };
}

/** keepwork_process_process_cpu_seconds_total: user + system of the node's process, every thread. */
const cpuSeconds = (s: Scrape) => total(s, 'keepwork_process_process_cpu_seconds_total');

/** Alarms per second in each whole second since T, from the watch's samples (about one a second). */
export function rateOverTime(series: readonly [number, number][], dueAt: number): [number, number][] {
  const out: [number, number][] = [];
  for (let i = 1; i < series.length; i++) {
    const [t, n] = series[i]!;
    const [t0, n0] = series[i - 1]!;
    if (t > t0) out.push([round((t - dueAt) / 1000, 1), round(((n - n0) / (t - t0)) * 1000, 1)]);
  }
  return out;
}
