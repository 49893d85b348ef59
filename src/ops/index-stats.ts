/**
 * Size and lag of each tenant's alarm index, for `keepwork status`: one paged LIST of the tenant's
 * entries, counting as it goes (bounded memory, whatever the index holds).
 *
 *   entries   every key under alarms/<tenant>/ that parses as an entry
 *   due       entries due at or before now
 *   overdue   entries due at or before now − margin (lease + grace): what sweeps read and deliver
 *             to live nodes; a dead node's alarms show up here first
 *   lagMs     now − the oldest overdue entry's due time (0 when none): the same measure as
 *             keepwork_index_lag_seconds, seen from the bucket instead of one node's last sweep
 */
import { parseEntryKey, tenantPrefix } from '../alarms/keys.js';
import { listAll } from '../store/keys.js';
import type { ObjectStore } from '../store/types.js';

export interface TenantIndexStats {
  tenant: string;
  entries: number;
  due: number;
  overdue: number;
  oldestDueMs: number | null;
  lagMs: number;
}

export async function tenantIndexStats(
  store: ObjectStore,
  tenant: string,
  nowMs: number,
  marginMs: number,
  onProgress?: (seen: number) => void,
): Promise<TenantIndexStats> {
  const s: TenantIndexStats = { tenant, entries: 0, due: 0, overdue: 0, oldestDueMs: null, lagMs: 0 };
  for await (const key of listAll(store, { prefix: tenantPrefix(tenant) })) {
    const e = parseEntryKey(key);
    if (!e) continue;
    s.entries++;
    onProgress?.(s.entries);
    s.oldestDueMs ??= e.dueMs; // keys sort by due time
    if (e.dueMs <= nowMs) s.due++;
    if (e.dueMs <= nowMs - marginMs) s.overdue++;
  }
  if (s.oldestDueMs !== null && s.oldestDueMs <= nowMs - marginMs) s.lagMs = nowMs - s.oldestDueMs;
  return s;
}
