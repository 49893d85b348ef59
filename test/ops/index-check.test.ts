/**
 * `keepwork index check`, `actor inspect` and the index part of `status` against a real folder
 * bucket written by real nodes: what each reports for a healthy index and for each kind of
 * leftover, that the read-only ones never write (RecordingStore), that `--repair` only creates a
 * fresh entry for a missing alarm (never deletes), and that a node that never ran the actor then
 * delivers the repaired alarm through the sweep.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { silentLogger } from '../../src/core/logger.js';
import { SystemRandom } from '../../src/core/random.js';
import { NonceSource, entryKey, parseEntryKey, shardOf } from '../../src/alarms/keys.js';
import { keyOf } from '../../src/alarms/owner.js';
import { readCommitted } from '../../src/ops/committed-state.js';
import { listChain } from '../../src/replication/chain.js';
import { checkIndex, type Finding } from '../../src/ops/index-check.js';
import { inspectActor } from '../../src/cli/inspect-command.js';
import { tenantIndexStats } from '../../src/ops/index-stats.js';
import { clusterStatus } from '../../src/cli/status-command.js';
import { startNode } from '../../src/index.js';
import { listAll } from '../../src/store/keys.js';
import { openStore } from '../../src/store/open.js';
import type { ObjectStore } from '../../src/store/types.js';
import { RecordingStore } from '../helpers/recording-store.js';
import { tempDirs } from '../helpers/temp.js';
import { waitFor } from '../helpers/wait.js';

const REMINDER = new URL('../../examples/reminder.ts', import.meta.url).href;
const CLI = ['--import', 'tsx', 'src/cli/cli.ts'];
const HOUR = 3_600_000;
const temp = tempDirs('kw-index-check-');

/** A bucket where demo/Reminder/r1 and r2 have alarms an hour away and c1 has none. */
async function seededBucket(): Promise<{ bucket: string; alarms: Map<string, number> }> {
  const root = temp();
  const bucket = join(root, 'bucket');
  const node = await startNode({
    bucket,
    dataDir: join(root, 'n1'),
    nodeId: 'n1',
    classes: { Reminder: REMINDER },
    workerThreads: 1,
    logger: silentLogger(),
  });
  const alarms = new Map<string, number>();
  try {
    for (const name of ['r1', 'r2']) alarms.set(name, await node.actor(`demo/Reminder/${name}`).callDurable<number>('remind', HOUR, name));
    await node.actor('demo/Reminder/c1').callDurable('history');
  } finally {
    await node.stop();
  }
  return { bucket, alarms };
}

async function check(store: ObjectStore, repair = false): Promise<{ findings: Finding[]; counts: Awaited<ReturnType<typeof checkIndex>> }> {
  const findings: Finding[] = [];
  const counts = await checkIndex({
    store,
    workDir: temp(),
    nowMs: Date.now(),
    graceMs: 5_000,
    repair: repair ? new NonceSource(new SystemRandom()) : undefined,
    onFinding: (f) => findings.push(f),
  });
  return { findings, counts };
}

const writes = (s: RecordingStore) => s.log.filter((r) => r.op === 'put' || r.op === 'delete');

