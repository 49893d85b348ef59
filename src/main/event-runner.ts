/**
 * How an event reaches its worker: through the actor's lane (actor-lanes.ts: one at a time, in
 * arrival order, bounded), checked against the hold it was sent under, with a hard time limit.
 *
 * A request joins the actor's batch: the requests that queue up while one event of the actor runs
 * go to its worker as one task (up to eventsPerTaskMax), each still its own transaction with its
 * own result or error (workers/batch.ts), so a hot actor is bound by SQLite rather than by one
 * message round trip per event. Other events (alarms, deliveries, reads of the alarm) run alone.
 *
 * Group commit of durable calls: a durable call's outcome comes back at its commit, `pending` with
 * its `final` to follow once a link holding the commit is in the bucket (workers/batch.ts). The
 * timer learns it at once, in the actor's order, and the lane lets the actor's next events run
 * while the reply waits for the final (`ActorLanes.keep`: the actor stays busy until then).
 */
import type { Clock } from '../core/clock.js';
import type { ActorAddress } from '../core/address.js';
import type { Settings } from '../core/config.js';
import { ErrorCode, LeaseLost, isKeepworkError, reviveError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { ActorEvent, BatchOutcome, EventResult } from '../workers/messages.js';
import type { ActorLanes, Outcome } from './actor-lanes.js';
import { NeverStarted, StopSignal, type RunOutcome, type WorkerGroup } from './worker-group.js';

/** A durable call's final outcome (its link landed, or never will): its reply, or its error. */
function settleFinal(o: BatchOutcome): EventResult {
  if (o.type === 'thrown') throw reviveError(o.error);
  return o;
}

/** An event reached its actor's lane after the hold it was sent under was released or changed. */
export class HoldChanged extends LeaseLost {}

/**
 * Times an event that never began (its worker restarted under it) is sent again. Once: a second
 * restart before it began means handlers keep getting stuck on that worker, and the caller hears
 * it (NeverStarted, a retry is safe) rather than waiting through more hard limits.
 */
export const REQUEUES_MAX = 1;

function neverStarted(): NeverStarted {
  return new NeverStarted(
    `its worker was restarted ${REQUEUES_MAX + 1} times before its handler began (handlers stuck in synchronous code): it never ran; retry`,
  );
}

export interface EventRunnerParts {
  clock: Clock;
  config: Settings<'handlerTimeoutMs' | 'eventsPerTaskMax'>;
  log: Logger;
  lanes: ActorLanes;
  workers: Pick<WorkerGroup, 'run' | 'runBatch' | 'progress'>;
  holds: {
    held(address: ActorAddress): number | undefined;
    /** True once after this node created the actor's hold (holds.ts); absent: never. */
    claimCreated?(address: ActorAddress): boolean;
  };
  /** The actor has an event running (idle-actors.ts). */
  used(address: ActorAddress): void;
  /** An event's result, in the actor's order (the node's timer learns the committed alarm). */
  learned(address: ActorAddress, event: ActorEvent, result: EventResult): void;
}

export class EventRunner {
  constructor(private readonly p: EventRunnerParts) {}

  submit(address: ActorAddress, event: ActorEvent): Promise<EventResult> {
    const { key } = address;
    if (event.type === 'request')
      // A pending durable call's value is the promise of its reply: its caller waits for it (Promise adoption).
      return this.p.lanes.batch(key, event, this.p.config.eventsPerTaskMax, (events) =>
        this.runEvents(address, events),
      ) as Promise<EventResult>;
    return this.p.lanes.run(key, async () => {
      const changed = this.holdChanged(address, event);
      if (changed) throw changed;
      this.p.holds.claimCreated?.(address); // only a request creates the actor: the claim lapses
      this.p.used(address);
      const r = await this.runWithHardLimit(address, event);
      this.p.learned(address, event, r);
      return r;
    });
  }

  /**
   * A batch of the actor's events, in order; an event sent under a hold no longer held fails alone
   * (HoldChanged). Events whose worker was restarted before their handler began (`notStarted`)
   * run again, in order, in a batch of their own on the new worker: at most REQUEUES_MAX times,
   * then they fail with NeverStarted (nothing ran: the caller may retry).
   */
  private async runEvents(address: ActorAddress, events: ActorEvent[]): Promise<Outcome<EventResult | Promise<EventResult>>[]> {
    const out: Outcome<EventResult | Promise<EventResult>>[] = events.map(() => ({ ok: false, error: new Error('not run') }));
    let todo = events.map((event, i) => ({ i, event }));
    for (let requeues = 0; todo.length > 0; requeues++) {
      const live = todo.filter(({ i, event }) => {
        const changed = this.holdChanged(address, event);
        if (changed) out[i] = { ok: false, error: changed };
        return !changed;
      });
      if (live.length === 0) break;
      this.p.used(address);
      // The first event under a hold this node created: its worker need not list the actor's chain.
      const first = live[0]!;
      if (requeues === 0 && this.p.holds.claimCreated?.(address) && first.event.type === 'request')
        first.event = { ...first.event, chainEmpty: true };
      const results = await this.runBatchWithHardLimit(
        address,
        live.map((l) => l.event),
      );
      todo = [];
      live.forEach((l, j) => {
        const r = results[j]!;
        if (r.type !== 'notStarted') out[l.i] = this.settle(address, l.event, r);
        else if (requeues < REQUEUES_MAX) todo.push(l);
        else out[l.i] = { ok: false, error: neverStarted() };
      });
      if (todo.length > 0)
        this.p.log.warn({ actor: address.key, events: todo.length }, 'calls that never began run again on the restarted worker');
    }
    return out;
  }

  /** An event's outcome: learned by the timer at its commit, in the actor's order (not what was thrown). */
  private settle(
    address: ActorAddress,
    event: ActorEvent,
    o: Exclude<RunOutcome, { type: 'notStarted' }>,
  ): Outcome<EventResult | Promise<EventResult>> {
    const { final, ...r } = o;
    if (r.type === 'thrown') return { ok: false, error: reviveError(r.error) };
    this.p.learned(address, event, r);
    return { ok: true, value: final ? this.p.lanes.keep(address.key, final.then(settleFinal)) : r };
  }

  /** The hold may have been released (idle, empty bucket) or lost while the event waited in the
   *  lane: it must not run under a generation this node no longer holds. */
  private holdChanged(address: ActorAddress, event: ActorEvent): HoldChanged | undefined {
    if ('generation' in event && this.p.holds.held(address) !== event.generation)
      return new HoldChanged(`the hold of ${address.key} changed while the event waited; retry`);
    return undefined;
  }

  /**
   * A handler stuck in synchronous code cannot see its time limit: abort the task (ends the
   * thread). An event that never began runs again (REQUEUES_MAX); an alarm whose handler had begun
   * (OutcomeUnknown) is committed as a failed run, without running its handler again.
   */
  private async runWithHardLimit(address: ActorAddress, event: ActorEvent): Promise<EventResult> {
    for (let requeues = 0; ; requeues++) {
      const limit = this.hardLimit(address);
      try {
        return await this.p.workers.run(event, limit.signal);
      } catch (e) {
        if (e instanceof NeverStarted && requeues < REQUEUES_MAX) {
          const changed = this.holdChanged(address, event);
          if (changed) throw changed;
          continue;
        }
        if (!isKeepworkError(e, ErrorCode.OutcomeUnknown) || event.type !== 'alarm') throw e;
        this.p.log.warn({ actor: address.key }, 'alarm handler stuck past its time limit; worker restarted');
        return this.p.workers.run({ ...event, recordFailure: true });
      } finally {
        limit.cancel();
      }
    }
  }

  /** A batch of one actor's events under the hard limit: what its aborted worker had begun fails with OUTCOME_UNKNOWN. */
  private async runBatchWithHardLimit(address: ActorAddress, events: ActorEvent[]): Promise<RunOutcome[]> {
    const limit = this.hardLimit(address);
    try {
      return await this.p.workers.runBatch(address, events, limit.signal);
    } finally {
      if (limit.signal.stopped)
        this.p.log.warn({ actor: address.key, events: events.length }, 'a batch stuck past its time limit; worker restarted');
      limit.cancel();
    }
  }

  /**
   * The hard limit: a handler stuck in synchronous code stops its whole thread, so the task is
   * aborted (the worker is restarted, losing every task it was running or had queued) once that worker has
   * finished no event for handlerTimeoutMs + 5 s. A slow task on a thread that keeps finishing
   * others (waiting for the bucket, say) is not stuck, and neither is one queued behind others.
   */
  private hardLimit(address: ActorAddress): { signal: StopSignal; cancel(): void } {
    const signal = new StopSignal();
    let seen = this.p.workers.progress(address);
    let timer: { cancel(): void } | undefined;
    const arm = () => {
      timer = this.p.clock.setTimer(this.p.config.handlerTimeoutMs + 5_000, () => {
        const now = this.p.workers.progress(address);
        if (now === seen) return signal.stop();
        seen = now;
        arm();
      });
    };
    arm();
    return { signal, cancel: () => timer?.cancel() };
  }
}
