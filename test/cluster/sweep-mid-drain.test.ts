/**
 * The alarm sweep (docs/alarm-index.md "The sweep", "The numbers") with real node processes on loopback
 * sharing one bucket: alarms of actors last run on a node that is then killed -9 fire on the
 * other nodes (alarmed-actors.ts: the actor class, the short timings, one margin of 2 s).
 *
 *   mid-drain      kill -9 of a survivor while it delivers its shard (each of its alarm handlers
 *                  sleeps 20 ms, so the shard lasts seconds): the other survivor delivers the
 *                  rest; no alarm is lost, and each actor's committed state holds its alarm's
 *                  row exactly once (a delivery cut off before its upload runs again; one whose
 *                  link was uploaded is found done). Also on S3 (KEEPWORK_TEST_S3_URL), where
 *                  the killed node's requests in flight are the server's to finish or drop
 */
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { formatAddress } from '../../src/core/address.js';
import { shardOwner } from '../../src/alarms/shard.js';
import type { Cluster } from '../../support/cluster/cluster.js';
import { waitFor } from '../helpers/wait.js';
import { TIMINGS, names, readFired, serveAlarmed } from './alarmed-actors.js';
import { entriesOf, indexDrained } from './index-entries.js';
import { assertAllFired, byNode, report } from './firings.js';
import { metric, outcomes } from './node-metrics.js';
import { DRAIN_BOUND_MS, TEST_OPTIONS, orphan, sweepCluster } from './orphans.js';
import { checkNoLeftovers } from './leftovers.js';
import { withS3Bucket } from './s3-bucket.js';

checkNoLeftovers();

/** The mid-drain kill runs on S3 too (scripts/s3-test-server.sh); skipped without it. */
const S3_URL = process.env.KEEPWORK_TEST_S3_URL;
const NO_S3 = 'NO S3 SERVER: set KEEPWORK_TEST_S3_URL (bash scripts/s3-test-server.sh up; eval "$(bash scripts/s3-test-server.sh env)")';

/**
 * a's orphans are drained by b and c; b's alarm handlers sleep, so its shard lasts long enough to
 * kill it -9 in the middle of it. Every alarm must fire, each actor's committed state must hold
 * its alarm's row once, and b must have left part of its shard to c.
 */
async function killMidDrain(t: TestContext, c: Cluster, tenant: string): Promise<void> {
  serveAlarmed(c);
  const [a, d] = await c.startAll(['a', 'c'], { set: TIMINGS });
  // b's alarm handlers each block their worker 20 ms (no CPU): two workers deliver ~100 a
  // second at most, so b's half of 300 lasts over a second after its first 20.
  const b = await c.start('b', { set: TIMINGS, env: { KW_TEST_ALARM_SLEEP_MS: '20' } });
  const actors = names(tenant, 300);
  const { at, abandoned } = await orphan(c, t, a!, actors);
  const bRan = () => metric(b, 'keepwork_alarm_deliveries_total', 'outcome="ran"');
  await waitFor('b to have run 20 alarms', at + DRAIN_BOUND_MS - Date.now(), async () => ((await bRan()) >= 20 ? true : undefined), 20);
  await b.killAndWait('SIGKILL');
  const killedAt = Date.now();
  const bShard = actors.filter((x) => shardOwner(x, ['b', 'c']) === 'b');
  const bEntries = new Set(bShard);
  const left = (await entriesOf(c.store(), tenant)).filter((e) => bEntries.has(formatAddress(e.address))).length;

  await indexDrained(c.store(), tenant, at + DRAIN_BOUND_MS - Date.now());
  const rows = await readFired(d!, actors, abandoned);
  assertAllFired(rows, actors, at);
  report(
    t,
    `b killed ${killedAt - at} ms after the due time, ${left} entries of its shard of ${bShard.length} still in the index`,
    rows,
    `fired on ${byNode(rows, [a!, b, d!])}`,
  );
  // Cut off mid-way: b had run 20 (their uploads may or may not have landed: an alarm's
  // upload follows its answer) and left part of its shard to c.
  const byB = actors.filter((_, i) => rows[i]!.some((f) => f.pid === b.pid)).length;
  assert.ok(byB < bShard.length, `b's ${byB} committed alarms are its whole shard: it was not killed mid-drain`);
  t.diagnostic(`c: deliveries ${await outcomes(d!)}`);
  const twice = actors.filter((_, i) => rows[i]!.length > 1);
  assert.deepEqual(
    twice.slice(0, 10).map((x) => `${x}: ${JSON.stringify(rows[actors.indexOf(x)])}`),
    [],
    `${twice.length} actors hold their alarm's committed row more than once`,
  );
}

describe('alarm sweep across real node processes (folder bucket)', () => {
  it(
    'kill -9 of a survivor in the middle of its drain: the other delivers the rest, no alarm is lost and no committed effect appears twice',
    TEST_OPTIONS,
    (t) => sweepCluster(t, 'sweep-middrain', (c) => killMidDrain(t, c, 'mid')),
  );
});

describe('alarm sweep across real node processes (S3 bucket)', () => {
  it(
    'kill -9 of a survivor in the middle of its drain: the other delivers the rest, no alarm is lost and no committed effect appears twice',
    { ...TEST_OPTIONS, skip: S3_URL ? false : NO_S3 },
    (t) =>
      withS3Bucket(t, S3_URL!, 'sweep-middrain', (bucket) =>
        sweepCluster(t, 'sweep-middrain-s3', (c) => killMidDrain(t, c, 'mids3'), bucket),
      ),
  );
});
