/**
 * The chaos run's checks over the whole history: what the client saw (every attempt of every op,
 * workload.ts), what the bucket's committed heads hold (bucket-view.ts), and when faults were in
 * force (faults.ts). Pure functions: inputs in, violations out. A log row's `at` is its node's
 * clock, which the run skews within skewBoundMs; `wall` is the machine's, which the harness's
 * times are compared with.
 *
 *   durable      every acknowledged durable op is in its actor's committed log exactly once
 *                (online: those acknowledged before the read began)
 *   once         no op id appears twice in any log (a repeated idempotency key never applied twice,
 *                a plain call never applied twice)
 *   deleted      an acknowledged destroy leaves the actor deleted (or re-created only by requests
 *                that landed after it)
 *   linearizable durable calls per actor, in the committed log's order: each acknowledged one's
 *                reply names its own row and counts the durable applies up to it, and one
 *                acknowledged before another was first sent comes before it in the log
 *   chain        per actor, one writer (node and epoch) per hold generation, and generations
 *                never going back along the chain
 *   alarms       walking each log in commit order: a run is of the armed alarm (never of a cleared
 *                or replaced one), once per point, never before its time (by the clock of the node
 *                that ran it; by the machine's, never more than skewBoundMs before it); an armed
 *                alarm is not left unfired past the bound (replaced, or at the end)
 *   lateness     run time − scheduled time of every alarm run; those outside fault windows must be
 *                within lease + grace + a sweep + slack
 */
import type { ActorView, LogRow } from './bucket-view.js';
import type { AnyWindow } from './faults.js';
import { actorName, MARGIN_MS, TIMINGS } from './plan.js';
import type { Outcome, Violation } from './workload.js';

/** A committed alarm must have run this long after its time: 4 margins + retryMaxMs + 2 sweeps + 5 s. */
export const ALARM_BOUND_MS = 4 * MARGIN_MS + TIMINGS.retryMaxMs + 2 * TIMINGS.alarmSweepMs + 5_000;
/** An alarm due outside any fault window runs within lease + grace + a sweep + this. */
export const QUIET_SLACK_MS = 5_000;
export const QUIET_BOUND_MS = MARGIN_MS + TIMINGS.alarmSweepMs + QUIET_SLACK_MS;

const EFFECT_KINDS = new Set(['apply', 'arm', 'clear']);

/** Acknowledged durable ops (acked before `before`) missing from, or doubled in, their actor's committed log. */
export function checkDurables(outcomes: readonly Outcome[], views: ReadonlyMap<string, ActorView>, before: number, now: number) {
  const out: Violation[] = [];
  for (const { o, actor, view, rows } of ackedDurables(outcomes, views)) {
    if (o.ackedAt! >= before || rows.length === 1) continue;
    const { op } = o;
    out.push({
      check: 'durable',
      message: `${op.kind} ${op.id} acknowledged at ${rel(o.ackedAt!)} is ${rows.length === 0 ? 'missing from' : `${rows.length} times in`} ${actor}'s committed log (${view.state}, ${view.log.length} rows)`,
      at: now,
      actor,
      op: op.i,
    });
  }
  return out;
}

/**
 * Each acknowledged durable op but destroys, of an incarnation whose destroy was never sent (its
 * state may be going away) and that was read, with its rows in the actor's committed log.
 */
function* ackedDurables(outcomes: readonly Outcome[], views: ReadonlyMap<string, ActorView>) {
  const destroyed = destroyedIncarnations(outcomes);
  for (const o of outcomes) {
    const { op } = o;
    if (!op.durable || op.kind === 'destroy' || o.ackedAt === undefined) continue;
    const actor = actorName(op.slot, op.incarnation);
    const view = views.get(actor);
    if (destroyed.has(actor) || !view) continue;
    yield { o, actor, view, rows: view.log.filter((r) => r.op === op.id && EFFECT_KINDS.has(r.kind)) };
  }
}

/**
 * Durable calls are linearizable per actor, the committed log being the order of their effects: a
 * durable reply comes once its link is in the bucket, so what it says is the committed history —
 * the row it wrote (`seq`) and the durable applies up to that row (`durables`); and an op
 * acknowledged before another was first sent precedes it in the log (real-time order). A reply
 * from a copy whose commits were later set aside, a stale copy applying an op, or an op applied
 * after one that was sent later all break it. Acknowledged ops of destroyed incarnations are
 * skipped (their log may be gone), as are ops `checkDurables` finds missing or doubled.
 */
