/**
 * Cluster tests with real node processes on loopback sharing one folder bucket
 * (docs/architecture.md), each test its own bucket, timings shortened with `--set` (support/cluster/cluster.ts FAST: lease 2 s,
 * grace 0.5 s):
 *
 *   routing    calls through any of 3 nodes reach the holder: one consistent counter per actor,
 *              one holder per actor in `keepwork status`
 *   kill -9    another node takes over after lease + grace, with every acknowledged durable call;
 *              the dead node's record is `fenced`; restarted, it rejoins under a new epoch
 *   kill -9 under plain load   a new actor that only ever got overlapping plain calls survives
 *              the death of its holder (losing at most its last group commit)
 *   SIGTERM    a clean stop hands over at once (the next call elsewhere succeeds first time);
 *              the holds and the record are `released`
 *   SIGSTOP    a node paused past its lease + grace and resumed after a takeover commits nothing
 *              more: no call against its stale copy succeeds, its renewal finds it fenced, it
 *              rejoins under a new epoch by itself, it writes no link after the takeover, and its
 *              local database stays as it was
 *   status     `keepwork status` ages and judges leases as the cluster's own settings do
 *   node id    a second process with a live node's id refuses to start, naming the node
 *
 * And at the end of every test, the bucket (chains.ts): every chain contiguous from a snapshot,
 * every link decodes, generations never decrease, no link seen earlier was written again, and
 * every chain restores to a database that passes integrity_check.
 */
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { parseAddress } from '../../src/core/address.js';
import { decodeHold, decodeNode, holdKey, nodeKey, type HoldRecord, type NodeRecord } from '../../src/leases/records.js';
import type { ObjectStore } from '../../src/store/types.js';
import { actorDbPath } from '../../src/workers/actor-db.js';
import { checkBucket, describeChain, LinkLedger } from './chains.js';
import { call, mustCall } from '../../support/cluster/calls.js';
import { FAST, withCluster } from '../../support/cluster/cluster.js';
import { killLeftovers } from '../../support/cluster/processes.js';
import { waitFor } from '../helpers/wait.js';
import { describeCall, killUnderDurableLoad, valueAfterTakeover } from './takeover.js';

after(() => {
  const n = killLeftovers();
  assert.equal(n, 0, `${n} node processes were still running after the tests`);
});

const TEST_OPTIONS = { timeout: 90_000 };
/** lease + grace, plus generous slack for a loaded 2-core machine. */
const TAKEOVER_BOUND_MS = FAST.leasePeriodMs! + FAST.graceMs! + 12_000;

async function holdOf(store: ObjectStore, address: string): Promise<HoldRecord | null> {
  const obj = await store.get(holdKey(parseAddress(address)));
  return obj ? decodeHold(obj.body) : null;
}

async function nodeRecord(store: ObjectStore, nodeId: string): Promise<NodeRecord | null> {
  const obj = await store.get(nodeKey(nodeId));
  return obj ? decodeNode(obj.body) : null;
}

