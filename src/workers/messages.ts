/**
 * Messages between the main thread and the event workers: one union each way,
 * tagged by `type`. Everything here is structured-clone safe.
 */
import type { ActorAddress } from '../core/address.js';
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
   *  the actor's stale entries at that time (docs/alarm-index.md: R2, R3, owner fence, empty-bucket rule). */
  | { type: 'deliver'; address: ActorAddress; dueMs: number; generation?: number }
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
