/**
 * When the next sweep of a tenant runs (docs/alarm-index.md "The sweep"), as pure functions of the last sweep's
 * outcome, the delivery backlog and the time; the Sweeper (sweep.ts) arms its timers with them.
 *
 *   fixed (sweepAdaptive false, the design's)  every alarmSweepMs
 *   adaptive  at once (sweepMinGapMs) after a full sweep when the delivery queue has room; else at
 *             the next entry's due time + margin, within [sweepMinGapMs, alarmSweepMs]; with no
 *             next entry seen, alarmSweepMs. A full sweep with no room waits for room instead.
 *
 * sweepMinGapMs spaces sweeps start to start (when the outcome says when its sweep started): a
 * sweep of a backlog offers at most deliveriesPerSweep, so a gap counted from its end would add
 * the sweep's own LIST round trips to every cycle — on S3 (a LIST of 50–150 ms, one round of the
 * layout, own shards and the slow walk) a node delivering 256 every 400 ms, half what its cores
 * allow, its queue idle between sweeps.
 *
 * The slow walk of a sharded index (one other node's folder, sweep.ts) goes with a sweep that
 * starts otherShardWalkMs or more after the last one that walked it, start to start, or right
 * after a walk that found entries to deliver (more may follow them): a sweep of the node's own
 * backlog (every sweepMinGapMs) leaves it out, an idle one (every alarmSweepMs, the default of
 * otherShardWalkMs) takes it, as the fixed cadence does every time.
 */
import type { Settings } from '../core/config.js';

export type CadenceSettings = Settings<'alarmSweepMs' | 'sweepAdaptive' | 'sweepMinGapMs' | 'marginMs' | 'deliveriesPerSweep'>;

/** What the cadence reads of a sweep's result. */
export interface SweepOutcome {
  /** The sweep stopped at its page limit or its delivery cap: more may be waiting. */
  full: boolean;
  /** Due time of the first entry not yet overdue enough, when the listing saw one. */
  nextDueMs?: number;
  /** When the sweep started (absent: the gap counts from now). */
  startedMs?: number;
}

/** What is left of sweepMinGapMs after a sweep that started at `startedMs` (all of it when unknown). */
export function minGapLeftMs(startedMs: number | undefined, nowMs: number, s: Settings<'sweepMinGapMs'>): number {
  return startedMs === undefined ? s.sweepMinGapMs : Math.max(0, Math.min(s.sweepMinGapMs, startedMs + s.sweepMinGapMs - nowMs));
}

/** The delay before the next sweep; `backlog`: deliveries queued or running now. */
export function nextSweepDelayMs(r: SweepOutcome, backlog: number, nowMs: number, s: CadenceSettings): number {
  if (!s.sweepAdaptive) return s.alarmSweepMs;
  const gap = minGapLeftMs(r.startedMs, nowMs, s);
  if (r.full && backlog < s.deliveriesPerSweep) return gap;
  if (r.nextDueMs === undefined) return s.alarmSweepMs;
  const untilReady = r.nextDueMs + s.marginMs - nowMs;
  return Math.max(gap, Math.min(s.alarmSweepMs, untilReady));
}

/** The last walk of another node's shard folder: when its sweep started, and whether the plan took any of its entries. */
export interface OtherShardWalk {
  startedMs: number;
  took: boolean;
}

/** Whether a sweep starting at `nowMs` walks another node's shard folder, after `last` (undefined: none yet). */
export function walksOtherShard(last: OtherShardWalk | undefined, nowMs: number, s: Settings<'otherShardWalkMs'>): boolean {
  return last === undefined || last.took || nowMs - last.startedMs >= s.otherShardWalkMs;
}

/** A full sweep (adaptive) with no room in the delivery queue: the next one waits for room. */
export function waitsForRoom(r: SweepOutcome, backlog: number, s: Settings<'sweepAdaptive' | 'deliveriesPerSweep'>): boolean {
  return s.sweepAdaptive && r.full && backlog >= s.deliveriesPerSweep;
}
