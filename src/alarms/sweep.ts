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
import { defer, expand, from, race, switchMap, timer, type Observable, type SchedulerLike, type Subscription } from '../core/rx.js';
import type { ActorAddress } from '../core/address.js';
import type { Clock } from '../core/clock.js';
import type { Settings } from '../core/config.js';
import { ErrorCode, isKeepworkError } from '../core/errors.js';
import { invariant } from '../core/invariant.js';
import type { Logger } from '../core/logger.js';
import type { Random } from '../core/random.js';
import { compareKeys } from '../store/keys.js';
import { LIST_ASK_MAX, LIST_MAX_KEYS, type ListPage, type ObjectStore } from '../store/types.js';
import {
  afterShard,
  afterShardedArea,
  dueBound,
  entryKey,
  parseEntryKey,
  shardOfKey,
  shardPrefix,
  shardedAreaPrefix,
  tenantPrefix,
  type IndexEntry,
} from './keys.js';
import { EntrySorter, planSorted, type Plan, type SortInput, type SweepNode } from './plan-sweep.js';
import type { ProtocolRules } from './rules.js';
import { servesTenant } from './shard.js';
import { OwnedShards } from './shard-owners.js';
import { minGapLeftMs, nextSweepDelayMs, waitsForRoom, walksOtherShard, type OtherShardWalk } from './sweep-cadence.js';

export type SweepSettings = Settings<
  | 'alarmSweepMs'
  | 'anyonesAfterMargins'
  | 'anyonesDeliveriesPerSweep'
  | 'deliveriesPerSweep'
  | 'indexShards'
  | 'marginMs'
  | 'otherShardWalkMs'
  | 'sweepAdaptive'
  | 'sweepMinGapMs'
  | 'sweepPageEntries'
>;

/** The first LIST of a sweep asks for this many keys; each next one twice as many (to 1,000). */
export const FIRST_LIST_KEYS = 128;

/** LISTs of a sharded sweep's own shards in flight at once. */
export const SHARD_LISTS_IN_FLIGHT = 32;

/**
 * One walk of a sweep: the unsharded layout, one own shard, or another node's shard (the slow
 * walk). `id` keys its cursor; `ownShard` is how its entries are sorted (EntrySorter.add).
 */
interface Walk {
  id: string;
  /** Where a walk with no cursor starts (undefined: the prefix's start). */
  start: string | undefined;
  entries: IndexEntry[];
  before: Map<IndexEntry, string | undefined>;
  lastKey: string | undefined;
  reachedEnd: boolean;
  nextDueMs: number | undefined;
  ownShard?: boolean;
  /** The slow walk: no cursor of its own entries (it moves on by folder). */
  slow?: true;
  /** An own shard's walk read its drawn start's part of a block to its end (Rotation): the next part follows. */
  partEnd?: true;
}

/**
 * An own shard's walk through a block of entries all due at one millisecond, started at an entry
 * drawn at random among the first ones listed (readShard): `rest` from the drawn entry to the
 * block's end, then `wrap` from the folder's start up to the drawn entry, then on past the block
 * as usual. A folder lists such a block in name order; walks that all started at its lowest names
 * would have every node of a fleet take holds of, and upload the state of, actors of the same few
 * name ranges at once (docs/alarm-index.md "A sharded index"). The keys listed to draw the start
 * are kept: the walk takes its entries from them while they last (the wrap always does), and
 * lists from its cursor only past them, so each key is listed about once.
 */
interface Rotation {
  part: 'rest' | 'wrap';
  /** The keys from the folder's start listed to draw the start, all of the block's due time. */
  block: string[];
  /** The drawn entry's index in `block`: `rest` starts at it, `wrap` ends before it. */
  at: number;
  /** Whether the listing of `block` met the block's end (a later due time, or the folder's end). */
  blockEnded: boolean;
  /** The block's end: the due bound of its due time (every key due later is at or after it). */
  end: string;
}

