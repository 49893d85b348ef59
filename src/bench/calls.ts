/**
 * One run of `keepwork bench calls`: one node (or the running nodes of `--targets`, called in
 * turn), `inFlight` callers calling `add(1)` on `keys` actors (round robin) for `seconds`, plain
 * or durable (the answer waits for the bucket). Calls per second and latency percentiles over the
 * run past its first second (a warm-up); CPU and bucket requests per call from the nodes'
 * /metrics over every call. An abort ends the run early (`complete: false`).
 */
import { benchAddress, type BenchEnv } from './drain.js';
import { callActor, type Endpoint } from './node-calls.js';
import { byLabel, diff, scrape, total, type Scrape } from './prom.js';
import { percentiles, round, s3Price, type Percentiles, type RequestCost } from './stats.js';

const WARMUP_MS = 1_000;

export interface CallsConfig {
  keys: number;
  durable: boolean;
  seconds: number;
  inFlight: number;
  set: Readonly<Record<string, number | boolean>>;
  label: string;
}

export interface CallsResult {
  label: string;
  set: Readonly<Record<string, number | boolean>>;
  keys: number;
  durable: boolean;
  inFlight: number;
  complete: boolean;
  calls: number;
  failed: number;
  callsPerSec: number;
  latencyMs: Percentiles | null;
  /** [seconds since the start of the count, calls answered in that second]. */
  rateOverTime: [number, number][];
  cpuMsPerCall: number;
  requests: RequestCost;
}

export async function runCalls(c: CallsConfig, env: BenchEnv): Promise<CallsResult> {
  const { progress, signal } = env;
  if (!env.targets) progress.note(`${c.label}: starting 1 node`);
  const nodes: readonly Endpoint[] = env.targets ?? [await env.local.start('n1', env.bucketUrl, c.set)];
  const address = (i: number) => benchAddress(env, `k${i % c.keys}`);
  const via = (i: number) => nodes[i % nodes.length]!;
  // Every actor once first, so the count starts with them loaded.
  for (let i = 0; i < c.keys && !signal.aborted; i += c.inFlight)
    await Promise.all(
      Array.from({ length: Math.min(c.inFlight, c.keys - i) }, (_, j) => {
        env.touched.add(address(i + j));
        return callActor(via(i + j), address(i + j), 'add', [0]);
      }),
    );
  const t0 = performance.now();
  const countFrom = t0 + WARMUP_MS;
  const until = countFrom + c.seconds * 1000;
  const latencies: number[] = [];
  const answeredAt: number[] = [];
  let failed = 0;
  let next = 0;
  let answered = 0;
  const scrapeAll = async () => sum(await Promise.all(nodes.map((n) => scrape(n))));
  const before = await scrapeAll();
  const lane = async () => {
    while (!signal.aborted && performance.now() < until) {
      const s = performance.now();
      try {
        const i = next++;
        await callActor(via(i), address(i), 'add', [1], { durable: c.durable });
      } catch {
        failed++;
        continue;
      }
      const e = performance.now();
      answered++;
      if (s >= countFrom) {
        latencies.push(e - s);
        answeredAt.push(e - countFrom);
        const elapsedS = (e - countFrom) / 1000;
        progress.update(c.label, Math.floor(elapsedS), c.seconds, 's', latencies.length / elapsedS, {
          rateUnit: 'calls/s',
          etaS: c.seconds - elapsedS,
        });
      }
    }
  };
  await Promise.all(Array.from({ length: c.inFlight }, lane));
  progress.end();
  // After Ctrl-C at a terminal the node got the SIGINT too and may be gone: no requests counted then.
  const after = await scrapeAll().catch((e: unknown) => (signal.aborted ? before : Promise.reject(e)));
  const spanS = Math.min(c.seconds, (performance.now() - countFrom) / 1000);
  const calls = latencies.length;
  const cpuS = total(after, 'keepwork_process_process_cpu_seconds_total') - total(before, 'keepwork_process_process_cpu_seconds_total');
  const requests = diff(byLabel(after, 'keepwork_store_requests_total', 'op'), byLabel(before, 'keepwork_store_requests_total', 'op'));
  const perSec = new Map<number, number>();
  for (const t of answeredAt) perSec.set(Math.floor(t / 1000), (perSec.get(Math.floor(t / 1000)) ?? 0) + 1);
  return {
    label: c.label,
    set: c.set,
    keys: c.keys,
    durable: c.durable,
    inFlight: c.inFlight,
    complete: !signal.aborted,
    calls,
    failed,
    callsPerSec: spanS > 0 ? round(calls / spanS, 1) : NaN,
    latencyMs: calls > 0 ? mapValues(percentiles(latencies)) : null,
    rateOverTime: [...perSec].sort((a, b) => a[0] - b[0]).filter(([s]) => s < c.seconds),
    cpuMsPerCall: answered > 0 ? round((cpuS * 1000) / answered, 3) : NaN,
    requests: s3Price(requests, Math.max(1, answered)),
  };
}

const mapValues = (p: Percentiles): Percentiles => ({ p50: round(p.p50), p90: round(p.p90), p99: round(p.p99), max: round(p.max) });

/** The nodes' scrapes as one: each series summed over the nodes. */
function sum(scrapes: readonly Scrape[]): Scrape {
  const out: Scrape = new Map();
  for (const s of scrapes)
    for (const [family, series] of s) {
      const into = out.get(family) ?? out.set(family, new Map()).get(family)!;
      for (const [labels, v] of series) into.set(labels, (into.get(labels) ?? 0) + v);
    }
  return out;
}
