/**
 * The backlog a drain starts from: node A arms one template actor for the due time T, is killed
 * -9, and the template's chain, hold and index entry are copied under K−1 more names
 * (bench/support/backlog.ts), so the bucket holds K pending alarms of actors last owned by a dead
 * node. T is chosen from a calibrated copy rate so that the copy ends before T.
 *
 * With a sharded index (`--set indexShards=S`) a copy keeps its template's entry folder, and the
 * state it copies names that folder: so A arms one template per shard (the first actor of each),
 * and each actor is copied from its own shard's template, spreading the backlog over the S
 * folders as A's own writes would have.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { shardOf } from '../../../src/alarms/keys.js';
import { parseAddress, type ActorAddress } from '../../../src/core/address.js';
import type { ObjectStore } from '../../../src/store/types.js';
import { mustCall } from '../../../support/cluster/calls.js';
import type { Cluster } from '../../../support/cluster/cluster.js';
import type { ClusterNode } from '../../../support/cluster/node.js';
import { cloneBacklog, copyPuts, readTemplate } from '../backlog.js';
import { progressBar } from '../progress.js';
import { copyStore } from './cluster.js';
import { CLASS, COPY_IN_FLIGHT, MARGIN_MS, TENANT } from './scenario.js';

export interface Armed {
  /** T: when every alarm of the backlog is due. */
  at: number;
  /** When the last copy was written. */
  copyEnd: number;
}

/**
 * Actors copied per second (to choose T): a calibration actor, armed an hour ahead through node
 * A, copied under 2 × 200 names (the second round timed), and then all its objects removed again.
 */
async function copyRate(store: ObjectStore, a: ClusterNode): Promise<number> {
  const cal = parseAddress(`${TENANT}/${CLASS}/calibration`);
  await sleep(3_000); // the nodes have just started (loading classes, first sweeps)
  await mustCall(a.url, `${TENANT}/${CLASS}/${cal.name}`, 'arm', [Date.now() + 3_600_000], { durable: true, timeoutMs: 60_000 });
  const template = await readTemplate(store, cal);
  // Two rounds of 200: the first warms the code up (it is several times slower), the second is timed.
  const probes = Array.from({ length: 400 }, (_, i) => parseAddress(`${TENANT}/${CLASS}/calibration${i}`));
  await cloneBacklog(store, template, probes.slice(0, 200), COPY_IN_FLIGHT, () => undefined);
  const t0 = performance.now();
  await cloneBacklog(store, template, probes.slice(200), COPY_IN_FLIGHT, () => undefined);
  const rate = 200 / ((performance.now() - t0) / 1000);
  const keys = [cal, ...probes].flatMap((x) => copyPuts(template, x).map(([k]) => k));
  for (let i = 0; i < keys.length; i += 1000) await store.deleteMany(keys.slice(i, i + 1000));
  return rate;
}

/** The actors grouped by their shard under `shards` (one group when unsharded); each group's first is its template. */
function byShard(actors: readonly ActorAddress[], shards: number): ActorAddress[][] {
  const groups = new Map<number | undefined, ActorAddress[]>();
  for (const x of actors) {
    const s = shardOf(x, shards);
    groups.set(s, [...(groups.get(s) ?? []), x]);
  }
  return [...groups.values()];
}

/** Node A arms the templates (one per shard), is killed, and each template is copied under its group's other names. */
export async function makeBacklog(c: Cluster, a: ClusterNode, actors: ActorAddress[], shards: number): Promise<Armed> {
  const store = copyStore(c);
  try {
    const rate = await copyRate(store, a);
    // A copy that runs past T is harmless until T + lease + grace, when the sweeps may first
    // read the entries: that is the slack.
    const copyMs = Math.ceil((actors.length / rate) * 1000 * 1.2);
    const at = Date.now() + copyMs + 3_000;
    const groups = byShard(actors, shards);
    for (const g of groups) await mustCall(a.url, `${TENANT}/${CLASS}/${g[0]!.name}`, 'arm', [at], { durable: true, timeoutMs: 60_000 });
    a.child.kill('SIGKILL');
    await a.exited;
    const bar = progressBar(`backlog K=${actors.length}`, actors.length);
    let copied = groups.length;
    for (const g of groups) {
      const template = await readTemplate(store, g[0]!);
      const base = copied;
      await cloneBacklog(store, template, g.slice(1), COPY_IN_FLIGHT, (n) => bar.update(base + n));
      copied += g.length - 1;
    }
    bar.done(`copied (${Math.round(rate)} actors/s calibrated; T in ${Math.round((at - Date.now()) / 1000)} s)`);
    const copyEnd = Date.now();
    if (copyEnd > at + MARGIN_MS - 1_000)
      console.warn(`warning: the backlog copy ended ${copyEnd - at} ms after T: sweeps may have read part of it early`);
    return { at, copyEnd };
  } finally {
    await store.close();
  }
}