/** What a sweep is built with: the bucket it reads, its time, randomness and schedule, its settings and log. */
export interface SweepSeams {
  store: ObjectStore;
  clock: Clock;
  random: Random;
  config: SweepSettings;
  log: Logger;
  /** The schedules' RxJS scheduler (test seam: the simulator's virtual clock); RxJS's own by default. */
  scheduler?: SchedulerLike;
  /** SAFE_RULES by default; the simulator's unsafe variants turn one off (walkOtherShards). */
  rules?: ProtocolRules;
  /** Who lists which shard folder, remembered: one per Sweeper by default; the fleet model's nodes share one. */
  shardOwners?: OwnedShards;
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
  offerEntry(address: ActorAddress, dueMs: number, generation?: number, shard?: number): boolean;
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
  /** When the sweep started (the cadence spaces sweeps start to start). */
  startedMs?: number;
}

export class Sweeper {
  private readonly cursors = new Map<string, string>();
  /** Tenants whose last sweep filled its page (a backlog): the next one asks for the whole page at once. */
  private readonly backlogged = new Set<string>();
  /** Tenants whose index has (or had, at the last look) sharded entries: their sweeps walk the sharded area too. */
  private readonly shardedSeen = new Set<string>();
  /** Own shard folders whose last walk stopped with more to read (at most the shards of the tenants swept). */
  private readonly shardsBehind = new Set<string>();
  /** Own shard folders whose last walk stopped at an entry not yet overdue: that entry's due time. */
  private readonly shardNextDue = new Map<string, number>();
  /** Own shard folders whose walk is going through a block due at one millisecond from a drawn start. */
  private readonly rotations = new Map<string, Rotation>();
  /** Own shard folders whose walk read through and stays at its end: since when (startsOver). */
  private readonly atEndSince = new Map<string, number>();
  /** Per tenant, the folder the slow walk of other nodes' shards walked last (it resumes after it). */
  private readonly slowCursors = new Map<string, number>();
  /** Per tenant, the last walk of another node's folder: when its sweep started, whether it found work (walksOtherShard). */
  private readonly slowWalks = new Map<string, OtherShardWalk>();
  private readonly running = new Map<string, Subscription>();
  private discovery: Subscription | undefined;
  /** The shards this node owns, per tenant, for the live set last seen (recomputed when it changes). */
  private readonly owned: OwnedShards;
  /** The host's busy actors, as a plan asks for them. */
  private readonly busy: { has(key: string): boolean };

  constructor(
    private readonly d: SweepSeams,
    private readonly host: SweepHost,
  ) {
    this.busy = { has: (key) => host.isBusy(key) };
    this.owned = d.shardOwners ?? new OwnedShards();
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
      r.startedMs = t0;
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
    const gapLeft = () => minGapLeftMs(r.startedMs, this.d.clock.now(), this.d.config);
    const roomThenGap = defer(() => from(host.deliveryRoom!())).pipe(switchMap(() => timer(gapLeft(), this.d.scheduler)));
    return race(delay, roomThenGap); // never more often than sweepMinGapMs start to start, whatever the queue says
  }

  /** A full sweep (adaptive) with no room in the delivery queue: the next one waits for room. */
  waitsForRoom(r: SweepResult): boolean {
    return waitsForRoom(r, this.host.deliveryBacklog(), this.d.config);
  }

  nextDelayMs(r: SweepResult): number {
    return nextSweepDelayMs(r, this.host.deliveryBacklog(), this.d.clock.now(), this.d.config);
  }

