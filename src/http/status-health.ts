/**
 * The status page's answer to "is my cluster healthy, and if not, where?" (pure; status-view.ts
 * gathers the inputs). One problem per thing that is wrong, each naming where:
 *
 *   self-fenced         this node found its lease fenced and has not rejoined yet
 *   node-fenced         a node's record is fenced: another node took its actors (it died or was
 *                       cut off); it stays so until that node starts again
 *   node-expired        a node's lease ran out (lease + grace) and nobody has taken over yet
 *   index-lag           a tenant's oldest overdue entry is more than one margin (lease + grace)
 *                       past due: alarms are being delivered late. From the bucket listing (at
 *                       most a few seconds old), not the sweep's gauge: that keeps the last
 *                       sweep's value until the next sweep, which the adaptive cadence may put
 *                       off for a margin or more after the entries were delivered
 *   deliveries-failing  deliveries failed on this node within the last FAILING_WINDOW_MS
 *   files-exhausted     an event on this node failed for want of file descriptors (EMFILE)
 *                       within the last FAILING_WINDOW_MS: new actors cannot be opened. Also what
 *                       makes GET /healthz answer 503 (`selfProblems`)
 *   actor-files-held    an event on this node failed within the last FAILING_WINDOW_MS because its
 *                       actor's file is held by a worker thread stopped while stuck in native code
 *                       (core/file-held.ts): its actors cannot be opened until the node restarts.
 *                       Also a reason for GET /healthz's 503
 *
 * Released nodes (stopped cleanly) are not a problem.
 */
import type { TenantIndexStats } from '../alarms/index-listing.js';
import type { DeliveryRecord, StatusSample } from '../main/status-feed.js';

const FAILING_WINDOW_MS = 60_000;

export type ProblemKind =
  'self-fenced' | 'node-fenced' | 'node-expired' | 'index-lag' | 'deliveries-failing' | 'files-exhausted' | 'actor-files-held';

export interface Problem {
  kind: ProblemKind;
  /** A node id, a tenant, or "this node". */
  where: string;
  what: string;
}

export interface Health {
  ok: boolean;
  /** One line: "healthy: …" or "2 problems: …". */
  summary: string;
  problems: Problem[];
}

/** A tenant's index as the bucket listing found it (`lagMs` 0 when nothing is overdue), and as this node last swept it. */
export interface TenantRow extends Omit<TenantIndexStats, 'truncated'> {
  /** keepwork_index_lag_seconds of this node's last sweep of the tenant, in ms (null when it has not swept it). */
  sweptLagMs: number | null;
  /** The listing stopped early: entries, due and overdue are lower bounds. */
  truncated: boolean;
}

export interface HealthInput {
  nowMs: number;
  marginMs: number;
  selfFenced: boolean;
  nodes: { nodeId: string; epoch: number; status: string; renewedMsAgo: number; self: boolean }[];
  tenants: TenantRow[];
  samples: StatusSample[];
  /** Newest first. */
  failures: DeliveryRecord[];
  /** When an event last failed with FILES_EXHAUSTED, and its message (status-feed.ts); null: never. */
  filesExhausted: { atMs: number; message: string } | null;
  /** When an event last failed because its actor's file is held (status-feed.ts); null: never. */
  actorFilesHeld: { atMs: number; message: string } | null;
}

/** This node's own problems, which its GET /healthz answers 503 for: it cannot serve new actors. */
export function selfProblems(h: Pick<HealthInput, 'nowMs' | 'filesExhausted' | 'actorFilesHeld'>): Problem[] {
  const failures: [ProblemKind, { atMs: number; message: string } | null, (ago: string) => string][] = [
    ['files-exhausted', h.filesExhausted, (ago) => `out of file descriptors ${ago} ago: actors cannot be opened`],
    [
      'actor-files-held',
      h.actorFilesHeld,
      (ago) => `actors' files held by a stuck worker thread ${ago} ago: those actors cannot be opened until the node restarts`,
    ],
  ];
  return failures.flatMap(([kind, at, what]) =>
    at !== null && h.nowMs - at.atMs < FAILING_WINDOW_MS
      ? [{ kind, where: 'this node', what: `${what(s1(h.nowMs - at.atMs))} (${at.message})` }]
      : [],
  );
}

const s1 = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

export function health(h: HealthInput): Health {
  const problems: Problem[] = [];
  if (h.selfFenced) problems.push({ kind: 'self-fenced', where: 'this node', what: 'its lease is fenced; it is rejoining' });
  for (const n of h.nodes) {
    if (n.status === 'fenced' && !(n.self && h.selfFenced))
      problems.push({ kind: 'node-fenced', where: n.nodeId, what: `node ${n.nodeId} (epoch ${n.epoch}) is fenced: down or cut off` });
    if (n.status === 'expired')
      problems.push({ kind: 'node-expired', where: n.nodeId, what: `node ${n.nodeId} not renewed for ${s1(n.renewedMsAgo)}` });
  }
  for (const t of h.tenants) {
    if (t.lagMs > h.marginMs)
      problems.push({
        kind: 'index-lag',
        where: t.tenant,
        what: `tenant ${t.tenant}: index lag ${s1(t.lagMs)}, over the margin (${s1(h.marginMs)}); ${t.overdue}${t.truncated ? '+' : ''} overdue`,
      });
  }
  const failed = recentFailures(h.samples, h.failures, h.nowMs);
  if (failed > 0) {
    const last = h.failures[0];
    const detail = last ? `; latest: ${last.actor}: ${last.error ?? 'failed'}` : '';
    problems.push({
      kind: 'deliveries-failing',
      where: 'this node',
      what: `${failed} deliveries failed on this node in the last minute${detail}`,
    });
  }
  problems.push(...selfProblems(h));
  return { ok: problems.length === 0, summary: summary(h, problems), problems };
}

/** Failed deliveries within FAILING_WINDOW_MS: from the samples, plus those not sampled yet (the failures ring). */
export function recentFailures(samples: StatusSample[], failures: DeliveryRecord[], nowMs: number): number {
  const since = nowMs - FAILING_WINDOW_MS;
  const sampled = samples.filter((s) => s.atMs > since).reduce((n, s) => n + s.failed, 0);
  const lastSample = samples.length ? samples[samples.length - 1]!.atMs : -Infinity;
  const unsampled = failures.filter((f) => f.atMs > Math.max(since, lastSample)).length;
  return sampled + unsampled;
}

function summary(h: HealthInput, problems: Problem[]): string {
  if (problems.length === 0) {
    const live = h.nodes.filter((n) => n.status === 'live').length;
    const lag = Math.max(0, ...h.tenants.map((t) => t.lagMs));
    return `healthy: ${live} ${live === 1 ? 'node' : 'nodes'} live, index lag ${s1(lag)}, no failed deliveries in the last minute`;
  }
  return `${problems.length} ${problems.length === 1 ? 'problem' : 'problems'}: ${problems.map((p) => p.what).join(' · ')}`;
}
