/**
 * The sweep (docs/alarm-index.md "The sweep"), on the main thread: per tenant, read the index up to
 * now − (lease + grace) from a cursor, plan which overdue entries this node delivers, and offer
 * them to the node's timer (its backoff horizon applies; the timer feeds a bounded queue).
 *
 *   schedule (RxJS, per tenant) ─▶ sweepTenant: LIST from cursor, ≤ sweepPageEntries, stop at
 *   the first entry not that overdue, or once the entries read fill the plan ─▶ plan (live
 *   nodes, own first, anyone's reserve: plan-sweep.ts) ─▶
 *   offer ≤ deliveriesPerSweep ─▶ next delay: alarmSweepMs (the design's fixed cadence), or adaptive — at once
 *   after a full sweep when capacity is free, else at the next entry's due time + margin.
 *
 * The cursor resumes after the entries read, so entries nobody can act on never hold the rest
 * back; once the overdue part is read through, the next sweep starts from the beginning again.
 * It never moves past an own entry the delivery cap left out: it stops just before the first one,
 * and a sweep that left deliverable entries behind counts as full (sweeps again soon). A cursor
 * past a whole page of which only the cap was offered would leave the rest behind it, and a sweep
 * that then reached the end would wait alarmSweepMs while they were due. When the first entry read
 * is itself left out (no own entry fits the cap), the cursor moves past everything read, so it
 * always advances.
 */
import { defer, expand, from, race, timer, type Observable, type SchedulerLike, type Subscription } from 'rxjs';
import { switchMap } from 'rxjs/operators';
import type { ActorAddress } from '../core/address.js';
import type { Clock } from '../core/clock.js';
import type { Settings } from '../core/config.js';
import { ErrorCode, isKeepworkError } from '../core/errors.js';
import { invariant } from '../core/invariant.js';
import type { Logger } from '../core/logger.js';
import type { Random } from '../core/random.js';
import { compareKeys } from '../store/keys.js';
import { LIST_ASK_MAX, LIST_MAX_KEYS, type ObjectStore } from '../store/types.js';
import { dueBound, entryKey, parseEntryKey, tenantPrefix, type IndexEntry } from './keys.js';
import { EntrySorter, planSorted, type SweepNode } from './plan-sweep.js';
import { nextSweepDelayMs, waitsForRoom } from './sweep-cadence.js';

export type SweepSettings = Settings<
  | 'alarmSweepMs'
  | 'anyonesAfterMargins'
  | 'anyonesDeliveriesPerSweep'
  | 'deliveriesPerSweep'
  | 'marginMs'
  | 'sweepAdaptive'
  | 'sweepMinGapMs'
  | 'sweepPageEntries'
>;

/** The first LIST of a sweep asks for this many keys; each next one twice as many (to 1,000). */
export const FIRST_LIST_KEYS = 128;

/** What a sweep is built with: the bucket it reads, its time, randomness and schedule, its settings and log. */
export interface SweepSeams {
  store: ObjectStore;
  clock: Clock;
  random: Random;
  config: SweepSettings;
  log: Logger;
  /** The schedules' RxJS scheduler (test seam: the simulator's virtual clock); RxJS's own by default. */
  scheduler?: SchedulerLike;
}

/**
 * The node a sweep runs on, as the sweep sees it (main/node.ts implements it): who it is among
 * the live nodes, which actors it has in hand, where the entries it plans go, and how full its
 * delivery queue is.
 */
export interface SweepHost {
  /** This node as a plan shards entries: its id, and the tenants and classes it serves. */
  sweepNode(): SweepNode;
  /** The live nodes (this one among them), from a listing at most `maxAgeMs` old. */
  liveNodes(maxAgeMs: number): Promise<SweepNode[]>;
  /** The actor with this key is in flight or retrying here: the sweep leaves its entries alone. */
  isBusy(key: string): boolean;
  /** Offers an entry to the timer, with the generation that wrote it (tagged entries); false when it keeps what it holds. */
  offerEntry(address: ActorAddress, dueMs: number, generation?: number): boolean;
  /** Deliveries queued or running now (for "capacity is free"). */
  deliveryBacklog(): number;
  /** Resolves once the delivery queue has room for another sweep's deliveries (adaptive cadence); absent: never waits. */
  deliveryRoom?(): Promise<void>;
  /** The tenants to sweep: the node's own list, or those found in the index. */
  tenantsToSweep(): Promise<string[]>;
  /** One sweep of `tenant` ended (metrics). */
  swept?(tenant: string, result: SweepResult, durationMs: number): void;
}

