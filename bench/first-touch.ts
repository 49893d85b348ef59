/**
 * bench/first-touch: the first call to N new keys (the counter example's `add`), 64 in flight
 * (`--in-flight`), on one node with the default bucket (one SQLite file) — what creating an actor costs.
 *
 *   npm run bench -- first-touch [--quick] [--keys 1000] [--runs 1] [--api library|http] [--durable]
 *     [--alarm] [--new-in-memory] [--folder] [--in-flight 64] [--latency-ms N] [--set name=value …]
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/first-touch.ts --keys 1000
 *   (a CPU profile per thread lands in /tmp/prof; summarise the touch alone with
 *   `tsx bench/profile-summary.ts --window <the window the bench prints> /tmp/prof/*.cpuprofile`)
 *
 * Prints, per run (each on fresh keys of a fresh node): wall time of the touch, actors/s, CPU ms
 * per actor by thread (main thread and each worker, from /proc/self/task), and bucket requests per
 * actor by operation and thread, during the touch and until the node is idle again (its first
 * uploads and index work done: the `settle` column). --quick: 250 keys. --alarm: the first call
 * arms a timer an hour ahead instead (bench/peers' Reminder `set`), as peers' "arming timers on new
 * keys" row does — a first touch plus an alarm index entry. --then-seconds S: afterwards, S seconds
 * of calls round-robin over the same keys (bench/peers' "1,000 keys" row): calls/s and CPU ms per
 * call by thread, bucket requests per call (links: `worker put_conditional state`). --new-in-memory: the node runs with `newActorsInMemory` on (docs/tuning.md).
 * --folder: the bucket is a folder (src/store/fs/) instead of the default SQLite file.
 * --latency-ms N: the bucket behind the LatencyStore (`latency+sqlite:…?ms=N`), every
 * request N ms late as on S3; the table adds each call's p50 and p99 latency. --set name=value
 * (repeatable): a tunable of the node (docs/tuning.md), after the options above.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../src/core/logger.js';
import { startNode } from '../src/index.js';
import type { RoutingNode } from '../src/main/node-api.js';
import { benchArgs, httpPost, percentile, quick, round, setPairs, table, writeResult } from './lib.js';
import { cpuSince, threadCpu } from './support/proc-stats.js';

const args = benchArgs({
  keys: { type: 'string' },
  runs: { type: 'string', default: '1' },
  api: { type: 'string', default: 'library' },
  durable: { type: 'boolean' },
  alarm: { type: 'boolean' },
  'then-seconds': { type: 'string', default: '0' },
  threads: { type: 'string', default: '2' },
  'new-in-memory': { type: 'boolean' },
  folder: { type: 'boolean' },
  'in-flight': { type: 'string', default: '64' },
  'latency-ms': { type: 'string', default: '0' },
  set: { type: 'string', multiple: true },
});
const SET = setPairs(args.set);
const KEYS = Number(args.keys ?? (quick ? 250 : 1_000));
const RUNS = Number(args.runs);
const IN_FLIGHT = Number(args['in-flight']);
const LATENCY_MS = Number(args['latency-ms']);
if (!Number.isInteger(LATENCY_MS) || LATENCY_MS < 0) throw new Error(`--latency-ms ${args['latency-ms']}: a whole number ≥ 0`);
if (!Number.isInteger(IN_FLIGHT) || IN_FLIGHT < 1) throw new Error(`--in-flight ${args['in-flight']}: a whole number ≥ 1`);
const COUNTER = new URL('../examples/counter.ts', import.meta.url).href;
const REMINDER = new URL('./support/peers/reminder.ts', import.meta.url).href;

function requests(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const [, op, area, thread, n] of text.matchAll(/^keepwork_store_requests_total\{op="(\w+)",area="(\w+)",thread="(\w+)"\} (\d+)/gm))
    out.set(`${thread} ${op} ${area}`, Number(n));
  return out;
}

async function pool(total: number, op: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < total) await op(next++);
    }),
  );
}

/** The SQLite bucket in the data dir (`--folder`: a folder bucket), N ms away with `--latency-ms N`. */
function bucketUrl(dataDir: string): string {
  const url = args.folder ? `file://${join(dataDir, 'bucket')}` : `sqlite:${join(dataDir, 'bucket.db')}`;
  return LATENCY_MS > 0 ? `latency+${url}?ms=${LATENCY_MS}` : url;
}

