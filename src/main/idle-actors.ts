/**
 * `IdleActors`: when this node last ran an event for each actor, and the reaper that closes the
 * actors idle past idleTimeoutMs (flush, close the database, release the hold) — plus `giveBack`,
 * the same at once for one actor (the empty-bucket rule). Close and release run in the actor's
 * lane, so no event slips in between. The reaper is an RxJS interval on the injected scheduler,
 * every idleTimeoutMs/4 (at least 100 ms, at most 10 s); `stop()` ends it.
 *
 * Past `heldActorsMax` actors, the least recently used one is queued for close and release as
 * soon as an event takes on one more, not at the next reaper round: a node draining a backlog
 * would otherwise take on thousands between rounds, and queue as many releases at once. The
 * queue of releases is bounded too: `room()` resolves once fewer than REAP_WAITING_MAX wait, and
 * the alarm delivery waits for it before each delivery, so the node takes on actors no faster
 * than it lets them go. Its per-actor state (this map, its holds, the queue) stays bounded
 * however large a backlog it drains.
 */
import PQueue from 'p-queue';
import { interval, type SchedulerLike, type Subscription } from '../core/rx.js';
import type { Clock } from '../core/clock.js';
import type { ActorAddress } from '../core/address.js';
import type { Settings } from '../core/config.js';
import type { Logger } from '../core/logger.js';
import type { HoldTable } from '../leases/holds.js';
import type { ActorLanes } from './actor-lanes.js';
import type { WorkerGroup } from './worker-group.js';

/** Actors the reaper closes and releases at once. */
export const REAP_CONCURRENCY = 16;
/** Actors waiting to be closed and released, at most, before `room()` holds new ones back. */
export const REAP_WAITING_MAX = 4 * REAP_CONCURRENCY;

export interface IdleActorsDeps {
  clock: Clock;
  config: Settings<'idleTimeoutMs' | 'heldActorsMax'>;
  log: Logger;
  lanes: ActorLanes;
  workers: Pick<WorkerGroup, 'run'>;
  holds: Pick<HoldTable, 'release'>;
  scheduler?: SchedulerLike;
  /** True once the node stops: the reaper closes nothing more. */
  stopping(): boolean;
}

export class IdleActors {
  private readonly lastUsed = new Map<string, { address: ActorAddress; at: number }>();
  /**
   * Actors a worker may have open: each event may open one, and one whose last event ran in
   * memory (`closed`) is shut already, so letting it go is only releasing its hold — no task for
   * its worker, which would wait behind the worker's deliveries. Read in the actor's lane, where
   * its events also run, so an event that opens it again comes first. Bounded by the held actors.
   */
  private readonly mayBeOpen = new Set<string>();
  private readonly reaper: Subscription;
  /**
   * Closes and releases, REAP_CONCURRENCY at once (across reaper rounds too): one at a time, a
   * node draining a large backlog takes on new actors faster than it lets old ones go, and holds
   * far more than heldActorsMax.
   */
  private readonly reaping = new PQueue({ concurrency: REAP_CONCURRENCY });

  constructor(private readonly deps: IdleActorsDeps) {
    const reapEveryMs = Math.max(100, Math.min(deps.config.idleTimeoutMs / 4, 10_000));
    this.reaper = interval(reapEveryMs, deps.scheduler).subscribe(() => void this.reapIdle());
  }

  /** An event for the actor runs now. */
  used(address: ActorAddress): void {
    const { key } = address;
    this.lastUsed.delete(key); // re-insert: the map's order is least recently used first
    this.lastUsed.set(key, { address, at: this.deps.clock.now() });
    this.mayBeOpen.add(key);
    if (this.lastUsed.size > this.deps.config.heldActorsMax) this.reap(-Infinity);
  }

  /** The actor's last event left nothing of it open in its worker (called in the actor's lane, after `used`). */
  closed(address: ActorAddress): void {
    this.mayBeOpen.delete(address.key);
  }

  /** Actors queued to be closed and released, or being released. */
  backlog(): number {
    return this.reaping.size + this.reaping.pending;
  }

  /** Resolves once few enough actors wait to be closed and released that another may be taken on. */
  room(): Promise<void> {
    return this.reaping.onSizeLessThan(REAP_WAITING_MAX);
  }

  /** True when this node ran an event for the actor with this key within the last `withinMs`. */
  usedWithin(key: string, withinMs: number): boolean {
    const used = this.lastUsed.get(key);
    return used !== undefined && used.at > this.deps.clock.now() - withinMs;
  }

  /** Forgets every last use (the node was fenced: its actors were dropped, none is to be closed). */
  forgetAll(): void {
    this.lastUsed.clear();
    this.mayBeOpen.clear();
  }

  stop(): void {
    this.reaper.unsubscribe();
  }

  /** Closes the actor and releases its hold at once (the empty-bucket rule). */
  async giveBack(address: ActorAddress): Promise<void> {
    this.lastUsed.delete(address.key);
    await this.closeAndRelease(address);
  }

  private async reapIdle(): Promise<void> {
    this.reap(this.deps.clock.now() - this.deps.config.idleTimeoutMs);
    await this.reaping.onIdle();
  }

  /** Queues for close and release the actors last used at or before `cutoff`, and the least recently used past heldActorsMax. */
  private reap(cutoff: number): void {
    let over = this.lastUsed.size - this.deps.config.heldActorsMax;
    for (const [key, { address, at }] of this.lastUsed) {
      if (at > cutoff && over <= 0) break; // least recently used first: the rest are newer
      over--;
      this.lastUsed.delete(key); // deleting the entry being visited: a Map's iteration goes on
      void this.reaping.add(async () => {
        if (this.deps.stopping()) return;
        await this.closeAndRelease(address).catch((e: unknown) =>
          this.deps.log.warn({ actor: key, err: e }, 'closing an idle actor failed'),
        );
      });
    }
  }

  /** Close and release run in the actor's lane, so no event slips in between. */
  private async closeAndRelease(address: ActorAddress): Promise<void> {
    await this.deps.lanes.run(address.key, async () => {
      if (this.mayBeOpen.delete(address.key)) await this.deps.workers.run({ type: 'close', address });
      await this.releaseHold(address);
    });
  }

  private async releaseHold(address: ActorAddress): Promise<void> {
    await this.deps.holds
      .release(address)
      .catch((e: unknown) => this.deps.log.warn({ actor: address.key, err: e }, 'releasing a hold failed'));
  }
}