export function checkLinearizable(outcomes: readonly Outcome[], views: ReadonlyMap<string, ActorView>, now: number): Violation[] {
  const out: Violation[] = [];
  const acked = new Map<string, { o: Outcome; seq: number }[]>();
  for (const { o, actor, view, rows } of ackedDurables(outcomes, views)) {
    const { op } = o;
    if (o.sentAt === undefined || view.state !== 'restored' || rows.length !== 1) continue;
    const row = rows[0]!;
    const reply = o.attempts.find((a) => a.status === 200 && a.endAt === o.ackedAt)?.result;
    const durables = view.log.filter((r) => r.kind === 'apply' && r.durable === 1 && r.seq <= row.seq).length;
    const v = (message: string) => out.push({ check: 'linearizable', message, at: now, actor, op: op.i });
    if (!reply) v(`${op.kind} ${op.id} was acknowledged without a result`);
    else if (reply.seq !== row.seq)
      v(`${op.kind} ${op.id} was acknowledged as row ${reply.seq} of ${actor}; the committed log has it at row ${row.seq}`);
    else if (reply.durables !== durables)
      v(
        `${op.kind} ${op.id} was acknowledged counting ${reply.durables} durable applies; the committed log has ${durables} up to its row ${row.seq}`,
      );
    const list = acked.get(actor) ?? [];
    list.push({ o, seq: row.seq });
    acked.set(actor, list);
  }
  for (const [actor, list] of acked) {
    for (const b of list) {
      const before = list.find((a) => a.o.ackedAt! < b.o.sentAt! && a.seq > b.seq);
      if (before)
        out.push({
          check: 'linearizable',
          message: `${before.o.op.kind} ${before.o.op.id} was acknowledged at ${rel(before.o.ackedAt!)}, before ${b.o.op.kind} ${b.o.op.id} was first sent at ${rel(b.o.sentAt!)}, yet comes after it in ${actor}'s log (rows ${before.seq} and ${b.seq})`,
          at: now,
          actor,
          op: b.o.op.i,
        });
    }
  }
  return out;
}

/** What the chain check reads of a link's header. */
export interface LinkWriter {
  seq: number;
  kind: 'snapshot' | 'delta' | 'tombstone';
  generation: number;
  nodeId: string;
  epoch: number;
}

/**
 * One writer (node and epoch) per hold generation along an actor's chain, and no generation below
 * one before it. A tombstone ends the actor's life: what follows it (an actor made again by a
 * request that came later) is checked as a chain of its own.
 */
export function checkChainWriters(actor: string, links: readonly LinkWriter[], now: number): Violation[] {
  const out: Violation[] = [];
  const writers = new Map<number, string>();
  let previous: LinkWriter | undefined;
  for (const l of links) {
    if (previous?.kind === 'tombstone') {
      writers.clear();
      previous = undefined;
    }
    const writer = `${l.nodeId}/${l.epoch}`;
    const first = writers.get(l.generation);
    if (first === undefined) writers.set(l.generation, writer);
    else if (first !== writer)
      out.push({
        check: 'chain',
        message: `${actor}'s link ${l.seq} of generation ${l.generation} was written by ${writer}, an earlier one by ${first}`,
        at: now,
        actor,
      });
    if (previous && l.generation < previous.generation)
      out.push({
        check: 'chain',
        message: `${actor}'s link ${l.seq} has generation ${l.generation}, below link ${previous.seq}'s ${previous.generation}`,
        at: now,
        actor,
      });
    previous = l;
  }
  return out;
}

/** Incarnations whose destroy was sent (their state may be going away). */
function destroyedIncarnations(outcomes: readonly Outcome[]): Set<string> {
  const s = new Set<string>();
  for (const o of outcomes) if (o.op.kind === 'destroy' && o.sentAt !== undefined) s.add(actorName(o.op.slot, o.op.incarnation));
  return s;
}

/** Start of the run, for printing times relative to it (the plan's `at` is relative too). */
let runStart = 0;
export function setRunStart(t: number): void {
  runStart = t;
}
export const rel = (t: number) => `${((t - runStart) / 1_000).toFixed(1)}s`;

export function checkOnce(views: ReadonlyMap<string, ActorView>, now: number): Violation[] {
  const out: Violation[] = [];
  for (const view of views.values()) {
    const seen = new Map<string, number>();
    for (const r of view.log) if (EFFECT_KINDS.has(r.kind)) seen.set(r.op, (seen.get(r.op) ?? 0) + 1);
    for (const [op, n] of seen)
      if (n > 1) out.push({ check: 'once', message: `${op} applied ${n} times in ${view.actor}`, at: now, actor: view.actor });
  }
  return out;
}

export function checkDeleted(outcomes: readonly Outcome[], views: ReadonlyMap<string, ActorView>, now: number) {
  const out: Violation[] = [];
  let recreated = 0;
  for (const o of outcomes) {
    if (o.op.kind !== 'destroy' || o.ackedAt === undefined) continue;
    const actor = actorName(o.op.slot, o.op.incarnation);
    const view = views.get(actor);
    if (!view || view.state !== 'restored') continue;
    const early = view.log.filter((r) => r.kind !== 'fire' && r.wall < o.sentAt!);
    if (early.length > 0)
      out.push({
        check: 'deleted',
        message: `${actor} was destroyed (acknowledged) but its committed log still holds ${early.length} rows from before (first ${early[0]!.op})`,
        at: now,
        actor,
        op: o.op.i,
      });
    else recreated++;
  }
  return { violations: out, recreated };
}