export interface SweepResult {
  read: number;
  offered: number;
  /** Of those, entries of another node's shard (anyone's: overdue three margins). */
  offeredAnyones?: number;
  planned: number;
  /** The sweep stopped at its page limit, or its delivery cap left entries it could deliver behind: more are waiting. */
  full: boolean;
  /** Due time of the first entry not yet overdue enough, when the listing saw one. */
  nextDueMs?: number;
  /** Due time of the oldest entry read (index lag). */
  oldestDueMs?: number;
}

export class Sweeper {
  private readonly cursors = new Map<string, string>();
  /** Tenants whose last sweep filled its page (a backlog): the next one asks for the whole page at once. */
  private readonly backlogged = new Set<string>();
  private readonly running = new Map<string, Subscription>();
  private discovery: Subscription | undefined;
  /** The host's busy actors, as a plan asks for them. */
  private readonly busy: { has(key: string): boolean };

  constructor(
    private readonly d: SweepSeams,
    private readonly host: SweepHost,
  ) {
    this.busy = { has: (key) => host.isBusy(key) };
  }

  start(): void {
    const everyMs = this.d.config.alarmSweepMs;
    this.discovery = timer(0, everyMs, this.d.scheduler)
      .pipe(switchMap(() => from(this.host.tenantsToSweep().catch((e: unknown) => this.tenantsFailed(e)))))
      .subscribe((tenants) => tenants.forEach((t) => this.startTenant(t)));
  }

  /** Tenant discovery failed (the index listing): no new tenants this time; the next one tries again. */
  private tenantsFailed(e: unknown): string[] {
    this.d.log.warn({ err: e }, 'listing the index’s tenants failed; trying again at the next sweep');
    return [];
  }

  stop(): void {
    this.discovery?.unsubscribe();
    for (const s of this.running.values()) s.unsubscribe();
    this.running.clear();
  }

  private startTenant(tenant: string): void {
    if (this.running.has(tenant)) return;
    const once = () => defer(() => from(this.timed(tenant)));
    const sub = once()
      .pipe(expand((r) => this.wake(r).pipe(switchMap(once))))
      .subscribe({ error: (e: unknown) => this.d.log.error({ tenant, err: e }, 'sweep schedule stopped') });
    this.running.set(tenant, sub);
  }

  private async timed(tenant: string): Promise<SweepResult> {
    const t0 = this.d.clock.now();
    try {
      const r = await this.sweepTenant(tenant);
      this.host.swept?.(tenant, r, this.d.clock.now() - t0);
      return r;
    } catch (e) {
      if (isKeepworkError(e, ErrorCode.Internal)) this.d.log.error({ tenant, err: e }, 'sweep stopped: an invariant failed');
      else this.d.log.warn({ tenant, err: e }, 'sweep failed; trying again at the next one');
      return { read: 0, offered: 0, planned: 0, full: false };
    }
  }

  /**
   * When the next sweep of a tenant runs: after nextDelayMs — or, when a full sweep found the
   * delivery queue full (adaptive), as soon as the queue has room, within that delay. Waiting the
   * whole delay would leave a node idle once its queue drained (the stairs of a drain chart,
   * docs/benchmarks.md).
   */
  private wake(r: SweepResult): Observable<unknown> {
    const delay = timer(this.nextDelayMs(r), this.d.scheduler);
    const host = this.host;
    if (!host.deliveryRoom || !this.waitsForRoom(r)) return delay;
    const roomThenGap = defer(() => from(host.deliveryRoom!())).pipe(switchMap(() => timer(this.d.config.sweepMinGapMs, this.d.scheduler)));
    return race(delay, roomThenGap); // never more often than sweepMinGapMs, whatever the queue says
  }

  /** A full sweep (adaptive) with no room in the delivery queue: the next one waits for room. */
  waitsForRoom(r: SweepResult): boolean {
    return waitsForRoom(r, this.host.deliveryBacklog(), this.d.config);
  }

  nextDelayMs(r: SweepResult): number {
    return nextSweepDelayMs(r, this.host.deliveryBacklog(), this.d.clock.now(), this.d.config);
  }

