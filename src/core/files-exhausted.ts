/**
 * Running out of file descriptors, told apart from other failures to open a file: a node out of
 * them fails every new actor, whatever its cause looks like (an fs error with code EMFILE or
 * ENFILE; SQLite's own "unable to open database file", SQLITE_CANTOPEN, which does not say why).
 * Such an error becomes FILES_EXHAUSTED, which the HTTP API answers with 503 and the node's health
 * reports (http/status-health.ts), instead of a handler failure nobody can act on.
 */
import { FilesExhausted, isKeepworkError } from './errors.js';

const OUT_OF_FILES = new Set(['EMFILE', 'ENFILE']);

/** Whether `e` (or an error in its cause chain) is an fs error saying the process or the system has no file descriptor left. */
export function isOutOfFiles(e: unknown): boolean {
  for (let depth = 0; typeof e === 'object' && e !== null && depth < 8; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && OUT_OF_FILES.has(code)) return true;
    if (isKeepworkError(e, 'FILES_EXHAUSTED')) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** The FILES_EXHAUSTED error for a failure to `what` (e.g. "open actor database …"). */
export function filesExhausted(what: string, cause: unknown): InstanceType<typeof FilesExhausted> {
  return new FilesExhausted(
    `${what}: the process has no file descriptor left (${(cause as { code?: string })?.code ?? 'EMFILE'}); ` +
      'raise the open-file limit (ulimit -n) or lower dbCacheMax',
    { cause },
  );
}
