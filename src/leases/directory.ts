/**
 * The cluster's node records as this node sees them: the `nodes/` listing, read at most once per
 * `alarmSweepMs` and shared by everything that needs liveness (routing, sharding), plus fresh
 * reads of one record (with its etag) when a decision is about to act on it.
 */
import type { Clock } from '../core/clock.js';
import type { Settings } from '../core/config.js';
import type { Logger } from '../core/logger.js';

export type DirectorySettings = Settings<'alarmSweepMs' | 'graceMs'>;
import { listAll } from '../store/keys.js';
import type { ObjectStore } from '../store/types.js';
import { isLive } from './decisions.js';
import { NODES_PREFIX, decodeNode, nodeIdOfKey, nodeKey, refusedAddr, type NodeRecord } from './records.js';

/** How many refused node addresses are remembered, each logged once. */
const REFUSED_ADDRS_MAX = 1_024;

export interface NodeEntry {
  record: NodeRecord;
  etag: string;
}

export class NodeDirectory {
  private cache: { atMs: number; nodes: NodeEntry[] } | undefined;
  /** nodeId → the highest epoch known to be over (a record fenced or released at it, or a later epoch seen). */
  private readonly ended = new Map<string, number>();
  private reading: Promise<NodeEntry[]> | undefined;
  /** `nodeId addr` of records whose addr was refused and logged (bounded: the oldest are forgotten). */
  private readonly refused = new Set<string>();

  constructor(
    private readonly store: ObjectStore,
    private readonly clock: Clock,
    private readonly config: DirectorySettings,
    private readonly log: Logger,
  ) {}

  /** Every node record (at most `maxAgeMs`, by default `alarmSweepMs`, old). Unparsable records are skipped. */
  async all(maxAgeMs = this.config.alarmSweepMs): Promise<NodeEntry[]> {
    const c = this.cache;
    if (c && this.clock.now() - c.atMs < maxAgeMs) return c.nodes;
    this.reading ??= this.readAll().finally(() => (this.reading = undefined));
    return this.reading;
  }

  async live(maxAgeMs?: number): Promise<NodeRecord[]> {
    const records = (await this.all(maxAgeMs)).map((e) => e.record);
    const now = this.clock.now();
    return records.filter((r) => isLive(r, now, this.config.graceMs));
  }

  /** One record, read now (null: none, or unreadable — logged and skipped). */
  async fresh(nodeId: string): Promise<NodeEntry | null> {
    const obj = await this.store.get(nodeKey(nodeId));
    if (!obj) return null;
    try {
      const record = decodeNode(obj.body);
      if (record.addr === '') this.noteRefusedAddr(nodeId, obj.body);
      this.observe(record);
      return { record, etag: obj.etag };
    } catch (e) {
      this.log.warn({ nodeId, err: e }, 'unreadable node record skipped');
      return null;
    }
  }

  /**
   * True when `nodeId`'s run at `epoch` is known to be over, so no read of its record can make a
   * hold of that run live again: a node's epoch only grows, and a record fenced or released at an
   * epoch never turns live at that epoch again (a restart takes the next one). Lets a node
   * draining a dead node's actors skip re-reading that node's record for every hold.
   */
  isOver(nodeId: string, epoch: number): boolean {
    return (this.ended.get(nodeId) ?? 0) >= epoch;
  }

  /** Learns from a record read or written: its earlier epochs are over, and its own if not live. */
  observe(record: NodeRecord): void {
    const over = record.state === 'live' ? record.epoch - 1 : record.epoch;
    if (over > (this.ended.get(record.nodeId) ?? 0)) this.ended.set(record.nodeId, over);
  }

  /** A record whose addr is not a node's address reads as one without an address (records.ts): logged once per node and addr. */
  private noteRefusedAddr(nodeId: string, body: Uint8Array): void {
    const refused = refusedAddr(body);
    if (!refused) return;
    const key = `${nodeId} ${refused.addr}`;
    if (this.refused.has(key)) return;
    this.refused.add(key);
    if (this.refused.size > REFUSED_ADDRS_MAX) this.refused.delete(this.refused.values().next().value!);
    this.log.warn(
      { nodeId, addr: refused.addr, problem: refused.problem },
      'a node record whose addr is not a node address: read as a node without one (its actors are not forwarded to)',
    );
  }

  invalidate(): void {
    this.cache = undefined;
  }

  private async readAll(): Promise<NodeEntry[]> {
    const keys: string[] = [];
    for await (const key of listAll(this.store, { prefix: NODES_PREFIX })) if (nodeIdOfKey(key)) keys.push(key);
    const entries = await Promise.all(keys.map((k) => this.fresh(nodeIdOfKey(k)!)));
    const nodes = entries.filter((e): e is NodeEntry => e !== null);
    this.cache = { atMs: this.clock.now(), nodes };
    return nodes;
  }
}
