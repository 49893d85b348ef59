/**
 * Opens the bucket for a command that only reads (status, inspect, index check, alarms ls): a
 * folder bucket, or a SQLite bucket's file, that does not exist is refused with a clear error
 * instead of being created (both stores create theirs when opened, which suits a node, not a look
 * at a typo'd path).
 */
import { existsSync } from 'node:fs';
import { BadRequest } from '../core/errors.js';
import { parseFsUrl } from '../store/fs.js';
import { openStore, type OpenStoreDeps } from '../store/open.js';
import { parseSqliteUrl, SQLITE_SCHEME } from '../store/sqlite.js';
import type { ObjectStore } from '../store/types.js';

export function openExistingBucket(url: string, deps: OpenStoreDeps = {}): ObjectStore {
  if (typeof url === 'string' && url.startsWith(SQLITE_SCHEME)) {
    const file = parseSqliteUrl(url);
    if (!existsSync(file)) throw new BadRequest(`no bucket at ${file} (the SQLite file does not exist); check --bucket`);
    return openStore(url, deps);
  }
  const isFolder = typeof url === 'string' && url !== 'memory:' && (/^file:\/\//i.test(url) || !/^[a-z][a-z0-9+.-]*:\/\//i.test(url));
  if (isFolder) {
    const root = parseFsUrl(url);
    if (!existsSync(root)) throw new BadRequest(`no bucket at ${root} (the folder does not exist); check --bucket`);
  }
  return openStore(url, deps);
}
