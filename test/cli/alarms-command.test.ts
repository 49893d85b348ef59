import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { entryKey } from '../../src/alarms/keys.js';
import { indexTenants } from '../../src/alarms/index-listing.js';
import { listAlarms } from '../../src/cli/alarms-command.js';
import { MemoryStore } from '../../src/store/memory.js';

describe('keepwork alarms ls', () => {
  it('decodes the index per tenant in due order, stops at --due-before, and finds tenants from the index', async () => {
    const store = new MemoryStore();
    const put = (addr: string, dueMs: number, generation: number | null) =>
      store.put(
        entryKey({ address: parseAddress(addr), dueMs, tag: generation === null ? null : { generation, nonce: 'ab' } }),
        new Uint8Array(0),
      );
    await put('acme/Rem/b', 3000, 2);
    await put('acme/Rem/a', 1000, null);
    await put('acme/Rem/a', 2000, 1);
    await put('zeta/Rem/x', 500, 4);
    await store.put('alarms/acme/garbage', new Uint8Array(0));
    assert.deepEqual(await indexTenants(store), ['acme', 'zeta']);
    const rows = [];
    for await (const r of listAlarms(store, 'acme')) rows.push([r.dueMs, r.name, r.generation, r.kind]);
    assert.deepEqual(rows, [
      [1000, 'a', null, 'legacy'],
      [2000, 'a', 1, 'tagged'],
      [3000, 'b', 2, 'tagged'],
    ]);
    const early = [];
    for await (const r of listAlarms(store, 'acme', 2000)) early.push(r.dueMs);
    assert.deepEqual(early, [1000, 2000]);
  });

  it('reads sharded entries too, in due order across layouts, and --due-before holds for them', async () => {
    const store = new MemoryStore();
    const put = (addr: string, dueMs: number, shard?: number) =>
      store.put(entryKey({ address: parseAddress(addr), dueMs, tag: { generation: 1, nonce: 'ab' }, shard }), new Uint8Array(0));
    await put('acme/Rem/a', 1000);
    await put('acme/Rem/b', 500, 3);
    await put('acme/Rem/c', 4000, 3);
    await put('acme/Rem/d', 3000);
    await put('acme/Rem/e', 2000, 0x0a5);
    await store.put('alarms/acme/-001/garbage', new Uint8Array(0));
    const all = [];
    for await (const r of listAlarms(store, 'acme')) all.push([r.dueMs, r.name]);
    assert.deepEqual(all, [
      [500, 'b'],
      [1000, 'a'],
      [2000, 'e'],
      [3000, 'd'],
      [4000, 'c'],
    ]);
    const early = [];
    for await (const r of listAlarms(store, 'acme', 2000)) early.push(r.name);
    assert.deepEqual(early, ['b', 'a', 'e']);
  });
});
