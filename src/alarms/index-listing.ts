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
 * Both layouts are read: a tenant's sharded keys (every shard folder, each in due order) list
 * before its unsharded ones, so the oldest entry is the earliest of each folder's first. With
 * `maxEntries` the listing stops after that many entries and says `truncated`: the counts are
 * then lower bounds, but the oldest entry and the lag are exact (the first key of each folder not
 * reached is read, one LIST of one key each).
 *
 * And every entry of one tenant in due order across layouts (`alarms ls`): one cursor per shard
 * folder present and one for the unsharded layout, merged by due time.
 */
import { compareKeys, listAll } from '../store/keys.js';
import type { ObjectStore } from '../store/types.js';
import {
  INDEX_PREFIX,
  afterShard,
  afterShardedArea,
  afterTenant,
  dueBound,
  parseEntryKey,
  shardOfKey,
  shardPrefix,
  shardedAreaPrefix,
  tenantOfKey,
  tenantPrefix,
  type IndexEntry,
} from './keys.js';

/** Keys each folder's cursor asks for per LIST in a merged listing (a page per folder is held at once). */
const MERGE_PAGE_KEYS = 100;

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
  const older = (dueMs: number) => (s.oldestDueMs = Math.min(s.oldestDueMs ?? dueMs, dueMs));
  for await (const key of listAll(store, { prefix: tenantPrefix(tenant) })) {
    const e = parseEntryKey(key);
    if (!e) continue;
    if (s.entries >= maxEntries) {
      s.truncated = true;
      older(e.dueMs); // the first key not counted: the oldest of the rest of its folder
      // The rest of this folder is due later; each later folder's first key is its oldest.
      for (const first of await firstEntries(store, tenant, e.shard === undefined ? undefined : afterShard(tenant, e.shard)))
        older(first.dueMs);
      break;
    }
    s.entries++;
    onProgress?.(s.entries);
    older(e.dueMs);
    if (e.dueMs <= nowMs) s.due++;
    if (e.dueMs <= nowMs - marginMs) s.overdue++;
  }
  if (s.oldestDueMs !== null && s.oldestDueMs <= nowMs - marginMs) s.lagMs = nowMs - s.oldestDueMs;
  return s;
}

/**
 * The first entry of each layout folder of the tenant after `after` (undefined: none left): one
 * LIST of one key per folder, skipping to the next folder each time; the unsharded layout last.
 */
async function firstEntries(store: ObjectStore, tenant: string, after: string | undefined): Promise<IndexEntry[]> {
  const out: IndexEntry[] = [];
  let startAfter = after;
  while (startAfter !== undefined) {
    const key = (await store.list({ prefix: tenantPrefix(tenant), startAfter, maxKeys: 1 })).keys[0];
    if (key === undefined) break;
    const shard = shardOfKey(tenant, key);
    const e = parseEntryKey(key);
    if (e) out.push(e);
    startAfter = shard === undefined ? undefined : afterShard(tenant, shard);
    if (shard === undefined && !e) startAfter = key; // not an entry: look further
  }
  return out;
}

/** The shard folders present in the tenant's index, in order (one LIST of one key per folder). */
export async function shardFoldersOf(store: ObjectStore, tenant: string): Promise<number[]> {
  const shards: number[] = [];
  let startAfter: string | undefined;
  for (;;) {
    const key = (await store.list({ prefix: shardedAreaPrefix(tenant), startAfter, maxKeys: 1 })).keys[0];
    const shard = key === undefined ? undefined : shardOfKey(tenant, key);
    if (shard === undefined) return shards;
    shards.push(shard);
    startAfter = afterShard(tenant, shard);
  }
}

/**
 * Every entry of the tenant due at or before `dueBeforeMs` (all when undefined), in due order
 * across layouts (ties by key): one cursor per shard folder present and one for the unsharded
 * layout, each paged (`MERGE_PAGE_KEYS`), merged. Keys that do not parse are skipped.
 */
export async function* entriesInDueOrder(store: ObjectStore, tenant: string, dueBeforeMs?: number): AsyncGenerator<Listed> {
  const folders = [...(await shardFoldersOf(store, tenant)), undefined];
  const cursors = folders.map((shard) => folderEntries(store, tenant, shard, dueBeforeMs));
  const next = async (c: AsyncGenerator<Listed>) => (await c.next()).value ?? undefined;
  const heads = await Promise.all(cursors.map(next));
  for (;;) {
    let i = -1;
    heads.forEach((h, j) => {
      if (h && (i < 0 || before(h, heads[i]!))) i = j;
    });
    if (i < 0) return;
    yield heads[i]!;
    heads[i] = await next(cursors[i]!);
  }
}

type Listed = { key: string; entry: IndexEntry };

function before(a: Listed, b: Listed): boolean {
  return a.entry.dueMs !== b.entry.dueMs ? a.entry.dueMs < b.entry.dueMs : compareKeys(a.key, b.key) < 0;
}

/** One folder's entries in due order, up to the due bound: a shard folder, or the unsharded layout (after the sharded area). */
async function* folderEntries(
  store: ObjectStore,
  tenant: string,
  shard: number | undefined,
  dueBeforeMs: number | undefined,
): AsyncGenerator<Listed> {
  const prefix = shard === undefined ? tenantPrefix(tenant) : shardPrefix(tenant, shard);
  const startAfter = shard === undefined ? afterShardedArea(tenant) : undefined;
  const bound = dueBeforeMs === undefined ? undefined : dueBound(tenant, dueBeforeMs, shard);
  for await (const key of listAll(store, { prefix, startAfter, pageKeys: MERGE_PAGE_KEYS })) {
    if (bound !== undefined && compareKeys(key, bound) >= 0) return;
    const entry = parseEntryKey(key);
    if (entry) yield { key, entry };
  }
}
