/**
 * Watching a drain: every 500 ms each survivor's /metrics and /proc are sampled until K alarms ran
 * and the index holds none of them, giving the drain curve; and what the curve says (when it
 * reached n alarms, the deliveries in flight, CPU per alarm past the warm-up).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { parseEntryKey, tenantPrefix } from '../../../src/alarms/keys.js';
import { listAll } from '../../../src/store/keys.js';
import type { ObjectStore } from '../../../src/store/types.js';
import type { Cluster } from '../../../support/cluster/cluster.js';
import type { ClusterNode } from '../../../support/cluster/node.js';
import { round } from '../../lib.js';
import { cpuMs } from '../proc-stats.js';
import { progressBar } from '../progress.js';
import { scrape, total } from '../prom.js';
import { CLASS, MARGIN_MS, TENANT } from './scenario.js';

export interface Sample {
  t: number;
  ran: number;
  /** The most deliveries running on one survivor (keepwork_deliveries_running) at this sample. */
  inFlight: number;
  /** CPU ms of the survivors so far (all their threads, summed). */
  cpuMs: number;
}

async function pendingEntries(store: ObjectStore): Promise<number> {
  let n = 0;
  for await (const key of listAll(store, { prefix: tenantPrefix(TENANT) })) if (parseEntryKey(key)?.address.className === CLASS) n++;
  return n;
}

/** Scrapes every survivor until K alarms ran and the index is empty; the drain curve. */
export async function watchDrain(
  c: Cluster,
  survivors: ClusterNode[],
  k: number,
  at: number,
  label: string,
): Promise<{ samples: Sample[]; drainedAt: number }> {
  const samples: Sample[] = [];
  const bar = progressBar(label, k);
  const boundMs = 3 * MARGIN_MS + Math.ceil((k / survivors.length / 20) * 1_000) * 2 + 60_000;
  for (;;) {
    await sleep(500);
    const dead = survivors.find((s) => !s.running);
    if (dead)
      throw new Error(
        `${label}: live node ${dead.nodeId} exited (${dead.child.exitCode ?? dead.child.signalCode}) during the drain:\n${dead.logTail(12)}`,
      );
    const scrapes = await Promise.all(survivors.map((s) => scrape(s)));
    const ran = scrapes.reduce((n, s) => n + total(s, 'keepwork_alarm_deliveries_total', 'outcome="ran"'), 0);
    const inFlight = Math.max(...scrapes.map((s) => total(s, 'keepwork_deliveries_running')));
    samples.push({ t: Date.now(), ran, inFlight, cpuMs: survivors.reduce((ms, s) => ms + cpuMs(s.pid), 0) });
    bar.update(ran, `${Math.round((Date.now() - at) / 100) / 10} s since T`);
    if (ran >= k && (await pendingEntries(c.store())) === 0) {
      bar.done(`drained ${round((Date.now() - at) / 1000, 1)} s after T`);
      return { samples, drainedAt: Date.now() };
    }
    if (Date.now() > at + boundMs) throw new Error(`${label}: ${ran} of ${k} alarms ran ${boundMs} ms after their time`);
  }
}

/**
 * CPU ms per alarm from the first sample past half the alarms to the last one: a drain in a fresh
 * process pays for compiling its hot path (V8's optimising compiler, in each isolate) in its
 * first seconds, and this leaves that out. NaN when the samples do not span it.
 */
export function secondHalfCpu(samples: Sample[], k: number): number {
  const from = samples.find((s) => s.ran >= k / 2);
  const to = samples.at(-1);
  if (!from || !to || to.ran <= from.ran) return NaN;
  return round((to.cpuMs - from.cpuMs) / (to.ran - from.ran), 2);
}

/** Deliveries running on a survivor, on average over the samples taken while alarms ran (at least 1). */
export function meanInFlight(samples: Sample[]): number {
  const during = samples.filter((x, i) => i > 0 && x.ran > samples[i - 1]!.ran);
  return Math.max(1, Math.round(during.reduce((n, x) => n + x.inFlight, 0) / Math.max(1, during.length)));
}

/** The first time the curve reached `n` alarms (ms), or NaN. */
export const reached = (samples: Sample[], n: number) => samples.find((s) => s.ran >= n)?.t ?? NaN;
