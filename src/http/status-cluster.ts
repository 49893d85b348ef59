/**
 * What the status page reads from the bucket, cached so that however many pages poll, the
 * bucket sees a bounded number of requests:
 *
 *   nodes     every node record (nodes/), for NODES_TTL_MS
 *   holds     held records per node and epoch (a walk of holds/, at most HOLDS_SCAN_MAX), HOLDS_TTL_MS
 *   index     each tenant's index, both layouts: entries, due, overdue, oldest, lag (one paged LIST per tenant,
 *             at most INDEX_TENANTS_MAX tenants and INDEX_SCAN_MAX entries in all), INDEX_TTL_MS
 *
 * One read in flight at a time; a stale part is read again on the next call. Reads only.
 */
import { indexTenants, tenantIndexStats, type TenantIndexStats } from '../alarms/index-listing.js';
import { HOLDS_PREFIX, NODES_PREFIX, decodeHold, decodeNode, type NodeRecord } from '../leases/records.js';
import { listAll } from '../store/keys.js';
import type { ObjectStore } from '../store/types.js';

const NODES_TTL_MS = 2_000;
const HOLDS_TTL_MS = 5_000;
const INDEX_TTL_MS = 5_000;
export const HOLDS_SCAN_MAX = 1_000;
export const INDEX_TENANTS_MAX = 50;
const INDEX_SCAN_MAX = 20_000;

export interface HoldCounts {
  /** `nodeId/epoch` → held records. */
  counts: Map<string, number>;
  scanned: number;
  truncated: boolean;
}

export interface IndexRead {
  atMs: number;
  tenants: TenantIndexStats[];
  /** More tenants than INDEX_TENANTS_MAX have entries; the rest are not listed. */
  tenantsTruncated: boolean;
}

type Cached<T> = { atMs: number; value: T } | undefined;

export class ClusterReader {
  private nodesRead: Cached<NodeRecord[]>;
  private holdsRead: Cached<HoldCounts>;
  private indexRead: Cached<IndexRead>;
  private reading: Promise<void> | undefined;

  constructor(
    private readonly store: ObjectStore,
    private readonly marginMs: number,
    private readonly now: () => number,
  ) {}

  get nodes(): NodeRecord[] {
    return this.nodesRead?.value ?? [];
  }

  get holds(): HoldCounts | undefined {
    return this.holdsRead?.value;
  }

  get index(): IndexRead | undefined {
    return this.indexRead?.value;
  }

  /** Refreshes what is stale; concurrent callers share one read. */
  refresh(): Promise<void> {
    this.reading ??= this.read().finally(() => (this.reading = undefined));
    return this.reading;
  }

  private async read(): Promise<void> {
    const now = this.now();
    const stale = (c: Cached<unknown>, ttl: number) => !c || now - c.atMs >= ttl;
    if (stale(this.nodesRead, NODES_TTL_MS)) this.nodesRead = { atMs: now, value: await this.readNodes() };
    if (stale(this.holdsRead, HOLDS_TTL_MS)) this.holdsRead = { atMs: now, value: await this.readHolds() };
    if (stale(this.indexRead, INDEX_TTL_MS)) this.indexRead = { atMs: now, value: await this.readIndex() };
  }

  private async readNodes(): Promise<NodeRecord[]> {
    const out: NodeRecord[] = [];
    for await (const key of listAll(this.store, { prefix: NODES_PREFIX })) {
      const obj = await this.store.get(key);
      if (!obj) continue;
      try {
        out.push(decodeNode(obj.body));
      } catch {
        // an unreadable record is not shown
      }
    }
    return out.sort((a, b) => a.nodeId.localeCompare(b.nodeId));
  }

  private async readHolds(): Promise<HoldCounts> {
    const counts = new Map<string, number>();
    let scanned = 0;
    for await (const key of listAll(this.store, { prefix: HOLDS_PREFIX })) {
      if (scanned >= HOLDS_SCAN_MAX) return { counts, scanned, truncated: true };
      scanned++;
      const obj = await this.store.get(key);
      if (!obj) continue;
      try {
        const h = decodeHold(obj.body);
        if (h.state === 'held') counts.set(`${h.nodeId}/${h.epoch}`, (counts.get(`${h.nodeId}/${h.epoch}`) ?? 0) + 1);
      } catch {
        // skip
      }
    }
    return { counts, scanned, truncated: false };
  }

  private async readIndex(): Promise<IndexRead> {
    const all = await indexTenants(this.store, INDEX_TENANTS_MAX + 1);
    const tenants: TenantIndexStats[] = [];
    let budget = INDEX_SCAN_MAX;
    for (const tenant of all.slice(0, INDEX_TENANTS_MAX)) {
      const s = await tenantIndexStats(this.store, tenant, this.now(), this.marginMs, undefined, Math.max(1, budget));
      budget -= s.entries;
      tenants.push(s);
    }
    return { atMs: this.now(), tenants, tenantsTruncated: all.length > INDEX_TENANTS_MAX };
  }
}