export interface AlarmStats {
  runs: number;
  /** run time − scheduled time, every run. */
  lateness: number[];
  /** The same, of runs outside every fault window. */
  quiet: number[];
  recurringRuns: number;
  retriedRuns: number;
}

/** The alarm checks of one actor's log; `endAt`: when the cluster was stopped. */
export function checkAlarms(view: ActorView, windows: readonly AnyWindow[], endAt: number, stats: AlarmStats): Violation[] {
  if (view.state !== 'restored') return [];
  const out: Violation[] = [];
  const v = (message: string) => out.push({ check: 'alarms', message, at: endAt, actor: view.actor });
  let armed: { op: string; due: number; period: number; at: number } | undefined;
  const ran = new Set<string>();
  for (const r of view.log) {
    if (r.kind === 'arm' || r.kind === 'clear') {
      if (armed && armed.period === 0 && armed.due < r.at - ALARM_BOUND_MS)
        v(`alarm ${armed.op} due ${rel(armed.due)} had not run when ${r.op} replaced it at ${rel(r.at)}`);
      armed = r.kind === 'arm' ? { op: r.op, due: r.due, period: r.period, at: r.at } : undefined;
      continue;
    }
    if (r.kind !== 'fire') continue;
    stats.runs++;
    if (r.retries > 0) stats.retriedRuns++;
    if (r.period > 0) stats.recurringRuns++;
    const late = r.at - r.scheduled;
    stats.lateness.push(late);
    if (quiet(windows, r.scheduled, r.wall)) stats.quiet.push(late);
    if (!armed || r.op !== armed.op) {
      v(`a run of ${r.op || '(no armed alarm)'} at ${rel(r.at)}, while ${armed ? `${armed.op} was armed` : 'no alarm was armed'}`);
      continue;
    }
    const point = `${r.op}@${r.due}`;
    if (ran.has(point)) v(`alarm ${r.op} ran twice for its point ${rel(r.due)}`);
    ran.add(point);
    if (r.at < r.due || r.at < r.scheduled) v(`alarm ${r.op} ran early: at ${rel(r.at)}, due ${rel(r.due)}, scheduled ${rel(r.scheduled)}`);
    // The due time is the arming node's clock, within skewBoundMs / 2 of the machine's.
    else if (r.wall < r.due - TIMINGS.skewBoundMs)
      v(
        `alarm ${r.op} ran ${r.due - r.wall} ms before its time by the machine's clock (at ${rel(r.wall)}, due ${rel(r.due)}): more than skewBoundMs`,
      );
    if (r.due < armed.due) v(`alarm ${r.op} ran for ${rel(r.due)}, a point before the armed ${rel(armed.due)}`);
    if (armed.period === 0) armed = undefined;
    else armed = { ...armed, due: r.due + (Math.floor((r.at - r.due) / armed.period) + 1) * armed.period };
  }
  if (armed && armed.due < endAt - ALARM_BOUND_MS)
    v(`alarm ${armed.op} due ${rel(armed.due)} never ran (the cluster stopped at ${rel(endAt)})`);
  return out;
}

/**
 * A run more than skewBoundMs before its time by the machine's clock: the due time is the arming
 * node's clock, within skewBoundMs / 2 of the machine's, and so is the clock of the node that ran it.
 */
function earlyByTheMachine(r: LogRow): string | undefined {
  if (r.kind !== 'fire' || r.op === '' || r.wall >= r.due - TIMINGS.skewBoundMs) return undefined;
  return `alarm ${r.op} ran ${r.due - r.wall} ms before its time by the machine's clock (at ${rel(r.wall)}, due ${rel(r.due)}): more than skewBoundMs`;
}

/** Online (the committed heads so far): alarm runs more than skewBoundMs early by the machine's clock. */
export function checkEarlyRuns(views: ReadonlyMap<string, ActorView>, now: number): Violation[] {
  const out: Violation[] = [];
  for (const view of views.values())
    for (const r of view.log) {
      const early = earlyByTheMachine(r);
      if (early) out.push({ check: 'alarms', message: early, at: now, actor: view.actor });
    }
  return out;
}

/** No fault window overlaps [scheduled − margin, ran] (a fault that ended within a margin before still counts). */
function quiet(windows: readonly AnyWindow[], scheduled: number, ran: number): boolean {
  return !windows.some((w) => w.from <= ran && w.to + MARGIN_MS >= scheduled);
}

export function percentile(sorted: readonly number[], p: number): number | undefined {
  if (sorted.length === 0) return undefined;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}
