/**
 * Real node processes on loopback sharing one folder bucket (docs/architecture.md), each test its
 * own bucket, timings shortened with `--set` (support/cluster/cluster.ts FAST: lease 2 s, grace 0.5 s):
 *
 *   status     `keepwork status` ages and judges leases as the cluster's own settings do
 *   node id    a second process with a live node's id refuses to start, naming the node
 *
 * And at the end of every test, the bucket (chains.ts): every chain contiguous from a snapshot,
 * every link decodes, generations never decrease, no link seen earlier was written again, and
 * every chain restores to a database that passes integrity_check.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { mustCall } from '../../support/cluster/calls.js';
import { FAST, withCluster } from '../../support/cluster/cluster.js';
import { waitFor } from '../helpers/wait.js';
import { checkBucket, LinkLedger } from './chains.js';
import { checkNoLeftovers } from './leftovers.js';
import { nodeRecord } from './records.js';

checkNoLeftovers();

const TEST_OPTIONS = { timeout: 90_000 };

describe('cluster of real node processes (folder bucket)', () => {
  it('keepwork status judges node records by the lease period and grace the cluster runs with', TEST_OPTIONS, (t) =>
    withCluster(t, 'status', async (c) => {
      const ledger = new LinkLedger();
      const [a, b] = await c.startAll(['a', 'b']);
      assert.equal(await mustCall(a!.url, 'status/Probe/x', 'slowIncrement', [], { durable: true }), 1);
      let rows = new Map((await c.status()).map((s) => [s.nodeId, s]));
      for (const n of [a!, b!]) {
        const row = rows.get(n.nodeId)!;
        assert.equal(row.status, 'live');
        // Each node renews every leasePeriodMs / 3, so its lease cannot be older than a period.
        assert.ok(
          row.renewedMsAgo >= 0 && row.renewedMsAgo <= FAST.leasePeriodMs!,
          `status says ${n.nodeId} renewed its lease ${row.renewedMsAgo} ms ago; it renews every ${Math.round(FAST.leasePeriodMs! / 3)} ms (leasePeriodMs ${FAST.leasePeriodMs})`,
        );
      }
      const expiresAtMs = (await nodeRecord(c.store(), 'a'))!.expiresAtMs;
      await a!.killAndWait('SIGKILL');
      // Once a's lease + grace is over the other nodes would fence it: status must not call it live then.
      await waitFor('the lease + grace of the killed a to run out', 30_000, () => Date.now() > expiresAtMs + FAST.graceMs!);
      rows = new Map((await c.status()).map((s) => [s.nodeId, s]));
      assert.equal(
        rows.get('a')?.status,
        'expired',
        `a's lease ran out at ${expiresAtMs}, ${Date.now() - expiresAtMs} ms ago (grace ${FAST.graceMs} ms)`,
      );
      assert.equal(rows.get('b')?.status, 'live');
      await checkBucket(c.store(), ledger, join(c.root, 'restore'));
    }),
  );

  it('a second process with the id of a live node refuses to start, naming the node', TEST_OPTIONS, (t) =>
    withCluster(t, 'nodeid', async (c) => {
      const ledger = new LinkLedger();
      const [a] = await c.startAll(['dup']);
      const X = 'dup/Probe/x';
      assert.equal(await mustCall(a!.url, X, 'slowIncrement', [], { durable: true }), 1);
      await ledger.observe(c.store());
      // From another data dir (another machine), then from the live node's own data dir.
      for (const o of [{ logName: 'dup-other-dir', dataDir: join(c.root, 'dup-other') }, { logName: 'dup-same-dir' }]) {
        const r = await c.startExpectingExit('dup', o);
        assert.doesNotMatch(r.stderr, /serving http/, `${o.logName}: a second node dup started serving`);
        assert.notEqual(r.code, 0, `${o.logName}: must exit non-zero; stderr: ${r.stderr}`);
        const says = o.dataDir ? /node dup is already running/ : /data dir .* is in use by another keepwork node \(pid \d+/;
        assert.match(r.stderr, says, `${o.logName}: the message names the node, or the process on its data dir`);
      }
      // The live node was not disturbed: its renewals still work for a whole lease period after.
      const expiresAtMs = (await nodeRecord(c.store(), 'dup'))!.expiresAtMs;
      await waitFor('dup to renew its lease for another lease period', 30_000, async () => {
        const r = await nodeRecord(c.store(), 'dup');
        return r !== null && r.expiresAtMs >= expiresAtMs + FAST.leasePeriodMs!;
      });
      assert.equal(await mustCall(a!.url, X, 'slowIncrement', [], { durable: true }), 2);
      const record = (await nodeRecord(c.store(), 'dup'))!;
      assert.deepEqual({ state: record.state, epoch: record.epoch, addr: record.addr }, { state: 'live', epoch: a!.epoch, addr: a!.url });
      assert.equal(a!.logged('this node was fenced').length, 0);
      await checkBucket(c.store(), ledger, join(c.root, 'restore'));
    }),
  );
});
