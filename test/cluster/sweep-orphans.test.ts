/**
 * The alarm sweep (docs/alarm-index.md "The sweep", "The numbers") with real node processes on loopback
 * sharing one bucket: alarms of actors last run on a node that is then killed -9 fire on the
 * other nodes (alarmed-actors.ts: the actor class, the short timings, one margin of 2 s).
 *
 *   orphans        3 nodes, 1,000 actors whose alarms were set (durable calls) on a; a killed
 *                  before they come due: every alarm fires at least once, read back through a
 *                  survivor, none before the margin; the lateness distribution (firedAt −
 *                  scheduledAt) and the deliveries that ran nothing are reported, not asserted
 *                  (speed and efficiency are bench/'s: this machine may be loaded)
 *   class          a node serving only another class never delivers the entries; the others do
 *                  (the shard falling to it waits until three margins, docs/operations.md "What can still go wrong")
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MARGIN_MS, TIMINGS, names, readFired, serveAlarmed } from './alarmed-actors.js';
import { entriesOf, indexDrained } from './index-entries.js';
import { assertAllFired, byNode, report } from './firings.js';
import { metric, outcomes } from './node-metrics.js';
import { DRAIN_BOUND_MS, TEST_OPTIONS, orphan, sweepCluster } from './orphans.js';
import { checkNoLeftovers } from './leftovers.js';

checkNoLeftovers();

describe('alarm sweep across real node processes (folder bucket)', () => {
  it(
    'kill -9 of the node that last ran 1,000 actors with alarms: every alarm fires at least once on the others, none before the margin',
    TEST_OPTIONS,
    (t) =>
      sweepCluster(t, 'sweep-orphans', async (c) => {
        serveAlarmed(c);
        const tenant = 'orph';
        const [a, b, d] = await c.startAll(['a', 'b', 'c'], { set: { ...TIMINGS, workerThreads: 2 } });
        const actors = names(tenant, 1_000);
        const { at, abandoned } = await orphan(c, t, a!, actors);
        assert.equal((await entriesOf(c.store(), tenant)).length, actors.length, 'one index entry per armed actor');

        // How fast two nodes drain 1,000 deliveries is the machine's business (bench/sweep.ts
        // measures it); here the index must drain, whatever the load.
        const drainedAt = await indexDrained(c.store(), tenant, at + DRAIN_BOUND_MS - Date.now());
        const rows = await readFired(b!, actors, abandoned);
        assertAllFired(rows, actors, at);
        const l = report(
          t,
          'orphans',
          rows,
          `index drained ${drainedAt - at} ms after the due time; fired on ${byNode(rows, [a!, b!, d!])}`,
        );
        assert.ok(
          l.min >= MARGIN_MS,
          `an alarm fired ${l.min} ms late, before the sweep may read it (margin ${MARGIN_MS} ms): only the sweep knows these alarms`,
        );
        // Deliveries that ran nothing and removed nothing ("kept") are waste, an efficiency figure
        // reported here and measured by the bench, not asserted.
        for (const n of [b!, d!]) {
          t.diagnostic(
            `${n.nodeId}: deliveries ${await outcomes(n)}; store requests ${await metric(n, 'keepwork_store_requests_total')}; ` +
              `sweeps read ${await metric(n, 'keepwork_sweep_entries_read_total')}, offered ${await metric(n, 'keepwork_sweep_entries_offered_total')}`,
          );
        }
      }),
  );

  it(
    'a node serving none of the entries’ classes never delivers them; the node that serves it does, all as its own shard',
    TEST_OPTIONS,
    (t) =>
      sweepCluster(t, 'sweep-class', async (c) => {
        serveAlarmed(c, new Set(['x']));
        const tenant = 'cls';
        const [a, b, x] = await c.startAll(['a', 'b', 'x'], { set: TIMINGS });
        const actors = names(tenant, 100);
        const { at, abandoned } = await orphan(c, t, a!, actors);
        // Sharding is among the live nodes serving the class: b owns every entry (none waits three
        // margins, checked below by b's count of entries delivered as anyone's).
        await indexDrained(c.store(), tenant, at + DRAIN_BOUND_MS - Date.now());
        const rows = await readFired(b!, actors, abandoned);
        assertAllFired(rows, actors, at);
        report(t, 'one server of the class among 2 live nodes', rows, `fired on ${byNode(rows, [a!, b!, x!])}`);
        assert.ok(
          rows.every((r) => r.every((f) => f.pid === b!.pid)),
          'every alarm ran on b',
        );
        assert.equal(await metric(x!, 'keepwork_alarm_deliveries_total'), 0, 'x (Probe only) started no delivery');
        assert.equal(await metric(x!, 'keepwork_sweep_entries_offered_total'), 0, 'x offered nothing to its timer');
        assert.ok((await metric(x!, 'keepwork_sweep_entries_read_total')) > 0, 'x did sweep (and read the entries)');
        assert.equal(
          await metric(b!, 'keepwork_sweep_anyones_offered_total'),
          0,
          'b delivered every entry as its own shard, none as anyone’s (hashed to x, which cannot run it)',
        );
      }),
  );
});
