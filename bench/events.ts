/**
 * bench/events: calls per second of the counter example's `add` — one hot actor, and 1,000
 * actors round-robin (--quick: 250) — over the library API and over HTTP, with 1 and 2 worker threads, with
 * replication on:
 *
 *   bucket memory  plain    each worker's own in-memory bucket (uploads cost almost nothing)
 *   bucket fs      plain    reply after the local commit; uploaded within the group-commit window
 *   bucket fs      durable  reply once the link holding the call is in the bucket
 *   bucket s3      plain, durable   (full run only, when KEEPWORK_TEST_S3_URL is set)
 *
 *   npm run bench -- events [--quick]      (bench/replication adds bytes per call and restores)
 *
 * --hot: only plain calls on one hot key over HTTP (fs bucket, 64 in flight) for --seconds
 * (default 8), with --threads (default 2), --runs times (default 2): calls/s, p50/p99, the node's
 * CPU per call (every thread of the node's process, and its main thread alone; the load client is
 * a child process), with the load average; `--set name=value` (repeatable): a tunable of the node
 * (docs/tuning.md). Add `node --cpu-prof --cpu-prof-dir D` to profile it (bench/profile-summary.ts).
 */
import { fork } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Agent } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../src/core/logger.js';
import { startNode } from '../src/index.js';
import { benchArgs, httpPost, measure, quick, round, setPairs, table, writeResult } from './lib.js';
import type { KeepworkOptions } from '../src/core/config.js';

const COUNTER = new URL('../examples/counter.ts', import.meta.url).href;
const CALLS = { plain: quick ? 1_500 : 10_000, durable: quick ? 300 : 2_000 };
/** One hot actor, and many round-robin (each created by a warm-up call first). */
const ACTORS = [1, quick ? 250 : 1_000];
const IN_FLIGHT = 64;

interface Leg {
  bucket: 'memory' | 'fs' | 's3';
  durable: boolean;
}

function legs(): Leg[] {
  const out: Leg[] = [
    { bucket: 'memory', durable: false },
    { bucket: 'fs', durable: false },
    { bucket: 'fs', durable: true },
  ];
  if (!quick && process.env.KEEPWORK_TEST_S3_URL) out.push({ bucket: 's3', durable: false }, { bucket: 's3', durable: true });
  return out;
}

function bucketUrl(leg: Leg, dataDir: string): string {
  if (leg.bucket === 'memory') return 'memory:';
  if (leg.bucket === 'fs') return join(dataDir, 'bucket');
  return process.env.KEEPWORK_TEST_S3_URL!.replace(/^(s3:\/\/[^/?]+)\/?/, `$1/bench-events-${process.pid}-${Date.now().toString(36)}/`);
}

async function runLeg(leg: Leg, threads: number) {
  const rows = [];
  const dataDir = mkdtempSync(join(tmpdir(), 'kw-bench-events-'));
  const node = await startNode({
    dataDir,
    bucket: bucketUrl(leg, dataDir),
    classes: { Counter: COUNTER },
    port: 0,
    workerThreads: threads,
    logger: silentLogger(),
    actorQueueMax: 10_000,
  });
  const agent = new Agent({ keepAlive: true, maxSockets: IN_FLIGHT });
  const calls = leg.durable ? CALLS.durable : CALLS.plain;
  const q = leg.durable ? '?durable=1' : '';
  try {
    const name = (actors: number) => (i: number) => (actors === 1 ? 'hot' : `a${i % actors}`);
    for (const actors of ACTORS) {
      const n = name(actors);
      const handle = (i: number) => node.actor(`bench/Counter/${n(i)}`);
      await measure(actors, IN_FLIGHT, (i) => handle(i).call('add', 0)); // warm-up: every actor created
      const lib = await measure(calls, IN_FLIGHT, (i) => (leg.durable ? handle(i).callDurable('add', 1) : handle(i).call('add', 1)));
      const http = await measure(calls, IN_FLIGHT, (i) => httpPost(agent, `${node.url}/v1/actors/bench/Counter/${n(i)}/add${q}`, '[1]'));
      const cell = { bucket: leg.bucket, mode: leg.durable ? 'durable' : 'plain', threads, actors };
      rows.push({ ...cell, api: 'library', calls, 'calls/s': lib.opsPerSec, 'p50 ms': lib.p50Ms, 'p99 ms': lib.p99Ms });
      rows.push({ ...cell, api: 'http', calls, 'calls/s': http.opsPerSec, 'p50 ms': http.p50Ms, 'p99 ms': http.p99Ms });
      console.log(`${cell.bucket} ${cell.mode} threads=${threads} actors=${actors} done`);
    }
  } finally {
    agent.destroy();
    await node.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
  return rows;
}

/** --hot's load client, in a process of its own (so the node's CPU is the node's): calls for `seconds`, then reports. */
async function hotClient(url: string, seconds: number): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: IN_FLIGHT });
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let calls = 0;
  const lanes = Array.from({ length: IN_FLIGHT }, async () => {
    const lat: number[] = [];
    while (performance.now() - t0 < seconds * 1000) {
      const s = performance.now();
      await httpPost(agent, url, '[1]');
      lat.push(performance.now() - s);
      calls++;
    }
    return lat;
  });
  const lat = (await Promise.all(lanes)).flat().sort((a, b) => a - b);
  agent.destroy();
  const p = (q: number) => round(lat[Math.floor(lat.length * q)]!);
  const cpu = process.cpuUsage(cpu0);
  const cpuMs = (cpu.user + cpu.system) / 1000;
  process.send!({ calls, seconds: (performance.now() - t0) / 1000, p50: p(0.5), p99: p(0.99), cpuMs });
}