describe('index check, actor inspect, status', () => {
  it('a healthy index: every committed alarm is ok, every entry named; nothing is written', async () => {
    const { bucket } = await seededBucket();
    const store = new RecordingStore(openStore(bucket));
    const { findings, counts } = await check(store);
    assert.deepEqual(findings, []);
    assert.deepEqual(
      { actors: counts.actors, withAlarm: counts.withAlarm, entries: counts.entries },
      { actors: 3, withAlarm: 2, entries: 2 },
    );
    assert.deepEqual(counts.actorKinds, { ok: 2 });
    assert.deepEqual(counts.entryKinds, { named: 2 });
    const stats = await tenantIndexStats(store, 'demo', Date.now(), 15_000);
    assert.deepEqual(
      { entries: stats.entries, due: stats.due, overdue: stats.overdue, lagMs: stats.lagMs },
      { entries: 2, due: 0, overdue: 0, lagMs: 0 },
    );
    const nodes = await clusterStatus(store, Date.now(), 5_000, 10_000);
    assert.deepEqual(
      nodes.map((n) => [n.nodeId, n.status, n.holds]),
      [['n1', 'released', 0]],
    );
    assert.deepEqual(writes(store), []);
    await store.close();
  });

  it('reports a missing named entry and each kind of leftover, reading only', async () => {
    const { bucket, alarms } = await seededBucket();
    const raw = openStore(bucket);
    const r1 = parseAddress('demo/Reminder/r1');
    const r2 = parseAddress('demo/Reminder/r2');
    const head1 = await readCommitted(raw, r1, temp());
    await raw.delete(keyOf(r1, head1.indexed!)); // the failure the index's rules prevent, made by hand
    const stale = entryKey({ address: r2, dueMs: alarms.get('r2')! - 60_000, tag: { generation: 1, nonce: 'aa' } });
    const newer = entryKey({ address: r2, dueMs: alarms.get('r2')! + 60_000, tag: { generation: 99, nonce: 'bb' } });
    const noState = entryKey({
      address: parseAddress('demo/Reminder/ghost'),
      dueMs: 1_700_000_000_000,
      tag: { generation: 1, nonce: 'cc' },
    });
    for (const k of [stale, newer, noState, 'alarms/demo/not-an-entry']) await raw.put(k, new Uint8Array(0));
    const store = new RecordingStore(raw);

    const { findings, counts } = await check(store);
    assert.deepEqual(writes(store), []);
    const byKind = (kind: string) => findings.filter((f) => f.kind === kind);
    const missing = byKind('missing');
    assert.equal(missing.length, 1);
    assert.equal(missing[0]!.type === 'actor' && missing[0]!.expectedKey, keyOf(r1, head1.indexed!));
    assert.deepEqual(
      byKind('stale').map((f) => f.type === 'entry' && f.key),
      [stale],
    );
    assert.deepEqual(
      byKind('newerGeneration').map((f) => f.type === 'entry' && f.key),
      [newer],
    );
    assert.deepEqual(
      byKind('noState').map((f) => f.type === 'entry' && f.key),
      [noState],
    );
    assert.deepEqual(
      byKind('notAnEntry').map((f) => f.type === 'entry' && f.key),
      ['alarms/demo/not-an-entry'],
    );
    assert.deepEqual(counts.actorKinds, { ok: 1, missing: 1 });

    const seen = await inspectActor(store, r2, temp(), Date.now(), 5_000);
    assert.equal(seen.verdict, 'ok');
    assert.equal(seen.committed.alarmAt, alarms.get('r2'));
    // The head's seq, not a count of calls: the group commit (replicationDelayMs) may upload the
    // actor's first commit on its own before the durable call's upload, under load.
    const chain = await listChain(raw, r2);
    assert.ok(chain.length >= 1);
    assert.equal(seen.committed.headSeq, Math.max(...chain));
    assert.deepEqual(seen.hold && [seen.hold.nodeId, seen.hold.state], ['n1', 'released']);
    assert.deepEqual(seen.entries.map((e) => e.kind).sort(), ['named', 'newerGeneration', 'stale']);
    assert.equal((await inspectActor(store, r1, temp(), Date.now(), 5_000)).verdict, 'missing');
    assert.deepEqual(writes(store), []);
    await store.close();
  });

  it('finds an actor’s entries in every layout: a missing named entry listed in a shard folder is listedUnnamed', async () => {
    const { bucket } = await seededBucket();
    const raw = openStore(bucket);
    const r1 = parseAddress('demo/Reminder/r1');
    const head1 = await readCommitted(raw, r1, temp());
    const named = head1.indexed!;
    await raw.delete(keyOf(r1, named));
    const copy = keyOf(r1, { ...named, shard: shardOf(r1, 64) }); // as a node with indexShards 64 would list it
    await raw.put(copy, new Uint8Array(0));
    const { findings, counts } = await check(raw);
    assert.deepEqual(counts.actorKinds, { ok: 1, listedUnnamed: 1 });
    assert.deepEqual(
      findings.filter((f) => f.type === 'entry').map((f) => [f.kind, f.key]),
      [['unnamedAtAlarm', copy]],
    );
    await raw.close();
  });

  it('--repair lists a fresh entry for the missing alarm, deletes nothing, and a node that never ran the actor delivers it', async () => {
    const root = temp();
    const bucket = join(root, 'bucket');
    const fast = { leasePeriodMs: 1_000, graceMs: 500, skewBoundMs: 100, alarmSweepMs: 500, workerThreads: 1, logger: silentLogger() };
    const first = await startNode({ ...fast, bucket, dataDir: join(root, 'a'), nodeId: 'a', classes: { Reminder: REMINDER } });
    const r = parseAddress('demo/Reminder/late');
    let dueMs: number;
    try {
      dueMs = await first.actor(r).callDurable<number>('remind', 1_500, 'repaired');
    } finally {
      await first.stop();
    }
    const raw = openStore(bucket);
    const head = await readCommitted(raw, r, temp());
    await raw.delete(keyOf(r, head.indexed!));
    const store = new RecordingStore(raw);
    const { findings, counts } = await check(store, true);
    const puts = store.log.filter((x) => x.op === 'put');
    assert.equal(puts.length, 1);
    assert.equal(store.log.filter((x) => x.op === 'delete').length, 0);
    const repaired = parseEntryKey(puts[0]!.key)!;
    assert.deepEqual([repaired.address, repaired.dueMs, repaired.tag?.generation], [r, dueMs, head.generation]);
    assert.notEqual(puts[0]!.key, keyOf(r, head.indexed!)); // R1: a fresh key, never the named one again
    assert.equal(counts.repaired, 1);
    assert.equal(findings[0]!.type === 'actor' && findings[0]!.repairedKey, puts[0]!.key);
    assert.equal((await check(store)).counts.actorKinds.listedUnnamed, 1);

    const second = await startNode({ ...fast, bucket, dataDir: join(root, 'b'), nodeId: 'b', classes: { Reminder: REMINDER } });
    try {
      const history = await waitFor('the repaired alarm to be delivered on b', 60_000, async () => {
        const h = await second.actor(r).call<unknown[]>('history');
        return h.length > 0 && h;
      });
      assert.equal(history.length, 1, 'the repaired alarm was delivered once, on a node that never ran the actor');
    } finally {
      await second.stop();
      await store.close();
    }
  });

  it('the CLI: exit 2 on a missing alarm, clear errors for bad input', async () => {
    const { bucket } = await seededBucket();
    const raw = openStore(bucket);
    const r1 = parseAddress('demo/Reminder/r1');
    await raw.delete(keyOf(r1, (await readCommitted(raw, r1, temp())).indexed!));
    await raw.close();
    const run = (...args: string[]) => spawnSync(process.execPath, [...CLI, ...args], { encoding: 'utf8' });
    const checked = run('index', 'check', '--bucket', bucket);
    assert.equal(checked.status, 2, checked.stderr);
    assert.match(checked.stdout, /^actor {2}missing +demo\/Reminder\/r1 /m);
    assert.match(checked.stdout, /missing +1 {2}the committed alarm names an entry that is not in the bucket/);
    const inspected = run('actor', 'inspect', 'demo/Reminder/r2', '--bucket', bucket);
    assert.equal(inspected.status, 0, inspected.stderr);
    assert.match(inspected.stdout, /^verdict +ok: /m);
    const status = run('status', '--bucket', bucket);
    assert.match(status.stdout, /^demo\t1\t0\t0\t/m); // r2's entry (r1's was deleted)
    const badAddress = run('actor', 'inspect', 'no-slashes', '--bucket', bucket);
    assert.notEqual(badAddress.status, 0);
    assert.match(badAddress.stderr, /keepwork: .*address/i);
    const badTenant = run('index', 'check', '--tenant', 'BAD!', '--bucket', temp());
    assert.notEqual(badTenant.status, 0);
    assert.match(badTenant.stderr, /tenant/);
    const nowhere = join(temp(), 'no-such-bucket');
    for (const args of [['index', 'check'], ['status'], ['actor', 'inspect', 'demo/Reminder/r1']]) {
      const r = run(...args, '--bucket', nowhere);
      assert.notEqual(r.status, 0);
      assert.match(r.stderr, /no bucket at .*no-such-bucket/);
      assert.equal(existsSync(nowhere), false, `${args.join(' ')} must not create the bucket folder`);
    }
  });
});

