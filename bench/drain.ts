/**
 * bench/drain: how fast live nodes drain a dead node's backlog of alarms (docs/alarm-index.md "The sweep",
 * "The numbers": a dead node's alarms fire a lease period plus grace after they were due, plus
 * up to one sweep; each live node delivers up to 256 per sweep, about 25 per second), next to
 * the store's own ceiling and to BullMQ doing the same work, in the same run.
 *
 *   1+M real node processes (test/cluster/harness.ts) share one bucket (a folder, or the S3
 *   server when KEEPWORK_TEST_S3_URL is set). Node A runs one template actor whose alarm is due
 *   at T; A is killed with SIGKILL; the template's chain, hold and index entry are copied under
 *   K−1 more names (bench/support/backlog.ts), so the bucket holds K pending alarms of actors
 *   last owned by a dead node. Then, per survivor, from its /metrics and /proc every 500 ms:
 *
 *     drain        T → the index holds none of them (each entry is removed once its alarm ran)
 *     rate         alarms per second per live node, in the burst (first → last firing) and since
 *                  readable (T + lease + grace → last firing)
 *     lateness     fired − T, p50 / p99 (read back from every actor when K ≤ 10,000; otherwise
 *                  from the drain curve, to its 0.5 s resolution)
 *     requests     store requests per delivery by operation: main thread
 *                  + workers (keepwork_store_requests_total{thread="main"|"worker"})
 *     in flight    deliveries a survivor ran at once, on average over the samples (every 500 ms)
 *                  taken while alarms ran (keepwork_deliveries_running: up to deliveryConcurrency,
 *                  more while the bucket's latency is the limit)
 *     ceiling      the store's own ops/s at that concurrency (bench/support/ceiling.ts)
 *                  priced by those requests; drain rate (all nodes) / ceiling
 *     cpu, rss     each survivor's CPU seconds during the drain and peak RSS (VmHWM); CPU ms per
 *                  alarm of all threads, of the main threads alone, and over the drain's second
 *                  half (past K/2 delivered: without the first seconds' compiling, secondHalfCpu)
 *     BullMQ       K due delayed jobs, M worker processes, one SQLite write each (bench/peer-bullmq)
 *
 *   npm run bench -- drain [--quick] [--k 1000,10000] [--m 1,2] [--store fs,latency,s3,sqlite]
 *     [--latency-ms 20] [--mode adr,adaptive,tuned] [--threads 2] [--set name=value …] [--no-peer]
 *     [--out drain] [--append] [--reprice]
 *   (--threads: each node's workerThreads, 2 unless given; --set: any other tunable, for every node;
 *   --store latency: the folder bucket with every request delayed by --latency-ms on the clock, no
 *   CPU while it waits — src/store/testing/latency.ts, an S3-like round trip without S3's CPU; --store sqlite:
 *   the SQLite bucket, src/store/sqlite/store.ts, in a folder under TMPDIR)
 *
 *   quick: K 1,000, M 2, fs, ADR defaults and tuned (~2 minutes). full: K 1k/10k/100k, M 1/2/3,
 *   fs (and s3 up to 10k), ADR defaults up to 10k (100k would take over an hour at 25/s).
 * Writes bench/results/drain.json, drain.md and drain-<store>-<K>.svg (alarms drained over time).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAddress, type ActorAddress } from '../src/core/address.js';
import { parseEntryKey, tenantPrefix } from '../src/alarms/keys.js';
import { FsStore, parseFsUrl } from '../src/store/fs/store.js';
import { LATENCY_SCHEME, parseLatencyUrl } from '../src/store/testing/latency.js';
import { listAll } from '../src/store/keys.js';
import { openStore } from '../src/store/open.js';
import type { ObjectStore } from '../src/store/types.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { Cluster, REPO, mustCall, type ClusterNode } from '../test/cluster/harness.js';
import { benchArgs, numbers, percentile, quick, round, setPairs, words, writeResult } from './lib.js';
import { runBullmqPeer, type PeerResult } from './peer-bullmq.js';
import { cloneBacklog, copyPuts, readTemplate } from './support/backlog.js';
import { ceiling, storeRates, type Rates } from './support/ceiling.js';
import { drainMarkdown, drainTable, perOpText } from './support/drain-report.js';
import { cpuMs, peakRssMb } from './support/proc-stats.js';
import { progressBar } from './support/progress.js';
import { byLabel, diff, scrape, total, type Scrape } from './support/prom.js';
import { lineChart } from './support/svg-chart.js';

const ALARMED_MODULE = join(REPO, 'test/fixtures/cluster/alarmed.ts');
const CLASS = 'Alarmed';
const TENANT = 'drain';
const LEASE = { leasePeriodMs: 10_000, graceMs: 5_000, skewBoundMs: 1_000 };
const MARGIN_MS = LEASE.leasePeriodMs + LEASE.graceMs;
export const MODES = {
  adr: {
    label: 'ADR defaults',
    set: { ...LEASE, alarmSweepMs: 10_000, sweepAdaptive: false, deliveriesPerSweep: 256, deliveryConcurrency: 32 },
  },
  adaptive: { label: 'adaptive', set: { ...LEASE, sweepAdaptive: true } },
  tuned: {
    label: 'tuned',
    set: {
      ...LEASE,
      sweepAdaptive: true,
      deliveriesPerSweep: 1024,
      sweepPageEntries: 4096,
      deliveryConcurrency: 64,
      workerConcurrency: 8,
      storeSocketsMax: 128,
    },
  },
} as const;
type Mode = keyof typeof MODES;
const READBACK_MAX = 10_000;
const COPY_IN_FLIGHT = 32;

const args = benchArgs({
  k: { type: 'string' },
  m: { type: 'string' },
  store: { type: 'string' },
  'latency-ms': { type: 'string', default: '20' },
  mode: { type: 'string' },
  'no-peer': { type: 'boolean' },
  out: { type: 'string' },
  reprice: { type: 'boolean' },
  append: { type: 'boolean' },
  threads: { type: 'string', default: '2' },
  set: { type: 'string', multiple: true },
});
/** Worker threads per node (--threads; 2 is the default on this 2-core machine); no idle release during a run; `--set`. */
const NODE_SET = { workerThreads: Number(args.threads), idleTimeoutMs: 600_000, ...setPairs(args.set) };
const S3_URL = process.env.KEEPWORK_TEST_S3_URL;
const KS = numbers(args.k) ?? (quick ? [1000] : [1000, 10000, 100000]);
const MS = numbers(args.m) ?? (quick ? [2] : [1, 2, 3]);
const STORES = words(args.store) ?? (quick || !S3_URL ? ['fs'] : ['fs', 's3']);
for (const s of STORES)
  if (!['fs', 'latency', 's3', 'sqlite'].includes(s)) throw new Error(`--store ${s}: not one of fs, latency, s3, sqlite`);
