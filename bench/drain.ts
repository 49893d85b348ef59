/**
 * bench/drain: how fast live nodes drain a dead node's backlog of alarms (docs/alarm-index.md "The sweep",
 * "The numbers": a dead node's alarms fire a lease period plus grace after they were due, plus
 * up to one sweep; each live node delivers up to 256 per sweep, about 25 per second), next to
 * the store's own ceiling and to BullMQ doing the same work, in the same run.
 *
 *   1+M real node processes (support/cluster/cluster.ts) share one bucket (a folder, or the S3
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
 *                  + workers (keepwork_store_requests_total{thread="main"|"worker"}); and by S3
 *                  request (GET, HEAD, PUT, conditional PUT, LIST, DELETE, DeleteObjects) with
 *                  their price per million delivered alarms (src/bench/s3-prices.ts)
 *     in flight    deliveries a survivor ran at once, on average over the samples (every 500 ms)
 *                  taken while alarms ran (keepwork_deliveries_running: up to deliveryConcurrency,
 *                  more while the bucket's latency is the limit)
 *     ceiling      the store's own ops/s at that concurrency (bench/support/ceiling.ts)
 *                  priced by those requests; drain rate (all nodes) / ceiling
 *     cpu, rss     each survivor's CPU seconds during the drain and peak RSS (VmHWM); CPU ms per
 *                  alarm of all threads, of the main threads alone, and over the drain's second
 *                  half (past K/2 delivered: without the first seconds' compiling, secondHalfCpu)
 *     sweeps       per survivor: index entries its sweeps read per alarm it ran
 *                  (keepwork_sweep_entries_read_total), its sweeps, entries read and offered per sweep
 *     BullMQ       K due delayed jobs, M worker processes, one SQLite write each (bench/peer-bullmq)
 *
 *   npm run bench -- drain --help     the options (bench/support/drain/options.ts)
 *
 * Writes bench/results/drain.json, drain.md and drain-<store>-<K>.svg (alarms drained over time).
 * The parts, in bench/support/drain/: options (the command line), scenario (class, timings,
 * modes), cluster (bucket and nodes), dead-node (the backlog), sampling (the drain curve),
 * summary (a row from the measures), run (one configuration), results and report (the files
 * and tables), reprice (`--reprice`), rows (the row type they share).
 */
import { round } from './lib.js';
import { runBullmqPeer } from './peer-bullmq.js';
import { drainOptions, plan } from './support/drain/options.js';
import { drainTable, perOpText } from './support/drain/report.js';
import { reprice } from './support/drain/reprice.js';
import { readResults, save } from './support/drain/results.js';
import type { DrainResults, DrainRow } from './support/drain/rows.js';
import { runDrain } from './support/drain/run.js';

async function main() {
  const o = drainOptions();
  if (o.reprice) return reprice(o);
  const startedAt = Date.now();
  const { rows, peers }: DrainResults = o.append ? readResults(o) : { rows: [], peers: [] };
  // The peer first: it takes seconds, and a long run saved part-way then has its ratios.
  if (o.peer) for (const k of o.ks) for (const m of o.ms) peers.push(await runBullmqPeer(k, m, 32));
  const failures: string[] = [];
  for (const [store, mode, k, m] of plan(o)) {
    let r: DrainRow;
    try {
      r = await runDrain(o, store, mode, k, m);
    } catch (e) {
      failures.push(`${store} ${mode} K=${k} M=${m}: ${(e as Error).message.split('\n')[0]}`);
      console.error(`FAILED ${store} ${mode} K=${k} M=${m}:`, e);
      continue;
    }
    const p = peers.find((x) => x.K === r.K && x.M === r.M);
    if (p)
      Object.assign(r, { bullmqPerWorkerPerSec: p.perWorkerPerSec, ratioToBullmq: round(r.perNodePerSecBurst / p.perWorkerPerSec, 4) });
    rows.push(r);
    save(o, rows, peers, startedAt);
  }
  console.log('\n' + drainTable(rows) + '\n');
  console.log(perOpText(rows));
  console.log(`wrote ${save(o, rows, peers, startedAt).join(', ')} (${round((Date.now() - startedAt) / 1000, 1)} s)`);
  if (failures.length) {
    console.error(`${failures.length} configuration(s) failed:\n  ${failures.join('\n  ')}`);
    process.exitCode = 1;
  }
}

await main();
