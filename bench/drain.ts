/**
 * bench/drain: how fast the cluster recovers a dead node's alarms (ADR 0009 "Sweep",
 * "Consequences": a dead node's alarms fire a lease period plus grace after they were due, plus
 * up to one sweep; each live node delivers up to 256 per sweep, about 25 per second).
 *
 *   K pending alarms on actors last run by node a (durable calls through a, all due at one time
 *   T a few seconds ahead), M other live node processes; a killed -9 before T. Then:
 *     drain       from T until the index holds none of them (every alarm fired, its entry removed)
 *     rate        alarms delivered per second per live node: K / M / (last firing − first firing),
 *                 and K / M / (last firing − (T + lease + grace)) since the sweep could first read them
 *     lateness    firedAt − scheduledAt of each alarm (committed by the handler, read back through
 *                 a survivor afterwards), p50 / p99 / max
 *     requests    each survivor's /metrics at the end: keepwork_alarm_deliveries_total (by outcome)
 *                 and keepwork_store_requests_total (main-thread bucket requests: holds, leases,
 *                 sweeps; the workers' uploads, restores and index deletes are not counted there),
 *                 requests per delivery
 *   for ADR defaults (leasePeriodMs 10000, graceMs 5000, alarmSweepMs 10000, sweepAdaptive 0)
 *   and adaptive (the same lease and grace, sweepAdaptive 1).
 *
 *   npm run bench -- drain [--quick]     quick: K 300, M 2 (under ~3 minutes); full: K 1,000 and
 *                                         5,000, M 1, 2, 3
 *
 * Real node processes (test/cluster/harness.ts) on one folder bucket in a temp folder per run,
 * removed afterwards; the actor class is test/fixtures/cluster/alarmed.ts.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseEntryKey, tenantPrefix } from '../src/alarms/keys.js';
import { listAll } from '../src/store/keys.js';
import type { ObjectStore } from '../src/store/types.js';
import { Cluster, REPO, mustCall, sleep, type ClusterNode } from '../test/cluster/harness.js';
import { percentile, quick, round, table, writeResult } from './lib.js';

const ALARMED_MODULE = join(REPO, 'test/fixtures/cluster/alarmed.ts');
const CLASS = 'Alarmed';
const KS = quick ? [300] : [1_000, 5_000];
const MS = quick ? [2] : [1, 2, 3];
const LEASE = { leasePeriodMs: 10_000, graceMs: 5_000, skewBoundMs: 1_000 };
const MODES = {
  'ADR defaults': { ...LEASE, alarmSweepMs: 10_000, sweepAdaptive: 0 },
  adaptive: { ...LEASE, sweepAdaptive: 1 },
} as const;
type Mode = keyof typeof MODES;
const MARGIN_MS = LEASE.leasePeriodMs + LEASE.graceMs;
/** Two worker threads per node (the default on this 2-core machine); no idle release during a run. */
const NODE_SET = { workerThreads: 2, idleTimeoutMs: 600_000 };
const IN_FLIGHT = 32;

