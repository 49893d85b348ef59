import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseAddress } from '../../src/core/address.js';
import { ErrorCode, isKeepworkError } from '../../src/core/errors.js';
import { resolveOptions } from '../../src/core/config.js';
import {
  DUE_MAX_MS,
  afterShardedArea,
  dueBound,
  entryKey,
  formatIndexed,
  indexedOf,
  parseEntryKey,
  parseIndexed,
  shardOf,
  shardOfKey,
  shardPrefix,
  tenantPrefix,
  type IndexEntry,
} from '../../src/alarms/keys.js';
import { hash32 } from '../../src/alarms/shard.js';
import { compareKeys, validateKey } from '../../src/store/keys.js';

const address = fc
  .record({
    tenant: fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,20}$/),
    className: fc.stringMatching(/^[A-Za-z0-9_-]{1,20}$/),
    name: fc.string({ minLength: 1, maxLength: 40, unit: 'grapheme' }).filter((s) => Buffer.byteLength(s) <= 400),
  })
  .map((a) => parseAddress(a));
const tag = fc.record({ generation: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), nonce: fc.stringMatching(/^[0-9a-f]{1,32}$/) });
const shards = fc.integer({ min: 1, max: 12 }).map((k) => 2 ** k);
const sharded: fc.Arbitrary<IndexEntry> = fc
  .record({ address, dueMs: fc.integer({ min: 0, max: DUE_MAX_MS }), tag, shards })
  .map(({ address, dueMs, tag, shards }) => ({ address, dueMs, tag, shard: shardOf(address, shards)! }));
const unsharded: fc.Arbitrary<IndexEntry> = fc.record({
  address,
  dueMs: fc.integer({ min: 0, max: DUE_MAX_MS }),
  tag: fc.option(tag, { nil: null }),
});

describe('alarm index keys, sharded layout', () => {
  it('an example key: the shard after the tenant, three hex digits behind a dash', () => {
    const a = parseAddress('acme/Reminder/r1');
    const key = entryKey({ address: a, dueMs: 1_800_000_060_000, tag: { generation: 3, nonce: '9f1c' }, shard: 0xa3 });
    assert.equal(key, 'alarms/acme/-0a3/001800000060000/Reminder.t/7231/00000000000000000003-9f1c');
    assert.equal(shardOf(a, 1), undefined, 'one shard is the unsharded layout');
    assert.equal(shardOf(a, 4096), hash32(a.key) & 0xfff);
  });

  it('parse(format(x)) = x for both layouts, and every key is a valid store key', () => {
    fc.assert(
      fc.property(fc.oneof(sharded, unsharded), (e) => {
        const key = entryKey(e);
        validateKey(key);
        assert.equal(JSON.stringify(parseEntryKey(key)), JSON.stringify(e));
        assert.equal(JSON.stringify(parseIndexed(formatIndexed(indexedOf(e)))), JSON.stringify(indexedOf(e)));
      }),
      { numRuns: 500 },
    );
  });

  it('no key of one layout parses as the other, and only sharded keys are in the sharded area', () => {
    fc.assert(
      fc.property(sharded, unsharded, (s, u) => {
        assert.notEqual(parseEntryKey(entryKey(s))!.shard, undefined);
        assert.equal(parseEntryKey(entryKey(u))!.shard, undefined);
        assert.equal(shardOfKey(s.address.tenant, entryKey(s)), s.shard);
        assert.equal(shardOfKey(u.address.tenant, entryKey(u)), undefined);
        // The sharded area sorts wholly before the unsharded layout of the same tenant.
        if (s.address.tenant === u.address.tenant) assert.ok(compareKeys(entryKey(s), entryKey(u)) < 0);
        assert.ok(compareKeys(entryKey(s), afterShardedArea(s.address.tenant)) < 0);
        assert.ok(compareKeys(afterShardedArea(u.address.tenant), entryKey(u)) < 0);
      }),
      { numRuns: 500 },
    );
  });

  it('within one shard prefix, byte order equals due order, and the due bound cuts at the right place', () => {
    fc.assert(
      fc.property(sharded, sharded, (a, b) => {
        const b2 = { ...b, address: parseAddress({ ...b.address, tenant: a.address.tenant }), shard: a.shard };
        assert.ok(entryKey(a).startsWith(shardPrefix(a.address.tenant, a.shard!)));
        if (a.dueMs !== b2.dueMs) assert.equal(Math.sign(compareKeys(entryKey(a), entryKey(b2))), Math.sign(a.dueMs - b2.dueMs));
        if (b2.dueMs < DUE_MAX_MS) {
          const bound = dueBound(a.address.tenant, b2.dueMs, a.shard);
          assert.equal(compareKeys(entryKey(a), bound) < 0, a.dueMs <= b2.dueMs);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('an actor keeps the low bits of one hash as its shard, whatever the shard count', () => {
    fc.assert(
      fc.property(address, shards, (a, n) => {
        assert.equal(shardOf(a, n)! & (n / 2 - 1 || 0), n > 2 ? shardOf(a, n / 2) : 0);
      }),
    );
  });

  it('no key is both an object and the folder of another, across layouts', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(sharded, unsharded), { minLength: 2, maxLength: 8 }), (entries) => {
        const keys = entries.map(entryKey);
        for (const k of keys) for (const other of keys) assert.ok(!other.startsWith(k + '/'), `${k} is a folder of ${other}`);
      }),
    );
  });

  it('alarm_indexed names the shard of a sharded entry; legacy entries are never sharded', () => {
    assert.deepEqual(parseIndexed('1800000000000/-0a3/00000000000000000003-ab12'), {
      at: 1_800_000_000_000,
      tag: { generation: 3, nonce: 'ab12' },
      shard: 0xa3,
    });
    assert.equal(formatIndexed({ at: 5, tag: { generation: 2, nonce: 'c' }, shard: 7 }), '5/-007/00000000000000000002-c');
    assert.throws(
      () => parseIndexed('5/-007'),
      (e: unknown) => isKeepworkError(e, ErrorCode.CorruptState),
    );
    assert.equal(parseEntryKey(`${tenantPrefix('t')}-001/001800000060000/C/78`), undefined, 'a sharded legacy key');
    assert.throws(() => entryKey({ address: parseAddress('t/C/x'), dueMs: 5, tag: null, shard: 1 }));
  });

  it('indexShards is a power of two from 1 to 4096', () => {
    assert.equal(resolveOptions().indexShards, 1);
    assert.equal(resolveOptions({ indexShards: 4096 }).indexShards, 4096);
    for (const bad of [0, 3, 6, 8192])
      assert.throws(
        () => resolveOptions({ indexShards: bad }),
        (e: unknown) => isKeepworkError(e, ErrorCode.BadConfig) && /indexShards/.test(e.message),
      );
  });
});
