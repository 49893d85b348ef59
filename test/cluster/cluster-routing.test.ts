/**
 * Real node processes on loopback sharing one folder bucket (docs/architecture.md), each test its
 * own bucket, timings shortened with `--set` (support/cluster/cluster.ts FAST: lease 2 s, grace 0.5 s):
 *
 *   routing    calls through any of 3 nodes reach the holder: one consistent counter per actor,
 *              one holder per actor in `keepwork status`
 *
 * And at the end of every test, the bucket (chains.ts): every chain contiguous from a snapshot,
 * every link decodes, generations never decrease, no link seen earlier was written again, and
 * every chain restores to a database that passes integrity_check.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { mustCall } from '../../support/cluster/calls.js';
import { withCluster } from '../../support/cluster/cluster.js';
import { checkBucket, LinkLedger } from './chains.js';
import { checkNoLeftovers } from './leftovers.js';
import { holdOf } from './records.js';

checkNoLeftovers();

const TEST_OPTIONS = { timeout: 90_000 };

describe('cluster of real node processes (folder bucket)', () => {
  it('calls through any of 3 nodes reach the holder: one consistent counter per actor, one holder each', TEST_OPTIONS, (t) =>
    withCluster(t, 'routing', async (c) => {
      const ledger = new LinkLedger();
      // Nothing here waits for a lease to run out: a long one keeps a loaded machine from
      // turning a slow renewal into LEASE_LOST answers.
      const nodes = await c.startAll(['n1', 'n2', 'n3'], { set: { leasePeriodMs: 6_000 } });
      const actors = nodes.map((_, i) => `route/Probe/k${i}`);
      // Actor i is first called through node i, so node i takes its hold.
      for (let i = 0; i < nodes.length; i++)
        assert.equal(await mustCall(nodes[i]!.url, actors[i]!, 'slowIncrement', [], { durable: true }), 1);
      await ledger.observe(c.store());

      // Then every node calls every actor at once: a read-modify-write with an await inside, so
      // two nodes each running the same actor would hand out the same value twice.
      const PER_NODE = 8;
      const results = await Promise.all(
        actors.map((a) =>
          Promise.all(
            nodes.flatMap((n) =>
              Array.from({ length: PER_NODE }, (_, k) => mustCall<number>(n.url, a, 'slowIncrement', [3], { durable: k % 2 === 0 })),
            ),
          ),
        ),
      );
      const total = 1 + nodes.length * PER_NODE;
      results.forEach((values, i) =>
        assert.deepEqual(
          [...values].sort((x, y) => x - y),
          Array.from({ length: total - 1 }, (_, k) => k + 2),
          `${actors[i]}: every call must see the one counter`,
        ),
      );
      for (const a of actors)
        for (const n of nodes) assert.equal(await mustCall(n.url, a, 'value'), total, `${a} read through ${n.nodeId}`);

      for (let i = 0; i < nodes.length; i++) {
        const hold = await holdOf(c.store(), actors[i]!);
        assert.deepEqual(
          { nodeId: hold?.nodeId, epoch: hold?.epoch, state: hold?.state },
          { nodeId: nodes[i]!.nodeId, epoch: nodes[i]!.epoch, state: 'held' },
          `hold of ${actors[i]}`,
        );
      }
      const status = await c.status();
      assert.deepEqual(
        status.map((s) => ({ nodeId: s.nodeId, status: s.status, holds: s.holds })).sort((x, y) => x.nodeId.localeCompare(y.nodeId)),
        nodes.map((n) => ({ nodeId: n.nodeId, status: 'live', holds: 1 })),
        'keepwork status: each node live and holding exactly the one actor first called through it',
      );
      await checkBucket(c.store(), ledger, join(c.root, 'restore'));
    }),
  );
});
