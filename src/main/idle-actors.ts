/**
 * `IdleActors`: when this node last ran an event for each actor, and the reaper that closes the
 * actors idle past idleTimeoutMs (flush, close the database, release the hold) — plus `giveBack`,
 * the same at once for one actor (the empty-bucket rule). Past `heldActorsMax` actors, the reaper
 * also closes the least recently used ones early, so the node's per-actor state (this map, its
 * holds) stays bounded however large a backlog it drains. Close and release run in the actor's
 * lane, so no event slips in between. The reaper is an RxJS interval on the injected scheduler,
 * every idleTimeoutMs/4 (at least 100 ms, at most 10 s); `stop()` ends it.
 */
import PQueue from 'p-queue';
import { interval, type SchedulerLike, type Subscription } from 'rxjs';
import type { Clock } from '../core/clock.js';
import { formatAddress, type ActorAddress } from '../core/address.js';
import type { Settings } from '../core/config.js';
import type { Logger } from '../core/logger.js';
import type { HoldTable } from '../leases/holds.js';
import type { ActorLanes } from './actor-lanes.js';
import type { WorkerGroup } from './worker-group.js';

/** Actors the reaper closes and releases at once. */
export const REAP_CONCURRENCY = 16;

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
  private readonly reaper: Subscription;
  /**
   * Closes and releases, REAP_CONCURRENCY at once (across reaper rounds too): one at a time, a
   * node draining a large backlog took on new actors faster than it let old ones go (24,000 held
   * against heldActorsMax 10,000 in a 100,000-alarm drain).
   */
  private readonly reaping = new PQueue({ concurrency: REAP_CONCURRENCY });

  constructor(private readonly deps: IdleActorsDeps) {
    const reapEveryMs = Math.max(100, Math.min(deps.config.idleTimeoutMs / 4, 10_000));
    this.reaper = interval(reapEveryMs, deps.scheduler).subscribe(() => void this.reapIdle());
  }

  /** An event for the actor (`key`: its formatted address) runs now. */
  used(key: string, address: ActorAddress): void {
    this.lastUsed.delete(key); // re-insert: the map's order is least recently used first
    this.lastUsed.set(key, { address, at: this.deps.clock.now() });
  }

  /** True when this node ran an event for the actor within the last `withinMs`. */
  usedWithin(key: string, withinMs: number): boolean {
    const used = this.lastUsed.get(key);
    return used !== undefined && used.at > this.deps.clock.now() - withinMs;
  }

  /** Forgets every last use (the node was fenced: its actors were dropped, none is to be closed). */
  forgetAll(): void {
    this.lastUsed.clear();
  }

  stop(): void {
    this.reaper.unsubscribe();
  }

  /** Closes the actor and releases its hold at once (the empty-bucket rule). */
  async giveBack(address: ActorAddress): Promise<void> {
    const key = formatAddress(address);
    this.lastUsed.delete(key);
    await this.closeAndRelease(key, address);
  }

  private async reapIdle(): Promise<void> {
    const cutoff = this.deps.clock.now() - this.deps.config.idleTimeoutMs;
    let over = this.lastUsed.size - this.deps.config.heldActorsMax;
    for (const [key, { address, at }] of this.lastUsed) {
      if (at > cutoff && over <= 0) break; // least recently used first: the rest are newer
      over--;
      this.lastUsed.delete(key); // deleting the entry being visited: a Map's iteration goes on
      void this.reaping.add(async () => {
        if (this.deps.stopping()) return;
        await this.closeAndRelease(key, address).catch((e: unknown) =>
          this.deps.log.warn({ actor: key, err: e }, 'closing an idle actor failed'),
        );
      });
    }
    await this.reaping.onIdle();
  }

  /** Close and release run in the actor's lane, so no event slips in between. */
  private async closeAndRelease(key: string, address: ActorAddress): Promise<void> {
    await this.deps.lanes.run(key, async () => {
      await this.deps.workers.run({ type: 'close', address });
      await this.releaseHold(address);
    });
  }

  private async releaseHold(address: ActorAddress): Promise<void> {
    await this.deps.holds
      .release(address)
      .catch((e: unknown) => this.deps.log.warn({ actor: formatAddress(address), err: e }, 'releasing a hold failed'));
  }
}
