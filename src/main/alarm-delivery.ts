/**
 * Alarm delivery on the main thread: the node's in-memory timer, the bounded queue behind it, and
 * what happens to each delivery's outcome (docs/architecture.md).
 *
 *   timer (committed alarms of actors this node ran + entries the sweep offered)
 *     ─▶ due ─▶ queue (≤ deliveriesPerSweep waiting; running: from deliveryConcurrency up to
 *        deliveryConcurrencyMax while the bucket's round trips are the limit, delivery-limit.ts;
 *        full: the timer holds what is due until half the queue has drained)
 *     ─▶ room for another actor (the releases past heldActorsMax keep up, idle-actors.ts)
 *     ─▶ deliver(actor, at) (the Node: hold, lane, worker) ─▶ outcome:
 *          ran / stale / kept   counted; a committed retry is deferred to its time
 *          releaseHold          the empty-bucket rule: the actor is given back at once
 *          failed (threw)       deferred a lease period, still due at `at`
 *
 * A deferred alarm keeps its due time, so a later delivery still matches the entry or committed
 * alarm it was for. Once stopped (node stop, or fenced) nothing more is queued.
 *
 * A full timer (`timerEntriesMax`) never fails the event that committed the alarm: the event did
 * commit, so its caller gets its result. The alarm is left out of the timer but stays committed
 * and listed in the index, so the sweep delivers it once overdue (as for an actor of a dead
 * node); each such alarm is counted (`keepwork_timer_full_total`) and logged (at most one line a
 * minute, with the count since the last). A sweep offer the full timer cannot take stays in the
 * index for a later sweep.
 */
import PQueue from 'p-queue';
import type { Clock } from '../core/clock.js';
import type { Settings } from '../core/config.js';
import type { Logger } from '../core/logger.js';
import type { ActorAddress } from '../core/address.js';
import { ErrorCode, isKeepworkError } from '../core/errors.js';
import { AlarmTimer } from '../alarms/timer.js';
import type { EventResult } from '../workers/messages.js';
import { DeliveryLimit } from './delivery-limit.js';
import type { NodeMetrics } from './metrics.js';

export type DeliverySettings = Settings<
  'deliveriesPerSweep' | 'deliveryConcurrency' | 'deliveryConcurrencyMax' | 'timerEntriesMax' | 'leasePeriodMs' | 'retryMaxMs'
>;

/** At most one "timer full" log line per this long. */
const TIMER_FULL_LOG_EVERY_MS = 60_000;

export interface DeliveryDeps {
  clock: Clock;
  config: DeliverySettings;
  log: Logger;
  metrics: NodeMetrics;
  /** Runs the delivery event for the actor (undefined: another live node holds it and has the alarm). */
  deliver(address: ActorAddress, dueMs: number, shard?: number): Promise<EventResult | undefined>;
  /** Closes the actor and releases its hold (the empty-bucket rule). */
  giveBack(address: ActorAddress): Promise<void>;
  /** Resolves once the node may take on another actor (idle-actors.ts: its releases keep up). */
  actorRoom?(): Promise<void>;
}

export class AlarmDelivery {
  private readonly timer: AlarmTimer;
  private readonly queue: PQueue;
  private readonly limit: DeliveryLimit;
  /** Actors with a delivery queued or running. */
  private readonly delivering = new Set<string>();
  /** The shard folder of a sharded entry the sweep offered, by actor: what stale removal lists (at most one per actor). */
  private readonly offeredShards = new Map<string, { at: number; shard: number }>();
  private stopped = false;
  /** Alarms left out of a full timer since the last log line about it, and when that line was written. */
  private timerFull = { count: 0, loggedAtMs: -Infinity };

  constructor(private readonly deps: DeliveryDeps) {
    this.timer = new AlarmTimer(deps.clock, (actor, at) => this.queueDelivery(actor, at), deps.config.timerEntriesMax);
    const { deliveryConcurrency, deliveryConcurrencyMax } = deps.config;
    this.limit = new DeliveryLimit(deliveryConcurrency, deliveryConcurrencyMax);
    this.queue = new PQueue({ concurrency: this.limit.limit });
  }

  /** Alarms in the timer. */
  get size(): number {
    return this.timer.size;
  }

  /** Deliveries that may run at once now (delivery-limit.ts). */
  get concurrency(): number {
    return this.limit.limit;
  }

  /** Deliveries running now. */
  get running(): number {
    return this.queue.pending;
  }

  /** Deliveries queued or running. */
  backlog(): number {
    return this.queue.size + this.queue.pending;
  }

  /** Resolves once fewer than half a sweep's deliveries wait and the node may take on actors (the timer's cue to resume). */
  async room(): Promise<void> {
    await this.queue.onSizeLessThan(Math.max(1, Math.floor(this.deps.config.deliveriesPerSweep / 2)));
    await this.deps.actorRoom?.();
  }

  /**
   * Resolves once another sweep's offers would go into the queue: room() — and the timer holds no
   * due alarm back. A sweep that followed room() alone, while the timer still held the last
   * sweep's offers, would pile offers there faster than the node delivers them (a sweep offers up
   * to deliveriesPerSweep, the queue had taken half); its own walks, once read through, then
   * list those entries again at every sweep until they are delivered.
   */
  async sweepRoom(): Promise<void> {
    const half = Math.max(1, Math.floor(this.deps.config.deliveriesPerSweep / 2));
    do await this.room();
    while (!this.stopped && (this.timer.isHeld || this.queue.size >= half)); // both at once: a resume may have refilled the queue
  }

