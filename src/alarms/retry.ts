/**
 * Committed retries (docs/alarm-index.md "Committed retries"), as pure functions.
 *
 * When `alarm` throws, whatever alarm the handler left due before the retry time (the same one,
 * or one it set for now) moves to the retry time (retryBaseMs doubling to retryMaxMs by the
 * failure count); one it set later, or a clear, stands. The failure count is read before the
 * handler runs and committed with the outcome; setting or clearing an alarm outside a failed run
 * resets it. A successful alarm run consumes the alarm that fired (the handler may set another)
 * and resets the count: a fresh backoff per alarm.
 *
 *   before: { at, failures }   handler: { touched, at }   failed?   now
 *      └──────────────────── alarmOutcome ─────────────────────────────▶ { at, failures }
 */

export interface RetrySettings {
  retryBaseMs: number;
  retryMaxMs: number;
}

/** Delay before attempt `failures + 1`, after `failures` (>= 1) consecutive failures. */
export function retryDelayMs(failures: number, s: RetrySettings): number {
  if (failures < 1) return 0;
  const exp = Math.min(failures - 1, 52);
  return Math.min(s.retryMaxMs, s.retryBaseMs * 2 ** exp);
}

export interface AlarmState {
  /** The committed alarm (ms), or null for none. */
  at: number | null;
  /** Consecutive failures of the alarm handler. */
  failures: number;
}

export interface HandlerAlarm {
  /** Whether the handler called setAlarm or clearAlarm during the run. */
  touched: boolean;
  /** The alarm as the handler left it (meaningful when touched). */
  at: number | null;
}

export type EventKind = 'alarm' | 'request' | 'init' | 'delete';

/** The alarm state to commit after an event. */
export function alarmOutcome(
  kind: EventKind,
  before: AlarmState,
  handler: HandlerAlarm,
  failed: boolean,
  nowMs: number,
  s: RetrySettings,
): AlarmState {
  if (kind !== 'alarm') {
    if (failed) return before; // the whole event rolls back
    return handler.touched ? { at: handler.at, failures: 0 } : before;
  }
  if (!failed) return { at: handler.touched ? handler.at : null, failures: 0 };
  const left = handler.touched ? handler.at : before.at;
  if (left === null) return { at: null, failures: 0 }; // a clear stands
  const failures = before.failures + 1;
  const retryAt = nowMs + retryDelayMs(failures, s);
  return { at: Math.max(left, retryAt), failures };
}
