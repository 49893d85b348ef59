/**
 * Messages between the main thread and the event workers (STYLE.md §7): one union each way,
 * tagged by `type`. Everything here is structured-clone safe.
 */
import type { ActorAddress } from '../core/address.js';
import type { ErrorCode } from '../core/errors.js';

/** Main → worker. */
export type ActorEvent =
  | { type: 'request'; address: ActorAddress; method: string; args: unknown[]; durable: boolean }
  /** Runs the alarm if the committed one is due. `recordFailure`: a previous attempt was killed
   *  (time limit); commit it as a failed run without running the handler again. */
  | { type: 'alarm'; address: ActorAddress; recordFailure?: boolean }
  | { type: 'getAlarm'; address: ActorAddress }
  | { type: 'close'; address: ActorAddress }
  /** Closes every open database of the worker (clean shutdown). */
  | { type: 'closeAll' };

export interface ErrorData {
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
}

/** Worker → main. `alarmAt` is the committed alarm after the event (for the node's timer). */
export type EventResult =
  | { type: 'ok'; result?: unknown; alarmAt: number | null; deleted: boolean; ran: boolean }
  | { type: 'error'; error: ErrorData; alarmAt: number | null };
