/**
 * The alarm sweep (docs/alarm-index.md "The sweep", "The numbers") with real node processes on loopback
 * sharing one bucket: alarms of actors last run on a node that is then killed -9 fire on the
 * other nodes (alarmed-actors.ts: the actor class, the short timings, one margin of 2 s).
 *
 *   delivery cap   deliveriesPerSweep=16, 200 orphans, fixed cadence: several sweeps resume
 *                  where the cap stopped, all fire
 *   stuck entries  sweepPageEntries=50, 300 entries of a class no node serves written straight
 *                  into the index (due long ago) ahead of 20 real orphans: the real ones fire
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { entryKey } from '../../src/alarms/keys.js';
import { SWEEP_MS, TIMINGS, names, pool, readFired, serveAlarmed } from './alarmed-actors.js';
import { entriesOf, indexDrained } from './index-entries.js';
import { assertAllFired, byNode, report } from './firings.js';
import { metric, outcomes } from './node-metrics.js';
import { DRAIN_BOUND_MS, TEST_OPTIONS, orphan, sweepCluster } from './orphans.js';
import { checkNoLeftovers } from './leftovers.js';

checkNoLeftovers();

describe('alarm sweep across real node processes (folder bucket)', () => {
  it('resuming after the delivery cap: deliveriesPerSweep=16 and 200 orphans, several sweeps, all fire', TEST_OPTIONS, (t) =>
    sweepCluster(t, 'sweep-cap', async (c) => {
      serveAlarmed(c);
      const tenant = 'cap';
      const CAP = 16;
      // The design's fixed cadence, so "several sweeps" is several sweep periods.
      const set = { ...TIMINGS, deliveriesPerSweep: CAP, sweepAdaptive: false };
      const [a, b, d] = await c.startAll(['a', 'b', 'c'], { set });
      const actors = names(tenant, 200);
      const { at, abandoned } = await orphan(c, t, a!, actors);
      const sweepsBefore = new Map<string, number>();
      for (const n of [b!, d!]) sweepsBefore.set(n.nodeId, await metric(n, 'keepwork_sweep_duration_seconds_count'));
      const minSweeps = Math.ceil(actors.length / (2 * CAP));
      const drainedAt = await indexDrained(c.store(), tenant, at + DRAIN_BOUND_MS - Date.now());
      const rows = await readFired(b!, actors, abandoned);
      assertAllFired(rows, actors, at);
      const l = report(
        t,
        `delivery cap ${CAP}`,
        rows,
        `index drained ${drainedAt - at} ms after the due time; fired on ${byNode(rows, [a!, b!, d!])}`,
      );
      // Each node offered at most CAP per sweep: the spread of firing times shows the sweeps.
      for (const n of [b!, d!]) {
        const offered = await metric(n, 'keepwork_sweep_entries_offered_total');
        const sweeps = (await metric(n, 'keepwork_sweep_duration_seconds_count')) - sweepsBefore.get(n.nodeId)!;
        t.diagnostic(`${n.nodeId}: deliveries ${await outcomes(n)}; offered ${offered} in ${sweeps} sweeps since the kill`);
        assert.ok(offered <= CAP * sweeps, `${n.nodeId} offered ${offered} entries in ${sweeps} sweeps, more than ${CAP} per sweep`);
      }
      assert.ok(
        l.max - l.min >= (minSweeps / 2) * SWEEP_MS,
        `all 200 fired within ${l.max - l.min} ms: at ${CAP} per sweep per node that takes ${minSweeps} sweeps`,
      );
    }),
  );

  it(
    'the sweep gets past stuck entries: sweepPageEntries=50, 300 entries of a class nobody serves ahead of 20 orphans, which fire',
    TEST_OPTIONS,
    (t) =>
      sweepCluster(t, 'sweep-stuck', async (c) => {
        serveAlarmed(c);
        const tenant = 'stk';
        const [a, b, d] = await c.startAll(['a', 'b', 'c'], { set: { ...TIMINGS, sweepPageEntries: 50 } });
        const longAgo = Date.now() - 3_600_000;
        const ghosts = Array.from({ length: 300 }, (_, i) =>
          entryKey({
            address: parseAddress({ tenant, className: 'Ghost', name: `g${i}` }),
            dueMs: longAgo + i,
            tag: { generation: 1, nonce: 'ab' },
          }),
        );
        await pool(ghosts, 32, (k) => c.store().put(k, new Uint8Array(0)));
        const actors = names(tenant, 20);
        const { at, abandoned } = await orphan(c, t, a!, actors);
        await indexDrained(c.store(), tenant, at + DRAIN_BOUND_MS - Date.now());
        const rows = await readFired(d!, actors, abandoned);
        assertAllFired(rows, actors, at);
        report(t, 'behind 300 stuck entries', rows, `fired on ${byNode(rows, [a!, b!, d!])}`);
        assert.equal((await entriesOf(c.store(), tenant, 'Ghost')).length, 300, 'the entries nobody can act on stay in the index');
        for (const n of [b!, d!]) {
          const lists = await metric(n, 'keepwork_store_requests_total', 'op="list"');
          t.diagnostic(
            `${n.nodeId}: ${await metric(n, 'keepwork_sweep_duration_seconds_count')} sweeps, ${await metric(n, 'keepwork_sweep_entries_read_total')} entries read, ${lists} LISTs`,
          );
        }
      }),
  );
});