  /**
   * One sweep of one tenant. The unsharded layout is walked as the design says. A sharded index
   * (`indexShards` > 1, or sharded entries met in the tenant's index) adds one LIST per shard this
   * node owns (SHARD_LISTS_IN_FLIGHT at a time, within what the page leaves) and, every
   * otherShardWalkMs or after a walk that found work (walksOtherShard), one LIST of the next
   * non-empty shard folder of any other node (the slow walk: anyone's only). All walks are planned
   * together, in due order; each keeps its own cursor.
   */
  async sweepTenant(tenant: string): Promise<SweepResult> {
    const { config } = this.d;
    const now = this.d.clock.now();
    const live = await this.host.liveNodes(config.sweepAdaptive ? Math.min(1_000, config.alarmSweepMs) : config.alarmSweepMs);
    const self = this.host.sweepNode();
    const sortInput: SortInput = {
      live,
      self,
      busy: this.busy,
      nowMs: now,
      marginMs: config.marginMs,
      anyonesAfterMargins: config.anyonesAfterMargins,
    };
    const sharded = config.indexShards > 1 || this.shardedSeen.has(tenant);
    const dueBefore = now - config.marginMs;
    const sorter = new EntrySorter(sortInput);
    const unshardedPage = config.indexShards > 1 ? Math.ceil(config.sweepPageEntries / 2) : config.sweepPageEntries;
    const [unsharded, shardWalks] = await Promise.all([
      this.read(tenant, dueBound(tenant, dueBefore), sorter, live.length, unshardedPage, sharded),
      sharded ? this.readShards(tenant, now, live, self, config.sweepPageEntries - unshardedPage) : [],
    ]);
    const walks: Walk[] = [unsharded, ...shardWalks];
    const planSettings = { cap: config.deliveriesPerSweep, anyonesReserve: config.anyonesDeliveriesPerSweep, random: this.d.random };
    const plan = planSorted(walks.length === 1 ? sorter : merged(walks, sortInput), planSettings);
    for (const w of walks) this.moveCursor(tenant, w, plan, now);
    const slow = shardWalks.find((w) => w.slow);
    if (slow) this.slowWalks.get(tenant)!.took = foundWork(slow, plan);
    let offered = 0;
    let offeredAnyones = 0;
    for (const [i, e] of plan.deliveries.entries()) {
      if (!this.host.offerEntry(e.address, e.dueMs, e.tag?.generation, e.shard)) continue;
      offered++;
      if (i >= plan.own) offeredAnyones++; // own entries come first in the plan
    }
    const reachedEnd = walks.every((w) => w.reachedEnd);
    const full = !reachedEnd || plan.ownLeftBehind.length > 0 || plan.anyonesLeftBehind > 0;
    const entries = walks.flatMap((w) => w.entries);
    const oldestDueMs = entries.length ? Math.min(...entries.map((e) => e.dueMs)) : undefined;
    const nexts = walks.map((w) => w.nextDueMs).filter((t): t is number => t !== undefined);
    const nextDueMs = nexts.length ? Math.min(...nexts) : undefined;
    return { read: entries.length, offered, offeredAnyones, planned: plan.deliveries.length, full, nextDueMs, oldestDueMs };
  }

  /**
   * Where a walk resumes: never past an own entry the delivery cap left out (it stops just before
   * the first one — where it started, when that is the first entry it read and the plan took own
   * entries of other walks, due no later); past everything read when the plan took no own entry
   * at all (every delivery kept for anyone's), so it always advances; past what it read when it
   * stopped early; from its start once it read through. A walk moved past own entries other walks
   * outran would leave them behind its cursor until it read through and started again: a sharded
   * sweep would then find its walks at their ends with those entries due, and wait alarmSweepMs.
   * An own shard's walk that read through stays at its end for alarmSweepMs before it starts
   * over (startsOver).
   */
  private moveCursor(tenant: string, w: Walk, plan: Plan, now: number): void {
    if (w.slow) return;
    const startCursor = this.cursors.get(w.id) ?? w.start;
    const firstLeft = plan.ownLeftBehind.find((e) => w.before.has(e));
    const resumeAfter = firstLeft === undefined ? undefined : w.before.get(firstLeft);
    const resumesAtLeft = firstLeft !== undefined && (resumeAfter !== startCursor || plan.own > 0);
    const atEnd = w.lastKey ?? startCursor;
    const cursor = resumesAtLeft
      ? resumeAfter
      : w.partEnd
        ? this.nextPart(w.id)
        : w.reachedEnd && this.startsOver(w, now)
          ? undefined
          : atEnd;
    invariant(
      firstLeft === undefined || resumeAfter === startCursor || cursor === undefined || compareKeys(cursor, entryKey(firstLeft)) < 0,
      () => `the sweep of tenant ${tenant} would move its cursor to ${cursor}, past ${entryKey(firstLeft!)}, an own entry it did not offer`,
    );
    if (cursor === undefined) this.cursors.delete(w.id);
    else this.cursors.set(w.id, cursor);
  }

