/**
 * One drain configuration, end to end: a fresh cluster of 1+M nodes, the dead node's backlog,
 * the survivors watched until it is drained, the firing times read back, the store's rates at
 * the concurrency seen, and the cluster disposed of (kept after a failure).
 */
import { parseAddress, type ActorAddress } from '../../../src/core/address.js';
import { mustCall } from '../../../support/cluster/calls.js';
import type { Cluster } from '../../../support/cluster/cluster.js';
import type { ClusterNode } from '../../../support/cluster/node.js';
import { quick } from '../../lib.js';
import { storeRates, type Rates } from '../ceiling.js';
import { cpuMs, peakRssMb } from '../proc-stats.js';
import { scrape } from '../prom.js';
import { bucketFor, disposeCluster, startCluster } from './cluster.js';
import { makeBacklog } from './dead-node.js';
import type { DrainOptions } from './options.js';
import type { DrainRow } from './rows.js';
import { meanInFlight, watchDrain } from './sampling.js';
import { CLASS, MODES, READBACK_MAX, TENANT, type Mode } from './scenario.js';
import { summarize } from './summary.js';

interface Fired {
  at: number;
  scheduled: number;
  retries: number;
  pid: number;
}

async function pool<T, R>(items: readonly T[], inFlight: number, op: (x: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await op(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, items.length) }, lane));
  return out;
}

/** Every actor's fired rows, read back through the first survivor (K ≤ READBACK_MAX). */
async function readBack(survivor: ClusterNode, actors: ActorAddress[]) {
  const rows = await pool(actors, 32, (x) =>
    mustCall<Fired[]>(survivor.url, `${TENANT}/${CLASS}/${x.name}`, 'fired', [], { timeoutMs: 60_000 }),
  );
  const missing = rows.filter((r) => r.length === 0).length;
  if (missing > 0) throw new Error(`${missing} of ${actors.length} alarms never fired though the index drained`);
  return { firedAt: rows.map((r) => r[0]!.at).sort((x, y) => x - y), duplicates: rows.filter((r) => r.length > 1).length };
}

const rateCache = new Map<string, Rates>();

async function ratesFor(storeKind: string, c: Cluster, inFlight: number): Promise<Rates> {
  const key = `${storeKind}/${inFlight}`;
  if (!rateCache.has(key)) rateCache.set(key, await storeRates(c.store(), inFlight, quick ? 300 : 1000));
  return rateCache.get(key)!;
}

export async function runDrain(o: DrainOptions, storeKind: string, mode: Mode, k: number, m: number): Promise<DrainRow> {
  const runId = `${storeKind}-${mode}-${k}-${m}`;
  const c = startCluster(runId, bucketFor(storeKind, runId, o));
  const actors = Array.from({ length: k }, (_, i) => parseAddress(`${TENANT}/${CLASS}/a${i}`));
  let failed = true;
  try {
    const set = { ...MODES[mode].set, ...o.nodeSet };
    const [a, ...survivors] = await c.startAll(['a', ...Array.from({ length: m }, (_, i) => `s${i + 1}`)], { set });
    const { at, copyEnd } = await makeBacklog(c, a!, actors, (set as { indexShards?: number }).indexShards ?? 1);
    const before = await Promise.all(survivors.map((s) => scrape(s)));
    const cpu0 = survivors.map((s) => cpuMs(s.pid));
    const mainCpu0 = survivors.map((s) => cpuMs(s.pid, s.pid));
    const t0 = Date.now();
    const { samples, drainedAt } = await watchDrain(c, survivors, k, at, `${storeKind} ${MODES[mode].label} K=${k} M=${m}`);
    const after = await Promise.all(survivors.map((s) => scrape(s)));
    const cpuSec = survivors.map((s, i) => (cpuMs(s.pid) - cpu0[i]!) / 1000);
    const mainCpuSec = survivors.map((s, i) => (cpuMs(s.pid, s.pid) - mainCpu0[i]!) / 1000);
    const rss = survivors.map((s) => peakRssMb(s.pid));
    const wallS = (Date.now() - t0) / 1000;
    const exact = k <= READBACK_MAX ? await readBack(survivors[0]!, actors) : undefined;
    // The ceiling at the deliveries a survivor ran at once on average while alarms ran (at least
    // 1): deliveryConcurrency, or more where delivery-limit.ts raised it for the bucket's latency.
    // (A node without the gauge — a build from before it — ran deliveryConcurrency at most.)
    const fixed = (set as { deliveryConcurrency?: number }).deliveryConcurrency ?? 32;
    const inFlight = samples.some((x) => x.inFlight > 0) ? meanInFlight(samples) : fixed;
    const rates = await ratesFor(storeKind, c, inFlight);
    failed = false;
    return summarize({
      storeKind,
      mode,
      k,
      m,
      at,
      copyEnd,
      drainedAt,
      samples,
      before,
      after,
      cpuSec,
      mainCpuSec,
      cpu0Ms: cpu0.reduce((a, b) => a + b, 0),
      wallS,
      rss,
      exact,
      rates,
      inFlight,
    });
  } finally {
    await disposeCluster(c, failed);
  }
}
