/**
 * bench/drain-profile: where one node's time goes while it drains a backlog it never ran.
 *
 *   node a (in-process) arms K actors with alarms due in the past of b's sweep, stops cleanly
 *   (holds released; the entries stay in the index, as a dead node's would after the fence);
 *   node b starts on the same folder bucket with an aggressive sweep and delivers them all.
 *   Prints: deliveries/s, bucket requests per delivery by operation (main thread and workers,
 *   counted by wrapping the store), and the time from b's start to the last alarm fired.
 *
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/drain-profile.ts [K] [tunable=value ...] [--bucket fs|memory|s3|sqlite|latency]
 *   (a CPU profile per thread lands in /tmp/prof; summarise with bench/profile-summary.ts, whose
 *   --window takes the second half of the drain as printed: a warm node, past its JIT warm-up)
 *
 * --bucket memory: both nodes on one in-memory bucket that every thread of the process shares
 * (`memory:<name>`, src/store/testing/shared-memory.ts), so what is left is the runtime's own cost (and
 * the messages between threads that stand in for a bucket's network client).
 * --bucket sqlite: the SQLite bucket (`sqlite:`, src/store/sqlite/store.ts) in the temp folder.
 * --bucket latency: the folder bucket behind `latency+file://…?ms=30` (S3-like round trips, no
 * server CPU), so the node's cost of a deep pipeline of slow requests shows.
 * --bucket s3: KEEPWORK_TEST_S3_URL (scripts/s3-test-server.sh) under a fresh prefix, so the
 * node's own cost of S3 requests (the AWS SDK's) shows in its threads' profiles.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, silentLogger } from '../src/core/logger.js';
import { startNode } from '../src/index.js';
import type { RoutingNode } from '../src/main/node-api.js';
import { FsStore } from '../src/store/fs/store.js';
import { openStore } from '../src/store/open.js';
import { LATENCY_SCHEME } from '../src/store/testing/latency.js';
import type { ObjectStore } from '../src/store/types.js';
import { listAll } from '../src/store/keys.js';
import { REPO } from '../support/repo.js';
import { armAllBefore, benchCommand, setPairs } from './lib.js';
import { cpuSince, threadCpu } from './support/proc-stats.js';

const { positionals, values } = benchCommand({ bucket: { type: 'string', default: 'fs' } });
const MEMORY = values.bucket === 'memory';
const S3_URL = process.env.KEEPWORK_TEST_S3_URL;
if (!['fs', 'memory', 's3', 'sqlite', 'latency'].includes(values.bucket!))
  throw new Error(`--bucket ${values.bucket}: fs, memory, s3, sqlite or latency`);
if (values.bucket === 's3' && !S3_URL)
  throw new Error('--bucket s3 needs KEEPWORK_TEST_S3_URL (eval "$(bash scripts/s3-test-server.sh env)")');
const K = Number(positionals[0] ?? 500);
/** Tunables for both nodes, as name=value after K (e.g. alarmsInMemory=false). */
const TUNABLES = setPairs(positionals.slice(1));
const CLASSES = { Alarmed: join(REPO, 'test/fixtures/cluster/alarmed.ts') };
const LEASE = { leasePeriodMs: 3_000, graceMs: 500, skewBoundMs: 300 }; // short, yet renewals survive a loaded machine

async function indexSize(store: ObjectStore): Promise<number> {
  let n = 0;
  for await (const _ of listAll(store, { prefix: 'alarms/' })) n++;
  return n;
}

const root = mkdtempSync(join(tmpdir(), 'kw-drainprof-'));
const bucket =
  values.bucket === 's3'
    ? S3_URL!.replace(/^(s3:\/\/[^/?]+)\/?/, `$1/bench-drain-profile-${process.pid}/`)
    : MEMORY
      ? 'memory:drain-profile'
      : values.bucket === 'sqlite'
        ? `sqlite:${join(root, 'bucket.db')}`
        : values.bucket === 'latency'
          ? `${LATENCY_SCHEME}file://${join(root, 'bucket')}?ms=30`
          : join(root, 'bucket');
