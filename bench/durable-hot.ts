/**
 * bench/durable-hot: durable calls per second on one hot actor (the counter example's `add`),
 * 64 in flight over the library API, one worker thread — the case group commit of durable calls
 * is for. Also prints the links the run uploaded, so the calls per link show.
 *
 *   npm run bench -- durable-hot [--calls 2000] [--in-flight 64] [--rounds 3] [--bucket fs|latency|s3]
 *
 * --bucket latency: the folder bucket behind 20 ms per request (store/latency.ts, S3-like);
 * s3: KEEPWORK_TEST_S3_URL (scripts/s3-test-server.sh) under a fresh prefix.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../src/core/logger.js';
import { startNode } from '../src/index.js';
import { listChain } from '../src/replication/chain.js';
import { parseAddress } from '../src/core/address.js';
import { benchArgs, measure, table, writeResult } from './lib.js';

const args = benchArgs({
  calls: { type: 'string', default: '2000' },
  'in-flight': { type: 'string', default: '64' },
  rounds: { type: 'string', default: '3' },
  bucket: { type: 'string', default: 'fs' },
});
const CALLS = Number(args.calls);
const IN_FLIGHT = Number(args['in-flight']);
const ROUNDS = Number(args.rounds);
const COUNTER = new URL('../examples/counter.ts', import.meta.url).href;

function bucketUrl(dataDir: string): string {
  if (args.bucket === 'fs') return join(dataDir, 'bucket');
  if (args.bucket === 'latency') return `latency+file://${join(dataDir, 'bucket')}?ms=20`;
  const url = process.env.KEEPWORK_TEST_S3_URL;
  if (args.bucket !== 's3' || !url) throw new Error('--bucket is fs, latency, or s3 with KEEPWORK_TEST_S3_URL set');
  return url.replace(/^(s3:\/\/[^/?]+)\/?/, `$1/bench-durable-hot-${process.pid}-${Date.now().toString(36)}/`);
}

async function main() {
  const rows = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const dataDir = mkdtempSync(join(tmpdir(), 'kw-bench-durable-'));
    const bucket = bucketUrl(dataDir);
    const node = await startNode({ dataDir, bucket, classes: { Counter: COUNTER }, workerThreads: 1, logger: silentLogger() });
    try {
      const hot = node.actor('bench/Counter/hot');
      await hot.callDurable('add', 0); // created and uploaded before the clock starts
      const links = async () => (await listChain(node.store, parseAddress('bench/Counter/hot'))).length;
      const before = await links();
      const m = await measure(CALLS, IN_FLIGHT, () => hot.callDurable('add', 1));
      const uploaded = (await links()) - before;
      rows.push({
        round,
        calls: CALLS,
        inFlight: IN_FLIGHT,
        'calls/s': m.opsPerSec,
        'p50 ms': m.p50Ms,
        'p99 ms': m.p99Ms,
        links: uploaded,
        'calls per link': Math.round((CALLS / uploaded) * 10) / 10,
      });
    } finally {
      await node.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
  console.log(`\nbench/durable-hot (one actor, ${IN_FLIGHT} durable calls in flight, ${args.bucket} bucket, 1 worker thread)\n`);
  console.log(table(rows));
  console.log(`\nwrote ${writeResult('durable-hot', { calls: CALLS, inFlight: IN_FLIGHT, bucket: args.bucket, rows })}`);
}

await main();
