/**
 * The alarm sweep (docs/alarm-index.md "The sweep", "The numbers") with real node processes on loopback
 * sharing one bucket: alarms of actors last run on a node that is then killed -9 fire on the
 * other nodes (alarmed-actors.ts: the actor class, the short timings, one margin of 2 s).
 *
 *   disagreement   a survivor SIGSTOPped past its lease + grace while the orphans come due, so
 *                  the other survivor's sweeps count it dead and its own (cached) view does not:
 *                  every alarm still fires at least once within three margins. Twice: stopped
 *                  while delivering its shard (the other meets its holds and fences it), and
 *                  stopped before the alarms are readable (it holds none; nobody fences it)
 */
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { shardOwner } from '../../src/alarms/shard.js';
import type { Cluster } from '../../support/cluster/cluster.js';
import { elapse, waitFor } from '../helpers/wait.js';
import { MARGIN_MS, SWEEP_MS, TIMINGS, names, readFired, serveAlarmed } from './alarmed-actors.js';
import { indexDrained } from './index-entries.js';
import { assertAllFired, byNode, report } from './firings.js';
import { outcomes } from './node-metrics.js';
import { TEST_OPTIONS, orphan, sweepCluster } from './orphans.js';
import { checkNoLeftovers } from './leftovers.js';

checkNoLeftovers();

/**
 * a's orphans come due while b is SIGSTOPped (from `stopAfterDueMs` after their time) for longer
 * than its lease + grace: c's sweeps count b dead (its shard goes to c), while b, resumed, sweeps
 * with the view it read before (itself and c live) until its next reading of the node records.
 */
async function disagreement(t: TestContext, c: Cluster, tenant: string, stopAfterDueMs: number): Promise<void> {
  serveAlarmed(c);
  const [a, b, d] = await c.startAll(['a', 'b', 'c'], { set: TIMINGS });
  const actors = names(tenant, 200);
  const { at, abandoned } = await orphan(c, t, a!, actors);
  await waitFor(`${stopAfterDueMs} ms past the alarms' time`, 60_000, () => Date.now() >= at + stopAfterDueMs, 10);
  b!.kill('SIGSTOP');
  const stoppedAt = Date.now();
  await elapse(TIMINGS.leasePeriodMs + TIMINGS.graceMs + 1_200); // past b's lease + grace
  b!.kill('SIGCONT');
  const resumedAt = Date.now();
  const boundMs = 3 * MARGIN_MS + 3 * SWEEP_MS + 5_000;
  await indexDrained(c.store(), tenant, at + boundMs + 5_000 - Date.now());
  const rows = await readFired(d!, actors, abandoned);
  assertAllFired(rows, actors, at);
  const fenced = b!.logged('this node was fenced').length > 0;
  // Evidence of the disagreement: alarms of b's shard (among b and c) that c ran before they were
  // anyone's (three margins), i.e. while c counted b dead.
  const bShardOnC = actors.filter(
    (x, i) => shardOwner(x, ['b', 'c']) === 'b' && rows[i]!.some((f) => f.pid === d!.pid && f.at - at < 3 * MARGIN_MS),
  ).length;
  const l = report(
    t,
    `disagreement (b stopped ${stoppedAt - at} to ${resumedAt - at} ms after the due time)`,
    rows,
    `fired on ${byNode(rows, [a!, b!, d!])}; b's shard run by c before three margins: ${bShardOnC}; b fenced: ${fenced}`,
  );
  for (const n of [b!, d!]) t.diagnostic(`${n.nodeId}: deliveries ${await outcomes(n)}`);
  assert.ok(l.max <= boundMs, `an alarm fired ${l.max} ms late; bound ${boundMs} ms (three margins + 3 sweeps + 5 s)`);
}

describe('alarm sweep across real node processes (folder bucket)', () => {
  it(
    'nodes that disagree about who is alive, b stopped while delivering its shard (c fences it on meeting its holds): every alarm fires, within three margins',
    TEST_OPTIONS,
    (t) => sweepCluster(t, 'sweep-disagree', (c) => disagreement(t, c, 'dis', MARGIN_MS + 300)),
  );

  it(
    'nodes that disagree about who is alive, b stopped before the alarms are readable (holding none of them): every alarm fires, within three margins',
    TEST_OPTIONS,
    (t) => sweepCluster(t, 'sweep-disagree2', (c) => disagreement(t, c, 'dit', MARGIN_MS - 1_000)),
  );
});
