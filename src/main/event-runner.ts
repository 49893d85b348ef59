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
import { LeaseLost, reviveError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { ActorEvent, BatchOutcome, EventResult } from '../workers/messages.js';
import type { ActorLanes, Outcome } from './actor-lanes.js';
import type { RunOutcome, WorkerGroup } from './worker-group.js';

/** A durable call's final outcome (its link landed, or never will): its reply, or its error. */
function settleFinal(o: BatchOutcome): EventResult {
  if (o.type === 'thrown') throw reviveError(o.error);
  return o;
}

/** An event reached its actor's lane after the hold it was sent under was released or changed. */
export class HoldChanged extends LeaseLost {}

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

  /** A batch of the actor's events, in order; an event sent under a hold no longer held fails alone (HoldChanged). */
  private async runEvents(address: ActorAddress, events: ActorEvent[]): Promise<Outcome<EventResult | Promise<EventResult>>[]> {
    const out: Outcome<EventResult | Promise<EventResult>>[] = [];
    const live: number[] = [];
    events.forEach((e, i) => {
      const changed = this.holdChanged(address, e);
      out.push(changed ? { ok: false, error: changed } : { ok: false, error: new Error('not run') });
      if (!changed) live.push(i);
    });
    if (live.length === 0) return out;
    this.p.used(address);
    const sent = live.map((i) => events[i]!);
    // The first event under a hold this node created: its worker need not list the actor's chain.
    const first = sent[0]!;
    if (this.p.holds.claimCreated?.(address) && first.type === 'request') sent[0] = { ...first, chainEmpty: true };
    const results = await this.runBatchWithHardLimit(address, sent);
    live.forEach((i, j) => {
      const { final, ...r } = results[j]!;
      if (r.type === 'thrown') out[i] = { ok: false, error: reviveError(r.error) };
      else {
        this.p.learned(address, events[i]!, r); // at the commit, in the actor's order
        out[i] = { ok: true, value: final ? this.p.lanes.keep(address.key, final.then(settleFinal)) : r };
      }
    });
    return out;
  }

  /** The hold may have been released (idle, empty bucket) or lost while the event waited in the
   *  lane: it must not run under a generation this node no longer holds. */
  private holdChanged(address: ActorAddress, event: ActorEvent): HoldChanged | undefined {
    if ('generation' in event && this.p.holds.held(address) !== event.generation)
      return new HoldChanged(`the hold of ${address.key} changed while the event waited; retry`);
    return undefined;
  }

  /** A handler stuck in synchronous code cannot see its time limit: abort the task (ends the thread). */
  private async runWithHardLimit(address: ActorAddress, event: ActorEvent): Promise<EventResult> {
    const limit = this.hardLimit(address);
    try {
      return await this.p.workers.run(event, limit.signal);
    } catch (e) {
      if (!limit.signal.aborted || event.type !== 'alarm') throw e;
      this.p.log.warn({ actor: address.key }, 'alarm handler stuck past its time limit; worker restarted');
      return this.p.workers.run({ ...event, recordFailure: true });
    } finally {
      limit.cancel();
    }
  }

  /** A batch of one actor's events under the hard limit; every event of an aborted batch fails, and those before the stuck
   *  one may have committed (their outcome is unknown to the caller, as after a crash). */
  private async runBatchWithHardLimit(address: ActorAddress, events: ActorEvent[]): Promise<RunOutcome[]> {
    const limit = this.hardLimit(address);
    try {
      return await this.p.workers.runBatch(address, events, limit.signal);
    } catch (e) {
      if (limit.signal.aborted)
        this.p.log.warn({ actor: address.key, events: events.length }, 'a batch stuck past its time limit; worker restarted');
      throw e;
    } finally {
      limit.cancel();
    }
  }

  /**
   * The hard limit: a handler stuck in synchronous code stops its whole thread, so the task is
   * aborted (the worker is restarted, failing every task it was running) once that worker has
   * finished no event for handlerTimeoutMs + 5 s. A slow task on a thread that keeps finishing
   * others (waiting for the bucket, say) is not stuck, and neither is one queued behind others.
   */
  private hardLimit(address: ActorAddress): { signal: AbortSignal; cancel(): void } {
    const ac = new AbortController();
    let seen = this.p.workers.progress(address);
    let timer: { cancel(): void } | undefined;
    const arm = () => {
      timer = this.p.clock.setTimer(this.p.config.handlerTimeoutMs + 5_000, () => {
        const now = this.p.workers.progress(address);
        if (now === seen) return ac.abort();
        seen = now;
        arm();
      });
    };
    arm();
    return { signal: ac.signal, cancel: () => timer?.cancel() };
  }
}