/** Delay of every request of `--store latency`, ms. */
const LATENCY_MS = Number(args['latency-ms']);
if (!Number.isFinite(LATENCY_MS) || LATENCY_MS < 0) throw new Error(`--latency-ms ${args['latency-ms']}: a number ≥ 0`);
const MODE_LIST = (words(args.mode) ?? (quick ? ['adr', 'tuned'] : ['adr', 'adaptive', 'tuned'])) as Mode[];
for (const m of MODE_LIST) if (!(m in MODES)) throw new Error(`--mode ${m}: not one of ${Object.keys(MODES).join(', ')}`);
const PEER = !args['no-peer'];
const explicitK = args.k !== undefined;
/** Result files: bench/results/<out>.json and .md (default drain). */
const OUT = args.out ?? 'drain';
/** Price the rows of bench/results/<out>.json again with store rates measured now (no drain). */
const REPRICE = args.reprice === true;
/** Keep the rows (and BullMQ rows) already in bench/results/<out>.json and add this run's. */
const APPEND = args.append === true;

export interface DrainRow {
  store: string;
  mode: string;
  K: number;
  M: number;
  copyEndedBeforeTMs: number;
  drainMs: number;
  firstFiredMs: number;
  lastFiredMs: number;
  perNodePerSecBurst: number;
  perNodePerSecSinceReadable: number;
  lateness: { p50: number; p99: number; max: number; source: 'read back' | 'curve' };
  sinceReadable: { p50: number; p99: number };
  duplicates?: number;
  deliveries: Record<string, number>;
  requestsPerDelivery: { main: Record<string, number>; worker: Record<string, number>; total: number };
  storeRates: Rates;
  /** Deliveries a survivor ran at once on average during the drain: the ceiling's concurrency (older rows: absent, 32 or the mode's). */
  inFlight?: number;
  ceilingPerSec: number;
  ratioToCeiling: number;
  bullmqPerWorkerPerSec?: number;
  ratioToBullmq?: number;
  cpuSecPerNode: number[];
  cpuPercentPerNode: number[];
  /** The survivors' main threads alone (absent from results written before it was measured). */
  mainThreadCpuSecPerNode?: number[];
  /** CPU ms per alarm over the drain's second half (secondHalfCpu). */
  cpuMsPerAlarmSecondHalf?: number;
  peakRssMbPerNode: number[];
  /** [seconds since T, CPU s of the survivors since the watch began] */
  cpuCurve?: [number, number][];
  /** [seconds since T, alarms ran] */
  curve: [number, number][];
}

