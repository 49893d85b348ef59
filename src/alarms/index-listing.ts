/**
 * Listing the alarm index by tenant: which tenants have entries at all (the sweep's tenant
 * discovery when a node serves every tenant, and the operator commands). One LIST of one key per
 * tenant, each skipping past the tenant found, so the cost follows the number of tenants, not of
 * entries. Keys come from keys.ts.
 *
 * And the size and lag of one tenant's index (`keepwork status`, the status page): one paged LIST
 * of the tenant's entries, counting as it goes (bounded memory, whatever the index holds):
 *
 *   entries   every key under alarms/<tenant>/ that parses as an entry
 *   due       entries due at or before now
 *   overdue   entries due at or before now − margin (lease + grace): what sweeps read and deliver
 *             to live nodes; a dead node's alarms show up here first
 *   lagMs     now − the oldest overdue entry's due time (0 when none): the same measure as
 *             keepwork_index_lag_seconds, seen from the bucket instead of one node's last sweep
 *
 * With `maxEntries` the listing stops after that many entries and says `truncated`: the counts are
 * then lower bounds, but the oldest entry and the lag are exact (keys sort by due time).
 */
import { listAll } from '../store/keys.js';
import type { ObjectStore } from '../store/types.js';
import { INDEX_PREFIX, afterTenant, parseEntryKey, tenantOfKey, tenantPrefix } from './keys.js';

export interface TenantIndexStats {
  tenant: string;
  entries: number;
  due: number;
  overdue: number;
  oldestDueMs: number | null;
  lagMs: number;
  /** Only when the listing stopped at `maxEntries`: the counts are lower bounds. */
  truncated?: true;
}

/** Tenants with index entries, in key order (the first `max`). */
export async function indexTenants(store: ObjectStore, max = Infinity): Promise<string[]> {
  const tenants: string[] = [];
  let after = INDEX_PREFIX;
  while (tenants.length < max) {
    const page = await store.list({ prefix: INDEX_PREFIX, startAfter: after, maxKeys: 1 });
    const key = page.keys[0];
    const tenant = key === undefined ? undefined : tenantOfKey(key);
    if (tenant === undefined) return tenants;
    tenants.push(tenant);
    after = afterTenant(tenant);
  }
  return tenants;
}

export async function tenantIndexStats(
  store: ObjectStore,
  tenant: string,
  nowMs: number,
  marginMs: number,
  onProgress?: (seen: number) => void,
  maxEntries = Infinity,
): Promise<TenantIndexStats> {
  const s: TenantIndexStats = { tenant, entries: 0, due: 0, overdue: 0, oldestDueMs: null, lagMs: 0 };
  for await (const key of listAll(store, { prefix: tenantPrefix(tenant) })) {
    const e = parseEntryKey(key);
    if (!e) continue;
    if (s.entries >= maxEntries) {
      s.truncated = true;
      break;
    }
    s.entries++;
    onProgress?.(s.entries);
    s.oldestDueMs ??= e.dueMs; // keys sort by due time
    if (e.dueMs <= nowMs) s.due++;
    if (e.dueMs <= nowMs - marginMs) s.overdue++;
  }
  if (s.oldestDueMs !== null && s.oldestDueMs <= nowMs - marginMs) s.lagMs = nowMs - s.oldestDueMs;
  return s;
}
