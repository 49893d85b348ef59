/**
 * Changing `indexShards` on a live cluster (docs/alarm-index.md "A sharded index", docs/tuning.md
 * "Changing S"), with real node processes on loopback sharing one bucket: three nodes start with
 * one shard; while alarms are pending, each is stopped (SIGTERM: a clean handover) and started
 * again with a larger S, one at a time, and more alarms are armed between the restarts, so the
 * index holds entries of three layouts at once (unsharded, 4 and 16 shards). Every alarm must
 * fire exactly once (each actor's committed state holds its alarm's row once), the index must
 * drain, and `index check` must find nothing to report.
 */
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { checkIndex, type Finding } from '../../src/ops/index-check.js';
import type { Cluster } from '../../support/cluster/cluster.js';
import type { ClusterNode } from '../../support/cluster/node.js';
import { tempDirs } from '../helpers/temp.js';
import { TIMINGS, armAll, names, readFired, serveAlarmed } from './alarmed-actors.js';
import { assertAllFired, byNode, report } from './firings.js';
import { entriesOf, indexDrained } from './index-entries.js';
import { checkNoLeftovers } from './leftovers.js';
import { DRAIN_BOUND_MS, sweepCluster } from './orphans.js';

checkNoLeftovers();
const temp = tempDirs('kw-shard-change-');

/** Each group of alarms is armed through one node, after the restart before it. */
const GROUP = 25;
/**
 * How far ahead of the test's start the alarms are due: past the four restarts on most runs (on a
 * loaded machine some come due while nodes restart, which the test allows: each must still fire once).
 */
const DUE_IN_MS = 60_000;

async function restart(c: Cluster, node: ClusterNode, indexShards: number): Promise<ClusterNode> {
  await node.killAndWait('SIGTERM');
  return c.start(node.nodeId, { set: { ...TIMINGS, indexShards } });
}

/** The layouts the tenant's entries are in now: 'unsharded', or the shard folder's number. */
async function layouts(c: Cluster, tenant: string): Promise<Set<string>> {
  return new Set((await entriesOf(c.store(), tenant)).map((e) => (e.shard === undefined ? 'unsharded' : `shard ${e.shard}`)));
}

async function changeShardsLive(t: TestContext, c: Cluster, tenant: string): Promise<void> {
  serveAlarmed(c);
  const at = Date.now() + DUE_IN_MS;
  let [a, b, d] = await c.startAll(['a', 'b', 'c'], { set: { ...TIMINGS, indexShards: 1 } });
  const actors = names(tenant, 5 * GROUP);
  const group = (i: number) => actors.slice(i * GROUP, (i + 1) * GROUP);
  const seen = new Set<string>();
  /** Arms group `i` through `node`, and notes the layouts the index holds right after. */
  const armGroup = async (node: ClusterNode, i: number) => {
    await armAll(node, group(i), at);
    for (const l of await layouts(c, tenant)) seen.add(l);
  };
  await armGroup(a!, 0); // unsharded
  a = await restart(c, a!, 4);
  await armGroup(a, 1); // 4 shards for the actors a takes (a forwards to b and c for theirs)
  b = await restart(c, b!, 4);
  await armGroup(b, 2);
  d = await restart(c, d!, 4);
  await armGroup(d, 3);
  a = await restart(c, a, 16); // the nodes now disagree about S
  await armGroup(a, 4);
  t.diagnostic(
    `${actors.length} alarms armed and 4 restarts done ${at - Date.now()} ms before they came due; layouts seen: ${[...seen].join(', ')}`,
  );
  assert.ok(seen.has('unsharded'), 'entries were written under one shard');
  assert.ok(
    [...seen].some((l) => l !== 'unsharded' && Number(l.split(' ')[1]) >= 4),
    'entries were written under 16 shards',
  );

  await indexDrained(c.store(), tenant, at + DRAIN_BOUND_MS - Date.now());
  const rows = await readFired(a, actors);
  assertAllFired(rows, actors, at);
  report(t, `S changed live 1 → 4 → 16`, rows, `fired on ${byNode(rows, c.nodes)}`);
  const twice = actors.filter((_, i) => rows[i]!.length > 1);
  assert.deepEqual(twice, [], 'every alarm fires exactly once');

  const findings: Finding[] = [];
  const counts = await checkIndex({
    store: c.store(),
    workDir: temp(),
    nowMs: Date.now(),
    graceMs: TIMINGS.graceMs,
    tenant,
    onFinding: (f) => findings.push(f),
  });
  assert.deepEqual(findings, [], 'index check finds nothing to report');
  assert.equal(counts.entries, 0);
  assert.ok((counts.actorKinds.ok ?? 0) === 0 && counts.withAlarm === 0, 'no alarm is left committed');
}

describe('changing indexShards on a live cluster', () => {
  it(
    'nodes restarted one at a time with a larger S while alarms are pending: every alarm fires once, index check is clean',
    { timeout: 400_000 },
    (t) => sweepCluster(t, 'shard-change', (c) => changeShardsLive(t, c, 'shards')),
  );
});
