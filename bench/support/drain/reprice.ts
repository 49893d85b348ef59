/**
 * `--reprice`: the rows of bench/results/<out>.json priced again with store rates measured now
 * (a fresh folder or S3 prefix per store and concurrency), without running a drain.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../../../src/store/open.js';
import { quick, round } from '../../lib.js';
import { ceiling, storeRates, type Rates } from '../ceiling.js';
import { bucketFor, removeBucketFolder } from './cluster.js';
import type { DrainOptions } from './options.js';
import { readResults, save } from './results.js';
import { MODES } from './scenario.js';
import { sumOps } from './summary.js';

/** Store rates at that concurrency: a fresh temp folder, or a fresh bucket of the store's kind. */
async function freshRates(o: DrainOptions, storeKind: string, inFlight: number): Promise<Rates> {
  const dir = mkdtempSync(join(tmpdir(), 'kw-bench-reprice-'));
  const url = storeKind === 'fs' ? dir : bucketFor(storeKind, `reprice-${inFlight}`, o)!;
  const store = openStore(url);
  try {
    return await storeRates(store, inFlight, quick ? 300 : 1000);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
    removeBucketFolder(url);
  }
}

export async function reprice(o: DrainOptions): Promise<void> {
  const data = readResults(o);
  const cache = new Map<string, Rates>();
  for (const r of data.rows) {
    const set = Object.values(MODES).find((x) => x.label === r.mode)!.set as { deliveryConcurrency?: number };
    const inFlight = r.inFlight ?? set.deliveryConcurrency ?? 32;
    const key = `${r.store}/${inFlight}`;
    if (!cache.has(key)) cache.set(key, await freshRates(o, r.store, inFlight));
    r.storeRates = cache.get(key)!;
    const ceil = ceiling(r.storeRates, sumOps([r.requestsPerDelivery.main, r.requestsPerDelivery.worker]));
    r.ceilingPerSec = Math.round(ceil);
    r.ratioToCeiling = round((r.perNodePerSecBurst * r.M) / ceil, 3);
  }
  console.log(`repriced ${data.rows.length} rows: ${save(o, data.rows, data.peers, Date.now()).join(', ')}`);
}
