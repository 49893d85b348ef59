/**
 * bench/durable-hot: durable calls per second on one hot actor (the counter example's `add`),
 * 64 in flight over the library API, fs bucket, one worker thread — the case group commit of
 * durable calls is for (issue 16 item 2). Also prints the links the run uploaded, so the calls
 * per link show.
 *
 *   npm run bench -- durable-hot [--calls 2000] [--in-flight 64] [--rounds 3]
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../src/core/logger.js';
import { startNode } from '../src/index.js';
import { benchArgs, measure, table, writeResult } from './lib.js';

const args = benchArgs({
  calls: { type: 'string', default: '2000' },
  'in-flight': { type: 'string', default: '64' },
  rounds: { type: 'string', default: '3' },
});
const CALLS = Number(args.calls);
const IN_FLIGHT = Number(args['in-flight']);
const ROUNDS = Number(args.rounds);
const COUNTER = new URL('../examples/counter.ts', import.meta.url).href;

/** Files under the bucket folder (links, index entries, holds, leases). */
function countFiles(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) if (e.isFile()) n++;
  return n;
}

async function main() {
  const rows = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const dataDir = mkdtempSync(join(tmpdir(), 'kw-bench-durable-'));
    const bucket = join(dataDir, 'bucket');
    const node = await startNode({ dataDir, bucket, classes: { Counter: COUNTER }, workerThreads: 1, logger: silentLogger() });
    try {
      const hot = node.actor('bench/Counter/hot');
      await hot.callDurable('add', 0); // created and uploaded before the clock starts
      const before = countFiles(bucket);
      const m = await measure(CALLS, IN_FLIGHT, () => hot.callDurable('add', 1));
      const files = countFiles(bucket) - before;
      rows.push({
        round,
        calls: CALLS,
        inFlight: IN_FLIGHT,
        'calls/s': m.opsPerSec,
        'p50 ms': m.p50Ms,
        'p99 ms': m.p99Ms,
        'new bucket files': files,
      });
    } finally {
      await node.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
  console.log(`\nbench/durable-hot (one actor, ${IN_FLIGHT} durable calls in flight, fs bucket, 1 worker thread)\n`);
  console.log(table(rows));
  console.log(`\nwrote ${writeResult('durable-hot', { calls: CALLS, inFlight: IN_FLIGHT, rows })}`);
}

await main();
