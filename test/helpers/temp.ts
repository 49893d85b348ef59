/**
 * Temporary folders for a test file: each maker's folders are removed when the file's tests end,
 * or at the latest when the process exits (support/temp-dir.ts, which `KEEPWORK_KEEP_TMP=1` stops
 * from removing anything).
 */
import { after } from 'node:test';
import { makeTempDir, removeTempDir } from '../../support/temp-dir.js';

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