  /** A rotated walk's rest was listed to the block's end: the wrap follows, from the folder's start. */
  private nextPart(id: string): undefined {
    toWrap(this.rotations.get(id)!);
    return undefined;
  }

  /**
   * Whether a walk that read through starts over from its folder's beginning at the next sweep.
   * The unsharded layout's walk always does (the decision record's sweep). An own shard's walk
   * stays at its end for alarmSweepMs first, where entries listed later (due later) are still
   * read at once, then starts over. What starting over finds is what sits behind the cursor:
   * entries the node has in hand (offered, queued, running, or run with their delete not landed
   * yet), which it skips, and the rare entry still to deliver — an offer the full timer refused,
   * an entry listed late at an earlier due time. Starting over at once re-read the first kind at
   * every sweep of a drain once a folder's backlog was all in hand; waiting costs the second kind
   * at most alarmSweepMs, the fixed cadence's own pace.
   */
  private startsOver(w: Walk, now: number): boolean {
    if (w.ownShard !== true) return true;
    if (this.d.rules?.startOverOwnShards === false) return false; // TEST-ONLY: the unsafe variant noStartOver
    const since = this.atEndSince.get(w.id);
    if (since === undefined) this.atEndSince.set(w.id, now);
    if (since === undefined || now - since < this.d.config.alarmSweepMs) return false;
    this.atEndSince.delete(w.id);
    return true;
  }

  /**
   * Lists from the cursor: at most `pageEntries` entries, stopping at the first key ≥ bound, or
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
   *
   * This is the walk of the unsharded layout. The tenant's sharded keys list before it: a walk
   * that meets one notes that the tenant has sharded entries and jumps past them all; once the
   * tenant is known to have some (`skipSharded`), a walk starts past them.
   */
  private async read(tenant: string, bound: string, sorter: EntrySorter, liveNodes: number, pageEntries: number, skipSharded: boolean) {
    const start = skipSharded ? afterShardedArea(tenant) : undefined;
    const w: Walk = { id: tenant, start, entries: [], before: new Map(), lastKey: undefined, reachedEnd: false, nextDueMs: undefined };
    const { entries, before } = w;
    let startAfter = this.cursors.get(tenant) ?? start;
    let previous = startAfter;
    const { deliveriesPerSweep: cap, anyonesDeliveriesPerSweep: reserve } = this.d.config;
    const fills = () => sorter.fills(cap, reserve);
    const expected = Math.max(FIRST_LIST_KEYS, Math.ceil((cap * Math.max(1, liveNodes) * 5) / 4));
    let keysMax = this.backlogged.delete(tenant) ? Math.min(pageEntries, LIST_ASK_MAX, expected) : FIRST_LIST_KEYS;
    for (; entries.length < pageEntries && !fills(); keysMax = Math.min(LIST_MAX_KEYS, keysMax * 2)) {
      const want = Math.min(keysMax, pageEntries - entries.length);
      const page = await this.d.store.list({ prefix: tenantPrefix(tenant), startAfter, maxKeys: want });
      let jumped = false;
      for (const key of page.keys) {
        if (shardOfKey(tenant, key) !== undefined) {
          this.shardedSeen.add(tenant);
          startAfter = previous = afterShardedArea(tenant);
          jumped = true;
          break;
        }
        if (compareKeys(key, bound) >= 0) {
          w.nextDueMs = parseEntryKey(key)?.dueMs;
          w.reachedEnd = true;
          return w;
        }
        w.lastKey = key;
        const e = parseEntryKey(key);
        if (e) (entries.push(e), before.set(e, previous), sorter.add(e));
        previous = key;
      }
      if (jumped) continue;
      if (page.continuation === undefined || page.keys.length === 0) {
        w.reachedEnd = true;
        break;
      }
      startAfter = w.lastKey;
    }
    if (!w.reachedEnd) this.backlogged.add(tenant); // stopped at the page or a full plan: more to read
    return w;
  }