/** Folders of `--store latency` and `--store sqlite` buckets, removed with their cluster. */
const latencyFolders = new Map<string, string>();

function bucketFor(store: string, run: string): string | undefined {
  if (store === 'fs') return undefined;
  if (store === 'latency') {
    const dir = mkdtempSync(join(tmpdir(), `kw-bench-latency-${run}-`));
    const url = `${LATENCY_SCHEME}file://${dir}?ms=${LATENCY_MS}`;
    latencyFolders.set(url, dir);
    return url;
  }
  if (store === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), `kw-bench-sqlite-${run}-`));
    const url = `sqlite:${join(dir, 'bucket.db')}`;
    latencyFolders.set(url, dir);
    return url;
  }
  if (!S3_URL) throw new Error('--store s3 needs KEEPWORK_TEST_S3_URL (eval "$(bash scripts/s3-test-server.sh env)")');
  return S3_URL.replace(/^(s3:\/\/[^/?]+)\/?/, `$1/bench-drain-${process.pid}-${run}/`);
}

/** The store the backlog is copied with: for a folder, without fsync (throwaway data, 3–5× faster). */
function copyStore(c: Cluster): ObjectStore {
  const folder = c.bucket.startsWith(LATENCY_SCHEME) ? parseLatencyUrl(c.bucket).inner : c.bucket;
  return folder.startsWith('file://') ? new FsStore(parseFsUrl(folder), { fsync: false }) : openStore(c.bucket);
}

function startCluster(store: string, run: string): Cluster {
  const c = Cluster.create(`drain-${run}`, bucketFor(store, run));
  const base = c.startArgs.bind(c);
  c.startArgs = (nodeId, o) => {
    const args = base(nodeId, o);
    args.splice(args.indexOf('--class'), 0, '--class', `${CLASS}=${ALARMED_MODULE}`);
    return args;
  };
  return c;
}

async function pool<T, R>(items: readonly T[], inFlight: number, op: (x: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await op(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, items.length) }, lane));
  return out;
}

async function pendingEntries(store: ObjectStore): Promise<number> {
  let n = 0;
  for await (const key of listAll(store, { prefix: tenantPrefix(TENANT) })) if (parseEntryKey(key)?.address.className === CLASS) n++;
  return n;
}

/**
 * Actors copied per second (to choose T): a calibration actor, armed an hour ahead through node
 * A, copied under 2 × 200 names (the second round timed), and then all its objects removed again.
 */
