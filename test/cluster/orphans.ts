/**
 * Orphaned alarms for the sweep tests: `orphan` arms actors through one node for one due time
 * and kills that node -9 before they come due, so only the sweep knows them; `sweepCluster` is
 * withCluster whose failure names any node that stopped as fenced though nobody fenced it.
 */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { decodeNode, nodeKey } from '../../src/leases/records.js';
import { withCluster, type Cluster } from '../../support/cluster/cluster.js';
import type { ClusterNode } from '../../support/cluster/node.js';
import { arm, armAll } from './alarmed-actors.js';
import { entriesOf, settleEntries } from './index-entries.js';

/**
 * Arms `actors` through `owner` for one time `at`, then kills `owner` -9 at least `leadMs` before
 * they come due. A first pass arms them all an hour ahead (it takes the holds and opens every
 * actor: the slow part) and gives the pace; then a pass sets `at`, chosen from that pace with
 * room for a loaded machine. Should a pass still overrun its time (the alarms fire on `owner`,
 * not orphaned), the next pass sets a later time, and those earlier firings are `abandoned`:
 * readFired leaves them out.
 */
export async function orphan(
  c: Cluster,
  t: TestContext,
  owner: ClusterNode,
  actors: readonly string[],
  leadMs = 1_000,
): Promise<{ at: number; killedAt: number; abandoned: number[] }> {
  const t0 = Date.now();
  const far = t0 + 3_600_000;
  await arm(owner, actors[0]!, far); // loads the class
  let t1 = Date.now();
  await armAll(owner, actors.slice(1), far);
  let passMs = Date.now() - t1;
  const abandoned: number[] = [];
  const tenant = actors[0]!.split('/')[0]!;
  let at = 0;
  let left = 0;
  for (let attempt = 1; ; attempt++) {
    at = Date.now() + Math.ceil(2 * passMs) + leadMs + 500;
    t1 = Date.now();
    await armAll(owner, actors, at);
    // Each re-arm removes the entry it replaced after answering: wait for those removals, so no
    // entry an hour ahead is left behind the kill for the drain to wait on. Part of the pass: on a
    // machine that stalls, this wait too can run past the time.
    if (Date.now() < at - leadMs) left = await settleEntries(c, tenant, actors.length, at);
    passMs = Date.now() - t1;
    if (Date.now() < at - leadMs) break;
    assert.ok(attempt < 3, `arming ${actors.length} alarms overran their time three times (last pass ${passMs} ms)`);
    t.diagnostic(`arming pass ${attempt} took ${passMs} ms, past its time: again, later`);
    abandoned.push(at);
  }
  if (left > 0) t.diagnostic(`${left} extra index entries of earlier arming passes removed by hand`);
  // What is left is at `at`: one entry per armed actor, and under load perhaps a second one of the
  // same actor, written by a re-arm's first attempt whose replica was given up (its lease lapsed)
  // before the retry answered. Due at the armed time, it is a harmless extra wake-up.
  const entries = await entriesOf(c.store(), tenant);
  assert.deepEqual(
    entries.filter((e) => e.dueMs !== at),
    [],
    'no entry of an earlier pass is left',
  );
  const armed = new Set(entries.map((e) => e.address.name));
  assert.equal(armed.size, actors.length, 'every armed actor has its entry at the armed time');
  if (entries.length > actors.length) t.diagnostic(`${entries.length - actors.length} extra entries at the armed time (retried re-arms)`);
  const armedIn = Date.now() - t0;
  await owner.killAndWait('SIGKILL');
  const killedAt = Date.now();
  t.diagnostic(
    `${actors.length} alarms armed through ${owner.nodeId} in ${armedIn} ms; ${owner.nodeId} killed -9 ${at - killedAt} ms before they came due`,
  );
  assert.ok(killedAt < at, `${owner.nodeId} was killed ${killedAt - at} ms after the alarms came due`);
  return { at, killedAt, abandoned };
}

// 1,000 alarms: about 20 s arming, the lead before they come due (2.5× the arming pace), the margin
// and the drain; under a loaded run that came to just past 100 s.
export const TEST_OPTIONS = { timeout: 240_000 };
/** How long after their time the alarms of a test without a stated lateness bound may take to drain. */
export const DRAIN_BOUND_MS = 120_000;

/**
 * Nodes that logged "this node was fenced" while their record in the bucket is not `fenced`:
 * nobody fenced them (what overlapping lease renewals would do under a slow bucket).
 */
async function selfFenced(c: Cluster): Promise<string[]> {
  const out: string[] = [];
  for (const n of c.nodes) {
    if (n.logged('this node was fenced').length === 0) continue;
    const obj = await c.store().get(nodeKey(n.nodeId));
    const state = obj ? decodeNode(obj.body).state : 'missing';
    if (state !== 'fenced') out.push(`${n.nodeId} (record ${state})`);
  }
  return out;
}

/** withCluster, and a failure names any node that stopped as fenced though nobody fenced it. */
export function sweepCluster(t: TestContext, name: string, body: (c: Cluster) => Promise<void>, bucket?: string): Promise<void> {
  return withCluster(
    t,
    name,
    async (c) => {
      try {
        await body(c);
      } catch (e) {
        const spurious = await selfFenced(c).catch(() => []);
        if (spurious.length === 0) throw e;
        throw new Error(`${(e as Error).message}\n(nobody fenced them, yet these nodes stopped as fenced: ${spurious.join(', ')})`, {
          cause: e,
        });
      }
    },
    bucket,
  );
}
