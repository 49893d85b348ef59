/**
 * A full disk under the data dir, told apart from a handler's failure: SQLite's SQLITE_FULL
 * ("database or disk is full", also at a write the handler made) or an fs error ENOSPC or EDQUOT.
 * The event's transaction rolled back, so nothing ran: such an error becomes OVERLOADED with
 * `details.resource` "disk" — the caller may retry (HTTP 503 with Retry-After) — instead of
 * HANDLER_FAILED, which says the handler is broken and a retry will not help. The node keeps its
 * actors meanwhile (docs/operations.md "What survives what").
 */
import { Overloaded, isOverloadedBy } from './errors.js';

const FULL = new Set(['SQLITE_FULL', 'ENOSPC', 'EDQUOT']);

/** How long a caller refused for want of disk space is told to wait. */
const RETRY_AFTER_MS = 1_000;

/** Whether `e` (or an error in its cause chain) says the disk has no space left. */
export function isDiskFull(e: unknown): boolean {
  for (let depth = 0; typeof e === 'object' && e !== null && depth < 8; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && FULL.has(code)) return true;
    if (isOverloadedBy(e, 'disk')) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** The OVERLOADED error for a failure to `what` (e.g. "an event could not write") on a full disk. */
export function diskFull(what: string, cause: unknown): InstanceType<typeof Overloaded> {
  const code = (cause as { code?: unknown } | undefined)?.code;
  return new Overloaded(
    `${what}: the data dir's disk is full (${typeof code === 'string' ? code : 'ENOSPC'}); nothing ran, retry later, and free space under the data dir`,
    { cause, details: { resource: 'disk', retryAfterMs: RETRY_AFTER_MS } },
  );
}
