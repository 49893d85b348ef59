/**
 * bench/sweep: the cost of one sweep of one tenant (src/alarms/sweep.ts `sweepTenant`) against
 * the size of the alarm index, when most entries are not yet due. docs/alarm-index.md: "A sweep reads only
 * overdue entries" — the listing stops at the first entry not overdue by lease + grace, so the
 * cost must stay flat as the index grows.
 *
 *   Heap: with `node --expose-gc --import tsx bench/sweep.ts …`, the largest growth of the used
 *   heap over one sweep (from a collected heap, read right after the sweep) is reported too.
 *
 *   index: OVERDUE entries due a minute ago (read, planned and offered on every sweep, as they
 *   are never delivered here), and N − OVERDUE entries due over the coming days, one per second
 *   apart (each its own due-time folder on the fs store, as spread-out alarms are).
 *   For each size: one warm-up sweep, then SWEEPS sweeps; median and p90 duration, and store
 *   requests per sweep (a counting wrapper around the store).
 *
 *   --same-ms: every entry due at the same overdue millisecond instead (one batch of alarms set for
 *   one moment: their entries share one folder per class on the fs store), so each sweep reads a
 *   page out of that one folder.
 *
 *   npm run bench -- sweep [--quick] [--store memory,fs,s3] [--fs-sizes 10000,100000,1000000] [--latency-ms 20] [--same-ms]
 *     quick: memory 10k / 100k / 1M, fs 10k / 30k;  full: memory 10k / 100k / 1M, fs 10k / 100k,
 *     and s3 1k / 10k / 30k when KEEPWORK_TEST_S3_URL is set. Building the index dominates the run time.
 *     --latency-ms wraps every store in a LatencyStore (src/store/testing/latency.ts) for the measured sweeps.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAddress } from '../src/core/address.js';
import { SimClock, SystemClock } from '../src/core/clock.js';
import { silentLogger } from '../src/core/logger.js';
import { SeededRandom } from '../src/core/random.js';
import { entryKey } from '../src/alarms/keys.js';
import { resolveOptions } from '../src/core/config.js';
import { countedStore, RequestCounts } from '../src/store/request-counts.js';
import { FsStore } from '../src/store/fs/store.js';
import { listAll } from '../src/store/keys.js';
import { LatencyStore } from '../src/store/testing/latency.js';
import { MemoryStore } from '../src/store/memory.js';
import { openStore } from '../src/store/open.js';
import type { ObjectStore } from '../src/store/types.js';
import { Sweeper } from '../src/alarms/sweep.js';
import { benchArgs, percentile, quick, round, table, writeResult } from './lib.js';
import { progressBar } from './support/progress.js';

const NOW = 1_900_000_000_000;
const OVERDUE = 100;
const SWEEPS = quick ? 10 : 30;
const TENANT = 't';
const SIZES: Record<string, number[]> = quick
  ? { memory: [10_000, 100_000, 1_000_000], fs: [10_000, 30_000] }
  : { memory: [10_000, 100_000, 1_000_000], fs: [10_000, 100_000], s3: [1_000, 10_000, 30_000] };
const args = benchArgs({
  store: { type: 'string' },
  'fs-sizes': { type: 'string' },
  'latency-ms': { type: 'string' },
  'same-ms': { type: 'boolean' },
});
const SAME_MS = args['same-ms'] === true;
const flag = (name: keyof typeof args) => args[name] as string | undefined;
/** `--store memory,fs,s3`: which stores to run (default: all; s3 only with KEEPWORK_TEST_S3_URL). */
const STORES = flag('store')?.split(',') ?? ['memory', 'fs', 's3'];
/**
 * `--fs-sizes 10000,100000,1000000`: index sizes on the fs store. 1M entries one second apart take
 * ~5M inodes (more than a default /dev/shm has: `mount -o remount,nr_inodes=8000000 /dev/shm`)
 * and ~80 s to build on tmpfs.
 */
if (flag('fs-sizes')) SIZES.fs = flag('fs-sizes')!.split(',').map(Number);
/** `--latency-ms N`: every request of the measured sweeps waits N ms first (an S3-like bucket). */
const LATENCY_MS = flag('latency-ms') === undefined ? undefined : Number(flag('latency-ms'));

/** Entry i: the first OVERDUE due a minute ago, the rest one second apart from an hour ahead (--same-ms: all due a minute ago). */
function keyOf(i: number): string {
  const dueMs = i < OVERDUE || SAME_MS ? NOW - 60_000 : NOW + 3_600_000 + (i - OVERDUE) * 1_000;
  const name = `a${String(i).padStart(8, '0')}`;
  return entryKey({ address: parseAddress({ tenant: TENANT, className: 'C', name }), dueMs, tag: { generation: 1, nonce: 'ab' } });
}

/** Adds entries [from, to) in key order, 32 puts in flight. */
async function build(store: ObjectStore, from: number, to: number, label: string): Promise<void> {
  const bar = progressBar(label, to - from);
  const empty = new Uint8Array(0);
  let next = from;
  const lane = async () => {
    while (next < to) {
      const i = next++;
      await store.put(keyOf(i), empty);
      if ((i - from) % 1000 === 0) bar.update(i - from);
    }
  };
  await Promise.all(Array.from({ length: 32 }, lane));
  bar.done();
}

