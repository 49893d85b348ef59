/**
 * bench/replication: what replicating every actor's state to the bucket costs (docs/architecture.md).
 *
 *   (a) calls per second of counter.add with replication on — plain (reply after the local
 *       commit, uploaded within the group-commit window) and durable (reply once the link is in the
 *       bucket) — one hot actor and 100 actors round-robin, 1 and 2 worker threads, on the folder
 *       bucket and on S3 (RGW) when KEEPWORK_TEST_S3_URL is set;
 *   (b) bytes uploaded per call: the sizes of the objects under `state/<cell's tenant>/` after
 *       the node's clean stop (every pending upload done) minus those after the warm-up, divided
 *       by the calls — link bodies as stored (header + deflated payload), nothing else. Links are
 *       not pruned within a run (linkRetentionMs is a day), so this is everything uploaded;
 *   (c) restore time: a database of 1 MB and 100 MB (--quick: 1 MB and 20 MB) built through an
 *       actor (incompressible blobs, 4 MB per durable call), the node stopped; then a fresh node
 *       (new data dir, worker and class already warm) times its first call on that actor, which
 *       restores the chain (newest snapshot + later deltas) — MB/s of the database's size.
 *
 *   npm run bench -- replication [--quick]
 *
 * Every run writes under a unique prefix (S3) or a temp folder (fs), deleted afterwards.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { parseAddress } from '../src/core/address.js';
import { silentLogger } from '../src/core/logger.js';
import { startNode } from '../src/index.js';
import type { KeepworkNode } from '../src/main/node-api.js';
import { listAll } from '../src/store/keys.js';
import { openStore } from '../src/store/open.js';
import { parseS3Url } from '../src/store/s3/url.js';
import { actorDbPath } from '../src/workers/actor-db.js';
import { measure, quick, round, table, writeResult } from './lib.js';

const COUNTER = new URL('../examples/counter.ts', import.meta.url).href;
const LEDGER = new URL('../test/fixtures/classes/ledger.ts', import.meta.url).href;
const CALLS = { plain: quick ? 2_000 : 10_000, durable: quick ? 400 : 2_000 };
const IN_FLIGHT = 64;
const ACTOR_COUNTS = [1, 100];
const THREADS = [1, 2];
const MODES = ['plain', 'durable'] as const;
const MB = 1024 * 1024;
const RESTORE_SIZES_MB = quick ? [1, 20] : [1, 100];
const GROW_STEP_BYTES = 4 * MB;
const BLOB_CHUNK_BYTES = MB;

type Mode = (typeof MODES)[number];
interface Target {
  store: 'fs' | 's3';
  /** A fresh bucket URL for one leg of the run. */
  bucket(leg: string): string;
}

const tempDirs: string[] = [];
function tempDir(what: string): string {
  const d = mkdtempSync(join(tmpdir(), `kw-bench-repl-${what}-`));
  tempDirs.push(d);
  return d;
}

function targets(): Target[] {
  const out: Target[] = [{ store: 'fs', bucket: (leg) => join(tempDir(leg), 'bucket') }];
  const s3 = process.env.KEEPWORK_TEST_S3_URL;
  if (s3) {
    const run = `bench-replication-${process.pid}-${Date.now().toString(36)}`;
    out.push({ store: 's3', bucket: (leg) => s3.replace(/^(s3:\/\/[^/?]+)\/?/, `$1/${run}/${leg}/`) });
  } else console.log('(S3 leg skipped: KEEPWORK_TEST_S3_URL is not set)');
  return out;
}

