/** Listing the index by tenant (index-listing.ts): the tenants, and each tenant's size and lag, bounded. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { entryKey } from '../../src/alarms/keys.js';
import { indexTenants, tenantIndexStats } from '../../src/alarms/index-listing.js';
import { MemoryStore } from '../../src/store/memory.js';

const MARGIN = 15_000;
const NOW = 1_000_000;

async function bucket(entries: [string, number][]): Promise<MemoryStore> {
  const store = new MemoryStore();
  for (const [address, dueMs] of entries) await store.put(entryKey({ address: parseAddress(address), dueMs, tag: null }), new Uint8Array());
  return store;
}

describe('index listing', () => {
  it('counts entries, due, overdue, the oldest and the lag of one tenant', async () => {
    const store = await bucket([
      ['a/C/x', NOW - 40_000], // overdue: the oldest, 40 s past due
      ['a/C/y', NOW - 20_000], // overdue
      ['a/C/z', NOW - 1_000], // due, within the margin
      ['a/C/w', NOW + 60_000], // not due
      ['b/C/x', NOW - 90_000], // another tenant
    ]);
    assert.deepEqual(await tenantIndexStats(store, 'a', NOW, MARGIN), {
      tenant: 'a',
      entries: 4,
      due: 3,
      overdue: 2,
      oldestDueMs: NOW - 40_000,
      lagMs: 40_000,
    });
    const none = await tenantIndexStats(store, 'c', NOW, MARGIN);
    assert.deepEqual([none.entries, none.oldestDueMs, none.lagMs], [0, null, 0]);
  });

  it('stops at maxEntries and says truncated, the oldest and the lag still exact', async () => {
    const store = await bucket(Array.from({ length: 10 }, (_, i): [string, number] => [`a/C/n${i}`, NOW - 30_000 + i * 1_000]));
    const s = await tenantIndexStats(store, 'a', NOW, MARGIN, undefined, 4);
    assert.deepEqual(s, { tenant: 'a', entries: 4, due: 4, overdue: 4, oldestDueMs: NOW - 30_000, lagMs: 30_000, truncated: true });
    assert.equal((await tenantIndexStats(store, 'a', NOW, MARGIN, undefined, 10)).truncated, undefined);
  });

  it('lists the tenants in key order, at most max', async () => {
    const store = await bucket([
      ['b/C/x', NOW],
      ['a/C/x', NOW],
      ['c/C/x', NOW],
      ['a/C/y', NOW + 1],
    ]);
    assert.deepEqual(await indexTenants(store), ['a', 'b', 'c']);
    assert.deepEqual(await indexTenants(store, 2), ['a', 'b']);
  });
});
