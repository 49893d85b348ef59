/**
 * A live actor database and files that follow it, for the WAL capture tests: the live database
 * opened as actor-db.ts opens it (autocheckpoint off, a small page cache so that big transactions
 * spill), a replica that starts from its snapshot and applies every captured delta (through the
 * encoding), and dumps to compare them. Everything lives in one temp folder per test file.
 */
import assert from 'node:assert/strict';
import { writeFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { applyDelta, captureWal, decodeDelta, encodeDelta, type PageDelta, type WalCursor } from '../../src/replication/wal.js';
import { openActorDb, type Db } from '../../src/workers/actor-db.js';
import { parseAddress } from '../../src/core/address.js';
import { tempDirs } from '../helpers/temp.js';

/** The test file's temp folder. */
export const root = tempDirs('keepwork-wal-')();
let dirs = 0;
const address = parseAddress('acme/Wal/a');

/** A fresh folder's path under root (not yet made). */
export const nextDir = () => join(root, `d${dirs++}`);

/** A live database opened as actor-db.ts does, with autocheckpoint off and a small page cache so big transactions spill. */
export function openLive(cachePages = 16): { db: Db; dir: string; path: string; wal: string } {
  const dir = nextDir();
  const path = join(dir, 'live.db');
  const db = openActorDb(path, address, true)!;
  db.pragma('wal_autocheckpoint = 0');
  db.pragma(`cache_size = ${cachePages}`);
  return { db, dir, path, wal: `${path}-wal` };
}

/** A file that follows the live database: its snapshot at the start, then every captured delta (through the encoding). */
export class Replica {
  cursor: WalCursor | null;
  constructor(
    readonly path: string,
    private readonly wal: string,
    snapshot: Uint8Array,
    cursor: WalCursor | null,
  ) {
    writeFileSync(path, snapshot);
    this.cursor = cursor;
  }

  catchUp(): PageDelta | null {
    const { delta, cursor } = captureWal(this.wal, this.cursor);
    if (delta) applyDelta(this.path, decodeDelta(encodeDelta(delta)));
    this.cursor = cursor;
    return delta;
  }
}

export function startReplica(live: { db: Db; dir: string; wal: string }, name: string): Replica {
  return new Replica(join(live.dir, name), live.wal, live.db.serialize(), captureWal(live.wal, null).cursor);
}

/** Every schema entry and every table's rows by rowid, blobs in hex. */
export function dump(db: Db): string {
  const master = db.prepare('SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name').all() as Array<{
    type: string;
    name: string;
  }>;
  const rows = master
    .filter((m) => m.type === 'table')
    .map((m) => [m.name, db.prepare(`SELECT rowid AS _rowid_, * FROM "${m.name}" ORDER BY rowid`).all()]);
  return JSON.stringify({ master, rows }, (_k, v: unknown) =>
    v && typeof v === 'object' && 'type' in v && v.type === 'Buffer'
      ? Buffer.from((v as unknown as { data: number[] }).data).toString('hex')
      : v,
  );
}

/** Opens the replica read-only, dumps it and checks its integrity, then removes the empty -wal/-shm the open leaves. */
export function dumpReplica(path: string): string {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
    return dump(db);
  } finally {
    db.close();
    for (const suffix of ['-wal', '-shm']) rmSync(path + suffix, { force: true });
  }
}
