/**
 * The process's open-file limit (RLIMIT_NOFILE's soft limit), which file-budget.ts plans within.
 *
 * Node has no API for it. On Linux it is the "Max open files" line of /proc/self/limits, read
 * after Node's own start raised the soft limit to the hard one, so it is the limit in force.
 * Elsewhere (macOS, Windows) there is no such file: the node assumes FALLBACK_FILE_LIMIT, low
 * enough for any system a node runs on (macOS's launchd default soft limit is 256, but Node raises
 * it at start), so the plan errs toward smaller caches, never toward EMFILE.
 */
import { readFileSync } from 'node:fs';

/** The limit assumed where it cannot be read. */
export const FALLBACK_FILE_LIMIT = 1024;

export interface FileLimit {
  /** Open files the process may have at once (the soft limit; "unlimited" reads as MAX_SAFE_INTEGER). */
  limit: number;
  /** Where it came from: /proc/self/limits, or the fallback (when it could not be read). */
  source: 'proc' | 'fallback';
}

export function readFileLimit(path = '/proc/self/limits'): FileLimit {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return { limit: FALLBACK_FILE_LIMIT, source: 'fallback' };
  }
  const limit = parseFileLimit(text);
  return limit === null ? { limit: FALLBACK_FILE_LIMIT, source: 'fallback' } : { limit, source: 'proc' };
}

/** The soft limit of the "Max open files" line of a /proc/<pid>/limits text; null when there is none. */
export function parseFileLimit(text: string): number | null {
  const m = /^Max open files\s+(\d+|unlimited)\s/m.exec(text);
  if (!m) return null;
  return m[1] === 'unlimited' ? Number.MAX_SAFE_INTEGER : Number(m[1]);
}