async function run(r: number) {
  const dataDir = mkdtempSync(join(tmpdir(), 'kw-bench-touch-'));
  const node = (await startNode({
    dataDir,
    bucket: bucketUrl(dataDir),
    classes: { Counter: COUNTER, Reminder: REMINDER },
    port: 0,
    workerThreads: Number(args.threads),
    newActorsInMemory: args['new-in-memory'] === true,
    ...SET,
    logger: silentLogger(),
  })) as RoutingNode;
  const agent = new Agent({ keepAlive: true, maxSockets: IN_FLIGHT });
  try {
    // Warm the workers (class loaded, first SQLite open) on one key outside the measurement.
    await node.actor('warm/Counter/w').call('add', 1);
    const req0 = requests(await node.metricsText());
    const cpu0 = threadCpu();
    const started = performance.now();
    const t0Us = process.hrtime.bigint() / 1000n;
    const [cls, method, arg] = args.alarm ? ['Reminder', 'set', Date.now() + 3_600_000] : ['Counter', 'add', 1];
    /** One call to key `i` of this run, as the arguments say (HTTP or library, durable or not). */
    const callKey = (i: number) => {
      const name = `bench/${cls}/k${r}-${i}`;
      if (args.api === 'http')
        return httpPost(agent, `${node.url}/v1/actors/${name}/${method}${args.durable ? '?durable=1' : ''}`, JSON.stringify([arg]));
      return args.durable ? node.actor(name).callDurable(method, arg) : node.actor(name).call(method, arg);
    };
    const latencies: number[] = [];
    await pool(KEYS, async (i) => {
      const t = performance.now();
      await callKey(i);
      latencies.push(performance.now() - t);
    });
    const ms = performance.now() - started;
    latencies.sort((x, y) => x - y);
    const callMs = { p50: round(percentile(latencies, 50), 1), p99: round(percentile(latencies, 99), 1) };
    const windowUs = `${t0Us}-${process.hrtime.bigint() / 1000n}`;
    console.log(`run ${r}: touch window ${windowUs} (profile-summary --window)`);
    const cpu = cpuSince(cpu0);
    const reqTouch = requests(await node.metricsText());
    // Until the node's first uploads are done: replicationDelayMs and a little (no more requests for 1 s).
    let last = reqTouch;
    let settledMs = ms;
    for (let quiet = 0; quiet < 4;) {
      await new Promise((res) => setTimeout(res, 250));
      const now = requests(await node.metricsText());
      const same = [...now].every(([k, v]) => last.get(k) === v) && now.size === last.size;
      quiet = same ? quiet + 1 : 0;
      if (!same) settledMs = performance.now() - started;
      last = now;
    }
    const cpuSettled = cpuSince(cpu0);
    const reqRows = [...last.keys()]
      .map((k) => ({ k, touch: (reqTouch.get(k) ?? 0) - (req0.get(k) ?? 0), settle: (last.get(k) ?? 0) - (req0.get(k) ?? 0) }))
      .filter((x) => x.settle > 0)
      .map((x) => ({
        'requests (thread op area)': x.k,
        'per actor, touch': round(x.touch / KEYS, 2),
        'per actor, settled': round(x.settle / KEYS, 2),
      }));
    const thenMs = Number(args['then-seconds']) * 1000;
    let then:
      { calls: number; ms: number; cpu: { thread: string; ms: number }[]; window: string; requests: Map<string, number> } | undefined;
    if (thenMs > 0) {
      const reqThen = requests(await node.metricsText());
      const cpuThen = threadCpu();
      const t1Us = process.hrtime.bigint() / 1000n;
      const began = performance.now();
      let calls = 0;
      await Promise.all(
        Array.from({ length: IN_FLIGHT }, async () => {
          while (performance.now() - began < thenMs) await callKey(calls++ % KEYS);
        }),
      );
      const ms2 = performance.now() - began;
      const cpu = cpuSince(cpuThen);
      const window = `${t1Us}-${process.hrtime.bigint() / 1000n}`;
      const after = requests(await node.metricsText());
      const made = new Map([...after].map(([k, v]) => [k, v - (reqThen.get(k) ?? 0)] as const).filter(([, n]) => n > 0));
      then = { calls, ms: ms2, cpu, window, requests: made };
    }
    return { ms, callMs, settledMs, cpu, cpuSettled, reqRows, then };
  } finally {
    agent.destroy();
    await node.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const results = [];
for (let r = 0; r < RUNS; r++) {
  const load = loadavg()[0]!.toFixed(2);
  const res = await run(r);
  results.push({ ...res, load });
  console.log(
    `\nfirst touch of ${KEYS} new keys (${args.api}${args.durable ? ', durable' : ''}${args.alarm ? ', arming an alarm' : ''}, ${IN_FLIGHT} in flight, ${args.folder ? 'fs bucket' : 'sqlite bucket'}${LATENCY_MS ? ` + ${LATENCY_MS} ms per request` : ''}, ${args.threads} workers), ` +
      `load ${load}: ${round(res.ms / 1000, 2)} s (${Math.round((KEYS / res.ms) * 1000)} actors/s; a call p50 ${res.callMs.p50}, p99 ${res.callMs.p99} ms); idle again after ${round(res.settledMs / 1000, 2)} s`,
  );
  console.log(
    table(
      res.cpu.map((c) => ({
        thread: c.thread,
        'CPU ms per actor, touch': round(c.ms / KEYS, 2),
        'CPU ms per actor, settled': round((res.cpuSettled.find((x) => x.thread === c.thread)?.ms ?? 0) / KEYS, 2),
      })),
    ),
  );
  console.log(table(res.reqRows));
  if (res.then) {
    const t = res.then;
    console.log(
      `\nthen ${round(t.ms / 1000, 1)} s of calls round-robin over the ${KEYS} keys: ${Math.round((t.calls / t.ms) * 1000)} calls/s (window ${t.window})`,
    );
    console.log(table(t.cpu.slice(0, 6).map((c) => ({ thread: c.thread, 'CPU ms per call': round(c.ms / t.calls, 3) }))));
    console.log(table([...t.requests].map(([k, n]) => ({ 'requests (thread op area)': k, 'per call': round(n / t.calls, 3) }))));
  }
}
writeResult('first-touch', { keys: KEYS, inFlight: IN_FLIGHT, api: args.api, durable: !!args.durable, alarm: !!args.alarm, runs: results });
