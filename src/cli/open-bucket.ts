/**
 * Opens the bucket for a command that looks at it (status, inspect, index check, alarms ls): read
 * only unless the command writes (`index check --repair`), so the look creates and writes nothing
 * in the folder it is pointed at — no `~tmp`, no lock file, no format stamp. A folder bucket, or a
 * SQLite bucket's file, that does not exist is refused with a clear error instead of being created,
 * and so is a folder that is not a keepwork bucket (fs/format.ts says what it holds).
 */
import { existsSync, statSync } from 'node:fs';
import { BadRequest } from '../core/errors.js';
import { localBucket, openStore, type OpenStoreDeps } from '../store/open.js';
import type { ObjectStore } from '../store/types.js';

export function openExistingBucket(url: string, deps: OpenStoreDeps = {}): ObjectStore {
  const local = typeof url === 'string' ? localBucket(url) : null;
  if (local && !existsSync(local.path)) {
    const what = local.kind === 'folder' ? 'the folder' : 'the SQLite file';
    throw new BadRequest(`no bucket at ${local.path} (${what} does not exist); check --bucket`);
  }
  if (local?.kind === 'folder' && !statSync(local.path).isDirectory())
    throw new BadRequest(`no bucket at ${local.path} (a file, not a folder); check --bucket`);
  return openStore(url, { readOnly: true, ...deps });
}