const S3_URL = process.env.KEEPWORK_TEST_S3_URL;

describe('index check on S3 (Ceph RGW)', { skip: !S3_URL && 'KEEPWORK_TEST_S3_URL is not set' }, () => {
  it('finds a missing entry and repairs it with one fresh conditional PUT, reading only otherwise', async () => {
    const bucket = S3_URL!.replace(/^(s3:\/\/[^/?]+)\/?/, `$1/index-check-${randomBytes(6).toString('hex')}/`);
    const root = temp();
    const node = await startNode({
      bucket,
      dataDir: join(root, 'n1'),
      nodeId: 'n1',
      classes: { Reminder: REMINDER },
      workerThreads: 1,
      logger: silentLogger(),
    });
    const r = parseAddress('demo/Reminder/s3');
    let dueMs: number;
    try {
      dueMs = await node.actor(r).callDurable<number>('remind', HOUR, 's3');
    } finally {
      await node.stop();
    }
    const raw = openStore(bucket);
    try {
      const store = new RecordingStore(raw);
      assert.deepEqual((await check(store)).counts.actorKinds, { ok: 1 });
      assert.deepEqual(writes(store), []);
      const head = await readCommitted(raw, r, temp());
      await raw.delete(keyOf(r, head.indexed!));
      assert.deepEqual((await check(store)).counts.actorKinds, { missing: 1 });
      assert.deepEqual(writes(store), []);
      await check(store, true);
      const puts = store.log.filter((x) => x.op === 'put');
      assert.equal(puts.length, 1);
      assert.equal(parseEntryKey(puts[0]!.key)?.dueMs, dueMs);
      assert.deepEqual((await check(store)).counts.actorKinds, { listedUnnamed: 1 });
    } finally {
      const keys: string[] = [];
      for await (const k of listAll(raw)) keys.push(k);
      if (keys.length) await raw.deleteMany(keys);
      await raw.close();
    }
  });
});