  /** One sweep of one tenant. */
  async sweepTenant(tenant: string): Promise<SweepResult> {
    const { config } = this.d;
    const now = this.d.clock.now();
    const startCursor = this.cursors.get(tenant);
    const live = await this.host.liveNodes(config.sweepAdaptive ? Math.min(1_000, config.alarmSweepMs) : config.alarmSweepMs);
    const sorter = new EntrySorter({
      live,
      self: this.host.sweepNode(),
      busy: this.busy,
      nowMs: now,
      marginMs: config.marginMs,
      anyonesAfterMargins: config.anyonesAfterMargins,
    });
    const { entries, before, lastKey, reachedEnd, nextDueMs } = await this.read(
      tenant,
      dueBound(tenant, now - config.marginMs),
      sorter,
      live.length,
    );
    const plan = planSorted(sorter, {
      cap: config.deliveriesPerSweep,
      anyonesReserve: config.anyonesDeliveriesPerSweep,
      random: this.d.random,
    });
    const firstLeft = plan.ownLeftBehind[0];
    const resumeAfter = firstLeft === undefined ? undefined : before.get(firstLeft);
    const resumesAtLeft = firstLeft !== undefined && resumeAfter !== startCursor && resumeAfter !== undefined;
    const cursor = resumesAtLeft ? resumeAfter : reachedEnd ? undefined : (lastKey ?? startCursor);
    // The sweep's resumption: the cursor never moves past an own entry the delivery cap left out
    // (unless that entry was the first read: then it moves past everything read, so it advances).
    invariant(
      firstLeft === undefined || resumeAfter === startCursor || cursor === undefined || compareKeys(cursor, entryKey(firstLeft)) < 0,
      () => `the sweep of tenant ${tenant} would move its cursor to ${cursor}, past ${entryKey(firstLeft!)}, an own entry it did not offer`,
    );
    if (cursor === undefined) this.cursors.delete(tenant);
    else this.cursors.set(tenant, cursor);
    let offered = 0;
    let offeredAnyones = 0;
    for (const [i, e] of plan.deliveries.entries()) {
      if (!this.host.offerEntry(e.address, e.dueMs, e.tag?.generation)) continue;
      offered++;
      if (i >= plan.own) offeredAnyones++; // own entries come first in the plan
    }
    const full = !reachedEnd || plan.ownLeftBehind.length > 0 || plan.anyonesLeftBehind > 0;
    const oldestDueMs = entries.length ? Math.min(...entries.map((e) => e.dueMs)) : undefined;
    return { read: entries.length, offered, offeredAnyones, planned: plan.deliveries.length, full, nextDueMs, oldestDueMs };
  }

  /**
   * Lists from the cursor: at most sweepPageEntries entries, stopping at the first key ≥ bound, or
   * once the entries read fill the plan (`sorter`: reading on would only leave more behind).
   * Pages start smaller and double (FIRST_LIST_KEYS, then up to 1,000): the store cannot stop at
   * the bound itself, and most sweeps find few overdue entries — a 1,000-key page costs the folder
   * store 1,000 keys' worth of folder reads per sweep however few are due, while S3 answers 128
   * keys or 1,000 in one request alike. A sweep after one that stopped with more to read (a backlog
   * being drained) asks at once for what it expects to fill its plan: its cap for each live node
   * (its share of the entries), and a quarter more, within the page — one LIST on the folder
   * store, whose every LIST reads each name of a large due-time folder. Asking for the whole page
   * to offer only the cap of it would read a backlog's entries several times each before they are
   * offered.
   */
  private async read(tenant: string, bound: string, sorter: EntrySorter, liveNodes: number) {
    const entries: IndexEntry[] = [];
    /** For each entry, the key read just before it (a cursor that reads it again; undefined: the start). */
    const before = new Map<IndexEntry, string | undefined>();
    let startAfter = this.cursors.get(tenant);
    let previous = startAfter;
    let lastKey: string | undefined;
    let nextDueMs: number | undefined;
    let reachedEnd = false;
    const { sweepPageEntries: pageEntries, deliveriesPerSweep: cap, anyonesDeliveriesPerSweep: reserve } = this.d.config;
    const fills = () => sorter.fills(cap, reserve);
    const expected = Math.max(FIRST_LIST_KEYS, Math.ceil((cap * Math.max(1, liveNodes) * 5) / 4));
    let keysMax = this.backlogged.delete(tenant) ? Math.min(pageEntries, LIST_ASK_MAX, expected) : FIRST_LIST_KEYS;
    for (; entries.length < pageEntries && !fills(); keysMax = Math.min(LIST_MAX_KEYS, keysMax * 2)) {
      const want = Math.min(keysMax, pageEntries - entries.length);
      const page = await this.d.store.list({ prefix: tenantPrefix(tenant), startAfter, maxKeys: want });
      for (const key of page.keys) {
        if (compareKeys(key, bound) >= 0) {
          nextDueMs = parseEntryKey(key)?.dueMs;
          return { entries, before, lastKey, reachedEnd: true, nextDueMs };
        }
        lastKey = key;
        const e = parseEntryKey(key);
        if (e) (entries.push(e), before.set(e, previous), sorter.add(e));
        previous = key;
      }
      if (page.continuation === undefined || page.keys.length === 0) {
        reachedEnd = true;
        break;
      }
      startAfter = lastKey;
    }
    if (!reachedEnd) this.backlogged.add(tenant); // stopped at the page or a full plan: more to read
    return { entries, before, lastKey, reachedEnd, nextDueMs };
  }
}
