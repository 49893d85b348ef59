import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { OwnedShards, ownedShards, ownsShard } from '../../src/alarms/shard.js';

const nodes = fc.uniqueArray(fc.stringMatching(/^[a-z0-9]{1,12}$/), { minLength: 1, maxLength: 12 });
const shardCounts = fc.constantFrom(16, 64, 256, 1024, 4096);

/** The owner of every shard among `ids`. */
function owners(tenant: string, shards: number, ids: readonly string[]): string[] {
  const out: string[] = Array.from({ length: shards }, () => '');
  for (const id of ids) for (const s of ownedShards(tenant, shards, ids, id)) out[s] = id;
  return out;
}

describe('shard owners (rendezvous over the live nodes)', () => {
  it('every shard has exactly one owner among the live nodes', () => {
    fc.assert(
      fc.property(nodes, shardCounts, (ids, shards) => {
        const counted = ids.flatMap((id) => ownedShards('t', shards, ids, id));
        assert.equal(counted.length, shards);
        assert.equal(new Set(counted).size, shards);
        for (const id of ids) for (const s of ownedShards('t', shards, ids, id)) assert.ok(ownsShard('t', s, ids, id));
      }),
      { numRuns: 50 },
    );
  });

  it('a node joining or dying moves only its own shards, about 1/N of them', () => {
    fc.assert(
      fc.property(nodes, fc.stringMatching(/^[a-z0-9]{13,16}$/), (ids, joiner) => {
        const shards = 1024;
        const before = owners('t', shards, ids);
        const after = owners('t', shards, [...ids, joiner]);
        let moved = 0;
        for (let s = 0; s < shards; s++) {
          if (before[s] === after[s]) continue;
          moved++;
          assert.equal(after[s], joiner, 'a join moves shards only to the new node');
        }
        const share = shards / (ids.length + 1);
        assert.ok(moved > share / 2 && moved < share * 2, `${moved} of ${shards} shards moved to 1 of ${ids.length + 1} nodes`);
        // And its death gives back exactly what it took.
        assert.deepEqual(owners('t', shards, ids), before);
      }),
      { numRuns: 30 },
    );
  });

  it('OwnedShards answers as ownedShards, and computes again only when the live set changes', () => {
    const memo = new OwnedShards();
    const ids = ['n1', 'n2', 'n3'];
    const first = memo.of('t', 64, ids, 'n2');
    assert.deepEqual(first, ownedShards('t', 64, ids, 'n2'));
    assert.equal(memo.of('t', 64, [...ids], 'n2'), first, 'the same live set: the remembered answer');
    const joined = memo.of('t', 64, [...ids, 'n4'], 'n2');
    assert.notEqual(joined, first);
    assert.deepEqual(joined, ownedShards('t', 64, [...ids, 'n4'], 'n2'));
    assert.deepEqual(memo.of('t', 128, [...ids, 'n4'], 'n2'), ownedShards('t', 128, [...ids, 'n4'], 'n2'), 'another shard count');
    assert.deepEqual(memo.of('u', 128, [...ids, 'n4'], 'n2'), ownedShards('u', 128, [...ids, 'n4'], 'n2'), 'another tenant');
  });
});
