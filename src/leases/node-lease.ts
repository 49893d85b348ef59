/**
 * This node's lease in the bucket (`nodes/<nodeId>`, docs/architecture.md).
 *
 *   start()   a live record of this nodeId: refuse (another process runs it) — unless it names
 *             this data dir (`dataDirId`): the caller holds the data dir's lock, so that run is
 *             dead, and its record is fenced at once (If-Match) instead of waited out; then write
 *             the record with epoch = max(local, bucket + 1), state live
 *   renew()   If-Match on the last etag; on success the lease is valid until the renew's send
 *             time + leasePeriod − skew; a 412 means we were fenced: `fenced` turns true for good
 *   release() state released (clean shutdown)
 *
 * A failed renew (bucket unreachable) changes nothing; validity then runs out on its own before
 * any other node could see the record as expired (it adds grace, we subtract skew).
 */
import type { Clock } from '../core/clock.js';
import { BadConfig, ErrorCode, LeaseLost, isKeepworkError } from '../core/errors.js';
import type { Settings } from '../core/config.js';
import type { Logger } from '../core/logger.js';

export type LeaseSettings = Settings<'graceMs' | 'leasePeriodMs' | 'skewBoundMs'>;
import type { ObjectStore } from '../store/types.js';
import { isLive, leaseValidUntil, renewConflictIsFence } from './decisions.js';
import { decodeNode, encodeNode, nodeKey, type NodeRecord } from './records.js';

export interface NodeSelf {
  nodeId: string;
  addr: string;
  tenants: string[] | null;
  classes: string[];
  /**
   * The data dir's name (identity.ts). Set only by a caller that holds the data dir's exclusive
   * lock for its whole life (data-dir-lock.ts): a live record naming it is then a dead run's.
   */
  dataDirId?: string;
}

/** Rounds of start() that may lose a race on the record (a dead run's last renewal landing late). */
const START_ROUNDS_MAX = 3;

export type RenewOutcome = 'renewed' | 'fenced' | 'failed';

export class NodeLease {
  epoch = 0;
  fenced = false;
  private etag: string | undefined;
  private validUntilMs = 0;

  constructor(
    private readonly store: ObjectStore,
    private readonly clock: Clock,
    private readonly config: LeaseSettings,
    private readonly self: NodeSelf,
    private readonly log: Logger,
  ) {}

  get validUntil(): number {
    return this.fenced ? 0 : this.validUntilMs;
  }

  isValid(): boolean {
    return !this.fenced && this.clock.now() < this.validUntilMs;
  }

  /**
   * Writes this run's live record (also again after a fence: a rejoin under a new epoch).
   * `onFencedPrevious` hears of a dead run of this data dir fenced here.
   */
  async start(localEpoch: number, onFencedPrevious?: (previous: NodeRecord) => void): Promise<number> {
    const key = nodeKey(this.self.nodeId);
    for (let round = 1; ; round++) {
      let existing = await this.store.get(key);
      const previous = existing ? decodeNode(existing.body) : undefined;
      try {
        if (previous && isLive(previous, this.clock.now(), this.config.graceMs)) {
          if (this.self.dataDirId === undefined || previous.dataDirId !== this.self.dataDirId) {
            throw new BadConfig(
              `node ${this.self.nodeId} is already running (epoch ${previous.epoch} at ${previous.addr}, lease live until ${new Date(previous.expiresAtMs + this.config.graceMs).toISOString()}); use another nodeId or stop it first`,
            );
          }
          // Our data dir's previous run, dead (we hold the data dir's lock): fenced now, so that
          // it can never renew, and its holds are ours to take under a new generation.
          const fenced: NodeRecord = { ...previous, state: 'fenced' };
          existing = { ...existing!, etag: (await this.store.put(key, encodeNode(fenced), { ifMatch: existing!.etag })).etag };
          onFencedPrevious?.(previous);
        }
        this.epoch = Math.max(localEpoch, (previous?.epoch ?? 0) + 1, this.epoch + 1);
        const sentAt = this.clock.now();
        const { etag } = await this.store.put(
          key,
          encodeNode(this.record(sentAt, 'live')),
          existing ? { ifMatch: existing.etag } : { ifNoneMatch: '*' },
        );
        this.fenced = false;
        this.accept(etag, sentAt);
        return this.epoch;
      } catch (e) {
        if (!isKeepworkError(e, ErrorCode.PreconditionFailed) || round >= START_ROUNDS_MAX) throw e;
      }
    }
  }

  async renew(): Promise<RenewOutcome> {
    if (this.fenced) return 'fenced';
    const sentAt = this.clock.now();
    try {
      const { etag } = await this.store.put(nodeKey(this.self.nodeId), encodeNode(this.record(sentAt, 'live')), { ifMatch: this.etag! });
      this.accept(etag, sentAt);
      return 'renewed';
    } catch (e) {
      if (isKeepworkError(e, ErrorCode.PreconditionFailed)) return this.afterConflict();
      return 'failed';
    }
  }

  /**
   * A 412 on renew is a fence only if the record says so (renewConflictIsFence). A renewal that
   * timed out but landed also changes the etag: then the next renewal goes out with its etag.
   */
  private async afterConflict(): Promise<RenewOutcome> {
    const current = await this.store.get(nodeKey(this.self.nodeId)).catch((e: unknown) => {
      this.log.warn({ err: e }, 'reading the lease record after a 412 failed; taking the lease as fenced');
      return null;
    });
    const record = current ? decodeNode(current.body) : null;
    if (current && !renewConflictIsFence(record, this.epoch)) {
      this.etag = current.etag;
      return 'failed';
    }
    this.fenced = true;
    return 'fenced';
  }

  async release(): Promise<void> {
    if (this.fenced || !this.etag) return;
    await this.store.put(nodeKey(this.self.nodeId), encodeNode(this.record(this.clock.now(), 'released')), { ifMatch: this.etag });
    this.validUntilMs = 0;
  }

  /** Throws LeaseLost unless the lease is valid now. */
  check(): void {
    if (!this.isValid())
      throw new LeaseLost(`node ${this.self.nodeId}'s lease is ${this.fenced ? 'fenced' : 'not valid (renewals failing)'}`);
  }

  private record(sentAt: number, state: NodeRecord['state']): NodeRecord {
    const { leasePeriodMs, graceMs } = this.config;
    return { ...this.self, epoch: this.epoch, expiresAtMs: sentAt + leasePeriodMs, state, leasePeriodMs, graceMs };
  }

  private accept(etag: string, sentAt: number): void {
    this.etag = etag;
    this.validUntilMs = leaseValidUntil(sentAt, this.config.leasePeriodMs, this.config.skewBoundMs);
  }
}