async function copyRate(store: ObjectStore, a: ClusterNode): Promise<number> {
  const cal = parseAddress(`${TENANT}/${CLASS}/calibration`);
  await sleep(3_000); // the nodes have just started (loading classes, first sweeps)
  await mustCall(a.url, `${TENANT}/${CLASS}/${cal.name}`, 'arm', [Date.now() + 3_600_000], { durable: true, timeoutMs: 60_000 });
  const template = await readTemplate(store, cal);
  // Two rounds of 200: the first warms the code up (it is several times slower), the second is timed.
  const probes = Array.from({ length: 400 }, (_, i) => parseAddress(`${TENANT}/${CLASS}/calibration${i}`));
  await cloneBacklog(store, template, probes.slice(0, 200), COPY_IN_FLIGHT, () => undefined);
  const t0 = performance.now();
  await cloneBacklog(store, template, probes.slice(200), COPY_IN_FLIGHT, () => undefined);
  const rate = 200 / ((performance.now() - t0) / 1000);
  const keys = [cal, ...probes].flatMap((x) => copyPuts(template, x).map(([k]) => k));
  for (let i = 0; i < keys.length; i += 1000) await store.deleteMany(keys.slice(i, i + 1000));
  return rate;
}

interface Armed {
  at: number;
  copyEnd: number;
}

/** Node A arms the template, is killed, and the template is copied under K−1 more names. */
async function makeBacklog(c: Cluster, a: ClusterNode, actors: ActorAddress[]): Promise<Armed> {
  const store = copyStore(c);
  try {
    const rate = await copyRate(store, a);
    // A copy that runs past T is harmless until T + lease + grace, when the sweeps may first
    // read the entries: that is the slack.
    const copyMs = Math.ceil((actors.length / rate) * 1000 * 1.2);
    const at = Date.now() + copyMs + 3_000;
    await mustCall(a.url, `${TENANT}/${CLASS}/${actors[0]!.name}`, 'arm', [at], { durable: true, timeoutMs: 60_000 });
    a.child.kill('SIGKILL');
    await a.exited;
    const template = await readTemplate(store, actors[0]!);
    const bar = progressBar(`backlog K=${actors.length}`, actors.length);
    await cloneBacklog(store, template, actors.slice(1), COPY_IN_FLIGHT, (n) => bar.update(n + 1));
    bar.done(`copied (${Math.round(rate)} actors/s calibrated; T in ${Math.round((at - Date.now()) / 1000)} s)`);
    const copyEnd = Date.now();
    if (copyEnd > at + MARGIN_MS - 1_000)
      console.warn(`warning: the backlog copy ended ${copyEnd - at} ms after T: sweeps may have read part of it early`);
    return { at, copyEnd };
  } finally {
    await store.close();
  }
}

interface Sample {
  t: number;
  ran: number;
  /** The most deliveries running on one survivor (keepwork_deliveries_running) at this sample. */
  inFlight: number;
  /** CPU ms of the survivors so far (all their threads, summed). */
  cpuMs: number;
}

/** Scrapes every survivor until K alarms ran and the index is empty; the drain curve. */
async function watchDrain(
  c: Cluster,
  survivors: ClusterNode[],
  k: number,
  at: number,
  label: string,
): Promise<{ samples: Sample[]; drainedAt: number }> {
  const samples: Sample[] = [];
  const bar = progressBar(label, k);
  const boundMs = 3 * MARGIN_MS + Math.ceil((k / survivors.length / 20) * 1_000) * 2 + 60_000;
  for (;;) {
    await sleep(500);
    const dead = survivors.find((s) => !s.running);
    if (dead)
      throw new Error(
        `${label}: live node ${dead.nodeId} exited (${dead.child.exitCode ?? dead.child.signalCode}) during the drain:\n${dead.logTail(12)}`,
      );
    const scrapes = await Promise.all(survivors.map((s) => scrape(s.url)));
    const ran = scrapes.reduce((n, s) => n + total(s, 'keepwork_alarm_deliveries_total', 'outcome="ran"'), 0);
    const inFlight = Math.max(...scrapes.map((s) => total(s, 'keepwork_deliveries_running')));
    samples.push({ t: Date.now(), ran, inFlight, cpuMs: survivors.reduce((ms, s) => ms + cpuMs(s.pid), 0) });
    bar.update(ran, `${Math.round((Date.now() - at) / 100) / 10} s since T`);
    if (ran >= k && (await pendingEntries(c.store())) === 0) {
      bar.done(`drained ${round((Date.now() - at) / 1000, 1)} s after T`);
      return { samples, drainedAt: Date.now() };
    }
    if (Date.now() > at + boundMs) throw new Error(`${label}: ${ran} of ${k} alarms ran ${boundMs} ms after their time`);
  }
}

