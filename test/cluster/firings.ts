/**
 * What the sweep tests assert and report of the fired rows: every actor fired at least once, at or
 * after its time; the lateness distribution (firedAt − scheduledAt), the actors fired more than
 * once, and which node ran how many.
 */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import type { ClusterNode } from '../../support/cluster/node.js';
import type { Fired } from './alarmed-actors.js';

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Lateness of each actor's first firing (firedAt − scheduledAt); p50/p99/max. */
export function lateness(rows: Fired[][]) {
  const late = rows.map((r) => r[0]!.at - r[0]!.scheduled).sort((x, y) => x - y);
  return { late, p50: percentile(late, 50), p99: percentile(late, 99), max: late.at(-1)!, min: late[0]! };
}

/** Checks every actor fired at least once, at or after its time, and returns the rows. */
export function assertAllFired(rows: Fired[][], actors: readonly string[], at: number): void {
  const missing = actors.filter((_, i) => rows[i]!.length === 0);
  assert.deepEqual(missing.slice(0, 10), [], `${missing.length} of ${actors.length} alarms never fired`);
  for (const [i, r] of rows.entries()) {
    for (const f of r) {
      assert.equal(f.scheduled, at, `${actors[i]} fired for ${f.scheduled}, armed for ${at}`);
      assert.ok(f.at >= at, `${actors[i]} fired early: ${f.at} < ${at}`);
    }
  }
}

export function report(t: TestContext, what: string, rows: Fired[][], extra = ''): ReturnType<typeof lateness> {
  const l = lateness(rows);
  const dup = rows.filter((r) => r.length > 1).length;
  t.diagnostic(
    `${what}: ${rows.length} alarms; lateness (firedAt − scheduledAt) min ${l.min} p50 ${l.p50} p99 ${l.p99} max ${l.max} ms; fired more than once: ${dup}${extra ? `; ${extra}` : ''}`,
  );
  return l;
}

const pidsOf = (nodes: ClusterNode[]) => new Map(nodes.map((n) => [n.pid, n.nodeId]));

export function byNode(rows: Fired[][], nodes: ClusterNode[]): string {
  const pids = pidsOf(nodes);
  const counts = new Map<string, number>();
  for (const r of rows)
    for (const f of r) counts.set(pids.get(f.pid) ?? `pid ${f.pid}`, (counts.get(pids.get(f.pid) ?? `pid ${f.pid}`) ?? 0) + 1);
  return [...counts]
    .sort()
    .map(([n, k]) => `${n} ${k}`)
    .join(', ');
}
