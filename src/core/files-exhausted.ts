/**
 * Running out of file descriptors, told apart from other failures to open a file: a node out of
 * them fails every new actor, whatever its cause looks like (an fs error with code EMFILE or
 * ENFILE; SQLite's own "unable to open database file", SQLITE_CANTOPEN, which does not say why).
 * Such an error becomes OVERLOADED with `details.resource` "files" — nothing ran, the caller may
 * retry (HTTP 503 with Retry-After) — and the node's health reports it (http/status-health.ts)
 * instead of a handler failure nobody can act on. The details survive the worker boundary, so the
 * main thread tells it apart by them (`isFilesExhausted`), never by the message.
 */
import { Overloaded, isOverloadedBy } from './errors.js';

const OUT_OF_FILES = new Set(['EMFILE', 'ENFILE']);

/** How long a caller refused for want of files is told to wait: idle actors close meanwhile. */
const RETRY_AFTER_MS = 1_000;

/** Whether `e` (or an error in its cause chain) says the process or the system has no file descriptor left. */
export function isOutOfFiles(e: unknown): boolean {
  for (let depth = 0; typeof e === 'object' && e !== null && depth < 8; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && OUT_OF_FILES.has(code)) return true;
    if (isFilesExhausted(e)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** Whether `e` is the OVERLOADED error `filesExhausted` makes (live, or as data from a worker). */
export function isFilesExhausted(e: unknown): e is { code: 'OVERLOADED'; message: string } {
  return isOverloadedBy(e, 'files');
}

/** The OVERLOADED error for a failure to `what` (e.g. "open actor database …") for want of file descriptors. */
export function filesExhausted(what: string, cause: unknown): InstanceType<typeof Overloaded> {
  const code = (cause as { code?: unknown } | undefined)?.code;
  return new Overloaded(
    `${what}: the process has no file descriptor left (${typeof code === 'string' ? code : 'EMFILE'}); ` +
      'retry later, and raise the open-file limit (ulimit -n) or lower dbCacheMax',
    { cause, details: { resource: 'files', retryAfterMs: RETRY_AFTER_MS } },
  );
}