/**
 * CPU ms per alarm from the first sample past half the alarms to the last one: a drain in a fresh
 * process pays for compiling its hot path (V8's optimising compiler, in each isolate) in its
 * first seconds, and this leaves that out. NaN when the samples do not span it.
 */
function secondHalfCpu(samples: Sample[], k: number): number {
  const from = samples.find((s) => s.ran >= k / 2);
  const to = samples.at(-1);
  if (!from || !to || to.ran <= from.ran) return NaN;
  return round((to.cpuMs - from.cpuMs) / (to.ran - from.ran), 2);
}

/** Deliveries running on a survivor, on average over the samples taken while alarms ran (at least 1). */
function meanInFlight(samples: Sample[]): number {
  const during = samples.filter((x, i) => i > 0 && x.ran > samples[i - 1]!.ran);
  return Math.max(1, Math.round(during.reduce((n, x) => n + x.inFlight, 0) / Math.max(1, during.length)));
}

/** The first time the curve reached `n` alarms (ms), or NaN. */
const reached = (samples: Sample[], n: number) => samples.find((s) => s.ran >= n)?.t ?? NaN;

interface Fired {
  at: number;
  scheduled: number;
  retries: number;
  pid: number;
}

/** Every actor's fired rows, read back through the first survivor (K ≤ READBACK_MAX). */
async function readBack(survivor: ClusterNode, actors: ActorAddress[]) {
  const rows = await pool(actors, 32, (x) =>
    mustCall<Fired[]>(survivor.url, `${TENANT}/${CLASS}/${x.name}`, 'fired', [], { timeoutMs: 60_000 }),
  );
  const missing = rows.filter((r) => r.length === 0).length;
  if (missing > 0) throw new Error(`${missing} of ${actors.length} alarms never fired though the index drained`);
  return { firedAt: rows.map((r) => r[0]!.at).sort((x, y) => x - y), duplicates: rows.filter((r) => r.length > 1).length };
}

const perDelivery = (ops: Record<string, number>, k: number) =>
  Object.fromEntries(Object.entries(ops).map(([op, n]) => [op, round(n / k, 3)]));

function sumOps(list: Record<string, number>[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of list) for (const [k, v] of Object.entries(r)) out[k] = (out[k] ?? 0) + v;
  return out;
}

const rateCache = new Map<string, Rates>();

async function ratesFor(storeKind: string, c: Cluster, inFlight: number): Promise<Rates> {
  const key = `${storeKind}/${inFlight}`;
  if (!rateCache.has(key)) rateCache.set(key, await storeRates(c.store(), inFlight, quick ? 300 : 1000));
  return rateCache.get(key)!;
}