const store = values.bucket === 'fs' ? new FsStore(bucket) : openStore(bucket); // in memory: the host, opened before the nodes
try {
  const logger = process.env.KW_LOG ? createLogger({ level: process.env.KW_LOG }) : silentLogger();
  const common = { bucket, classes: CLASSES, logger, workerThreads: 2, idleTimeoutMs: 600_000, ...LEASE, ...TUNABLES };
  const a = await startNode({ ...common, dataDir: join(root, 'a'), nodeId: 'a' });
  const names = Array.from({ length: K }, (_, i) => `t/Alarmed/x${i}`);
  // Due once every actor is armed and a has stopped.
  const { at } = await armAllBefore(names, 32, values.bucket === 'latency' ? 15_000 : 3_000, (n, due) =>
    a.actor(n).callDurable('arm', due),
  );
  if (Date.now() > at - 500) throw new Error('arming took too long; the alarms came due on a');
  await a.stop();
  // A stop that ended after the alarms came due may have run some on a: b would wait for them forever.
  if (Date.now() >= at)
    throw new Error(`a stopped ${Date.now() - at} ms after the alarms came due; it may have run some (a loaded machine: retry)`);
  console.log(`armed ${K} alarms on node a, a stopped; index holds ${await indexSize(store)}`);
  const b = (await startNode({ ...common, dataDir: join(root, 'b'), nodeId: 'b' })) as RoutingNode;
  const t0 = Date.now();
  console.log(`node b started ${Math.round(performance.now())} ms after the process (profile-summary --skip-ms)`);
  const cpu0 = process.cpuUsage();
  const usage0 = process.resourceUsage();
  const threads0 = threadCpu();
  // The counter itself, not the whole /metrics text: rendering that every 100 ms would be the
  // bench's own cost on the node's main thread.
  const ranSoFar = async () => (await b.metrics.deliveries.get()).values.find((v) => v.labels.outcome === 'ran')?.value ?? 0;
  const nowUs = () => process.hrtime.bigint() / 1000n;
  let halfUs: bigint | undefined;
  for (let ran = 0; ran < K; ran = await ranSoFar()) {
    if (halfUs === undefined && ran >= K / 2) halfUs = nowUs();
    await new Promise((r) => setTimeout(r, 100));
  }
  const t1 = Date.now();
  if (halfUs !== undefined) console.log(`second half of the drain: profile-summary --window ${halfUs}-${nowUs()}`);
  const cpu = process.cpuUsage(cpu0);
  const usage = process.resourceUsage();
  const threads = cpuSince(threads0);
  const since = Math.max(t0, at + LEASE.leasePeriodMs + LEASE.graceMs);
  const text = await b.metricsText();
  const ran = Number(/^keepwork_alarm_deliveries_total\{outcome="ran"\} (\d+)/m.exec(text)?.[1] ?? 0);
  if (ran !== K) console.log(`!! ${ran} alarms ran, ${K} expected`);
  const rows = [...text.matchAll(/^keepwork_store_requests_total\{op="(\w+)",area="(\w+)",thread="(\w+)"\} (\d+)/gm)];
  console.log(`all ran ${t1 - since} ms after the margin: ${Math.round((K / (t1 - since)) * 1000)} deliveries/s`);
  console.log(
    `CPU of node b's process (all threads) from its start: ${((cpu.user + cpu.system) / 1000 / K).toFixed(2)} ms per alarm ` +
      `(user ${(cpu.user / 1000 / K).toFixed(2)}, system ${(cpu.system / 1000 / K).toFixed(2)}); peak RSS ${Math.round(process.resourceUsage().maxRSS / 1024)} MB`,
  );
  const perAlarm = (k: 'minorPageFault' | 'voluntaryContextSwitches' | 'involuntaryContextSwitches') =>
    ((usage[k] - usage0[k]) / K).toFixed(1);
  console.log(
    `  per alarm: ${perAlarm('minorPageFault')} page faults, ${perAlarm('voluntaryContextSwitches')} voluntary and ` +
      `${perAlarm('involuntaryContextSwitches')} involuntary context switches (the process)`,
  );
  console.log(`  CPU per alarm by thread: ${threads.map((t) => `${t.thread} ${(t.ms / K).toFixed(2)}`).join(', ')}`);
  for (const [, op, area, thread, n] of rows)
    console.log(`  ${thread!.padEnd(6)} ${op!.padEnd(11)} ${area!.padEnd(7)} ${(Number(n) / K).toFixed(2)} per delivery`);
  console.log(
    /^keepwork_alarm_deliveries_total.*$/gm.exec(text)?.[0],
    [...text.matchAll(/^keepwork_alarm_deliveries_total.*$/gm)].map((m) => m[0]).join(' | '),
  );
  await b.stop();
} finally {
  await store.close();
  rmSync(root, { recursive: true, force: true });
}
