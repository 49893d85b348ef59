/**
 * The JSON behind the status page (GET /v1/status), and the sampler that fills the node's
 * StatusFeed while the HTTP server runs:
 *
 *   every STATUS_SAMPLE_MS ─▶ metricsText() (refreshes the gauges) ─▶ backlog, index lag, held,
 *                             timer ─▶ feed.sample()
 *   GET /v1/status ─▶ { node, nodes (+ holds per node), samples, deliveries, totals }
 *
 * The cluster part comes from the bucket and is cached: node records for NODES_TTL_MS, holds per
 * node (a walk of holds/, at most HOLDS_SCAN_MAX records) for HOLDS_TTL_MS; one read in flight at a
 * time, however many pages poll. Reads only.
 */
import { isLive } from '../leases/decisions.js';
import { HOLDS_PREFIX, NODES_PREFIX, decodeHold, decodeNode, type NodeRecord } from '../leases/records.js';
import { listAll } from '../store/keys.js';
import type { RoutingNode } from '../main/node-api.js';
import type { DeliveryRecord, StatusFeed, StatusSample } from '../main/status-feed.js';

export const STATUS_SAMPLE_MS = 1_000;
const NODES_TTL_MS = 2_000;
const HOLDS_TTL_MS = 5_000;
export const HOLDS_SCAN_MAX = 1_000;

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
  node: { nodeId: string; epoch: number; url: string | undefined; held: number; timer: number; atMs: number };
  nodes: StatusNodeRow[];
  holdsScanned: number;
  holdsTruncated: boolean;
  samples: StatusSample[];
  deliveries: DeliveryRecord[];
  totals: StatusFeed['totals'];
  sampleMs: number;
}

type Cached<T> = { atMs: number; value: T } | undefined;

export class StatusView {
  private sampler: ReturnType<typeof setInterval> | undefined;
  private nodes: Cached<NodeRecord[]>;
  private holds: Cached<{ counts: Map<string, number>; scanned: number; truncated: boolean }>;
  private reading: Promise<void> | undefined;

  constructor(
    private readonly node: RoutingNode,
    private readonly feed: StatusFeed,
    private readonly now: () => number = () => Date.now(),
  ) {}

  start(): void {
    this.sampler = setInterval(() => void this.sample().catch(() => undefined), STATUS_SAMPLE_MS);
    this.sampler.unref();
  }

  stop(): void {
    clearInterval(this.sampler);
  }

  async sample(): Promise<void> {
    await this.node.metricsText(); // refreshes the gauges it reports
    const m = this.node.metrics;
    const lag = (await m.indexLag.get()).values.reduce((max, v) => Math.max(max, v.value), 0);
    const backlog = (await m.deliveryBacklog.get()).values[0]?.value ?? 0;
    this.feed.sample({ atMs: this.now(), backlog, lagSeconds: lag, held: this.node.heldActors(), timer: this.node.pendingAlarms() });
  }

  async json(): Promise<StatusJson> {
    await this.refresh();
    const now = this.now();
    const holds = this.holds?.value;
    const nodes = (this.nodes?.value ?? []).map((r) => this.row(r, now, holds?.counts));
    return {
      node: {
        nodeId: this.node.nodeId,
        epoch: this.node.epoch,
        url: this.node.url,
        held: this.node.heldActors(),
        timer: this.node.pendingAlarms(),
        atMs: now,
      },
      nodes,
      holdsScanned: holds?.scanned ?? 0,
      holdsTruncated: holds?.truncated ?? false,
      samples: this.feed.samples.toArray(),
      deliveries: this.feed.deliveries.toArray().reverse(),
      totals: { ...this.feed.totals },
      sampleMs: STATUS_SAMPLE_MS,
    };
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

  /** Refreshes what is stale; concurrent callers share one read. */
  private refresh(): Promise<void> {
    this.reading ??= this.read().finally(() => (this.reading = undefined));
    return this.reading;
  }

  private async read(): Promise<void> {
    const now = this.now();
    if (!this.nodes || now - this.nodes.atMs >= NODES_TTL_MS) this.nodes = { atMs: now, value: await this.readNodes() };
    if (!this.holds || now - this.holds.atMs >= HOLDS_TTL_MS) this.holds = { atMs: now, value: await this.readHolds() };
  }

  private async readNodes(): Promise<NodeRecord[]> {
    const out: NodeRecord[] = [];
    for await (const key of listAll(this.node.store, { prefix: NODES_PREFIX })) {
      const obj = await this.node.store.get(key);
      if (!obj) continue;
      try {
        out.push(decodeNode(obj.body));
      } catch {
        // an unreadable record is not shown
      }
    }
    return out.sort((a, b) => a.nodeId.localeCompare(b.nodeId));
  }

  private async readHolds(): Promise<{ counts: Map<string, number>; scanned: number; truncated: boolean }> {
    const counts = new Map<string, number>();
    let scanned = 0;
    for await (const key of listAll(this.node.store, { prefix: HOLDS_PREFIX })) {
      if (scanned >= HOLDS_SCAN_MAX) return { counts, scanned, truncated: true };
      scanned++;
      const obj = await this.node.store.get(key);
      if (!obj) continue;
      try {
        const h = decodeHold(obj.body);
        if (h.state === 'held') counts.set(`${h.nodeId}/${h.epoch}`, (counts.get(`${h.nodeId}/${h.epoch}`) ?? 0) + 1);
      } catch {
        // skip
      }
    }
    return { counts, scanned, truncated: false };
  }
}