function sweeper(store: ObjectStore, clock: SimClock) {
  const self = { nodeId: 'n1', tenants: null, classes: ['C'] };
  return new Sweeper(
    { store, clock, random: new SeededRandom(1), config: resolveOptions(), log: silentLogger() },
    {
      sweepNode: () => self,
      liveNodes: async () => [self],
      isBusy: () => false,
      offerEntry: () => true,
      deliveryBacklog: () => 0,
      tenantsToSweep: async () => [TENANT],
    },
  );
}

async function measureSweeps(kind: string, inner: ObjectStore, size: number) {
  let counts = new RequestCounts();
  const slow = LATENCY_MS === undefined ? inner : new LatencyStore(inner, new SystemClock(), LATENCY_MS);
  const store = countedStore(slow, { add: (op, key) => counts.add(op, key) });
  const s = sweeper(store, new SimClock(NOW));
  const first = await s.sweepTenant(TENANT); // warm-up (and checks what a sweep sees)
  if (!SAME_MS && (first.read !== OVERDUE || first.offered !== OVERDUE))
    throw new Error(`${kind} ${size}: a sweep read ${first.read} and offered ${first.offered}, expected ${OVERDUE}`);
  counts = new RequestCounts(); // count the measured sweeps only
  const ms: number[] = [];
  const gc = (globalThis as { gc?: () => void }).gc;
  let heapMax = 0;
  for (let i = 0; i < SWEEPS; i++) {
    gc?.();
    const heap0 = process.memoryUsage().heapUsed;
    const t0 = performance.now();
    await s.sweepTenant(TENANT);
    ms.push(performance.now() - t0);
    heapMax = Math.max(heapMax, process.memoryUsage().heapUsed - heap0);
  }
  ms.sort((a, b) => a - b);
  const perSweep = [...counts.entries()].map(({ op, count }) => `${op} ${round(count / SWEEPS, 2)}`).join(', ');
  return {
    store: LATENCY_MS === undefined ? kind : `${kind} +${LATENCY_MS} ms`,
    entries: size,
    overdue: SAME_MS ? size : OVERDUE,
    'sweep p50 ms': round(percentile(ms, 50), 2),
    'sweep p90 ms': round(percentile(ms, 90), 2),
    'requests per sweep': perSweep,
    'heap growth per sweep KB': gc ? round(heapMax / 1024, 0) : 'run with --expose-gc',
    'entries read': first.read,
  };
}

async function runStore(kind: string, store: ObjectStore, sizes: number[]) {
  const rows = [];
  let built = 0;
  for (const size of sizes) {
    await build(store, built, size, `${kind} index ${built}→${size}`);
    built = size;
    rows.push(await measureSweeps(kind, store, size));
    console.log(`${kind} ${size}: ${JSON.stringify(rows.at(-1))}`);
  }
  return rows;
}

async function clear(store: ObjectStore): Promise<void> {
  const keys: string[] = [];
  for await (const k of listAll(store)) keys.push(k);
  for (let i = 0; i < keys.length; i += 1000) await store.deleteMany(keys.slice(i, i + 1000));
}

async function main() {
  const t0 = Date.now();
  const rows = [];
  if (STORES.includes('memory')) rows.push(...(await runStore('memory', new MemoryStore({ clock: new SimClock(NOW) }), SIZES.memory!)));
  const dir = mkdtempSync(join(tmpdir(), 'kw-bench-sweep-'));
  try {
    // Throwaway data: without fsync (reads, which is all a sweep does, are the same).
    if (STORES.includes('fs')) rows.push(...(await runStore('fs', new FsStore(dir, { fsync: false }), SIZES.fs!)));
  } finally {
    // rm(1): rmSync took ~15 minutes for a 100k index on a loaded machine (the tree is ~4 inodes per entry).
    if (spawnSync('rm', ['-rf', dir], { stdio: 'inherit' }).status !== 0) rmSync(dir, { recursive: true, force: true });
  }
  const s3 = process.env.KEEPWORK_TEST_S3_URL;
  if (SIZES.s3 && s3 && STORES.includes('s3')) {
    const store = openStore(s3.replace(/^(s3:\/\/[^/?]+)\/?/, `$1/bench-sweep-${process.pid}/`));
    try {
      rows.push(...(await runStore('s3', store, SIZES.s3)));
    } finally {
      await clear(store);
      await store.close();
    }
  }
  const index = SAME_MS ? 'every entry due at the same overdue millisecond' : `${OVERDUE} overdue entries, the rest not yet due`;
  console.log(`\nbench/sweep (one tenant; ${index}; ${SWEEPS} sweeps per size)\n`);
  console.log(table(rows));
  console.log(
    `\nwrote ${writeResult(SAME_MS ? 'sweep-same-ms' : 'sweep', { overdue: SAME_MS ? 'all' : OVERDUE, sweeps: SWEEPS, rows })} (${round((Date.now() - t0) / 1000, 1)} s)`,
  );
}

await main();
