/**
 * Temporary folders for tests. Every folder made here is removed when its test file's tests end
 * (`tempDirs`) or when the process exits, also when the runner stops it with a signal after a
 * timeout; `KEEPWORK_KEEP_TMP=1` keeps them all for inspection.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { onExit } from './exit.js';

/** True when `KEEPWORK_KEEP_TMP=1`: nothing is removed. */
export const KEEP_TMP = process.env.KEEPWORK_KEEP_TMP === '1';

const made = new Set<string>();
onExit(() => [...made].forEach(removeTempDir));

/** A fresh folder under the system's temp folder (or `parent`), removed at exit at the latest. */
export function makeTempDir(prefix: string, parent = tmpdir()): string {
  const d = mkdtempSync(join(parent, prefix));
  made.add(d);
  return d;
}

/** Removes a folder made by makeTempDir now (unless KEEPWORK_KEEP_TMP=1). */
export function removeTempDir(d: string): void {
  made.delete(d);
  if (!KEEP_TMP) rmSync(d, { recursive: true, force: true, maxRetries: 3 });
}

/** A maker of temp folders for a test file; they are removed when the file's tests end. */
export function tempDirs(prefix: string): () => string {
  const dirs: string[] = [];
  after(() => dirs.forEach(removeTempDir));
  return () => {
    const d = makeTempDir(prefix);
    dirs.push(d);
    return d;
  };
}
