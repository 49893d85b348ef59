/**
 * This node's membership of the cluster, on the main thread: its lease (renewed every
 * leasePeriod/3 as an RxJS schedule), the node directory, its holds, and the lease validity it
 * shares with the workers (one int64 in shared memory) so that every upload checks the LeaseView.
 *
 *   interval(lease/3) ─▶ renew ─▶ validUntil ─▶ shared memory ─▶ workers' replicas
 *                              └─ 412: fenced ─▶ onFenced (every actor stops at once)
 *
 * The lease may be written through a store of its own (`leaseStore`): on a folder bucket one whose
 * fsyncs run on a thread of their own, so that a renewal never waits behind the node's other
 * fsyncs (its fsync pool) or the app's own file work (libuv's pool) (start-node.ts).
 */
import { interval, type SchedulerLike, type Subscription } from '../core/rx.js';
import type { Clock } from '../core/clock.js';
import { ErrorCode, isKeepworkError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { NodeDirectory } from '../leases/directory.js';
import { HoldTable } from '../leases/holds.js';
import { NodeLease, type NodeSelf } from '../leases/node-lease.js';
import type { ObjectStore } from '../store/types.js';
import type { Settings } from '../core/config.js';
import type { DirectorySettings } from '../leases/directory.js';
import type { HoldSettings } from '../leases/holds.js';
import type { LeaseSettings } from '../leases/node-lease.js';
import { leaseShare } from './worker-shares.js';

export type MembershipSettings = LeaseSettings & HoldSettings & DirectorySettings & Settings<'leasePeriodMs'>;

export interface MembershipParts {
  /** The renewal schedule's RxJS scheduler (test seam: the simulator's virtual clock). */
  scheduler?: SchedulerLike;
  /**
   * What the lease is written through (the node's store unless given): a store of its own whose
   * writes never wait behind the other file work of the process (start-node.ts). Closed by stop().
   */
  leaseStore?: ObjectStore;
  /** `shared`, when the workers were given it before this was made (leaseShare). */
  shared?: SharedArrayBuffer;
}

export class Membership {
  readonly lease: NodeLease;
  readonly nodes: NodeDirectory;
  readonly holds: HoldTable;
  /** Shared with the workers: the lease's "valid until", in ms, then the epoch it is valid for. */
  readonly shared: SharedArrayBuffer;
  private readonly view: BigInt64Array;
  private readonly scheduler: SchedulerLike | undefined;
  private readonly leaseStore: ObjectStore;
  private renewals: Subscription | undefined;
  private renewing: Promise<void> | undefined;

  constructor(
    private readonly store: ObjectStore,
    private readonly clock: Clock,
    private readonly config: MembershipSettings,
    private readonly log: Logger,
    self: NodeSelf,
    more: MembershipParts = {},
  ) {
    this.shared = more.shared ?? leaseShare();
    this.view = new BigInt64Array(this.shared);
    this.scheduler = more.scheduler;
    this.leaseStore = more.leaseStore ?? store;
    this.lease = new NodeLease(this.leaseStore, clock, config, self, log);
    this.nodes = new NodeDirectory(store, clock, config, log);
    this.holds = new HoldTable(store, clock, config, this.lease, this.nodes, { nodeId: self.nodeId }, log);
  }

  async start(localEpoch: number, onFenced: () => void): Promise<number> {
    const epoch = await this.lease.start(localEpoch, (previous) =>
      this.log.warn(
        { previousEpoch: previous.epoch, expiresAtMs: previous.expiresAtMs },
        'the previous run on this data dir died with its lease live: fenced it now instead of waiting for it to run out',
      ),
    );
    this.publish();
    this.renewEvery(onFenced);
    return epoch;
  }

  /**
   * After a fence: a new epoch (the lease written live again, holds start from nothing), tried
   * every lease/3 while the bucket is out of reach. The caller has made sure nothing of the
   * fenced epoch still runs; the workers see the new epoch before the lease turns valid for them.
   * undefined: stopped meanwhile, or another run of this nodeId (another data dir) is live.
   */
  async rejoin(onFenced: () => void, stopping: () => boolean): Promise<number | undefined> {
    this.renewals?.unsubscribe();
    this.holds.forgetAll();
    for (let attempt = 1; !stopping(); attempt++) {
      try {
        const epoch = await this.lease.start(this.lease.epoch);
        this.publish();
        this.renewEvery(onFenced);
        return epoch;
      } catch (e) {
        if (isKeepworkError(e, ErrorCode.BadConfig)) {
          this.log.error({ err: e }, 'cannot rejoin: another run of this nodeId is live; this one stays fenced (stop it)');
          return undefined;
        }
        this.log.warn({ err: e, attempt }, 'rejoining under a new epoch failed; trying again');
        await new Promise<void>((r) => this.clock.setTimer(Math.max(100, Math.floor(this.config.leasePeriodMs / 3)), r));
      }
    }
    return undefined;
  }

  private renewEvery(onFenced: () => void): void {
    const everyMs = Math.max(1, Math.floor(this.config.leasePeriodMs / 3));
    this.renewals = interval(everyMs, this.scheduler).subscribe(() => void this.renew(onFenced));
  }

  /**
   * Renews now (also used to publish a new addr). Renewals never overlap: a second one would send
   * the etag the first is replacing and read its own predecessor's success as a fence (on a bucket
   * slower than leasePeriod/3 the interval would start one before the last has ended).
   */
  renew(onFenced: () => void): Promise<void> {
    this.renewing ??= this.renewOnce(onFenced).finally(() => (this.renewing = undefined));
    return this.renewing;
  }

  private async renewOnce(onFenced: () => void): Promise<void> {
    const outcome = await this.lease.renew();
    this.publish();
    if (outcome === 'fenced') {
      this.log.error('this node was fenced: another node took over its actors; every actor stops now');
      this.renewals?.unsubscribe();
      this.holds.forgetAll();
      onFenced();
    } else if (outcome === 'failed') {
      this.log.warn({ validForMs: this.lease.validUntil - this.clock.now() }, 'lease renewal failed; retrying');
    }
  }

  /** Stops renewing, lets a renewal in flight finish (its PUT would race the release), then releases. */
  async stop(): Promise<void> {
    this.renewals?.unsubscribe();
    await this.renewing;
    await this.lease.release().catch((e: unknown) => this.log.warn({ err: e }, 'releasing the node lease failed'));
    this.publish();
    if (this.leaseStore !== this.store) await this.leaseStore.close();
  }

  private publish(): void {
    Atomics.store(this.view, 1, BigInt(this.lease.epoch)); // first: a worker that sees the lease valid sees its epoch
    Atomics.store(this.view, 0, BigInt(Math.floor(this.lease.validUntil)));
  }
}
