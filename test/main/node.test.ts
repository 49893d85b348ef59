import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { startNode } from '../../src/index.js';
import type { KeepworkNode, RoutingNode, StartNodeOptions } from '../../src/main/node-api.js';
import type { SweepHost } from '../../src/alarms/sweep.js';
import { actorDbPath } from '../../src/workers/actor-db.js';
import { silentLogger } from '../../src/core/logger.js';
import { listChain } from '../../src/replication/chain.js';
import { FsStore } from '../../src/store/fs/store.js';
import { listAll } from '../../src/store/keys.js';
import { parseEntryKey, type IndexEntry } from '../../src/alarms/keys.js';
import { decodeHold, decodeNode, encodeNode, holdKey, nodeKey } from '../../src/leases/records.js';
import { tempDirs } from '../helpers/temp.js';
import { waitFor } from '../helpers/wait.js';

const PROBE = new URL('../fixtures/classes/probe.ts', import.meta.url).href;
const tempDir = tempDirs('kw-node-');

function start(dataDir: string, extra: Partial<StartNodeOptions> = {}): Promise<KeepworkNode> {
  return startNode({ dataDir, bucket: 'memory:', classes: { Probe: PROBE }, workerThreads: 2, logger: silentLogger(), ...extra });
}

describe('node (real Piscina workers)', () => {
  it('serialises the events of one actor: concurrent read-modify-writes lose nothing', async () => {
    const node = await start(tempDir());
    try {
      const a = node.actor('t/Probe/counter');
      const results = await Promise.all(Array.from({ length: 40 }, () => a.call<number>('slowIncrement', 1)));
      assert.equal(await a.call('value'), 40);
      assert.deepEqual(
        [...results].sort((x, y) => x - y),
        Array.from({ length: 40 }, (_, i) => i + 1),
      );
      const others = await Promise.all(['x', 'y', 'z'].map((n) => node.actor(`t/Probe/${n}`).call('slowIncrement', 1)));
      assert.deepEqual(others, [1, 1, 1]);
    } finally {
      await node.stop();
    }
  });

  it('bounds each actor’s queue: past actorQueueMax calls are refused with OVERLOADED, the rest all run', async () => {
    const node = await start(tempDir(), { actorQueueMax: 3 });
    try {
      const a = node.actor('t/Probe/busy');
      const settled = await Promise.allSettled(Array.from({ length: 10 }, () => a.call('slowIncrement', 20)));
      const refused = settled.filter((s) => s.status === 'rejected');
      assert.ok(refused.length >= 5, `refused ${refused.length}`);
      for (const r of refused) assert.equal((r as PromiseRejectedResult).reason.code, 'OVERLOADED');
      assert.equal(await a.call('value'), settled.length - refused.length);
    } finally {
      await node.stop();
    }
  });

  it('fires a due alarm through the timer, with scheduledAt and retryCount', async () => {
    const node = await start(tempDir());
    try {
      const a = node.actor('t/Probe/alarm');
      const at = Date.now() + 300;
      await a.call('setAlarm', at);
      assert.equal(await a.getAlarm(), at);
      await waitFor('the alarm', 10_000, async () => ((await a.call('fired')) as unknown[]).length === 1);
      const [row] = (await a.call('fired')) as { at: number; scheduled: number; retries: number }[];
      assert.equal(row!.scheduled, at);
      assert.equal(row!.retries, 0);
      assert.ok(row!.at >= at);
      assert.equal(await a.getAlarm(), null);
    } finally {
      await node.stop();
    }
  });

  it('a restart loses no alarm: the timer is refilled from the data dir, and the epoch grows', async () => {
    const dataDir = tempDir();
    const first = await start(dataDir);
    const at = Date.now() + 1500;
    await first.actor('t/Probe/sleeper').call('setAlarm', at);
    await first.stop();
    const second = await start(dataDir);
    try {
      assert.equal(second.nodeId, first.nodeId);
      assert.equal(second.epoch, first.epoch + 1);
      const fired = async () => ((await second.actor('t/Probe/sleeper').call('fired')) as unknown[]).length === 1;
      // The node serves (and its timer runs) while its workers start: on a slow start the alarm may be due already.
      assert.ok(second.pendingAlarms() === 1 || (await fired()), 'the timer is refilled from the data dir');
      await waitFor('the alarm after restart', 10_000, fired);
    } finally {
      await second.stop();
    }
  });

  it('closes an idle actor’s database (its WAL is folded back), and serves it again later', async () => {
    const dataDir = tempDir();
    const node = await start(dataDir, { idleTimeoutMs: 200 });
    try {
      const a = node.actor('t/Probe/idle');
      await a.call('slowIncrement', 0);
      const wal = actorDbPath(dataDir, parseAddress('t/Probe/idle')) + '-wal';
      assert.ok(existsSync(wal), 'open while active');
      await waitFor('idle close', 10_000, async () => !existsSync(wal));
      assert.equal(await a.call('slowIncrement', 0), 2);
    } finally {
      await node.stop();
    }
  });

  it('a handler stuck in synchronous code fails alone with OUTCOME_UNKNOWN; calls queued on its worker run on the new thread', async () => {
    // The hard limit (handlerTimeoutMs + 5 s) also covers the wait of the calls sent again for the
    // new thread to load, which took over 5 s at load 18: so the limit here is generous, the spin longer.
    const dir = tempDir();
    const node = await start(join(dir, 'data'), { handlerTimeoutMs: 10_000, workerThreads: 1 });
    const outcome = (p: Promise<unknown>) =>
      p.then(
        (r) => ({ ok: r }),
        (e: { code?: string }) => ({ code: e.code ?? String(e) }),
      );
    try {
      for (const name of ['stuck', 'b', 'c']) await node.actor(`t/Probe/${name}`).call('echo', 0); // each open on the one worker
      const marker = join(dir, 'spinning');
      const t0 = Date.now();
      const stuck = node.actor('t/Probe/stuck');
      const calls = [outcome(stuck.call('spinMarked', marker, 120_000)), outcome(stuck.call('echo', 'after'))];
      await waitFor('the handler to spin', 60_000, () => existsSync(marker));
      // Sent to the stuck worker now: they wait there for a thread that never takes them.
      calls.push(outcome(node.actor('t/Probe/b').call('echo', 'b')), outcome(node.actor('t/Probe/c').call('echo', 'c')));
      const [spun, after, b, c] = await Promise.all(calls);
      assert.deepEqual(
        [after, b, c],
        [{ ok: ['after'] }, { ok: ['b'] }, { ok: ['c'] }],
        'the calls that never began ran on the new thread',
      );
      assert.equal((spun as { code: string }).code, 'OUTCOME_UNKNOWN');
      assert.ok(Date.now() - t0 < 90_000, 'the worker was stopped at the hard limit, not after the 120 s spin');
      assert.deepEqual(await node.actor('t/Probe/after').call('echo', 1), [1]);
    } finally {
      await node.stop();
    }
  });

  it('a plain call reaches the bucket on its own within the group-commit window (idle workers keep their timers)', async () => {
    const dir = tempDir();
    const bucket = join(dir, 'bucket');
    const node = await start(join(dir, 'data'), { bucket });
    try {
      await node.actor('t/Probe/gc').call('slowIncrement', 0);
      const store = new FsStore(bucket);
      const links = async () => (await listChain(store, parseAddress('t/Probe/gc'))).length;
      // A timer parked with its idle worker would never upload it; the bound leaves room for a loaded machine.
      await waitFor('the first link, without another call or a stop', 15_000, async () => (await links()) >= 1);
      await node.actor('t/Probe/gc').call('slowIncrement', 0);
      await waitFor('the second link', 15_000, async () => (await links()) >= 2);
      await store.close();
    } finally {
      await node.stop();
    }
  });

  /**
   * Node a sets an alarm on each of `names`, then stops cleanly (its holds released; in a cluster
   * the index entries are what remains); node b starts on the same bucket. The entries by name.
   */
  async function orphansOfStoppedNode(names: string[]) {
    const dir = tempDir();
    const bucket = join(dir, 'bucket');
    const a = await start(join(dir, 'a'), { bucket });
    // Far enough ahead that it is not due before the stop: a durable call's alarm reaches the timer at its commit
    // (group commit), and a first call on a loaded machine took over a second.
    const at = Date.now() + 4_000;
    for (const name of names) await a.actor(`t/Probe/${name}`).callDurable('setAlarm', at);
    await a.stop();
    const store = new FsStore(bucket);
    const entries = new Map<string, IndexEntry>();
    for await (const k of listAll(store, { prefix: 'alarms/' })) entries.set(parseEntryKey(k)!.address.name, parseEntryKey(k)!);
    const b = (await start(join(dir, 'b'), { bucket })) as RoutingNode & SweepHost;
    return { store, entries, b };
  }

  it('an overdue index entry offered to a node that never ran the actor delivers its alarm there', async () => {
    const { store, entries, b } = await orphansOfStoppedNode(['orphan']);
    assert.equal(entries.size, 1);
    const entry = entries.get('orphan')!;
    try {
      assert.equal(b.offerEntry(entry.address, entry.dueMs), true);
      await waitFor('the alarm on b', 20_000, async () => ((await b.actor('t/Probe/orphan').call('fired')) as unknown[]).length === 1);
      await waitFor('the entry removed', 10_000, async () => {
        const left: string[] = [];
        for await (const k of listAll(store, { prefix: 'alarms/' })) left.push(k);
        return left.length === 0;
      });
      // b's workers restored the chain and uploaded; its main thread took the hold.
      const text = await b.metricsText();
      const count = (labels: string) =>
        Number(new RegExp(`^keepwork_store_requests_total\\{${labels}\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
      assert.ok(count('op="list",area="state",thread="worker"') >= 1, text);
      const puts = (where: string) => count(`op="put",${where}`) + count(`op="put_conditional",${where}`);
      assert.ok(puts('area="state",thread="worker"') >= 1, text);
      assert.ok(count('op="put_conditional",area="holds",thread="main"') >= 1, text);
      assert.equal(puts('area="state",thread="main"'), 0, "uploads are the workers' requests");
      assert.match(text, /^keepwork_release_backlog 0$/m, 'nothing waits to be released: the gauge is there, at 0');
      const window = Number(/^keepwork_replication_window_seconds ([\d.]+)$/m.exec(text)?.[1]);
      assert.ok(window >= 0.02 && window <= 1, `the workers' group-commit window, within the defaults' bounds: ${window}`);
    } finally {
      await b.stop();
      await store.close();
    }
  });

  it('a second orphaned alarm of the same stopped node: its hold is taken without a read (keepwork_hold_takes_total)', async () => {
    const { store, entries, b } = await orphansOfStoppedNode(['o1', 'o2']); // both holds released by a, at generation 1
    try {
      const takes = async () => {
        const text = await b.metricsText();
        return (how: string) => Number(new RegExp(`^keepwork_hold_takes_total\\{how="${how}"\\} (\\d+)`, 'm').exec(text)?.[1]);
      };
      // Waits on the metric, not on a call: a call would take the actor too, racing the delivery.
      const ran = async () =>
        [...(await b.metricsText()).matchAll(/^keepwork_alarm_deliveries_total\{[^}]*outcome="ran"[^}]*\} (\d+)/gm)].reduce(
          (n, m) => n + Number(m[1]),
          0,
        );
      for (const [i, name] of ['o1', 'o2'].entries()) {
        const e = entries.get(name)!;
        assert.equal(b.offerEntry(e.address, e.dueMs, e.tag!.generation), true);
        await waitFor(`the alarm of ${name} on b`, 20_000, async () => (await ran()) === i + 1);
      }
      for (const name of ['o1', 'o2']) assert.equal(((await b.actor(`t/Probe/${name}`).call('fired')) as unknown[]).length, 1);
      const count = await takes();
      assert.equal(count('read'), 1, 'o1: read, found released by a, taken');
      assert.equal(count('expected'), 1, 'o2: taken with If-Match on the hold a released, without a read');
      assert.equal(count('expected_missed'), 0);
    } finally {
      await b.stop();
      await store.close();
    }
  });

  it('a fenced node rejoins by itself under a new epoch: holds dropped, timer refilled from its data, sweep restarted, counted', async () => {
    const dir = tempDir();
    const bucket = join(dir, 'bucket');
    const node = (await start(join(dir, 'a'), {
      bucket,
      nodeId: 'fence-me',
      leasePeriodMs: 3_000, // short enough to rejoin quickly, long enough that a loaded machine does not lapse it
      graceMs: 300,
      skewBoundMs: 50,
      alarmSweepMs: 50,
      sweepAdaptive: false,
    })) as RoutingNode;
    const store = new FsStore(bucket);
    const metric = async (name: string) =>
      Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)`, 'm').exec(await node.metricsText())?.[1] ?? 0);
    const actor = node.actor('t/Probe/f');
    try {
      const alarmAt = Date.now() + 60_000;
      await actor.callDurable('setAlarm', alarmAt);
      const fencedEpoch = node.epoch;
      const generation = decodeHold((await store.get(holdKey(actor.address)))!.body).generation;
      const key = nodeKey('fence-me');
      await waitFor('the fence written (between two renewals)', 10_000, async () => {
        const current = (await store.get(key))!;
        return store.put(key, encodeNode({ ...decodeNode(current.body), state: 'fenced' }), { ifMatch: current.etag }).then(
          () => true,
          () => false, // a renewal landed in between: read again
        );
      });
      await waitFor('the node to rejoin', 15_000, async () => (await metric('keepwork_node_rejoins_total')) === 1);
      assert.ok(node.epoch > fencedEpoch, `a new epoch: ${node.epoch} after ${fencedEpoch}`);
      assert.equal(await metric('keepwork_node_fenced'), 0);
      const record = decodeNode((await store.get(key))!.body);
      assert.deepEqual([record.state, record.epoch], ['live', node.epoch], 'its lease is live again, under the new epoch');
      assert.equal(node.heldActors(), 0, 'it holds nothing after the fence');
      assert.equal(node.pendingAlarms(), 1, 'the timer is refilled from its data dir');
      const sweeps = await metric('keepwork_sweep_duration_seconds_count');
      await waitFor('the sweep to run again', 10_000, async () => (await metric('keepwork_sweep_duration_seconds_count')) > sweeps + 2);
      assert.equal(await actor.getAlarm(), alarmAt, 'it serves the actor again');
      const hold = decodeHold((await store.get(holdKey(actor.address)))!.body);
      assert.deepEqual([hold.nodeId, hold.epoch], ['fence-me', node.epoch], 'under a hold of the new epoch');
      assert.ok(hold.generation > generation, 'and a new generation');
    } finally {
      await node.stop();
      await store.close();
    }
  });

  it('a call that reaches the actor’s lane after an idle release there acquires the actor again instead of failing', async () => {
    const node = (await start(tempDir(), { idleTimeoutMs: 300 })) as RoutingNode;
    try {
      const a = node.actor('t/Probe/idle');
      const long = a.call('slowIncrement', 1_000); // outlives idleTimeoutMs: the reaper queues close + release behind it
      // The reaper forgets an actor's last use as it queues the close (white box: no log or metric shows it).
      const lastUsed = (node as unknown as { idle: { lastUsed: Map<string, unknown> } }).idle.lastUsed;
      await waitFor('the long call to start', 10_000, () => lastUsed.has('t/Probe/idle'));
      await waitFor('the idle reaper to queue close + release', 10_000, () => !lastUsed.has('t/Probe/idle'));
      const value = a.call('value'); // acquired under the hold about to be released; queued behind the release
      assert.deepEqual(await Promise.all([long, value]), [1, 1]);
      const hold = decodeHold((await node.store.get(holdKey(parseAddress('t/Probe/idle'))))!.body);
      assert.equal(hold.generation, 2, 'the second call took the actor again');
    } finally {
      await node.stop();
    }
  });

  it('refuses bad addresses and unknown classes with typed errors, creating nothing', async () => {
    const dataDir = tempDir();
    const node = await start(dataDir);
    try {
      assert.throws(() => node.actor('T/Probe/x'), { code: 'BAD_REQUEST' });
      assert.throws(() => node.actor('t/Pro.be/x'), { code: 'BAD_REQUEST' });
      assert.throws(() => node.actor('t/Probe'), { code: 'BAD_REQUEST' });
      assert.throws(() => node.actor('t/Other/x'), { code: 'NOT_FOUND' });
      await assert.rejects(node.actor('t/Probe/x').call('noSuchMethod'), { code: 'NOT_FOUND' });
      assert.equal(existsSync(join(dataDir, 'actors')) && readdirSync(join(dataDir, 'actors')).length > 0, false);
    } finally {
      await node.stop();
    }
  });

  it('refuses bad options with BAD_CONFIG naming the option', async () => {
    await assert.rejects(start(tempDir(), { leasePeriodMs: -5 }), /leasePeriodMs must be at least 1/);
    await assert.rejects(start(tempDir(), { classes: { Probe: '/no/such/file.js' } }), {
      code: 'BAD_CLASS',
      message: 'actor class Probe (/no/such/file.js): no such module file',
    });
    await assert.rejects(start(tempDir(), { classes: {} }), { code: 'BAD_CONFIG' });
  });

  it('refuses calls after stop', async () => {
    const node = await start(tempDir());
    const a = node.actor('t/Probe/s');
    await node.stop();
    await assert.rejects(a.call('value'), { code: 'NODE_STOPPED' });
  });
});