async function run(storeKind: string, mode: Mode, k: number, m: number): Promise<DrainRow> {
  const runId = `${storeKind}-${mode}-${k}-${m}`;
  const c = startCluster(storeKind, runId);
  const actors = Array.from({ length: k }, (_, i) => parseAddress(`${TENANT}/${CLASS}/a${i}`));
  let failed = true;
  try {
    const set = { ...MODES[mode].set, ...NODE_SET };
    const [a, ...survivors] = await c.startAll(['a', ...Array.from({ length: m }, (_, i) => `s${i + 1}`)], { set });
    const { at, copyEnd } = await makeBacklog(c, a!, actors);
    const before = await Promise.all(survivors.map((s) => scrape(s.url)));
    const cpu0 = survivors.map((s) => cpuMs(s.pid));
    const mainCpu0 = survivors.map((s) => cpuMs(s.pid, s.pid));
    const t0 = Date.now();
    const { samples, drainedAt } = await watchDrain(c, survivors, k, at, `${storeKind} ${MODES[mode].label} K=${k} M=${m}`);
    const after = await Promise.all(survivors.map((s) => scrape(s.url)));
    const cpuSec = survivors.map((s, i) => (cpuMs(s.pid) - cpu0[i]!) / 1000);
    const mainCpuSec = survivors.map((s, i) => (cpuMs(s.pid, s.pid) - mainCpu0[i]!) / 1000);
    const rss = survivors.map((s) => peakRssMb(s.pid));
    const wallS = (Date.now() - t0) / 1000;
    const exact = k <= READBACK_MAX ? await readBack(survivors[0]!, actors) : undefined;
    // The ceiling at the deliveries a survivor ran at once on average while alarms ran (at least
    // 1): deliveryConcurrency, or more where delivery-limit.ts raised it for the bucket's latency.
    // (A node without the gauge — a build from before it — ran deliveryConcurrency at most.)
    const fixed = (set as { deliveryConcurrency?: number }).deliveryConcurrency ?? 32;
    const inFlight = samples.some((x) => x.inFlight > 0) ? meanInFlight(samples) : fixed;
    const rates = await ratesFor(storeKind, c, inFlight);
    failed = false;
    return summarize({
      storeKind,
      mode,
      k,
      m,
      at,
      copyEnd,
      drainedAt,
      samples,
      before,
      after,
      cpuSec,
      mainCpuSec,
      cpu0Ms: cpu0.reduce((a, b) => a + b, 0),
      wallS,
      rss,
      exact,
      rates,
      inFlight,
    });
  } finally {
    await disposeCluster(c, failed);
  }
}

interface RunData {
  storeKind: string;
  mode: Mode;
  k: number;
  m: number;
  at: number;
  copyEnd: number;
  drainedAt: number;
  samples: Sample[];
  before: Scrape[];
  after: Scrape[];
  cpuSec: number[];
  mainCpuSec: number[];
  /** The survivors' CPU ms (summed) when the watch began. */
  cpu0Ms: number;
  wallS: number;
  rss: number[];
  exact: { firedAt: number[]; duplicates: number } | undefined;
  rates: Rates;
  inFlight: number;
}

function summarize(d: RunData): DrainRow {
  const { k, m, at } = d;
  const fired = d.exact?.firedAt;
  const firstAt = fired ? fired[0]! : reached(d.samples, 1);
  const lastAt = fired ? fired.at(-1)! : reached(d.samples, k);
  const q = (p: number) => (fired ? percentile(fired, p) : reached(d.samples, Math.ceil((p / 100) * k)));
  const ops = (thread: string) => {
    const where = `thread="${thread}"`;
    return sumOps(
      d.after.map((s, i) =>
        diff(byLabel(s, 'keepwork_store_requests_total', 'op', where), byLabel(d.before[i]!, 'keepwork_store_requests_total', 'op', where)),
      ),
    );
  };
  const main = perDelivery(ops('main'), k);
  const worker = perDelivery(ops('worker'), k);
  const all = sumOps([main, worker]);
  const ceil = ceiling(d.rates, all);
  const burstS = Math.max(0.001, (lastAt - firstAt) / 1000);
  return {
    store: d.storeKind,
    mode: MODES[d.mode].label,
    K: k,
    M: m,
    copyEndedBeforeTMs: at - d.copyEnd,
    drainMs: d.drainedAt - at,
    firstFiredMs: firstAt - at,
    lastFiredMs: lastAt - at,
    perNodePerSecBurst: round(k / m / burstS, 1),
    perNodePerSecSinceReadable: round(k / m / Math.max(0.001, (lastAt - at - MARGIN_MS) / 1000), 1),
    lateness: { p50: q(50) - at, p99: q(99) - at, max: lastAt - at, source: fired ? 'read back' : 'curve' },
    sinceReadable: { p50: q(50) - at - MARGIN_MS, p99: q(99) - at - MARGIN_MS },
    ...(d.exact ? { duplicates: d.exact.duplicates } : {}),
    deliveries: sumOps(
      d.after.map((s, i) =>
        diff(byLabel(s, 'keepwork_alarm_deliveries_total', 'outcome'), byLabel(d.before[i]!, 'keepwork_alarm_deliveries_total', 'outcome')),
      ),
    ),
    requestsPerDelivery: {
      main,
      worker,
      total: round(
        Object.values(all).reduce((a, b) => a + b, 0),
        2,
      ),
    },
    storeRates: d.rates,
    inFlight: d.inFlight,
    ceilingPerSec: Math.round(ceil),
    ratioToCeiling: round(k / burstS / ceil, 3),
    cpuSecPerNode: d.cpuSec.map((s) => round(s, 1)),
    cpuPercentPerNode: d.cpuSec.map((s) => Math.round((100 * s) / d.wallS)),
    mainThreadCpuSecPerNode: d.mainCpuSec.map((s) => round(s, 1)),
    cpuMsPerAlarmSecondHalf: secondHalfCpu(d.samples, k),
    peakRssMbPerNode: d.rss,
    curve: [[0, 0], ...d.samples.map((s): [number, number] => [round((s.t - at) / 1000, 2), s.ran])],
    cpuCurve: d.samples.map((s): [number, number] => [round((s.t - at) / 1000, 2), round((s.cpuMs - d.cpu0Ms) / 1000, 2)]),
  };
}

