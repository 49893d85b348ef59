/**
 * Listing the alarm index by tenant: which tenants have entries at all (the sweep's tenant
 * discovery when a node serves every tenant, and the operator commands). One LIST of one key per
 * tenant, each skipping past the tenant found, so the cost follows the number of tenants, not of
 * entries. Keys come from keys.ts.
 */
import type { ObjectStore } from '../store/types.js';
import { INDEX_PREFIX, afterTenant, tenantOfKey } from './keys.js';

/** Tenants with index entries, in key order. */
export async function indexTenants(store: ObjectStore): Promise<string[]> {
  const tenants: string[] = [];
  let after = INDEX_PREFIX;
  for (;;) {
    const page = await store.list({ prefix: INDEX_PREFIX, startAfter: after, maxKeys: 1 });
    const key = page.keys[0];
    const tenant = key === undefined ? undefined : tenantOfKey(key);
    if (tenant === undefined) return tenants;
    tenants.push(tenant);
    after = afterTenant(tenant);
  }
}
