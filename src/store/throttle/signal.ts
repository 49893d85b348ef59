/**
 * A throttle answer as the stores raise it: a `StoreUnavailable` whose details say `throttled`
 * (and the server's Retry-After, when it sent one). It is a StoreUnavailable so that a caller
 * holding a bare store (no governor, store/throttle/governed-store.ts) meets what it already
 * handles; the governor takes it as a signal to slow the request's class down and send again.
 *
 * Raised by the S3 store for `503 SlowDown`, 429 and the throttling codes (s3/errors.ts), and by
 * the fault wrapper's slowdown mode (testing/faults.ts).
 */
import { ErrorCode, StoreUnavailable, isKeepworkError } from '../../core/errors.js';

export interface Throttle {
  /** The server's Retry-After in ms, when it sent one. */
  retryAfterMs?: number;
}

export function throttledError(message: string, throttle: Throttle = {}, cause?: unknown): InstanceType<typeof StoreUnavailable> {
  const details = throttle.retryAfterMs === undefined ? { throttled: true } : { throttled: true, retryAfterMs: throttle.retryAfterMs };
  return new StoreUnavailable(message, { details, ...(cause === undefined ? {} : { cause }) });
}

/** The throttle an error reports, or null when it is not a throttle answer. */
export function throttleOf(e: unknown): Throttle | null {
  if (!isKeepworkError(e, ErrorCode.StoreUnavailable)) return null;
  const details = (e as { details?: Record<string, unknown> }).details;
  if (details?.throttled !== true) return null;
  const after = details.retryAfterMs;
  return typeof after === 'number' && Number.isFinite(after) && after >= 0 ? { retryAfterMs: after } : {};
}