  /**
   * The sharded walks: one LIST of each shard this node owns (rendezvous over the live nodes
   * serving the tenant), at most SHARD_LISTS_IN_FLIGHT at once, and the slow walk of one other
   * shard folder alongside when it is due (slowWalkDue). Each own shard is asked for its share
   * of a plan, the delivery cap: shared among the shards whose last walk stopped with more to
   * read (a backlog), or among all of them when none did or for those that read through — every
   * entry of an own shard is the node's, so more would only be read again by the next sweeps
   * (the cursor stops before the first one the cap left out), and one backlogged shard among
   * many (a dead node's, just taken over) still fills the plan. The asks together stay within
   * `pageEntries`. A shard whose last walk stopped at an entry not yet overdue, and still not,
   * is asked for one key: whether anything listed since is due (most sweeps of a large index of
   * pending alarms), not a page of entries past the due bound.
   */
  private async readShards(tenant: string, now: number, live: readonly SweepNode[], self: SweepNode, pageEntries: number) {
    const { indexShards, deliveriesPerSweep, marginMs } = this.d.config;
    const dueBefore = now - marginMs;
    const nodeIds = live.filter((n) => servesTenant(n, tenant)).map((n) => n.nodeId);
    const owned = indexShards > 1 ? this.owned.of(tenant, indexShards, nodeIds, self.nodeId) : [];
    this.dropRotations(tenant, owned);
    const isBehind = (shard: number) => this.shardsBehind.has(shardPrefix(tenant, shard));
    const behind = owned.filter(isBehind).length;
    let behindBefore = 0;
    const wanted = owned.map((shard, i) =>
      isBehind(shard) ? part(deliveriesPerSweep, behind, behindBefore++) : part(deliveriesPerSweep, owned.length, i),
    );
    const fit = Math.min(
      1,
      Math.max(0, pageEntries) /
        Math.max(
          1,
          wanted.reduce((a, b) => a + b, 0),
        ),
    );
    const ask = (shard: number, i: number) =>
      (this.shardNextDue.get(shardPrefix(tenant, shard)) ?? -Infinity) > dueBefore
        ? 1
        : Math.min(LIST_MAX_KEYS, Math.floor(wanted[i]! * fit));
    const asks = new Map(owned.map((shard, i) => [shard, Math.max(1, ask(shard, i))]));
    const slow = this.slowWalkDue(tenant)
      ? this.readOtherShard(tenant, now, (shard) => this.owned.owns(tenant, indexShards, nodeIds, self.nodeId, shard))
      : undefined;
    const [walks, other] = await Promise.all([this.readOwnShards(tenant, owned, dueBefore, asks), slow]);
    return other ? [...walks, other] : walks;
  }

  /** Rotated walks of shards this node no longer owns end (their kept keys would be stale by the time it owned them again). */
  private dropRotations(tenant: string, owned: readonly number[]): void {
    if (this.rotations.size === 0) return;
    const ids = new Set(owned.map((shard) => shardPrefix(tenant, shard)));
    const area = shardedAreaPrefix(tenant);
    for (const id of this.rotations.keys()) {
      if (!id.startsWith(area) || ids.has(id)) continue;
      this.rotations.delete(id);
      this.cursors.delete(id); // owned again, its walk starts from the folder's start
    }
  }

