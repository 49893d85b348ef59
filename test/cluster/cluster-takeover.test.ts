/**
 * Real node processes on loopback sharing one folder bucket (docs/architecture.md), each test its
 * own bucket, timings shortened with `--set` (support/cluster/cluster.ts FAST: lease 2 s, grace 0.5 s):
 *
 *   kill -9    another node takes over after lease + grace, with every acknowledged durable call;
 *              the dead node's record is `fenced`; restarted, it rejoins under a new epoch
 *   kill -9 under plain load   a new actor that only ever got overlapping plain calls survives
 *              the death of its holder (losing at most its last group commit)
 *   SIGTERM    a clean stop hands over at once (the next call elsewhere succeeds first time);
 *              the holds and the record are `released`
 *
 * And at the end of every test, the bucket (chains.ts): every chain contiguous from a snapshot,
 * every link decodes, generations never decrease, no link seen earlier was written again, and
 * every chain restores to a database that passes integrity_check.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { HoldRecord, NodeRecord } from '../../src/leases/records.js';
import { call, mustCall } from '../../support/cluster/calls.js';
import { FAST, withCluster } from '../../support/cluster/cluster.js';
import { waitFor } from '../helpers/wait.js';
import { checkBucket, describeChain, LinkLedger } from './chains.js';
import { checkNoLeftovers } from './leftovers.js';
import { holdOf, nodeRecord } from './records.js';
import { describeCall, killUnderDurableLoad, TAKEOVER_BOUND_MS, valueAfterTakeover } from './takeover.js';

checkNoLeftovers();

const TEST_OPTIONS = { timeout: 90_000 };

describe('cluster of real node processes (folder bucket)', () => {
  it('kill -9 of the holder: another node takes over after lease + grace with every acknowledged durable call', TEST_OPTIONS, (t) =>
    withCluster(t, 'kill9', async (c) => {
      const ledger = new LinkLedger();
      const [a, b, d] = await c.startAll(['a', 'b', 'c']);
      const X = 'kill/Probe/x';
      assert.equal(await mustCall(a!.url, X, 'slowIncrement', [], { durable: true }), 1);
      let recordBefore: NodeRecord | undefined;
      let holdBefore: HoldRecord | undefined;
      // One loop of durable calls through each node (b's and c's forwarded to a), until the kill.
      const { acked, lastAck, killedAt } = await killUnderDurableLoad(a!, [a!, b!, d!], X, 30, 20_000, async () => {
        await ledger.observe(c.store());
        holdBefore = (await holdOf(c.store(), X))!;
        assert.equal(holdBefore.nodeId, 'a');
        recordBefore = (await nodeRecord(c.store(), 'a'))!;
      });
      const value = await valueAfterTakeover(b!, X, TAKEOVER_BOUND_MS, 4_000);
      const tookAt = Date.now();
      t.diagnostic(
        `takeover: first successful call ${tookAt - killedAt} ms after the kill; ${acked.length} durable calls acknowledged, last ${lastAck}; value ${value}`,
      );
      assert.ok(
        tookAt >= recordBefore!.expiresAtMs + FAST.graceMs!,
        `the actor was taken before a's lease (${recordBefore!.expiresAtMs}) + grace ran out (${tookAt})`,
      );
      assert.ok(value >= lastAck, `acknowledged durable calls were lost: value ${value}, last acknowledged ${lastAck}`);
      assert.ok(
        value <= lastAck + 3,
        `value ${value} exceeds the last acknowledgement ${lastAck} by more than the 3 calls in flight at the kill`,
      );

      // It goes on from there, through both survivors.
      for (let k = 1; k <= 4; k++) assert.equal(await mustCall((k % 2 ? d : b)!.url, X, 'slowIncrement', [], { durable: true }), value + k);

      const hold = (await holdOf(c.store(), X))!;
      assert.ok(['b', 'c'].includes(hold.nodeId), `the hold went to a survivor, not ${hold.nodeId}`);
      assert.ok(hold.generation > holdBefore!.generation, `generation ${hold.generation} after ${holdBefore!.generation}`);
      assert.equal((await nodeRecord(c.store(), 'a'))?.state, 'fenced', "a's record after the takeover");
      const status = await c.status();
      const byId = new Map(status.map((s) => [s.nodeId, s]));
      assert.equal(byId.get('a')?.status, 'fenced', 'keepwork status shows a fenced');
      assert.equal(byId.get('a')?.holds, 0);
      assert.equal(byId.get(hold.nodeId)?.holds, 1);

      const chains = await checkBucket(c.store(), ledger, join(c.root, 'restore'));
      const links = chains.get(X)!.links;
      const taken = links.filter((l) => l.header.generation > holdBefore!.generation);
      assert.ok(taken.length >= 4, `links written after the takeover:\n${describeChain(links)}`);
      for (const l of taken) assert.equal(l.header.nodeId, hold.nodeId, `link ${l.seq} after the takeover\n${describeChain(links)}`);

      // The killed node, restarted on its data dir, comes back under a new epoch and reaches the
      // actor where it now lives (its own stale copy is not used).
      const again = await c.start('a');
      assert.ok(again.epoch > a!.epoch, `epoch ${again.epoch} after ${a!.epoch}`);
      assert.equal(await mustCall(again.url, X, 'slowIncrement', [], { durable: true }), value + 5);
      assert.equal((await holdOf(c.store(), X))?.nodeId, hold.nodeId, 'the restarted node forwarded; the hold stayed');
      assert.equal((await nodeRecord(c.store(), 'a'))?.state, 'live');
      await checkBucket(c.store(), ledger, join(c.root, 'restore'));
    }),
  );

  it('kill -9 of the holder of a new actor under overlapping plain calls: another node takes it over', TEST_OPTIONS, (t) =>
    withCluster(t, 'plainload', async (c) => {
      const ledger = new LinkLedger();
      const [a, b] = await c.startAll(['a', 'b']);
      const F = 'plain/Probe/fresh';
      // A new actor gets only plain calls, three at a time, each with an await inside its event:
      // whenever the group commit's timer fires, an event of this actor is running.
      const acked: number[] = [];
      let stop = false;
      const loop = async () => {
        while (!stop) {
          const r = await call(a!.url, F, 'slowIncrement', [30], { timeoutMs: 5_000 });
          if (r.ok) acked.push(r.result as number);
          else if (!stop) throw new Error(`a plain call before the kill failed: ${describeCall(r)}`);
        }
      };
      const loops = [loop(), loop(), loop()];
      await waitFor('30 acknowledged plain calls', 20_000, () => (acked.length >= 30 ? true : undefined), 10);
      const before = await ledger.observe(c.store());
      stop = true;
      a!.kill('SIGKILL');
      await Promise.all(loops);
      await a!.exited;
      const chainBefore = describeChain(before.get(F)!.links);
      t.diagnostic(`${acked.length} plain calls acknowledged; the chain shortly before the kill:`);
      for (const line of chainBefore.split('\n')) t.diagnostic(line);

      // Plain calls may lose their last replicationDelayMs to a crash; the actor itself must survive.
      const r = await waitFor(
        'b to answer for the actor after the takeover',
        TAKEOVER_BOUND_MS,
        async () => {
          const res = await call(b!.url, F, 'value', [], { timeoutMs: 4_000 });
          return res.ok || res.status !== 503 ? res : undefined; // 503: a's lease + grace not over yet
        },
        100,
      );
      assert.ok(r.ok, `b cannot serve the actor after the takeover: ${describeCall(r)}\nthe chain before the kill:\n${chainBefore}`);
      const value = r.result as number;
      assert.ok(
        value >= 1 && value <= Math.max(...acked) + 3,
        `value ${value} after the takeover; last acknowledged ${Math.max(...acked)}`,
      );
      assert.equal(await mustCall(b!.url, F, 'slowIncrement', [], { durable: true }), value + 1);
      await checkBucket(c.store(), ledger, join(c.root, 'restore'));
    }),
  );

  it('SIGTERM hands the actors over at once: the next call through another node succeeds first time', TEST_OPTIONS, (t) =>
    withCluster(t, 'sigterm', async (c) => {
      const ledger = new LinkLedger();
      // A long lease, so that a handover that waited for it to run out could not pass.
      const leasePeriodMs = 8_000;
      const [a, b] = await c.startAll(['a', 'b'], { set: { leasePeriodMs } });
      const X = 'term/Probe/x';
      const Y = 'term/Probe/y';
      // Both held by a; only the first calls durable: a clean stop must upload the plain ones.
      for (let k = 1; k <= 6; k++) {
        const via = (k % 2 ? a : b)!.url;
        assert.equal(await mustCall(via, X, 'slowIncrement', [], { durable: k === 1 }), k);
        assert.equal(await mustCall(via, Y, 'slowIncrement', [0], { durable: k === 1 }), k);
      }
      const holdBefore = (await holdOf(c.store(), X))!;
      assert.equal(holdBefore.nodeId, 'a');
      await ledger.observe(c.store());

      const exit = await a!.killAndWait('SIGTERM');
      assert.deepEqual(exit, { code: 0, signal: null }, 'a clean stop exits 0');
      for (const address of [X, Y]) {
        const h = await holdOf(c.store(), address);
        assert.deepEqual(
          { nodeId: h?.nodeId, state: h?.state },
          { nodeId: 'a', state: 'released' },
          `hold of ${address} after a's clean stop`,
        );
      }
      const t0 = Date.now();
      const r = await call(b!.url, X, 'value', [], { timeoutMs: leasePeriodMs / 2 });
      const ms = Date.now() - t0;
      t.diagnostic(`first call after the stop: ${ms} ms, ${describeCall(r)}`);
      assert.ok(r.ok, `the first call through b after a's clean stop must succeed without waiting for a's lease: ${describeCall(r)}`);
      assert.equal(r.result, 6, 'every call acknowledged before the clean stop is there');
      assert.ok(ms < leasePeriodMs / 2, `the handover took ${ms} ms (lease ${leasePeriodMs} ms)`);
      assert.equal(await mustCall(b!.url, Y, 'value'), 6);

      const hold = (await holdOf(c.store(), X))!;
      assert.deepEqual({ nodeId: hold.nodeId, generation: hold.generation }, { nodeId: 'b', generation: holdBefore.generation + 1 });
      const status = await c.status();
      const byId = new Map(status.map((s) => [s.nodeId, s]));
      assert.equal(byId.get('a')?.status, 'released', 'keepwork status shows a released');
      assert.equal(byId.get('a')?.holds, 0);
      assert.equal(byId.get('b')?.holds, 2);
      await checkBucket(c.store(), ledger, join(c.root, 'restore'));
    }),
  );
});
