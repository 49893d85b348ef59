/**
 * Messages between the main thread and the event workers: one union each way, tagged by `type`.
 *
 * An event names its actor by the parsed, frozen ActorAddress (core/address.ts); a structured
 * clone would keep neither its freezing nor the promise that it was validated. So a task crosses
 * to a worker in its wire form, each address as its key, and is parsed again there:
 *
 *   main: WorkerGroup ─ toWire(task) ─▶ postMessage ─▶ worker: event-worker.ts ─ fromWire(task) ─▶ pipeline
 *
 * A task goes with its start gate (PostedTask, start-gate.ts): how far into it handlers have begun.
 *
 * Those two functions are the only crossing; the pipeline, and the simulator that runs it inline,
 * see parsed addresses only. What comes back (EventResult, BatchOutcome) names no actor.
 */
import { parseAddress, type ActorAddress } from '../core/address.js';
import type { ErrorJSON } from '../core/errors.js';
import type { MessagePort } from 'node:worker_threads';

/** Main → worker. `generation`: the hold this node owns the actor under (absent: 0, no hold). */
export type ActorEvent =
  /**
   * `idempotencyKey` (durable only, checked): a repeat returns the recorded outcome (idempotency.ts).
   * `chainEmpty`: the first event under a hold this node created (none existed): nothing was ever
   * written to the actor's chain, so taking the actor needs no LIST of it (holds.ts `claimCreated`).
   */
  | {
      type: 'request';
      address: ActorAddress;
      method: string;
      args: unknown[];
      durable: boolean;
      generation?: number;
      idempotencyKey?: string;
      chainEmpty?: boolean;
    }
  /** Runs the alarm if the committed one is due. `recordFailure`: a previous attempt was killed
   *  (time limit); commit it as a failed run without running the handler again. */
  | { type: 'alarm'; address: ActorAddress; recordFailure?: boolean; generation?: number }
  | { type: 'getAlarm'; address: ActorAddress; generation?: number }
  /** An index entry came due (the sweep): run the alarm if it is the committed one, or clean up
   *  the actor's stale entries at that time (docs/alarm-index.md: R2, R3, owner fence, empty-bucket rule).
   *  `shard`: the shard folder the sweep found the entry in (absent: the unsharded layout, or the timer). */
  | { type: 'deliver'; address: ActorAddress; dueMs: number; generation?: number; shard?: number }
  /** Closes without flushing: this node lost the actor (fenced, or its lease ran out). */
  | { type: 'dropAll' }
  | { type: 'close'; address: ActorAddress }
  /** Closes every open database of the worker (clean shutdown). */
  | { type: 'closeAll' }
  /** Loads these actor classes now (at the node's start), not at their first event. */
  | { type: 'loadClasses'; classNames: string[] };

/** An error as data (core/errors.ts): code, message, details, and the thrower's stack (a handler's own frames). */
export type ErrorData = ErrorJSON;

/** Worker → main. `alarmAt` is the committed alarm after the event (for the node's timer). */
export type EventResult =
  | {
      type: 'ok';
      result?: unknown;
      alarmAt: number | null;
      deleted: boolean;
      ran: boolean;
      /** deliver: the entry stays (empty bucket); offer it again no sooner than this. */
      retryAtMs?: number;
      /** deliver: give the actor's hold back at once (empty-bucket rule). */
      releaseHold?: boolean;
      /** deliver: stale entries deleted. */
      removed?: number;
      /** A durable call's result at its commit (workers/batch.ts): its reply waits for its final result, which follows. */
      pending?: true;
      /** The worker keeps nothing of the actor open after this event (it ran in memory): closing it is only releasing its hold. */
      closed?: true;
    }
  | { type: 'error'; error: ErrorData; alarmAt: number | null };

/** Main → worker: events of one actor run one after another in one task (`runBatch`: batch.ts). */
export interface EventBatch {
  type: 'batch';
  events: ActorEvent[];
  /** Transferred: where the final outcomes of `pending` ones are posted (`{ i, outcome }`), closed after the last. */
  finals?: MessagePort;
}

/** Worker → main on `EventBatch.finals`: the final outcome of the batch's event `i`. */
export interface FinalOutcome {
  i: number;
  outcome: BatchOutcome;
}

/** Worker → main, one per event of a batch: its result, or what it threw (no result: nothing to learn from it). */
export type BatchOutcome = EventResult | { type: 'thrown'; error: ErrorData };

/** An event in its wire form: its address, if it has one, as the address's key. */
export type WireEvent = AddressAsKey<ActorEvent>;
type AddressAsKey<E> = E extends { address: ActorAddress } ? Omit<E, 'address'> & { address: string } : E;

/** A task in its wire form. */
export type WireTask = WireEvent | (Omit<EventBatch, 'events'> & { events: WireEvent[] });

/**
 * What is posted to a worker: a task and its start gate (start-gate.ts), where the worker marks
 * each event's handler as begun; without one (closeAll, loadClasses) the task is never given up.
 */
export interface PostedTask {
  task: WireTask;
  gate?: Int32Array;
}

/** Main thread, before posting: each address as its key (a batch's `finals` port goes along as it is, transferred). */
export function toWire(task: ActorEvent | EventBatch): WireTask {
  return task.type === 'batch' ? { ...task, events: task.events.map(eventToWire) } : eventToWire(task);
}

/** Worker, on receipt: each key parsed again into a frozen ActorAddress. */
export function fromWire(task: WireTask): ActorEvent | EventBatch {
  return task.type === 'batch' ? { ...task, events: task.events.map(eventFromWire) } : eventFromWire(task);
}

function eventToWire(e: ActorEvent): WireEvent {
  return 'address' in e ? { ...e, address: e.address.key } : e;
}

function eventFromWire(e: WireEvent): ActorEvent {
  return 'address' in e ? ({ ...e, address: parseAddress(e.address) } as ActorEvent) : e;
}
