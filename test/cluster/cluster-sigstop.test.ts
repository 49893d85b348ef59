/**
 * Real node processes on loopback sharing one folder bucket (docs/architecture.md), each test its
 * own bucket, timings shortened with `--set` (support/cluster/cluster.ts FAST: lease 2 s, grace 0.5 s):
 *
 *   SIGSTOP    a node paused past its lease + grace and resumed after a takeover commits nothing
 *              more: no call against its stale copy succeeds, its renewal finds it fenced, it
 *              rejoins under a new epoch by itself, it writes no link after the takeover, and its
 *              local database stays as it was
 *
 * And at the end of every test, the bucket (chains.ts): every chain contiguous from a snapshot,
 * every link decodes, generations never decrease, no link seen earlier was written again, and
 * every chain restores to a database that passes integrity_check.
 */
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { parseAddress } from '../../src/core/address.js';
import { actorDbPath } from '../../src/workers/actor-db.js';
import { call, mustCall } from '../../support/cluster/calls.js';
import { withCluster } from '../../support/cluster/cluster.js';
import { waitFor } from '../helpers/wait.js';
import { checkBucket, describeChain, LinkLedger } from './chains.js';
import { checkNoLeftovers } from './leftovers.js';
import { holdOf, nodeRecord } from './records.js';
import { describeCall, TAKEOVER_BOUND_MS } from './takeover.js';

checkNoLeftovers();

const TEST_OPTIONS = { timeout: 90_000 };

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
      // and takes the actor. The calls b forwarded meanwhile wait in a's socket backlog, and b
      // answered them OWNER_UNREACHABLE: reads, so that whatever a does with them once resumed
      // (it may forward them to b) changes no count below.
      const first = await waitFor(
        'b to take the actor over from the paused a',
        TAKEOVER_BOUND_MS,
        async () => {
          const r = await call(b!.url, X, 'value', [], { timeoutMs: 4_000 });
          return r.ok ? (r.result as number) : undefined;
        },
        100,
      );
      t.diagnostic(`b took over ${Date.now() - stoppedAt} ms after SIGSTOP`);
      assert.equal(first, V0, 'b continues from the bucket state');
      let expected = V0;
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
});
