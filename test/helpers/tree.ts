/**
 * A folder's whole tree as data, to assert that something wrote nothing: every folder (`name/`)
 * and every file with the SHA-256 of its bytes, sorted. Unlike raw-http.ts's `snapshot`, an
 * empty folder created meanwhile (`~tmp/`) shows too.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

export function treeOf(root: string): string[] {
  return readdirSync(root, { recursive: true })
    .map(String)
    .sort()
    .map((rel) => {
      const path = join(root, rel);
      return statSync(path).isDirectory() ? `${rel}/` : `${rel} ${createHash('sha256').update(readFileSync(path)).digest('hex')}`;
    });
}
