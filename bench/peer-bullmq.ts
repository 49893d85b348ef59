/**
 * bench/peer-bullmq: the same work as bench/drain — K jobs that are all due, one SQLite write
 * each — as BullMQ delayed jobs on a Redis server (scripts/redis-bench-server.sh, loopback, no
 * persistence), drained by M worker processes with `concurrency` jobs each (keepwork's
 * deliveryConcurrency). Each worker process writes to its own SQLite database.
 *
 *   K jobs added with a 500 ms delay (addBulk, 1,000 at a time); once all are due, M workers
 *   start together ("go"); drain = go → the last job done. rate = K / M / drain per worker.
 *   wait = job done − go (p50 / p99): comparable to keepwork's "since readable".
 *
 *   npm run bench -- peer-bullmq [--quick] [--k 1000,10000] [--m 1,2]   (bench/drain runs it in the same run)
 */
import { fork, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { benchArgs, numbers, percentile, quick, round, table, writeResult } from './lib.js';
import { cpuMs, peakRssMb } from './support/proc-stats.js';
import { progressBar } from './support/progress.js';

const WORKER = fileURLToPath(new URL('./support/bullmq-worker.ts', import.meta.url));
const SCRIPT = fileURLToPath(new URL('../scripts/redis-bench-server.sh', import.meta.url));
const DELAY_MS = 500;

export interface PeerResult {
  peer: 'bullmq';
  K: number;
  M: number;
  concurrency: number;
  drainMs: number;
  perWorkerPerSec: number;
  wait: { p50: number; p99: number; max: number };
  cpuSecPerWorker: number[];
  peakRssMbPerWorker: number[];
  /** [seconds since go, jobs done] for the chart. */
  curve: [number, number][];
}

/** [seconds, jobs done by then] at up to 200 points, from the sorted completion times (ms). */
export function curveOf(sortedMs: readonly number[]): [number, number][] {
  const step = Math.max(1, Math.floor(sortedMs.length / 200));
  const out: [number, number][] = [[0, 0]];
  for (let i = step - 1; i < sortedMs.length; i += step) out.push([round(sortedMs[i]! / 1000, 3), i + 1]);
  if (out.at(-1)![1] !== sortedMs.length) out.push([round(sortedMs.at(-1)! / 1000, 3), sortedMs.length]);
  return out;
}

/** Starts the Redis server (idempotent) and returns its URL. */
export function redisUp(): string {
  const up = spawnSync('bash', [SCRIPT, 'up'], { stdio: ['ignore', 'inherit', 'inherit'] });
  if (up.status !== 0) throw new Error('scripts/redis-bench-server.sh up failed');
  const env = spawnSync('bash', [SCRIPT, 'env'], { encoding: 'utf8' }).stdout;
  return /'([^']+)'/.exec(env)![1]!;
}

async function addDue(queue: Queue, k: number): Promise<void> {
  for (let i = 0; i < k; i += 1000) {
    const n = Math.min(1000, k - i);
    await queue.addBulk(
      Array.from({ length: n }, (_, j) => ({ name: 'alarm', data: { i: i + j }, opts: { delay: DELAY_MS, jobId: `a${i + j}` } })),
    );
  }
}

export async function runBullmqPeer(k: number, m: number, concurrency: number, url = redisUp()): Promise<PeerResult> {
  const name = `kw-peer-${process.pid}-${Date.now()}`;
  const conn = new Redis(url, { maxRetriesPerRequest: null });
  const queue = new Queue(name, { connection: conn });
  const dir = mkdtempSync(join(tmpdir(), 'kw-bench-bullmq-'));
  const execArgv = ['--import', 'tsx'];
  const workers = Array.from({ length: m }, (_, i) =>
    fork(WORKER, [url, name, String(concurrency), join(dir, `w${i}.db`)], { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  );
  try {
    const done = new Array<number>(m).fill(0);
    const ready = workers.map((w) => new Promise<void>((r) => w.on('message', (x: { type: string }) => x.type === 'ready' && r())));
    workers.forEach((w, i) => w.on('message', (x: { type: string; done?: number }) => x.type === 'progress' && (done[i] = x.done!)));
    await addDue(queue, k);
    await Promise.all(ready);
    await new Promise((r) => setTimeout(r, DELAY_MS + 100)); // every job is due now
    const cpu0 = workers.map((w) => cpuMs(w.pid!));
    const goAt = Date.now();
    workers.forEach((w) => w.send({ type: 'go' }));
    const bar = progressBar(`bullmq K=${k} M=${m}`, k);
    for (let sum = 0; sum < k;) {
      await new Promise((r) => setTimeout(r, 250));
      sum = done.reduce((a, b) => a + b, 0);
      bar.update(sum);
      if (Date.now() - goAt > 600_000) throw new Error(`bullmq: ${sum} of ${k} jobs done after 10 minutes`);
    }
    const cpu1 = workers.map((w) => cpuMs(w.pid!));
    const rss = workers.map((w) => peakRssMb(w.pid!));
    const finished = await Promise.all(
      workers.map(
        (w, i) =>
          new Promise<number[]>((resolve, reject) => {
            w.on('message', (x: { type: string; finishedAt?: number[] }) => x.type === 'result' && resolve(x.finishedAt!));
            w.once('exit', (code, signal) => reject(new Error(`bullmq worker ${i} exited (${code ?? signal}) before reporting`)));
            w.send({ type: 'stop' });
          }),
      ),
    );
    const all = finished
      .flat()
      .map((t) => t - goAt)
      .sort((a, b) => a - b);
    const drainMs = all.at(-1)!;
    bar.done(`drained in ${drainMs} ms`);
    return {
      peer: 'bullmq',
      K: k,
      M: m,
      concurrency,
      drainMs,
      perWorkerPerSec: round(k / m / (drainMs / 1000), 1),
      wait: { p50: percentile(all, 50), p99: percentile(all, 99), max: drainMs },
      cpuSecPerWorker: cpu1.map((c, i) => round((c - cpu0[i]!) / 1000, 2)),
      peakRssMbPerWorker: rss,
      curve: curveOf(all),
    };
  } finally {
    for (const w of workers) if (w.exitCode === null) w.kill('SIGKILL');
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close();
    await conn.quit();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main() {
  const args = benchArgs({ k: { type: 'string' }, m: { type: 'string' } });
  const KS = numbers(args.k) ?? (quick ? [1000] : [1_000, 10_000, 100_000]);
  const MS = numbers(args.m) ?? (quick ? [2] : [1, 2, 3]);
  const rows: PeerResult[] = [];
  for (const k of KS) for (const m of MS) rows.push(await runBullmqPeer(k, m, 32));
  console.log(
    table(
      rows.map((r) => ({
        K: r.K,
        M: r.M,
        'drain s': round(r.drainMs / 1000, 2),
        '/s/worker': r.perWorkerPerSec,
        'wait p50 s': round(r.wait.p50 / 1000, 2),
        'wait p99 s': round(r.wait.p99 / 1000, 2),
        'cpu s/worker': r.cpuSecPerWorker.join(' '),
        'peak RSS MB': r.peakRssMbPerWorker.join(' '),
      })),
    ),
  );
  console.log(`wrote ${writeResult('peer-bullmq', { rows: rows.map(({ curve: _c, ...r }) => r) })}`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
