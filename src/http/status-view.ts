/**
 * The JSON behind the status page (GET /v1/status), and the sampler that fills the node's
 * StatusFeed while the HTTP server runs:
 *
 *   every STATUS_SAMPLE_MS ─▶ the node's backlog, held actors and timer, the index-lag gauge
 *                             ─▶ feed.sample()
 *   GET /v1/status ─▶ { health, node, nodes (+ holds per node), tenants (each index), samples,
 *                       deliveries, failures, totals }
 *
 * The cluster part comes from the bucket, cached and bounded (status-cluster.ts); the health line
 * is status-health.ts. Fields are only ever added, so scripts reading older ones keep working.
 */
import { isLive } from '../leases/decisions.js';
import type { NodeRecord } from '../leases/records.js';
import type { RoutingNode } from '../main/node-api.js';
import type { DeliveryRecord, StatusFeed, StatusSample } from '../main/status-feed.js';
import { ClusterReader } from './status-cluster.js';
import { health, type Health, type TenantRow } from './status-health.js';

export { HOLDS_SCAN_MAX } from './status-cluster.js';
export const STATUS_SAMPLE_MS = 1_000;

export interface StatusNodeRow {
  nodeId: string;
  epoch: number;
  addr: string;
  status: 'live' | 'expired' | 'fenced' | 'released';
  renewedMsAgo: number;
  classes: string[];
  /** Holds the bucket records for this node and epoch (null until the first walk is done). */
  holds: number | null;
  self: boolean;
}

export interface StatusJson {
  health: Health;
  node: { nodeId: string; epoch: number; url: string | undefined; held: number; timer: number; atMs: number; fenced: boolean };
  nodes: StatusNodeRow[];
  holdsScanned: number;
  holdsTruncated: boolean;
  /** Each tenant's alarm index, from a listing of the bucket (at most INDEX_TENANTS_MAX tenants). */
  tenants: TenantRow[];
  tenantsTruncated: boolean;
  /** When the index was listed (null before the first listing). */
  indexReadAtMs: number | null;
  samples: StatusSample[];
  /** Newest first. */
  deliveries: DeliveryRecord[];
  /** The last failed deliveries with their errors, newest first. */
  failures: DeliveryRecord[];
  totals: StatusFeed['totals'];
  sampleMs: number;
  /** Lease + grace: an index entry this far past due is overdue. */
  marginMs: number;
}

export class StatusView {
  private sampler: ReturnType<typeof setInterval> | undefined;
  private readonly cluster: ClusterReader;

  constructor(
    private readonly node: RoutingNode,
    private readonly feed: StatusFeed,
    private readonly now: () => number = () => Date.now(),
  ) {
    this.cluster = new ClusterReader(node.store, node.config.marginMs, now);
  }

  start(): void {
    this.sampler = setInterval(() => void this.sample().catch(() => undefined), STATUS_SAMPLE_MS);
    this.sampler.unref();
  }

  stop(): void {
    clearInterval(this.sampler);
  }

  /**
   * Reads the node and the index-lag gauge (set by each sweep), not the rendered metrics: rendering
   * the whole registry as text every second would be the largest cost of an idle node's main
   * thread but for the event-loop monitor.
   */
  async sample(): Promise<void> {
    const lag = (await this.node.metrics.indexLag.get()).values.reduce((max, v) => Math.max(max, v.value), 0);
    const backlog = this.node.deliveryBacklog();
    this.feed.sample({ atMs: this.now(), backlog, lagSeconds: lag, held: this.node.heldActors(), timer: this.node.pendingAlarms() });
  }

  /**
   * `sees`: which tenants' rows the caller may see (a token's tenants, docs/security.md); the
   * tenant rows, deliveries and failures of the others are left out, and the health line is
   * computed from what is left. Absent: every tenant.
   */
  async json(sees: (tenant: string) => boolean = () => true): Promise<StatusJson> {
    await this.cluster.refresh();
    const now = this.now();
    const holds = this.cluster.holds;
    const nodes = this.cluster.nodes.map((r) => this.row(r, now, holds?.counts));
    const tenants = (await this.tenantRows()).filter((t) => sees(t.tenant));
    const samples = this.feed.samples.toArray();
    const ofSeen = (d: DeliveryRecord) => sees(tenantOf(d.actor));
    const failures = this.feed.failures.toArray().reverse().filter(ofSeen);
    const fenced = ((await this.node.metrics.fenced.get()).values[0]?.value ?? 0) > 0;
    const marginMs = this.node.config.marginMs;
    return {
      health: health({
        nowMs: now,
        marginMs,
        selfFenced: fenced,
        nodes,
        tenants,
        samples,
        failures,
        filesExhausted: this.feed.filesExhausted,
        actorFilesHeld: this.feed.actorFilesHeld,
      }),
      node: {
        nodeId: this.node.nodeId,
        epoch: this.node.epoch,
        url: this.node.url,
        held: this.node.heldActors(),
        timer: this.node.pendingAlarms(),
        atMs: now,
        fenced,
      },
      nodes,
      holdsScanned: holds?.scanned ?? 0,
      holdsTruncated: holds?.truncated ?? false,
      tenants,
      tenantsTruncated: this.cluster.index?.tenantsTruncated ?? false,
      indexReadAtMs: this.cluster.index?.atMs ?? null,
      samples,
      deliveries: this.feed.deliveries.toArray().reverse().filter(ofSeen),
      failures,
      totals: { ...this.feed.totals },
      sampleMs: STATUS_SAMPLE_MS,
      marginMs,
    };
  }

  /** The bucket's listing of each tenant's index, with this node's last sweep lag beside it. */
  private async tenantRows(): Promise<TenantRow[]> {
    const swept = new Map<string, number>();
    for (const v of (await this.node.metrics.indexLag.get()).values) swept.set(String(v.labels.tenant), v.value * 1000);
    const rows: TenantRow[] = (this.cluster.index?.tenants ?? []).map((t) => ({
      tenant: t.tenant,
      entries: t.entries,
      due: t.due,
      overdue: t.overdue,
      oldestDueMs: t.oldestDueMs,
      lagMs: t.lagMs,
      sweptLagMs: swept.get(t.tenant) ?? null,
      truncated: t.truncated === true,
    }));
    return rows;
  }

  private row(r: NodeRecord, now: number, holds: Map<string, number> | undefined): StatusNodeRow {
    const leasePeriodMs = r.leasePeriodMs ?? this.node.config.leasePeriodMs;
    const status = r.state !== 'live' ? r.state : isLive(r, now, r.graceMs ?? this.node.config.graceMs) ? 'live' : 'expired';
    const self = r.nodeId === this.node.nodeId && r.epoch === this.node.epoch;
    return {
      nodeId: r.nodeId,
      epoch: r.epoch,
      addr: r.addr,
      status,
      renewedMsAgo: now - (r.expiresAtMs - leasePeriodMs),
      classes: r.classes,
      holds: holds ? (holds.get(`${r.nodeId}/${r.epoch}`) ?? 0) : null,
      self,
    };
  }
}

/** The tenant of an actor key `tenant/class/name` (core/address.ts formatAddress). */
function tenantOf(actorKey: string): string {
  const slash = actorKey.indexOf('/');
  return slash < 0 ? actorKey : actorKey.slice(0, slash);
}