/** Objects and bytes under `prefix` of the bucket: S3's listing sizes, or each object's head (fs). */
async function usage(bucket: string, prefix: string): Promise<{ objects: number; bytes: number }> {
  if (bucket.startsWith('s3://')) {
    const loc = parseS3Url(bucket);
    const client = new S3Client({ region: loc.region, endpoint: loc.endpoint, forcePathStyle: loc.forcePathStyle });
    let objects = 0;
    let bytes = 0;
    let token: string | undefined;
    try {
      do {
        const page = await client.send(
          new ListObjectsV2Command({ Bucket: loc.bucket, Prefix: loc.prefix + prefix, ContinuationToken: token }),
        );
        for (const o of page.Contents ?? []) {
          objects++;
          bytes += o.Size ?? 0;
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
    } finally {
      client.destroy();
    }
    return { objects, bytes };
  }
  const store = openStore(bucket);
  try {
    const keys: string[] = [];
    for await (const k of listAll(store, { prefix })) keys.push(k);
    let bytes = 0;
    for (let i = 0; i < keys.length; i += 32) {
      const heads = await Promise.all(keys.slice(i, i + 32).map((k) => store.head(k)));
      for (const h of heads) bytes += h?.size ?? 0;
    }
    return { objects: keys.length, bytes };
  } finally {
    await store.close();
  }
}

async function emptyBucket(bucket: string): Promise<void> {
  const store = openStore(bucket);
  try {
    const keys: string[] = [];
    for await (const k of listAll(store, { prefix: '' })) keys.push(k);
    for (let i = 0; i < keys.length; i += 1000) await store.deleteMany(keys.slice(i, i + 1000));
  } finally {
    await store.close();
  }
}

/** (a) and (b) for one store and thread count: one node, four cells (actors × mode), one tenant each. */
async function callsLeg(target: Target, threads: number) {
  const bucket = target.bucket(`calls-${threads}`);
  const node = await startNode({
    bucket,
    dataDir: tempDir('data'),
    classes: { Counter: COUNTER },
    workerThreads: threads,
    logger: silentLogger(),
    actorQueueMax: 10_000,
  });
  const cells: {
    tenant: string;
    actors: number;
    mode: Mode;
    before: { objects: number; bytes: number };
    r: Awaited<ReturnType<typeof measure>>;
  }[] = [];
  try {
    for (const actors of ACTOR_COUNTS) {
      for (const mode of MODES) {
        const tenant = `${mode}-${actors}`;
        const name = (i: number) => `${tenant}/Counter/${actors === 1 ? 'hot' : `a${i % actors}`}`;
        await Promise.all(Array.from({ length: actors }, (_, i) => node.actor(name(i)).callDurable('add', 0))); // init + first snapshot
        const before = await usage(bucket, `state/${tenant}/`);
        const call = (i: number) => (mode === 'durable' ? node.actor(name(i)).callDurable('add', 1) : node.actor(name(i)).call('add', 1));
        const r = await measure(CALLS[mode], IN_FLIGHT, call);
        cells.push({ tenant, actors, mode, before, r });
        console.log(`${target.store} threads=${threads} actors=${actors} ${mode}: ${r.opsPerSec} calls/s`);
      }
    }
  } finally {
    await node.stop(); // every pending upload done
  }
  const rows = [];
  for (const c of cells) {
    const after = await usage(bucket, `state/${c.tenant}/`);
    const calls = CALLS[c.mode];
    rows.push({
      store: target.store,
      threads,
      actors: c.actors,
      mode: c.mode,
      'calls/s': c.r.opsPerSec,
      'p50 ms': c.r.p50Ms,
      'p99 ms': c.r.p99Ms,
      'links/call': round((after.objects - c.before.objects) / calls, 3),
      'bytes/call': Math.round((after.bytes - c.before.bytes) / calls),
    });
  }
  await emptyBucket(bucket);
  return rows;
}

/** (c): build a database of `sizeMb` through an actor, stop, time a fresh node's first call on it. */
async function restoreLeg(target: Target, sizeMb: number) {
  const bucket = target.bucket(`restore-${sizeMb}`);
  const address = `restore/Ledger/db${sizeMb}`;
  const start = (dataDir: string): Promise<KeepworkNode> =>
    startNode({ bucket, dataDir, classes: { Ledger: LEDGER }, workerThreads: 1, logger: silentLogger() });
  const builder = await start(tempDir('build'));
  const t0 = performance.now();
  try {
    for (let done = 0; done < sizeMb * MB; done += GROW_STEP_BYTES) {
      await builder.actor(address).callDurable('grow', Math.min(GROW_STEP_BYTES, sizeMb * MB - done), BLOB_CHUNK_BYTES);
    }
  } finally {
    await builder.stop();
  }
  const buildSeconds = (performance.now() - t0) / 1000;
  const chain = await usage(bucket, 'state/restore/');
  const dataDir = tempDir('restore');
  const reader = await start(dataDir);
  let restoreMs: number;
  let blobBytes: number;
  try {
    await reader.actor('restore/Ledger/warm').call('blobBytes'); // the worker and the class are loaded
    const s = performance.now();
    blobBytes = await reader.actor(address).call<number>('blobBytes');
    restoreMs = performance.now() - s;
  } finally {
    await reader.stop();
  }
  if (blobBytes !== sizeMb * MB) throw new Error(`restored ${blobBytes} blob bytes of ${address}, expected ${sizeMb * MB}`);
  const dbBytes = statSync(actorDbPath(dataDir, parseAddress(address))).size;
  await emptyBucket(bucket);
  console.log(`${target.store} restore ${sizeMb} MB: ${Math.round(restoreMs)} ms`);
  return {
    store: target.store,
    'db MB': round(dbBytes / MB, 1),
    'chain links': chain.objects,
    'chain MB': round(chain.bytes / MB, 1),
    'build s': round(buildSeconds, 1),
    'restore ms': Math.round(restoreMs),
    'restore MB/s': round(dbBytes / MB / (restoreMs / 1000), 1),
  };
}

async function main() {
  const t0 = performance.now();
  const callRows = [];
  const restoreRows = [];
  try {
    for (const target of targets()) {
      for (const threads of THREADS) callRows.push(...(await callsLeg(target, threads)));
      for (const sizeMb of RESTORE_SIZES_MB) restoreRows.push(await restoreLeg(target, sizeMb));
    }
  } finally {
    for (const d of tempDirs) rmSync(d, { recursive: true, force: true });
  }
  console.log(
    `\nbench/replication: calls (${CALLS.plain} plain / ${CALLS.durable} durable calls per cell, ${IN_FLIGHT} in flight, counter.add)${quick ? ' --quick' : ''}\n`,
  );
  console.log(table(callRows));
  console.log(`\nbench/replication: restore (a fresh node's first call on the actor; incompressible blobs)\n`);
  console.log(table(restoreRows));
  const path = writeResult('replication', {
    calls: CALLS,
    inFlight: IN_FLIGHT,
    bytesPerCall: 'sizes of the objects under state/<tenant>/ after the clean stop minus after the warm-up, divided by the calls',
    rows: callRows,
    restore: restoreRows,
    seconds: round((performance.now() - t0) / 1000, 1),
  });
  console.log(`\nwrote ${path} (${round((performance.now() - t0) / 1000, 1)} s)`);
}

await main();