/** The probe's counter in a (dead) node's local copy of an actor, read from a copy of its files. */
function localValue(dataDir: string, address: string, scratch: string): number | null {
  const path = actorDbPath(dataDir, parseAddress(address));
  if (!existsSync(path)) return null;
  const copy = join(scratch, 'copy.db');
  for (const suffix of ['', '-wal']) if (existsSync(path + suffix)) copyFileSync(path + suffix, copy + suffix);
  const db = new Database(copy);
  try {
    return (db.prepare('SELECT v FROM n').get() as { v: number }).v;
  } finally {
    db.close();
  }
}

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

  it('SIGSTOP past lease + grace, takeover, SIGCONT: the paused node commits nothing more', TEST_OPTIONS, (t) =>
    withCluster(t, 'sigstop', async (c) => {
      const ledger = new LinkLedger();
      // Calls b forwards to the paused a give up after 1 s, so b soon tries the hold again.
      const [a, b] = await c.startAll(['a', 'b'], { set: { forwardTimeoutMs: 1_000 } });
      const X = 'stop/Probe/x';
      const V0 = 6;
      for (let k = 1; k <= V0; k++) assert.equal(await mustCall((k % 2 ? a : b)!.url, X, 'slowIncrement', [], { durable: true }), k);
      // Every call was durable: each answered after its link was in the bucket, so a has nothing of X left to upload.
      const before = await ledger.observe(c.store());
      const headBefore = before.get(X)!.links.at(-1)!.seq;
      const holdBefore = (await holdOf(c.store(), X))!;
      assert.equal(holdBefore.nodeId, 'a');

      a!.kill('SIGSTOP');
      const stoppedAt = Date.now();
      // b's calls go to a (which cannot answer) until a's lease + grace ran out; then b fences a
      // and takes the actor. The calls b forwarded meanwhile wait in a's socket backlog.
      const first = await waitFor(
        'b to take the actor over from the paused a',
        TAKEOVER_BOUND_MS,
        async () => {
          const r = await call(b!.url, X, 'slowIncrement', [], { durable: true, timeoutMs: 4_000 });
          return r.ok ? (r.result as number) : undefined;
        },
        100,
      );
      t.diagnostic(`b took over ${Date.now() - stoppedAt} ms after SIGSTOP`);
      assert.equal(first, V0 + 1, 'b continues from the bucket state');
      let expected = V0 + 1;
      for (; expected < V0 + 3;) assert.equal(await mustCall(b!.url, X, 'slowIncrement', [], { durable: true }), ++expected);
      const holdTaken = (await holdOf(c.store(), X))!;
      assert.equal(holdTaken.nodeId, 'b');
      assert.ok(holdTaken.generation > holdBefore.generation);
      assert.equal((await nodeRecord(c.store(), 'a'))?.state, 'fenced', 'b fenced a before taking its hold');
      await ledger.observe(c.store());

      // Resume a and call it at once, before its renewal runs: none of these may succeed against
      // its stale copy (a plain call there would answer V0 + 1 and commit locally).
      a!.kill('SIGCONT');
      const stale = await Promise.all([
        ...Array.from({ length: 3 }, () => call(a!.url, X, 'slowIncrement', [], { timeoutMs: 8_000 })),
        ...Array.from({ length: 3 }, () => call(a!.url, X, 'slowIncrement', [], { durable: true, timeoutMs: 8_000 })),
        call(a!.url, X, 'value', [], { timeoutMs: 8_000 }),
      ]);
      const floor = expected;
      const increments = stale.slice(0, 6).filter((r) => r.ok);
      for (const r of increments)
        assert.ok((r.result as number) > floor, `a call to the resumed a answered from a stale state: ${describeCall(r)}`);
      const read = stale[6]!;
      if (read.ok)
        assert.ok((read.result as number) >= floor, `a read through the resumed a answered from a stale state: ${describeCall(read)}`);
      expected += increments.length;
      t.diagnostic(`calls to the resumed a: ${stale.map(describeCall).join(' | ')}`);

      // Its next renewal meets the fence; from then on it fails (or forwards) every call.
      await waitFor('a to find its lease fenced', 10_000, () => (a!.logged('this node was fenced').length > 0 ? true : undefined));
      for (let k = 0; k < 3; k++) {
        const r = await call(a!.url, X, 'slowIncrement', [], { durable: k === 0, timeoutMs: 8_000 });
        if (r.ok) assert.equal(r.result, ++expected, `a fenced node answered from a stale state: ${describeCall(r)}`);
      }
      // Then it rejoins by itself under a new epoch: its record live again, b still X's holder.
      await waitFor('a to rejoin', 10_000, () => (a!.logged('rejoined the cluster under a new epoch').length > 0 ? true : undefined));
      const record = (await nodeRecord(c.store(), 'a'))!;
      assert.equal(record.state, 'live', "a's record after its rejoin");
      assert.ok(record.epoch > a!.epoch, `a rejoined under a new epoch (${record.epoch} after ${a!.epoch})`);
      assert.equal(await mustCall(b!.url, X, 'value'), expected, 'b holds every acknowledged increment and nothing else');
      assert.equal((await holdOf(c.store(), X))!.nodeId, 'b', 'the rejoined a took nothing from b');

      // a never wrote a link of X after the takeover.
      const chains = await checkBucket(c.store(), ledger, join(c.root, 'restore'));
      const links = chains.get(X)!.links;
      for (const l of links.filter((x) => x.seq > headBefore)) {
        assert.equal(l.header.nodeId, 'b', `link ${l.seq} was written after the takeover by ${l.header.nodeId}\n${describeChain(links)}`);
        assert.ok(
          l.header.generation >= holdTaken.generation,
          `link ${l.seq} after the takeover has generation ${l.header.generation}\n${describeChain(links)}`,
        );
      }

      // A stop of the rejoined node releases its new epoch, and leaves its local copy as it was at SIGSTOP.
      const exit = await a!.killAndWait('SIGTERM');
      assert.deepEqual(exit, { code: 0, signal: null }, 'the rejoined node stops cleanly');
      assert.equal((await nodeRecord(c.store(), 'a'))?.state, 'released', "a's record after its clean stop");
      const scratch = mkdtempSync(join(c.root, 'scratch-'));
      try {
        assert.equal(localValue(a!.dataDir, X, scratch), V0, "a's local database committed nothing after SIGSTOP");
      } finally {
        rmSync(scratch, { recursive: true, force: true });
      }
      await checkBucket(c.store(), ledger, join(c.root, 'restore'));
    }),
  );

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
