/**
 * The alarm sweep tests' actors on a cluster: every node (but those named) serves `Alarmed`
 * (test/fixtures/cluster/alarmed.ts), whose alarm handler commits a row — ctx.now(),
 * info.scheduledAt, the retry count and the pid of the node process that ran it. Short timings
 * (lease 1.5 s, grace 0.5 s, skew bound 0.2 s, a sweep every second), so one margin (lease +
 * grace) is 2 s and "anyone's" (three margins) is 6 s. Alarms are set with durable calls and read
 * back through any node; a transient refusal of a loaded node is asked again.
 */
import { join } from 'node:path';
import { call } from '../../support/cluster/calls.js';
import type { Cluster } from '../../support/cluster/cluster.js';
import type { ClusterNode } from '../../support/cluster/node.js';
import { REPO } from '../../support/repo.js';
import { waitFor } from '../helpers/wait.js';

export const ALARMED_MODULE = join(REPO, 'test/fixtures/cluster/alarmed.ts');
export const CLASS = 'Alarmed';

/** The short timings of every sweep test (and no idle release, from support/cluster/cluster.ts FAST). */
export const TIMINGS = Object.freeze({ leasePeriodMs: 1_500, graceMs: 500, skewBoundMs: 200, alarmSweepMs: 1_000 });
export const MARGIN_MS = TIMINGS.leasePeriodMs + TIMINGS.graceMs;
export const SWEEP_MS = TIMINGS.alarmSweepMs;

export interface Fired {
  at: number;
  scheduled: number;
  retries: number;
  pid: number;
}

/** Every node this cluster starts serves `Alarmed` (besides the harness's Probe) unless listed in `probeOnly`. */
export function serveAlarmed(c: Cluster, probeOnly: ReadonlySet<string> = new Set()): void {
  const base = c.startArgs.bind(c);
  c.startArgs = (nodeId, o) => {
    const args = base(nodeId, o);
    if (!probeOnly.has(nodeId)) args.splice(args.indexOf('--class'), 0, '--class', `${CLASS}=${ALARMED_MODULE}`);
    return args;
  };
}

export const names = (tenant: string, n: number) =>
  Array.from({ length: n }, (_, i) => `${tenant}/${CLASS}/x${String(i).padStart(4, '0')}`);

/** Runs `op` over `items` with `inFlight` at once. */
export async function pool<T, R>(items: readonly T[], inFlight: number, op: (x: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await op(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, items.length) }, lane));
  return out;
}

/** Answers a loaded node may give for a while and then stop giving (a renewal late under load, a forward to a busy holder). */
const TRANSIENT = new Set(['LEASE_LOST', 'OWNER_UNREACHABLE', 'OVERLOADED', 'NO_ANSWER']);

/**
 * Sets each actor's alarm to `at` with durable calls through `node` (the alarm and its index
 * entry are in the bucket when a call answers). Setting an alarm again is harmless, so a transient
 * refusal is retried; any other answer fails the test.
 */
export async function armAll(node: ClusterNode, actors: readonly string[], at: number): Promise<void> {
  await pool(actors, ARM_IN_FLIGHT, (a) => arm(node, a, at));
}

export async function arm(node: ClusterNode, actor: string, at: number): Promise<void> {
  let fatal: Error | undefined;
  await waitFor(`the alarm of ${actor} to be set through ${node.nodeId}`, 30_000, async () => {
    const r = await call(node.url, actor, 'arm', [at], { durable: true, timeoutMs: 30_000 });
    if (r.ok) {
      if (r.result !== at) fatal = new Error(`arm(${at}) on ${actor} answered ${JSON.stringify(r.result)}`);
      return true;
    }
    if (TRANSIENT.has(r.error ?? '')) throw new Error(`${r.status} ${r.error}: ${r.message}`);
    fatal = new Error(`arm on ${actor} via ${node.nodeId} failed: ${r.status} ${r.error}: ${r.message}`);
    return true;
  });
  if (fatal) throw fatal;
}

export const ARM_IN_FLIGHT = 16;

/** Each actor's committed alarm rows, read through `node` (forwarded to the holder as needed). */
export function readFired(node: ClusterNode, actors: readonly string[], abandoned: readonly number[] = []): Promise<Fired[][]> {
  return pool(actors, 16, async (a) => (await firedOf(node, a)).filter((f) => !abandoned.includes(f.scheduled)));
}

/** One actor's fired rows; a transient refusal (a loaded node's late renewal, a busy holder) is asked again, up to 30 s. */
export async function firedOf(node: ClusterNode, actor: string): Promise<Fired[]> {
  let rows: Fired[] | undefined;
  let fatal: Error | undefined;
  await waitFor(`the fired rows of ${actor} through ${node.nodeId}`, 30_000, async () => {
    const r = await call(node.url, actor, 'fired', [], { timeoutMs: 30_000 });
    if (r.ok) return (rows = r.result as Fired[]);
    if (TRANSIENT.has(r.error ?? '')) throw new Error(`${r.status} ${r.error}: ${r.message}`);
    fatal = new Error(`fired on ${actor} via ${node.nodeId} failed: ${r.status} ${r.error}: ${r.message}`);
    return true;
  });
  if (fatal) throw fatal;
  return rows!;
}