  /** Whether this sweep of `tenant` walks another node's folder (walksOtherShard); notes when it does. */
  private slowWalkDue(tenant: string): boolean {
    if (this.d.rules?.walkOtherShards === false) return false; // TEST-ONLY: the unsafe variant noOtherShards
    const now = this.d.clock.now();
    if (!walksOtherShard(this.slowWalks.get(tenant), now, this.d.config)) return false;
    this.slowWalks.set(tenant, { startedMs: now, took: false });
    return true;
  }

  /** The own shards' walks, SHARD_LISTS_IN_FLIGHT LISTs at a time; notes which stopped with more to read. */
  private async readOwnShards(tenant: string, owned: readonly number[], dueBefore: number, asks: Map<number, number>): Promise<Walk[]> {
    const walks: Walk[] = [];
    for (let i = 0; i < owned.length; i += SHARD_LISTS_IN_FLIGHT) {
      const batch = owned.slice(i, i + SHARD_LISTS_IN_FLIGHT);
      walks.push(...(await Promise.all(batch.map((shard) => this.readShard(tenant, shard, dueBefore, asks.get(shard)!)))));
    }
    for (const w of walks) {
      if (w.reachedEnd) this.shardsBehind.delete(w.id);
      else this.shardsBehind.add(w.id);
      if (w.nextDueMs === undefined) this.shardNextDue.delete(w.id);
      else this.shardNextDue.set(w.id, w.nextDueMs);
    }
    return walks;
  }

  /**
   * One LIST of an own shard's folder from its cursor, up to the due bound. A walk starting at the
   * folder's beginning whose page is all due at one overdue millisecond, with more to read, lists
   * on (one more LIST, up to LIST_MAX_KEYS) to the end of that millisecond or of the page, draws
   * one of the entries it read as its start, and walks the block from there (Rotation): entries
   * due at one time have no order among themselves. A rotated walk takes its entries from the keys
   * it kept while they last, and lists only past them.
   */
  private async readShard(tenant: string, shard: number, dueBefore: number, maxKeys: number): Promise<Walk> {
    const id = shardPrefix(tenant, shard);
    const w = ownWalk(id);
    let previous = this.cursors.get(id);
    let rotation = this.rotations.get(id);
    if (rotation?.part === 'wrap') {
      const i = keysAfter(rotation.block, previous);
      if (i < rotation.at) return kept(w, rotation.block, i, Math.min(rotation.at, i + maxKeys), previous);
      // The whole block is read: on past it, as an unrotated walk.
      this.rotations.delete(id);
      this.cursors.set(id, (previous = rotation.end));
      rotation = undefined;
    } else if (rotation?.part === 'rest') {
      const { block, at } = rotation;
      const i = Math.max(at, keysAfter(block, previous));
      if (i < block.length) return kept(w, block, i, Math.min(block.length, i + maxKeys), previous);
      if (rotation.blockEnded) {
        toWrap(rotation);
        this.cursors.delete(id);
        return kept(w, block, 0, Math.min(at, maxKeys), undefined);
      }
    }
    const dueEnd = dueBound(tenant, dueBefore, shard);
    const bound = rotation !== undefined && compareKeys(rotation.end, dueEnd) < 0 ? rotation.end : dueEnd;
    const page = await this.d.store.list({ prefix: id, startAfter: previous, maxKeys });
    if (rotation === undefined && previous === undefined) {
      const rotated = await this.rotated(id, tenant, shard, page, maxKeys, dueEnd);
      if (rotated) return rotated;
    }
    for (const key of page.keys) {
      if (compareKeys(key, bound) >= 0) {
        w.nextDueMs = parseEntryKey(key)?.dueMs;
        w.reachedEnd = true;
        break;
      }
      w.lastKey = key;
      const e = parseEntryKey(key);
      if (e) (w.entries.push(e), w.before.set(e, previous));
      previous = key;
    }
    if (!w.reachedEnd) w.reachedEnd = page.continuation === undefined || page.keys.length === 0;
    if (rotation && w.reachedEnd) {
      // The rest listed to the block's end: the wrap follows (nextPart), not the folder's end.
      w.reachedEnd = false;
      w.nextDueMs = undefined;
      w.partEnd = true;
    }
    return w;
  }

