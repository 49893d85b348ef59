import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { OwnedShards, ownedShards, shardOwners, shardWeight } from '../../src/alarms/shard-owners.js';

const nodes = fc.uniqueArray(fc.stringMatching(/^[a-z0-9]{1,12}$/), { minLength: 1, maxLength: 12 });
const shardCounts = fc.constantFrom(16, 64, 256, 1024, 4096);

describe('shard owners (rendezvous with bounded loads over the live nodes)', () => {
  it('every shard has exactly one owner among the live nodes, and none owns more than ⌈S/N⌉', () => {
    fc.assert(
      fc.property(nodes, shardCounts, (ids, shards) => {
        const counted = ids.flatMap((id) => ownedShards('t', shards, ids, id));
        assert.equal(counted.length, shards);
        assert.equal(new Set(counted).size, shards);
        const cap = Math.ceil(shards / ids.length);
        for (const id of ids) assert.ok(ownedShards('t', shards, ids, id).length <= cap, `${id} owns more than ${cap}`);
      }),
      { numRuns: 50 },
    );
  });

  it('deals a fleet evenly: 100 nodes, 1,024 shards, none over 11', () => {
    const ids = Array.from({ length: 100 }, (_, i) => `node-${i}`);
    const counts = ids.map((id) => ownedShards('t', 1024, ids, id).length);
    assert.equal(Math.max(...counts), 11); // plain rendezvous deals the busiest 19
  });

  it('every node computes the same owners, whatever the order of the live list', () => {
    fc.assert(
      fc.property(nodes, fc.integer({ min: 0, max: 1000 }), (ids, seed) => {
        const shuffled = [...ids].sort((a, b) => shardWeight(a, 's', seed) - shardWeight(b, 's', seed));
        assert.deepEqual(shardOwners('t', 256, shuffled), shardOwners('t', 256, ids));
      }),
      { numRuns: 50 },
    );
  });

  it('a shard no node is full for goes to its highest weight (the rendezvous hash)', () => {
    const ids = ['n1', 'n2', 'n3', 'n4'];
    const best = [...ids].sort((a, b) => shardWeight(b, 't', 0) - shardWeight(a, 't', 0))[0];
    assert.equal(shardOwners('t', 64, ids)[0], best);
  });

  it('a node joining or dying moves about its share, never more than three times it', () => {
    fc.assert(
      fc.property(nodes, fc.stringMatching(/^[a-z0-9]{13,16}$/), (ids, joiner) => {
        const shards = 1024;
        const before = shardOwners('t', shards, ids);
        const after = shardOwners('t', shards, [...ids, joiner]);
        const moved = before.filter((id, s) => after[s] !== id).length;
        const share = shards / (ids.length + 1);
        assert.ok(after.filter((id) => id === joiner).length > share / 2, 'the joiner takes about its share');
        assert.ok(moved < share * 3, `${moved} of ${shards} shards moved when 1 of ${ids.length + 1} nodes joined`);
        // And its death moves back as many.
        assert.deepEqual(shardOwners('t', shards, ids), before);
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
    assert.deepEqual(memo.of('t', 64, ids, 'n3'), ownedShards('t', 64, ids, 'n3'), 'another node asking');
    const joined = memo.of('t', 64, [...ids, 'n4'], 'n2');
    assert.notEqual(joined, first);
    assert.deepEqual(joined, ownedShards('t', 64, [...ids, 'n4'], 'n2'));
    assert.deepEqual(memo.of('t', 128, [...ids, 'n4'], 'n2'), ownedShards('t', 128, [...ids, 'n4'], 'n2'), 'another shard count');
    assert.deepEqual(memo.of('u', 128, [...ids, 'n4'], 'n2'), ownedShards('u', 128, [...ids, 'n4'], 'n2'), 'another tenant');
  });

  it('OwnedShards.owns: a folder past S goes with the shard of its low bits', () => {
    const memo = new OwnedShards();
    const ids = ['n1', 'n2', 'n3'];
    const mine = ownedShards('t', 16, ids, 'n1');
    for (let folder = 0; folder < 64; folder++) assert.equal(memo.owns('t', 16, ids, 'n1', folder), mine.includes(folder & 15));
  });
});
