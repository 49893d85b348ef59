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

  it('reads both layouts: the oldest is the earliest of every folder, exact when truncated in any folder', async () => {
    const store = new MemoryStore();
    const put = (name: string, dueMs: number, shard?: number) =>
      store.put(entryKey({ address: parseAddress(`a/C/${name}`), dueMs, tag: { generation: 1, nonce: 'ab' }, shard }), new Uint8Array());
    await put('s1', NOW - 10_000, 1); // sharded keys list first: not the oldest
    await put('s2', NOW + 5_000, 1);
    await put('t1', NOW - 20_000, 7);
    await put('t2', NOW - 19_000, 7);
    await put('u1', NOW - 50_000); // unsharded: the oldest, listed last
    await put('u2', NOW + 60_000);
    const whole = { tenant: 'a', entries: 6, due: 4, overdue: 3, oldestDueMs: NOW - 50_000, lagMs: 50_000 };
    assert.deepEqual(await tenantIndexStats(store, 'a', NOW, MARGIN), whole);
    for (const max of [1, 2, 3, 5]) {
      const s = await tenantIndexStats(store, 'a', NOW, MARGIN, undefined, max);
      assert.deepEqual([s.entries, s.oldestDueMs, s.lagMs, s.truncated], [max, NOW - 50_000, 50_000, true], `maxEntries ${max}`);
    }
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
