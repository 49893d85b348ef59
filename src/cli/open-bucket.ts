/**
 * Opens the bucket for a command that only reads (status, inspect, index check, alarms ls): a
 * folder bucket, or a SQLite bucket's file, that does not exist is refused with a clear error
 * instead of being created (both stores create theirs when opened, which suits a node, not a look
 * at a typo'd path).
 */
import { existsSync } from 'node:fs';
import { BadRequest } from '../core/errors.js';
import { localBucket, openStore, type OpenStoreDeps } from '../store/open.js';
import type { ObjectStore } from '../store/types.js';

export function openExistingBucket(url: string, deps: OpenStoreDeps = {}): ObjectStore {
  const local = typeof url === 'string' ? localBucket(url) : null;
  if (local && !existsSync(local.path)) {
    const what = local.kind === 'folder' ? 'the folder' : 'the SQLite file';
    throw new BadRequest(`no bucket at ${local.path} (${what} does not exist); check --bucket`);
  }
  return openStore(url, deps);
}
