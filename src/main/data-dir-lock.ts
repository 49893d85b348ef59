/**
 * The data dir's lock: a node holds `<dataDir>/node.lock` exclusively for the life of its
 * process, so a node starting on a data dir knows that no other process runs on it — and, when
 * the bucket still shows a live lease of this data dir (its previous run, killed), that the run
 * is dead and its lease can be fenced at once (node-lease.ts `start`).
 *
 * It is SQLite's lock (BEGIN EXCLUSIVE, never committed; busy_timeout 0): an fcntl lock on the
 * file, which the kernel drops when the process that holds it dies, kill -9 included — no pid
 * file, no staleness guess. SQLite also arbitrates between connections of one process (its unix
 * VFS shares one lock per inode), so a second node on the same data dir in the same process is
 * refused the same way. Exclusive by design: of two nodes started on one data dir at once, one is
 * refused (the identity file and the spare files beside it are written only under this lock).
 * Nothing is ever written to the database. `node.lock.owner` (pid, start
 * time) is only for the refusal's message.
 */
import Database from 'better-sqlite3';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BadConfig } from '../core/errors.js';

export class DataDirLock {
  private constructor(
    private readonly db: Database.Database,
    readonly path: string,
  ) {}

  /** Takes the lock at once or throws BadConfig naming the process that has it. */
  static acquire(dataDir: string): DataDirLock {
    const path = join(dataDir, 'node.lock');
    const db = new Database(path, { timeout: 0 });
    try {
      db.pragma('busy_timeout = 0');
      db.exec('BEGIN EXCLUSIVE');
    } catch (e) {
      db.close();
      const code = (e as { code?: string }).code;
      if (code !== 'SQLITE_BUSY' && code !== 'SQLITE_LOCKED') throw e;
      throw new BadConfig(
        `data dir ${dataDir} is in use by another keepwork node (${owner(path)}); stop that one first, or give this node another dataDir`,
      );
    }
    writeFileSync(`${path}.owner`, JSON.stringify({ pid: process.pid, since: new Date().toISOString() }) + '\n');
    return new DataDirLock(db, path);
  }

  /** Gives the lock back (clean stop); a dead process gives it back by dying. */
  release(): void {
    if (!this.db.open) return;
    this.db.exec('ROLLBACK');
    this.db.close();
  }
}

function owner(path: string): string {
  try {
    const o = JSON.parse(readFileSync(`${path}.owner`, 'utf8')) as { pid?: number; since?: string };
    return `pid ${o.pid ?? '?'}, started ${o.since ?? '?'}`;
  } catch {
    return 'unknown process';
  }
}
