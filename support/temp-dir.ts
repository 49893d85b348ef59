/**
 * Temporary folders of tests and benches that outlive no process: every folder made here is
 * removed when the process exits, also when a runner stops it with a signal after a timeout
 * (support/exit.ts), unless `KEEPWORK_KEEP_TMP=1` keeps them all for inspection.
 * (test/helpers/temp.ts adds the per-test-file maker on top.)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
