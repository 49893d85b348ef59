/**
 * `keepwork status`: the cluster as the bucket shows it — every node record (live, expired,
 * fenced or released, epoch, addr, age of its lease) and how many actors each holds; then each
 * tenant's alarm index: size, overdue entries and lag (index-stats.ts). Reads only; progress of
 * long listings on stderr.
 */
import { SystemClock } from '../core/clock.js';
import { isLive } from '../leases/decisions.js';
import { HOLDS_PREFIX, NODES_PREFIX, decodeHold, decodeNode, type NodeRecord } from '../leases/records.js';
import { listAll } from '../store/keys.js';
import { openExistingBucket } from './open-bucket.js';
import type { ObjectStore } from '../store/types.js';
import { resolveOptions } from '../core/config.js';
import { indexTenants } from '../alarms/index-listing.js';
import { tenantIndexStats, type TenantIndexStats } from '../ops/index-stats.js';
import { Progress } from './progress.js';

export interface NodeStatus {
  nodeId: string;
  status: 'live' | 'expired' | 'fenced' | 'released';
  epoch: number;
  addr: string;
  /** Since the lease was last renewed (the same name as `/v1/status`). */
  renewedMsAgo: number;
  holds: number;
}

export async function clusterStatus(store: ObjectStore, nowMs: number, graceMs: number, leasePeriodMs: number): Promise<NodeStatus[]> {
  const records: NodeRecord[] = [];
  for await (const key of listAll(store, { prefix: NODES_PREFIX })) {
    const obj = await store.get(key);
    if (obj) records.push(decodeNode(obj.body));
  }
  const holds = new Map<string, number>();
  for await (const key of listAll(store, { prefix: HOLDS_PREFIX })) {
    const obj = await store.get(key);
    if (!obj) continue;
    const h = decodeHold(obj.body);
    if (h.state === 'held') holds.set(`${h.nodeId}/${h.epoch}`, (holds.get(`${h.nodeId}/${h.epoch}`) ?? 0) + 1);
  }
  // Each record says which lease and grace its node runs with; the defaults are for older records.
  return records.map((r) => ({
    nodeId: r.nodeId,
    status: r.state !== 'live' ? r.state : isLive(r, nowMs, r.graceMs ?? graceMs) ? 'live' : 'expired',
    epoch: r.epoch,
    addr: r.addr,
    renewedMsAgo: nowMs - (r.expiresAtMs - (r.leasePeriodMs ?? leasePeriodMs)),
    holds: holds.get(`${r.nodeId}/${r.epoch}`) ?? 0,
  }));
}

/** What `status --json` prints, always this shape: `index` is null when `--no-index` skipped its listing. */
export interface StatusJson {
  nodes: NodeStatus[];
  index: TenantIndexStats[] | null;
}

/** The table, or `--json` (StatusJson); the index is listed unless `--no-index`, in either form. */
export async function statusCommand(o: { bucket: string; json?: boolean; index?: boolean }): Promise<void> {
  const config = resolveOptions();
  const clock = new SystemClock();
  const store = openExistingBucket(o.bucket, { config, clock });
  try {
    const rows = await clusterStatus(store, clock.now(), config.graceMs, config.leasePeriodMs);
    const index = o.index === false ? null : await indexStatus(store, clock.now(), config.marginMs);
    if (o.json) return void console.log(JSON.stringify({ nodes: rows, index } satisfies StatusJson, null, 2));
    if (rows.length === 0) console.log(`no nodes in ${store.description}`);
    else console.log(['node', 'status', 'epoch', 'addr', 'renewed', 'holds'].join('\t'));
    for (const r of rows)
      console.log([r.nodeId, r.status, r.epoch, r.addr || '-', `${(r.renewedMsAgo / 1000).toFixed(1)}s ago`, r.holds].join('\t'));
    if (index) printIndex(index);
  } finally {
    await store.close();
  }
}

/** Every tenant's index, one paged listing each; progress on stderr while it takes a while. */
async function indexStatus(store: ObjectStore, nowMs: number, marginMs: number): Promise<TenantIndexStats[]> {
  const progress = new Progress();
  const out: TenantIndexStats[] = [];
  for (const tenant of await indexTenants(store)) {
    out.push(
      await tenantIndexStats(store, tenant, nowMs, marginMs, (n) => progress.update(`listing the index of tenant ${tenant}: ${n} entries`)),
    );
  }
  progress.done();
  return out;
}

function printIndex(index: TenantIndexStats[]): void {
  console.log('');
  if (index.length === 0) return void console.log('alarm index: empty');
  console.log(['tenant', 'entries', 'due', 'overdue', 'oldest due', 'lag'].join('\t'));
  for (const t of index) {
    const oldest = t.oldestDueMs === null ? '-' : new Date(t.oldestDueMs).toISOString();
    console.log([t.tenant, t.entries, t.due, t.overdue, oldest, `${(t.lagMs / 1000).toFixed(1)}s`].join('\t'));
  }
}