/** Kills the nodes, empties an S3 prefix, removes the folder — kept (with its logs) after a failure. */
async function disposeCluster(c: Cluster, failed: boolean): Promise<void> {
  for (const n of c.nodes) {
    if (n.running) {
      n.child.kill('SIGCONT');
      n.child.kill('SIGKILL');
      await n.exited;
    }
  }
  const latencyFolder = latencyFolders.get(c.bucket);
  if (latencyFolder !== undefined) {
    rmSync(latencyFolder, { recursive: true, force: true });
    latencyFolders.delete(c.bucket);
  } else if (!c.bucket.startsWith('file://')) {
    // RGW keeps objects in RAM: remove this run's prefix.
    const keys: string[] = [];
    for await (const key of listAll(c.store())) keys.push(key);
    for (let i = 0; i < keys.length; i += 1000) await c.store().deleteMany(keys.slice(i, i + 1000));
  }
  await c.store().close();
  if (failed) console.error(`cluster folder kept for inspection (node logs in logs/): ${c.root}`);
  else rmSync(c.root, { recursive: true, force: true });
}

function plan(): [string, Mode, number, number][] {
  const out: [string, Mode, number, number][] = [];
  for (const k of KS)
    for (const store of STORES)
      for (const mode of MODE_LIST)
        for (const m of MS) {
          if (!explicitK && !quick && ((mode === 'adr' && k > 10_000) || (store === 's3' && k > 10_000))) continue;
          out.push([store, mode, k, m]);
        }
  return out;
}

function charts(rows: DrainRow[], peers: PeerResult[]): string[] {
  const files: string[] = [];
  for (const store of new Set(rows.map((r) => r.store))) {
    for (const k of new Set(rows.filter((r) => r.store === store).map((r) => r.K))) {
      const mine = rows.filter((r) => r.store === store && r.K === k);
      const series = [
        ...mine.map((r) => ({
          label: `keepwork ${r.mode}, M=${r.M}`,
          points: r.curve.map(([t, n]): [number, number] => [Math.max(0, round(t - MARGIN_MS / 1000, 2)), n]),
        })),
        ...peers.filter((p) => p.K === k).map((p) => ({ label: `BullMQ, ${p.M} workers`, points: p.curve })),
      ];
      const svg = lineChart({
        title: `Alarms drained after they became readable — ${store} store, K=${k}`,
        xLabel: 'seconds since readable (keepwork: T + lease + grace; BullMQ: workers start)',
        yLabel: 'alarms / jobs done',
        series,
      });
      const path = join(REPO, 'bench/results', `drain-${store}-${k}.svg`);
      writeFileSync(path, svg);
      files.push(path);
    }
  }
  return files;
}

