/**
 * `keepwork alarms ls [--tenant T] [--due-before TIME] [--limit N] [--json]`: the alarm index,
 * decoded — due time, class, name, generation, tagged or legacy — in due order within each tenant,
 * across the unsharded layout and every shard folder (merged).
 * Reads only. Tenants are found from the index itself when none is given.
 */
import { SystemClock } from '../core/clock.js';
import { BadRequest } from '../core/errors.js';
import { validateTenant } from '../core/address.js';
import { entriesInDueOrder, indexTenants } from '../alarms/index-listing.js';
import { openExistingBucket } from './open-bucket.js';
import type { ObjectStore } from '../store/types.js';
import { resolveOptions } from '../core/config.js';

export interface AlarmRow {
  tenant: string;
  due: string;
  dueMs: number;
  className: string;
  name: string;
  generation: number | null;
  kind: 'tagged' | 'legacy';
  key: string;
}

/** The tenant's entries due before `dueBeforeMs` (all when undefined), in due order across layouts. */
export async function* listAlarms(store: ObjectStore, tenant: string, dueBeforeMs?: number): AsyncGenerator<AlarmRow> {
  for await (const { key, entry: e } of entriesInDueOrder(store, tenant, dueBeforeMs)) {
    yield {
      tenant,
      due: new Date(e.dueMs).toISOString(),
      dueMs: e.dueMs,
      className: e.address.className,
      name: e.address.name,
      generation: e.tag?.generation ?? null,
      kind: e.tag ? 'tagged' : 'legacy',
      key,
    };
  }
}

export async function alarmsLsCommand(o: {
  bucket: string;
  tenant?: string;
  dueBefore?: string;
  limit?: number;
  json?: boolean;
}): Promise<void> {
  const dueBeforeMs = o.dueBefore === undefined ? undefined : Date.parse(o.dueBefore);
  if (dueBeforeMs !== undefined && Number.isNaN(dueBeforeMs))
    throw new BadRequest(`--due-before must be an ISO time, got ${JSON.stringify(o.dueBefore)}`);
  const limit = o.limit ?? 1000;
  if (!Number.isInteger(limit) || limit < 1) throw new BadRequest('--limit must be a positive integer');
  const store = openExistingBucket(o.bucket, { config: resolveOptions(), clock: new SystemClock() });
  try {
    const tenants = o.tenant ? [validateTenant(o.tenant)] : await indexTenants(store);
    let shown = 0;
    if (!o.json) console.log(['due', 'tenant', 'class', 'name', 'generation', 'kind'].join('\t'));
    for (const tenant of tenants) {
      for await (const row of listAlarms(store, tenant, dueBeforeMs)) {
        if (shown++ >= limit) return void console.error(`(stopped at --limit ${limit})`);
        console.log(
          o.json
            ? JSON.stringify(row)
            : [row.due, row.tenant, row.className, JSON.stringify(row.name), row.generation ?? '-', row.kind].join('\t'),
        );
      }
    }
  } finally {
    await store.close();
  }
}