  /**
   * The first walk of a block due at one millisecond (readShard), from an entry drawn among the
   * first ones listed: undefined when the page is not such a block, or the draw is its first entry.
   */
  private async rotated(
    id: string,
    tenant: string,
    shard: number,
    page: ListPage,
    maxKeys: number,
    dueEnd: string,
  ): Promise<Walk | undefined> {
    const first = page.keys[0];
    const due = first === undefined ? undefined : parseEntryKey(first)?.dueMs;
    const sameDue = (key: string) => parseEntryKey(key)?.dueMs === due;
    if (due === undefined || maxKeys < 2 || page.keys.length < maxKeys || page.continuation === undefined) return undefined;
    if (compareKeys(first!, dueEnd) >= 0 || !page.keys.every(sameDue)) return undefined;
    const more = await this.d.store.list({ prefix: id, startAfter: page.keys.at(-1), maxKeys: LIST_MAX_KEYS });
    const block = [...page.keys];
    let blockEnded = more.continuation === undefined;
    for (const key of more.keys) {
      if (!sameDue(key)) {
        blockEnded = true;
        break;
      }
      block.push(key);
    }
    const at = this.d.random.int(block.length);
    if (at === 0) return undefined; // the walk as it is, from the folder's start
    this.rotations.set(id, { part: 'rest', block, at, blockEnded, end: dueBound(tenant, due, shard) });
    return kept(ownWalk(id), block, at, Math.min(block.length, at + maxKeys), block[at - 1]);
  }

  /**
   * The slow walk: the next non-empty shard folder after the one walked last (round robin over
   * whatever folders exist, whatever shard count wrote them; the LIST starts past the folders
   * this node owns next in line, so a walk every otherShardWalkMs is rarely spent on one of its
   * own), its entries overdue enough to be anyone's. It is how entries of a shard whose owner is
   * dead, or whose owner this node disagrees about, are still delivered. A folder this node owns
   * is left to its own walk, unless it is past this node's shard count (written under a larger
   * one, owned with the shard of its low bits): its entries are then this node's own, one margin
   * overdue. With one shard of its own, a
   * node sorts these entries by their addresses, as unsharded ones, and lists a page of the area
   * (FIRST_LIST_KEYS). With more, it first lists one key, the folder's earliest entry: only when
   * that one is ready (anyone's, or one margin overdue in a folder of its own) does a page of the
   * folder follow, read up to that same bound — entries not yet anyone's would only be skipped,
   * and a node draining its own backlog walks a folder every otherShardWalkMs. Finding the area
   * empty ends the tenant's sharded walks until a sharded key is met again.
   */
  private async readOtherShard(tenant: string, now: number, owns: (shard: number) => boolean): Promise<Walk | undefined> {
    const { indexShards, marginMs, anyonesAfterMargins } = this.d.config;
    const last = this.slowCursors.get(tenant);
    let next = last === undefined ? 0 : last + 1;
    if (indexShards > 1) while (next < indexShards && owns(next)) next++; // the own walks list those
    const startAfter = next === 0 ? undefined : afterShard(tenant, next - 1);
    const maxKeys = indexShards > 1 ? 1 : FIRST_LIST_KEYS;
    const probe = await this.d.store.list({ prefix: shardedAreaPrefix(tenant), startAfter, maxKeys });
    const first = probe.keys[0];
    const shard = first === undefined ? undefined : shardOfKey(tenant, first);
    if (shard === undefined) {
      this.slowCursors.delete(tenant);
      if (startAfter === undefined && indexShards === 1) this.shardedSeen.delete(tenant);
      return undefined;
    }
    this.slowCursors.set(tenant, shard);
    const own = indexShards > 1 && owns(shard);
    if (own && shard < indexShards) return undefined;
    const w: Walk = {
      id: `${tenant}/slow`,
      start: undefined,
      entries: [],
      before: new Map(),
      lastKey: undefined,
      reachedEnd: true,
      nextDueMs: undefined,
    };
    w.slow = true;
    if (indexShards > 1) w.ownShard = own;
    const readyBefore = indexShards > 1 && !own ? now - anyonesAfterMargins * marginMs : now - marginMs;
    const bound = dueBound(tenant, readyBefore, shard);
    let keys = probe.keys;
    if (indexShards > 1) {
      if (compareKeys(first!, bound) >= 0) return w; // its earliest entry is not ready: none is
      keys = (await this.d.store.list({ prefix: shardPrefix(tenant, shard), maxKeys: FIRST_LIST_KEYS })).keys;
    }
    for (const key of keys) {
      if (shardOfKey(tenant, key) !== shard || compareKeys(key, bound) >= 0) break;
      const e = parseEntryKey(key);
      if (e) (w.entries.push(e), w.before.set(e, undefined));
    }
    return w;
  }
}