interface Fired {
  at: number;
  scheduled: number;
  retries: number;
  pid: number;
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

const arm = (node: ClusterNode, actors: readonly string[], at: number) =>
  pool(actors, IN_FLIGHT, (a) => mustCall(node.url, a, 'arm', [at], { durable: true, timeoutMs: 60_000 }));

async function pending(store: ObjectStore, tenant: string): Promise<number> {
  let n = 0;
  for await (const key of listAll(store, { prefix: tenantPrefix(tenant) })) if (parseEntryKey(key)?.address.className === CLASS) n++;
  return n;
}

/** label set → value of one metric family, from a node's /metrics. */
async function scrape(node: ClusterNode): Promise<Map<string, Map<string, number>>> {
  const text = await (await fetch(`${node.url}/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
  const out = new Map<string, Map<string, number>>();
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)(\{[^}]*\})? ([-+0-9.eE]+|NaN)$/.exec(line);
    if (!m) continue;
    if (!out.has(m[1]!)) out.set(m[1]!, new Map());
    out.get(m[1]!)!.set(m[2] ?? '', Number(m[3]));
  }
  return out;
}

const sum = (m: Map<string, number> | undefined, labels = '') => [...(m ?? new Map<string, number>())].reduce((s, [l, v]) => (l.includes(labels) ? s + v : s), 0);
const byLabel = (m: Map<string, number> | undefined, label: string) =>
  Object.fromEntries([...(m ?? new Map<string, number>())].map(([l, v]) => [new RegExp(`${label}="([^"]*)"`).exec(l)?.[1] ?? l, v]));

async function run(k: number, m: number, mode: Mode) {
  const c = Cluster.create(`drain-${k}-${m}`);
  const base = c.startArgs.bind(c);
  c.startArgs = (nodeId, o) => {
    const args = base(nodeId, o);
    args.splice(args.indexOf('--class'), 0, '--class', `${CLASS}=${ALARMED_MODULE}`);
    return args;
  };
  const tenant = 'drain';
  const actors = Array.from({ length: k }, (_, i) => `${tenant}/${CLASS}/a${i}`);
  try {
    const set = { ...MODES[mode], ...NODE_SET };
    const ids = ['a', ...Array.from({ length: m }, (_, i) => `s${i + 1}`)];
    const [a, ...survivors] = await c.startAll(ids, { set });
    // Pace of the first calls (far ahead), then one time T for all, then those first ones again.
    const t0 = Date.now();
    const probe = actors.slice(0, Math.min(k, Math.max(2 * IN_FLIGHT, Math.ceil(k / 10))));
    await mustCall(a!.url, probe[0]!, 'arm', [t0 + 3_600_000], { durable: true, timeoutMs: 60_000 });
    const t1 = Date.now();
    await arm(a!, probe.slice(1), t0 + 3_600_000);
    const perActorMs = (Date.now() - t1) / (probe.length - 1);
    const at = Date.now() + Math.ceil(1.5 * perActorMs * k) + 1_500;
    await arm(a!, actors.slice(probe.length), at);
    await arm(a!, probe, at);
    if (Date.now() >= at - 500) throw new Error(`arming ${k} alarms ran past their time`);
    a!.child.kill('SIGKILL');
    await a!.exited;
    const killedAt = Date.now();

    // Drained: the index holds none of them (each entry is removed once its alarm fired).
    const boundMs = 3 * MARGIN_MS + Math.ceil((k / m / 25) * 1_000) * 2 + 60_000;
    let drainedAt = 0;
    for (;;) {
      await sleep(Date.now() < at + MARGIN_MS ? 1_000 : 250);
      if ((await pending(c.store(), tenant)) === 0) {
        drainedAt = Date.now();
        break;
      }
      if (Date.now() > at + boundMs) throw new Error(`${k} alarms not drained ${boundMs} ms after their time`);
    }
    const metrics = await Promise.all(survivors.map(scrape)); // before the read-back adds requests
    const rows = await pool(actors, IN_FLIGHT, (x) => mustCall<Fired[]>(survivors[0]!.url, x, 'fired', [], { timeoutMs: 60_000 }));
    const missing = rows.filter((r) => r.length === 0).length;
    if (missing > 0) throw new Error(`${missing} of ${k} alarms never fired though the index drained`);
    const firsts = rows.map((r) => r[0]!);
    const late = firsts.map((f) => f.at - f.scheduled).sort((x, y) => x - y);
    const firstAt = Math.min(...firsts.map((f) => f.at));
    const lastAt = Math.max(...firsts.map((f) => f.at));
    const pidToNode = new Map(survivors.map((s) => [s.pid, s.nodeId]));
    const perNode = Object.fromEntries(survivors.map((s) => [s.nodeId, rows.filter((r) => pidToNode.get(r[0]!.pid) === s.nodeId).length]));
    const deliveries = metrics.map((x) => byLabel(x.get('keepwork_alarm_deliveries_total'), 'outcome'));
    const started = metrics.reduce((s, x) => s + sum(x.get('keepwork_alarm_deliveries_total')), 0);
    const storeRequests = metrics.reduce((s, x) => s + sum(x.get('keepwork_store_requests_total')), 0);
    const storeByOp = metrics.map((x) => byLabel(x.get('keepwork_store_requests_total'), 'op'));
    const burstS = Math.max(0.001, (lastAt - firstAt) / 1000);
    const sinceReadableS = Math.max(0.001, (lastAt - (at + MARGIN_MS)) / 1000);
    const result = {
      mode,
      K: k,
      M: m,
      armedMs: at - t0,
      killedBeforeDueMs: at - killedAt,
      drainMs: drainedAt - at,
      firstFiredMs: firstAt - at,
      lastFiredMs: lastAt - at,
      perNodePerSecBurst: round(k / m / burstS, 1),
      perNodePerSecSinceReadable: round(k / m / sinceReadableS, 1),
      lateness: { p50: percentile(late, 50), p99: percentile(late, 99), max: late.at(-1)! },
      duplicates: rows.filter((r) => r.length > 1).length,
      firedPerNode: perNode,
      deliveries,
      deliveriesStarted: started,
      storeRequests,
      storeRequestsByOp: storeByOp,
      storeRequestsPerDelivery: round(storeRequests / k, 2),
    };
    console.log(
      `${mode} K=${k} M=${m}: drained ${result.drainMs} ms after T; lateness p50 ${result.lateness.p50} p99 ${result.lateness.p99} ms; ` +
        `${result.perNodePerSecBurst}/s/node in the burst; deliveries ${JSON.stringify(deliveries)}; store requests/alarm ${result.storeRequestsPerDelivery}`,
    );
    return result;
  } finally {
    for (const n of c.nodes) {
      if (n.running) {
        n.child.kill('SIGCONT');
        n.child.kill('SIGKILL');
        await n.exited;
      }
    }
    await c.store().close();
    rmSync(c.root, { recursive: true, force: true });
  }
}

const results = [];
const startedAt = Date.now();
for (const k of KS) for (const m of MS) for (const mode of Object.keys(MODES) as Mode[]) results.push(await run(k, m, mode));

console.log(
  table(
    results.map((r) => ({
      mode: r.mode,
      K: r.K,
      M: r.M,
      'drain s': round(r.drainMs / 1000, 1),
      'first fired s': round(r.firstFiredMs / 1000, 1),
      'late p50 s': round(r.lateness.p50 / 1000, 2),
      'late p99 s': round(r.lateness.p99 / 1000, 2),
      '/s/node burst': r.perNodePerSecBurst,
      '/s/node since readable': r.perNodePerSecSinceReadable,
      'deliveries/alarm': round(r.deliveriesStarted / r.K, 2),
      'store req/alarm': r.storeRequestsPerDelivery,
    })),
  ),
);
console.log(`(lateness = firedAt − scheduledAt; "since readable" counts from T + lease + grace; store requests are the survivors' main-thread requests, counted before the read-back)`);
const path = writeResult('drain', {
  modes: MODES,
  nodeSettings: NODE_SET,
  durationMs: Date.now() - startedAt,
  rows: results,
});
console.log(`wrote ${path}`);