/** CPU time (ms) of this process's main thread so far (/proc: utime + stime, in clock ticks of 10 ms). */
function mainThreadCpuMs(): number {
  const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
}

/** --hot: plain calls on one hot key over HTTP for `seconds`, `runs` times on one node; the client is a child process. */
async function hotKey(seconds: number, threads: number, runs: number, set: KeepworkOptions) {
  const dataDir = mkdtempSync(join(tmpdir(), 'kw-bench-events-'));
  const node = await startNode({
    dataDir,
    bucket: join(dataDir, 'bucket'),
    classes: { Counter: COUNTER },
    port: 0,
    workerThreads: threads,
    logger: silentLogger(),
    actorQueueMax: 10_000,
    ...set,
  });
  const url = `${node.url}/v1/actors/bench/Counter/hot/add`;
  const client = (secs: number) =>
    new Promise<{ calls: number; seconds: number; p50: number; p99: number; cpuMs: number }>((resolve, reject) => {
      const child = fork(fileURLToPath(import.meta.url), ['--client', url, '--seconds', String(secs)], { execArgv: ['--import', 'tsx'] });
      child.once('message', (m) => resolve(m as never));
      child.once('exit', (code) => (code === 0 ? undefined : reject(new Error(`the load client exited with ${code}`))));
    });
  const rows = [];
  try {
    await client(2); // warm-up: the actor created, the JIT warm
    for (let run = 1; run <= runs; run++) {
      const load = loadavg()[0]!;
      const cpu0 = process.cpuUsage();
      const main0 = mainThreadCpuMs();
      const r = await client(seconds);
      const cpu = process.cpuUsage(cpu0);
      const cpuMs = (cpu.user + cpu.system) / 1000;
      rows.push({
        run,
        threads,
        calls: r.calls,
        'calls/s': Math.round(r.calls / r.seconds),
        'p50 ms': r.p50,
        'p99 ms': r.p99,
        'node CPU ms/call': round(cpuMs / r.calls, 3),
        'main thread CPU ms/call': round((mainThreadCpuMs() - main0) / r.calls, 3),
        'node CPU cores': round(cpuMs / 1000 / r.seconds),
        'client CPU ms/call': round(r.cpuMs / r.calls, 3),
        'load 1m': round(load),
      });
    }
  } finally {
    await node.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
  console.log(`\nbench/events --hot: plain add(1) on one key over HTTP, fs bucket, ${IN_FLIGHT} in flight, ${seconds} s per run\n`);
  console.log(table(rows));
  console.log(`\nwrote ${writeResult('events-hot', { seconds, threads, inFlight: IN_FLIGHT, rows })}`);
}

async function main() {
  const args = benchArgs({
    hot: { type: 'boolean' },
    seconds: { type: 'string' },
    threads: { type: 'string' },
    runs: { type: 'string' },
    client: { type: 'string' },
    set: { type: 'string', multiple: true },
  });
  if (args.client) return hotClient(args.client, Number(args.seconds));
  if (args.hot) return hotKey(Number(args.seconds ?? 8), Number(args.threads ?? 2), Number(args.runs ?? 2), setPairs(args.set));
  const t0 = Date.now();
  const rows = [];
  for (const leg of legs()) for (const threads of [1, 2]) rows.push(...(await runLeg(leg, threads)));
  console.log(`\nbench/events (plain ${CALLS.plain} / durable ${CALLS.durable} calls per cell, ${IN_FLIGHT} in flight, counter.add)\n`);
  console.log(table(rows));
  console.log(
    `\nwrote ${writeResult('events', { calls: CALLS, inFlight: IN_FLIGHT, rows })} (${Math.round((Date.now() - t0) / 100) / 10} s)`,
  );
}

await main();