/** Part `i` of `total` split into `n` as evenly as whole keys go (the n parts add up to `total`). */
function part(total: number, n: number, i: number): number {
  return Math.floor(total / n) + (i < total % n ? 1 : 0);
}

/**
 * Whether the slow walk found work to come back for at the next sweep: the plan took entries of
 * its folder, and left none of the node's other own entries behind (a node busy with its own
 * backlog helps at the slow cadence, with the anyone's reserve of each walk it makes).
 */
function foundWork(slow: Walk, plan: Plan): boolean {
  return plan.deliveries.some((e) => slow.before.has(e)) && plan.ownLeftBehind.every((e) => slow.before.has(e));
}

/** The entries of several walks sorted together, in due order (a stable merge: each walk lists in due order). */
function merged(walks: readonly Walk[], p: SortInput): EntrySorter {
  const sorter = new EntrySorter(p);
  const all = walks.flatMap((w) => w.entries.map((e) => ({ e, own: w.ownShard })));
  all.sort((a, b) => a.e.dueMs - b.e.dueMs);
  for (const { e, own } of all) sorter.add(e, own);
  return sorter;
}

/** A rotation's rest is read: its wrap follows, which needs only the keys before the drawn one. */
function toWrap(r: Rotation): void {
  r.part = 'wrap';
  r.block.length = r.at;
}

/** A walk of an own shard folder, empty. */
function ownWalk(id: string): Walk {
  return {
    id,
    start: undefined,
    entries: [],
    before: new Map(),
    lastKey: undefined,
    reachedEnd: false,
    nextDueMs: undefined,
    ownShard: true,
  };
}

/** The index of the first of `keys` (in key order) after `cursor` (0 when undefined). */
function keysAfter(keys: readonly string[], cursor: string | undefined): number {
  if (cursor === undefined) return 0;
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (compareKeys(keys[mid]!, cursor) > 0) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** A rotated walk's entries taken from its kept keys, `from` to before `to`, after `previous`. */
function kept(w: Walk, keys: readonly string[], from: number, to: number, previous: string | undefined): Walk {
  for (let i = from; i < to; i++) {
    const key = keys[i]!;
    const e = parseEntryKey(key)!;
    w.entries.push(e);
    w.before.set(e, previous);
    w.lastKey = previous = key;
  }
  return w;
}
