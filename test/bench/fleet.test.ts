/**
 * bench/fleet's model at tiny scale: its accounting, not its speed. Every alarm runs exactly once,
 * requests are counted by verb as the delivery model makes them, the index store lists what
 * keys.ts would write, and the S3 model refuses what is over a partition's limit.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { entryKey, parseEntryKey } from '../../src/alarms/keys.js';
import { parseAddress } from '../../src/core/address.js';
import { SeededRandom } from '../../src/core/random.js';
import { FLEET_CLASS, FLEET_TENANT, IndexStore, actorName, shardOfId } from '../../bench/support/fleet/index-store.js';
import { cpuAt } from '../../bench/support/fleet/calibration.js';
import { runFleet, steadyPartitions, T0_MS, type RunInputs } from '../../bench/support/fleet/run.js';
import { S3Model, S3_STANDARD_PRICES, type S3Inputs } from '../../bench/support/fleet/s3-model.js';

const s3 = (alarms: number, shards: number): S3Inputs => ({
  latency: { fixedMs: 30 },
  writesPerSecond: 3500,
  readsPerSecond: 5500,
  splitAfterS: 60,
  partitionBounds: steadyPartitions(alarms, shards, 4),
  pricePer1000: S3_STANDARD_PRICES,
});

const run = (nodes: number, shards: number, alarms: number): RunInputs => ({
  nodes,
  shards,
  alarms,
  dueSpreadMs: 5_000,
  pendingAheadMs: 0,
  horizonMs: 600_000,
  budgetMs: 120_000,
  seed: 7,
  s3: s3(alarms, shards),
  cpu: { cores: 2, nodesPerMachine: 1, deliveryMinMs: 1.3, deliveryMaxMs: 2, duplicateMs: 0.5, listMs: 0.6, keyUs: 5, weightNs: 100 },
  set: {},
});

describe('bench/fleet model', () => {
  for (const shards of [1, 8])
    it(`delivers every alarm exactly once and counts requests by verb (S = ${shards})`, async () => {
      const r = await runFleet(run(4, shards, 600));
      assert.equal(r.drained, true);
      assert.equal(r.delivered, 600);
      assert.equal(r.ranTwice, 0);
      // Each delivery: hold PUT, link PUT, release PUT; chain LIST; snapshot GET. Duplicates add their own.
      // A release is counted when it reaches the bucket: those in flight as the last alarm runs are not.
      assert.equal(r.requests.GET, 600 + r.duplicates + r.dropped);
      assert.ok(r.requests.PUT >= 2 * 600 + 500, `${r.requests.PUT} PUTs`);
      assert.ok(r.requests.LIST >= 600, `${r.requests.LIST} LISTs`);
      assert.ok(r.requests.DeleteObjects >= 1 && r.requests.DeleteObjects <= 600, `${r.requests.DeleteObjects} DeleteObjects`);
      assert.ok(r.batchedDeletes <= 600 + r.duplicates, 'each delivered entry is deleted once (a duplicate may delete it again)');
      assert.equal(r.dollars.total, r.dollars.PUT + r.dollars.LIST + r.dollars.GET + r.dollars.DeleteObjects);
      assert.equal(r.dollars.PUT, (r.requests.PUT / 1000) * 0.005);
      assert.equal(r.dollars.DeleteObjects, (r.requests.DeleteObjects / 1000) * 0.005, 'a DeleteObjects is a POST, priced as one');
      assert.ok(r.latenessS.p50 >= 15, 'nothing runs before it is a margin overdue');
    });

  it('sends through each node’s governor: a throttled bucket fails no delivery', async () => {
    // One partition for the whole bucket at 400 writes a second, below what 4 nodes send: 503s.
    // Each node's governor halves its windows and sends again; no delivery gives up (with the
    // store's own four attempts and no governor, 37 of these 600 failed and waited a lease period).
    const r0 = run(4, 1, 600);
    const r = await runFleet({ ...r0, s3: { ...r0.s3, writesPerSecond: 400, partitionBounds: [] } });
    assert.equal(r.drained, true);
    assert.equal(r.delivered, 600);
    assert.equal(r.ranTwice, 0);
    assert.ok(r.refused.PUT > 0, 'the bucket throttled');
    assert.equal(r.failures, 0);
  });

  it('runs the nodes of one machine on its cores, shared', async () => {
    // CPU-bound: 600 alarms of 5 ms each, every request 1 ms. Three nodes of 2 cores each have 6
    // cores; three nodes sharing one machine of 2 have 2, so the drain takes at least 1.5 s.
    const cpuBound = (nodesPerMachine: number): RunInputs => {
      const r = run(3, 1, 600);
      return {
        ...r,
        dueSpreadMs: 0,
        s3: { ...r.s3, latency: { fixedMs: 1 } },
        cpu: { ...r.cpu, nodesPerMachine, deliveryMinMs: 5, deliveryMaxMs: 5 },
      };
    };
    const own = await runFleet(cpuBound(1));
    const shared = await runFleet(cpuBound(3));
    assert.equal(shared.delivered, 600);
    assert.ok(shared.drainS >= (600 * 5) / 2 / 1000, `shared: ${shared.drainS} s`);
    assert.ok(own.drainS < shared.drainS / 2, `own machines: ${own.drainS} s, shared: ${shared.drainS} s`);
  });

  it('reads a real run’s CPU off its curve, linear between samples', () => {
    const curve: [number, number][] = [
      [10, 1],
      [20, 3],
      [30, 8],
    ];
    assert.equal(cpuAt(curve, 15), 2);
    assert.equal(cpuAt(curve, 30), 8);
    assert.equal(cpuAt(curve, 5), 1, 'before the first sample: the first');
    assert.equal(cpuAt(curve, 40), 8, 'after the last: the last');
  });

  it('lists the keys keys.ts writes, in order, skipping deleted ones, a page at a time', () => {
    const k = 2_500;
    const due = new Float64Array(k).map((_, i) => T0_MS - (i % 7) * 1000);
    for (const shards of [1, 4]) {
      const index = new IndexStore(due, (id) => shardOfId(id, shards));
      const expected = Array.from({ length: k }, (_, id) =>
        entryKey({
          address: parseAddress({ tenant: FLEET_TENANT, className: FLEET_CLASS, name: actorName(id) }),
          dueMs: due[id]!,
          tag: { generation: 1, nonce: id.toString(16).padStart(8, '0') },
          shard: shardOfId(id, shards),
        }),
      ).sort();
      for (let id = 0; id < k; id++) assert.equal(parseEntryKey(index.keyOf(id))?.address.name, actorName(id));
      for (let id = 0; id < k; id += 3) index.delete(id);
      const live = expected.filter((key) => parseInt(parseEntryKey(key)!.tag!.nonce, 16) % 3 !== 0);
      const listed: string[] = [];
      let page = index.list({ prefix: 'alarms/t/' });
      listed.push(...page.keys);
      while (page.continuation) listed.push(...(page = index.list({ prefix: 'alarms/t/', startAfter: page.continuation })).keys);
      assert.deepEqual(listed, live);
      assert.equal(index.live, live.length);
    }
  });

  it('refuses what is over a partition’s limit, per partition, and bills only what it served', () => {
    const model = new S3Model({ ...s3(0, 1), partitionBounds: ['a/', 'b/'], writesPerSecond: 2, readsPerSecond: 3 }, new SeededRandom(1));
    const admitted = [0, 1, 2].map(() => model.admit('PUT', ['a/x'], 0));
    assert.deepEqual(admitted, [true, true, false]);
    assert.equal(model.admit('PUT', ['b/x'], 0), true, 'another partition has its own limit');
    assert.equal(model.admit('PUT', ['a/x'], 1000), true, 'the next second starts afresh');
    assert.deepEqual(model.counts.requests, { GET: 0, PUT: 4, LIST: 0, DeleteObjects: 0 });
    assert.deepEqual(model.counts.refused, { GET: 0, PUT: 1, LIST: 0, DeleteObjects: 0 });
    assert.equal(model.dollars().PUT, (4 / 1000) * 0.005);
  });
});
