/**
 * bench/own-alarms: how fast one node fires its OWN due alarms — N actors it runs, each with an
 * alarm due at the same moment T (the Alarmed test class: the handler commits one row). Peers
 * fire 2,000 due timers at 530–1,140/s (Restate) and 470–670/s (workerd) on this machine.
 *
 *   arm N actors (durable calls, 64 in flight) with alarms due at T ─▶ wait for T ─▶ count the
 *   node's `ran` deliveries until N: fired/s from T, lateness p50/p99 (read back from each
 *   actor), CPU ms per alarm of the node's process from T (all threads, and by thread), peak RSS.
 *
 *   npm run bench -- own-alarms [--quick] [--n 2000] [--bucket fs|memory]
 *     quick: N 1,000. Writes bench/results/own-alarms.json.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../src/core/logger.js';
import { startNode } from '../src/index.js';
import type { RoutingNode } from '../src/main/node-api.js';
import { REPO } from '../support/repo.js';
import { armAllBefore, benchArgs, percentile, quick, round, table, writeResult } from './lib.js';
import { cpuSince, threadCpu } from './support/proc-stats.js';

const args = benchArgs({ n: { type: 'string' }, bucket: { type: 'string', default: 'fs' }, threads: { type: 'string', default: '2' } });
const N = Number(args.n ?? (quick ? 1_000 : 2_000));
const IN_FLIGHT = 64;
const CLASSES = { Alarmed: join(REPO, 'test/fixtures/cluster/alarmed.ts') };

const root = mkdtempSync(join(tmpdir(), 'kw-own-alarms-'));
const bucket = args.bucket === 'memory' ? 'memory:' : join(root, 'bucket');
try {
  const node = (await startNode({
    bucket,
    dataDir: join(root, 'data'),
    classes: CLASSES,
    logger: silentLogger(),
    workerThreads: Number(args.threads),
    idleTimeoutMs: 600_000,
  })) as RoutingNode;
  const names = Array.from({ length: N }, (_, i) => `own/Alarmed/a${i}`);
  const { at, startedAt: t0, armedBy } = await armAllBefore(names, IN_FLIGHT, 2_000, (n, due) => node.actor(n).callDurable('arm', due));
  if (armedBy >= at) throw new Error(`arming took past T (${armedBy - at} ms late): run on a quieter machine`);
  const ran = async () => (await node.metrics.deliveries.get()).values.find((v) => v.labels.outcome === 'ran')?.value ?? 0;
  await new Promise((r) => setTimeout(r, at - Date.now()));
  const cpu0 = threadCpu();
  const t0Us = process.hrtime.bigint() / 1000n;
  while ((await ran()) < N) await new Promise((r) => setTimeout(r, 20));
  const doneAt = Date.now();
  console.log(`fire window ${t0Us}-${process.hrtime.bigint() / 1000n} (monotonic µs: profile-summary --window)`);
  const cpu = cpuSince(cpu0);
  const fired = await Promise.all(names.map(async (n) => ((await node.actor(n).call('fired')) as { at: number }[])[0]?.at ?? Number.NaN));
  await node.stop();
  const late = fired.map((f) => f - at).sort((a, b) => a - b);
  const row = {
    bucket: args.bucket,
    alarms: N,
    'armed/s': round(N / ((armedBy - t0) / 1000), 0),
    'fired/s': round(N / ((doneAt - at) / 1000), 0),
    'late p50 ms': round(percentile(late, 50), 0),
    'late p99 ms': round(percentile(late, 99), 0),
    'cpu ms/alarm': round(cpu[0]!.ms / N, 2),
    'by thread': cpu
      .slice(1)
      .filter((t) => t.ms / N >= 0.01)
      .map((t) => `${t.thread} ${round(t.ms / N, 2)}`)
      .join(', '),
    'peak RSS MB': Math.round(process.resourceUsage().maxRSS / 1024),
  };
  console.log(`\nbench/own-alarms (one node, ${args.threads} worker threads, ${N} own alarms due at once)\n`);
  console.log(table([row]));
  console.log(`\nwrote ${writeResult('own-alarms', { rows: [row] })}`);
} finally {
  rmSync(root, { recursive: true, force: true });
}