  /** The alarm of the actor with this key is in the timer, or its delivery is queued or running. */
  has(key: string): boolean {
    return this.timer.get(key) !== undefined || this.delivering.has(key);
  }

  /** The committed alarm of an actor this node ran (null: none). */
  set(actor: ActorAddress, at: number | null): void {
    this.intoTimer(actor, at, () => this.timer.set(actor, at));
  }

  clear(actor: ActorAddress): void {
    this.timer.clear(actor);
    this.offeredShards.delete(actor.key);
  }

  /** An index entry the sweep found overdue (the timer's backoff horizon applies); `shard`: its shard folder, if sharded. */
  offer(actor: ActorAddress, dueMs: number, shard?: number): boolean {
    const taken = !this.stopped && this.intoTimer(actor, dueMs, () => this.timer.offer(actor, dueMs, this.deps.config.retryMaxMs));
    if (taken && shard !== undefined) this.offeredShards.set(actor.key, { at: dueMs, shard });
    return taken;
  }

  /** The shard folder of the entry offered for `actor` at `at`, if any (consumed by its delivery). */
  private shardOffered(actor: ActorAddress, at: number): number | undefined {
    const offered = this.offeredShards.get(actor.key);
    return offered?.at === at ? offered.shard : undefined;
  }

  /** Nothing more is queued; what waits is dropped (the alarms stay committed and indexed). */
  stop(): void {
    this.stopped = true;
    this.timer.stop();
    this.queue.clear();
    this.offeredShards.clear();
  }

  /** Resolves once the deliveries running now have ended. */
  drained(): Promise<void> {
    return this.queue.onIdle();
  }

  /**
   * The timer fired: into the bounded queue. A full queue refuses it: the timer keeps it (and
   * everything due after it) until half the queue has drained, then fires again in due order.
   */
  private queueDelivery(actor: ActorAddress, at: number): boolean {
    if (this.stopped) return true;
    if (this.queue.size >= this.deps.config.deliveriesPerSweep) {
      void this.room().then(() => this.timer.resume());
      return false;
    }
    this.delivering.add(actor.key);
    void this.queue.add(() => this.run(actor, at).finally(() => this.delivering.delete(actor.key)));
    return true;
  }

  /**
   * One delivery to `actor` at `at` (its own committed alarm, or an entry the sweep offered): the
   * worker runs the alarm if `at` is the committed one, else cleans up stale entries at `at`.
   */
  private async run(actor: ActorAddress, at: number): Promise<void> {
    const { clock, metrics, log, config } = this.deps;
    const { key } = actor;
    try {
      await this.deps.actorRoom?.();
      if (this.stopped) return;
      const startMs = clock.now();
      const r = await this.deps.deliver(actor, at, this.shardOffered(actor, at));
      if (this.shardOffered(actor, at) !== undefined) this.offeredShards.delete(key);
      if (!r) return;
      const limit = this.limit.ended(clock.now() - startMs, this.queue.size > 0);
      if (limit !== this.queue.concurrency) this.queue.concurrency = limit; // the setter walks the queue: only at a window's change
      metrics.deliveries.inc({ outcome: r.type === 'error' ? 'failed' : r.ran ? 'ran' : r.removed ? 'stale' : 'kept' });
      metrics.feed.delivered(key, at, r, clock.now());
      if (r.type === 'ok' && r.removed) metrics.staleRemoved.inc(r.removed);
      if (r.type === 'ok' && r.retryAtMs !== undefined) this.intoTimer(actor, at, () => this.timer.defer(actor, at, r.retryAtMs!));
      if (r.type === 'ok' && r.releaseHold) await this.deps.giveBack(actor);
    } catch (e) {
      if (this.stopped) return;
      metrics.feed.failed(key, at, e, clock.now());
      const retryAt = clock.now() + config.leasePeriodMs;
      log.error({ actor: key, err: e, retryAt }, 'alarm delivery failed; trying again after a lease period');
      this.intoTimer(actor, at, () => this.timer.defer(actor, at, retryAt));
    }
  }

  /**
   * Puts an alarm into the timer; a full timer (Overloaded) leaves it to the sweep — it is
   * committed and indexed — and counts and logs it instead of failing the caller (false).
   */
  private intoTimer(actor: ActorAddress, at: number | null, put: () => boolean | void): boolean {
    try {
      return put() !== false;
    } catch (e) {
      if (!isKeepworkError(e, ErrorCode.Overloaded)) throw e;
      const { clock, log, metrics } = this.deps;
      metrics.timerFull.inc();
      this.timerFull.count++;
      if (clock.now() - this.timerFull.loggedAtMs >= TIMER_FULL_LOG_EVERY_MS) {
        log.warn({ actor: actor.key, at, left: this.timerFull.count, err: e }, 'alarm timer full; alarms left to the sweep');
        this.timerFull = { count: 0, loggedAtMs: clock.now() };
      }
      return false;
    }
  }
}
