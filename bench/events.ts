/**
 * bench/events: calls per second of the counter example's `add` — one hot actor, and 1,000
 * actors round-robin — over the library API and over HTTP, with 1 and 2 worker threads. State
 * lives in the data dir (replication is not in this figure).
 *
 *   npm run bench -- events [--quick]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../src/core/logger.js';
import { startNode } from '../src/main/start-node.js';
import { measure, quick, table, writeResult } from './lib.js';

const COUNTER = new URL('../examples/counter.ts', import.meta.url).href;
const CALLS = quick ? 2_000 : 10_000;
const IN_FLIGHT = 64;

function httpPost(agent: Agent, url: string, body: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent, headers: { 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`HTTP ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function main() {
  const rows = [];
  for (const threads of [1, 2]) {
    const dataDir = mkdtempSync(join(tmpdir(), 'kw-bench-events-'));
    const node = await startNode({ dataDir, bucket: 'memory:', classes: { Counter: COUNTER }, port: 0, workerThreads: threads, logger: silentLogger(), actorQueueMax: 10_000 });
    const agent = new Agent({ keepAlive: true, maxSockets: IN_FLIGHT });
    try {
      const name = (actors: number) => (i: number) => (actors === 1 ? 'hot' : `a${i % actors}`);
      for (const actors of [1, 1000]) {
        const n = name(actors);
        await Promise.all(Array.from({ length: Math.min(actors, 1000) }, (_, i) => node.actor(`bench/Counter/${n(i)}`).call('add', 0)));
        const lib = await measure(CALLS, IN_FLIGHT, (i) => node.actor(`bench/Counter/${n(i)}`).call('add', 1));
        const http = await measure(CALLS, IN_FLIGHT, (i) => httpPost(agent, `${node.url}/v1/actors/bench/Counter/${n(i)}/add`, '[1]'));
        rows.push({ threads, actors, api: 'library', 'calls/s': lib.opsPerSec, 'p50 ms': lib.p50Ms, 'p99 ms': lib.p99Ms });
        rows.push({ threads, actors, api: 'http', 'calls/s': http.opsPerSec, 'p50 ms': http.p50Ms, 'p99 ms': http.p99Ms });
        console.log(`threads=${threads} actors=${actors} done`);
      }
    } finally {
      agent.destroy();
      await node.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
  console.log(`\nbench/events (${CALLS} calls per cell, ${IN_FLIGHT} in flight, counter.add)\n`);
  console.log(table(rows));
  console.log(`\nwrote ${writeResult('events', { calls: CALLS, inFlight: IN_FLIGHT, rows })}`);
}

await main();