/** Writes the JSON, the markdown and the charts of what has run so far. */
function save(rows: DrainRow[], peers: PeerResult[], startedAt: number): string[] {
  const svgs = charts(rows, peers);
  const json = writeResult(OUT, { modes: MODES, nodeSettings: NODE_SET, durationMs: Date.now() - startedAt, rows, peers });
  writeFileSync(
    join(REPO, `bench/results/${OUT}.md`),
    drainMarkdown(rows, peers, { quick, durationMs: Date.now() - startedAt, argv: process.argv.slice(2) }),
  );
  return [json, ...svgs].map((s) => s.slice(REPO.length));
}

/** Store rates for `--reprice`: a fresh temp folder, or a fresh S3 prefix, at that concurrency. */
async function freshRates(storeKind: string, inFlight: number): Promise<Rates> {
  const dir = mkdtempSync(join(tmpdir(), 'kw-bench-reprice-'));
  const url = storeKind === 'fs' ? dir : bucketFor(storeKind, `reprice-${inFlight}`)!;
  const store = openStore(url);
  try {
    return await storeRates(store, inFlight, quick ? 300 : 1000);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
    const latencyFolder = latencyFolders.get(url);
    if (latencyFolder !== undefined) rmSync(latencyFolder, { recursive: true, force: true });
  }
}

async function reprice(): Promise<void> {
  const data = JSON.parse(readFileSync(join(REPO, `bench/results/${OUT}.json`), 'utf8')) as { rows: DrainRow[]; peers: PeerResult[] };
  const cache = new Map<string, Rates>();
  for (const r of data.rows) {
    const set = Object.values(MODES).find((x) => x.label === r.mode)!.set as { deliveryConcurrency?: number };
    const inFlight = r.inFlight ?? set.deliveryConcurrency ?? 32;
    const key = `${r.store}/${inFlight}`;
    if (!cache.has(key)) cache.set(key, await freshRates(r.store, inFlight));
    r.storeRates = cache.get(key)!;
    const ceil = ceiling(r.storeRates, sumOps([r.requestsPerDelivery.main, r.requestsPerDelivery.worker]));
    r.ceilingPerSec = Math.round(ceil);
    r.ratioToCeiling = round((r.perNodePerSecBurst * r.M) / ceil, 3);
  }
  console.log(`repriced ${data.rows.length} rows: ${save(data.rows, data.peers, Date.now()).join(', ')}`);
}

async function main() {
  if (REPRICE) return reprice();
  const startedAt = Date.now();
  const earlier = APPEND
    ? (JSON.parse(readFileSync(join(REPO, `bench/results/${OUT}.json`), 'utf8')) as { rows: DrainRow[]; peers: PeerResult[] })
    : undefined;
  const rows: DrainRow[] = earlier?.rows ?? [];
  const peers: PeerResult[] = earlier?.peers ?? [];
  // The peer first: it takes seconds, and a long run saved part-way then has its ratios.
  if (PEER) for (const k of KS) for (const m of MS) peers.push(await runBullmqPeer(k, m, 32));
  const failures: string[] = [];
  for (const [store, mode, k, m] of plan()) {
    let r: DrainRow;
    try {
      r = await run(store, mode, k, m);
    } catch (e) {
      failures.push(`${store} ${mode} K=${k} M=${m}: ${(e as Error).message.split('\n')[0]}`);
      console.error(`FAILED ${store} ${mode} K=${k} M=${m}:`, e);
      continue;
    }
    const p = peers.find((x) => x.K === r.K && x.M === r.M);
    if (p)
      Object.assign(r, { bullmqPerWorkerPerSec: p.perWorkerPerSec, ratioToBullmq: round(r.perNodePerSecBurst / p.perWorkerPerSec, 4) });
    rows.push(r);
    save(rows, peers, startedAt);
  }
  console.log('\n' + drainTable(rows) + '\n');
  console.log(perOpText(rows));
  console.log(`wrote ${save(rows, peers, startedAt).join(', ')} (${round((Date.now() - startedAt) / 1000, 1)} s)`);
  if (failures.length) {
    console.error(`${failures.length} configuration(s) failed:\n  ${failures.join('\n  ')}`);
    process.exitCode = 1;
  }
}

await main();
