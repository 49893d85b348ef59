/** An event's outcome as the worker sends it to the main thread: a result, or an error as data. */
import { HandlerFailed, isKeepworkError, type ErrorCode } from '../core/errors.js';
import { diskFull, isDiskFull } from '../core/disk-full.js';
import { filesExhausted, isOutOfFiles } from '../core/files-exhausted.js';
import type { ErrorData, EventResult } from './messages.js';

export function ok(alarmAt: number | null, ran: boolean): EventResult {
  return { type: 'ok', alarmAt, deleted: false, ran };
}

export function failure(err: unknown, alarmAt: number | null): EventResult {
  return { type: 'error', error: errorData(err), alarmAt };
}

/**
 * An error as data for the main thread: its code (an fs error for want of file descriptors is
 * FILES_EXHAUSTED; SQLite's or fs's "disk full" is OVERLOADED, resource disk; anything else
 * without one is HANDLER_FAILED) and the
 * stack where it was thrown — the handler's own frames, so the log line names the handler's file.
 */
export function errorData(err: unknown): ErrorData {
  if (!isKeepworkError(err) && isOutOfFiles(err)) err = filesExhausted('an event could not open a file', err);
  else if (!isKeepworkError(err) && isDiskFull(err)) err = diskFull('an event could not write', err);
  const stack = err instanceof Error && typeof err.stack === 'string' ? { stack: err.stack } : {};
  if (isKeepworkError(err)) {
    const e = err as { code: ErrorCode; message: string; details?: Record<string, unknown> };
    return { code: e.code, message: e.message, details: e.details ?? {}, ...stack };
  }
  const message = err instanceof Error ? err.message : String(err);
  const { code, details } = new HandlerFailed(message).toJSON();
  return { code, message, details, ...stack };
}
