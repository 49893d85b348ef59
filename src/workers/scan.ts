/**
 * The start-up scan of a data dir (docs/architecture.md): every actor database's committed alarm, so
 * the node's timer is refilled after a restart and no alarm is lost. Reads only; a file that
 * cannot be read is reported to `onError` and skipped. The node serves while it scans, so a worker
 * may already have a file open, in EXCLUSIVE locking mode (actor-db.ts): that file is skipped at
 * once (`held`: no waiting on the lock), since the event that opened it answered with the actor's
 * alarm, which set the timer.
 */
import Database from 'better-sqlite3';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseAddress, type ActorAddress } from '../core/address.js';
import { actorDbHooks, readAlarm, readMeta } from './actor-db.js';

export interface ScannedAlarm {
  address: ActorAddress;
  at: number;
}

/** A file being scanned that a worker has open (its events keep the timer): skipped. */
export const HELD = 'held';

export function* scanAlarms(dataDir: string, onError: (path: string, e: unknown) => void): Generator<ScannedAlarm | typeof HELD | null> {
  for (const path of actorFiles(join(dataDir, 'actors'))) {
    let db: Database.Database | undefined;
    let found: ScannedAlarm | typeof HELD | null = null;
    try {
      // Read-only: a read-write handle would fold the WAL into the file when it closes, and
      // commits the bucket never got would then look like part of the state it has.
      db = new Database(path, { fileMustExist: true, readonly: true, timeout: 0 });
      const at = readAlarm(db);
      const address = readMeta(db, 'address');
      if (at !== null && address !== null) found = { address: parseAddress(address), at };
    } catch (e) {
      if ((e as { code?: unknown }).code === 'SQLITE_BUSY') found = HELD;
      else onError(path, e);
    } finally {
      db?.close();
      // A read-only handle in NORMAL locking mode makes the WAL's shared-memory index (`-shm`) and
      // leaves it; a node's own handles are EXCLUSIVE and never use one (actor-db.ts), so it would
      // stay beside the file for good, one per actor. Removed, with any an older version left:
      // no handle is using it (the simulator's NORMAL handles aside, which do).
      if (found !== HELD && !actorDbHooks.sharedLocking) rmSync(`${path}-shm`, { force: true });
    }
    yield found;
  }
}

function* actorFiles(root: string): Generator<string> {
  if (!existsSync(root)) return;
  for (const tenant of readdirSync(root)) {
    for (const cls of readdirSync(join(root, tenant))) {
      for (const file of readdirSync(join(root, tenant, cls))) {
        if (file.endsWith('.db')) yield join(root, tenant, cls, file);
      }
    }
  }
}
