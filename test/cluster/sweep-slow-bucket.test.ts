/**
 * The alarm sweep (docs/alarm-index.md "The sweep", "The numbers") with real node processes on loopback
 * sharing one bucket: alarms of actors last run on a node that is then killed -9 fire on the
 * other nodes (alarmed-actors.ts: the actor class, the short timings, one margin of 2 s).
 *
 *   slow bucket    the folder store's host lock held 1.2 s (a bucket slower than the renewal
 *                  interval, shorter than the lease): no node stops as fenced, since nobody
 *                  fenced it, and alarms still fire after
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, it } from 'node:test';
import { decodeNode, nodeKey } from '../../src/leases/records.js';
import { mustCall } from '../../support/cluster/calls.js';
import { withCluster, type Cluster } from '../../support/cluster/cluster.js';
import type { ClusterNode } from '../../support/cluster/node.js';
import { elapse, waitFor } from '../helpers/wait.js';
import { TIMINGS, firedOf, serveAlarmed } from './alarmed-actors.js';
import { TEST_OPTIONS } from './orphans.js';
import { checkNoLeftovers } from './leftovers.js';

checkNoLeftovers();

/** Waits until each node renewed its lease at or after `sinceMs` (its record expires a lease period after that). */
async function renewedSince(c: Cluster, nodes: ClusterNode[], sinceMs: number): Promise<void> {
  for (const n of nodes)
    await waitFor(`${n.nodeId} to renew its lease`, 30_000, async () => {
      const obj = await c.store().get(nodeKey(n.nodeId));
      return obj !== null && decodeNode(obj.body).expiresAtMs >= sinceMs + TIMINGS.leasePeriodMs;
    });
}

describe('alarm sweep across real node processes (folder bucket)', () => {
  // A lease renewal (every leasePeriodMs / 3, with If-Match on the last etag) waits for the one
  // before it. Were two to overlap with the bucket slower than that, the second would lose with 412
  // and renew() would read it as a fence: the node would stop every actor for good with its record
  // still `live` (the unit test is in test/leases). Here the whole bucket stalls for 1.2 s (less
  // than the lease: nobody could fence anyone) by holding the folder store's host lock from this
  // process.
  it(
    'a bucket slow for 1.2 s (its host lock held) does not make live nodes believe they were fenced; alarms still fire after',
    TEST_OPTIONS,
    (t) =>
      withCluster(t, 'sweep-slowbucket', async (c) => {
        serveAlarmed(c);
        const [a, b] = await c.startAll(['a', 'b'], { set: TIMINGS });
        await renewedSince(c, [a!, b!], Date.now());
        const lock = new Database(join(new URL(c.bucket).pathname, '~lock.db'), { timeout: 5_000 });
        try {
          lock.exec('BEGIN IMMEDIATE'); // every replace (a renewal is one) now waits
          await elapse(1_200);
          lock.exec('ROLLBACK');
        } finally {
          lock.close();
        }
        // Every renewal queued behind the stall has ended once one that began after it has.
        await renewedSince(c, [a!, b!], Date.now());
        for (const n of [a!, b!]) {
          const obj = await c.store().get(nodeKey(n.nodeId));
          const record = obj ? decodeNode(obj.body) : null;
          t.diagnostic(`${n.nodeId}: record ${record?.state}; logged fenced: ${n.logged('this node was fenced').length > 0}`);
          assert.equal(record?.state, 'live', `nobody fenced ${n.nodeId}`);
          assert.deepEqual(
            n.logged('this node was fenced').map((l) => l.msg),
            [],
            `${n.nodeId} stopped as fenced though its record is live`,
          );
        }
        const x = 'slow/Alarmed/x';
        const at = Date.now() + 1_000;
        assert.equal(await mustCall(b!.url, x, 'arm', [at], { durable: true }), at);
        const rows = await waitFor('the alarm set after the stall to fire', 10_000, async () => {
          const r = await firedOf(b!, x);
          return r.length > 0 ? r : undefined;
        });
        assert.equal(rows[0]!.scheduled, at);
      }),
  );
});
