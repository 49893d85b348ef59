/**
 * A bounded LRU of open actor databases, one per worker thread. A database in use by a running
 * event is never closed; the cache may exceed `max` by the number of databases in use at once.
 */
import type { ActorAddress } from '../core/address.js';
import { actorDbPath, openActorDb, removeActorDb, type Db } from './actor-db.js';

interface Open {
  db: Db;
  users: number;
}

export class DbCache {
  private readonly open = new Map<string, Open>();

  constructor(
    private readonly dataDir: string,
    private readonly max: number,
  ) {}

  /** The actor's database, opened (or created, when `create`) as needed; null if absent. */
  acquire(address: ActorAddress, create: boolean): Db | null {
    const path = actorDbPath(this.dataDir, address);
    let entry = this.open.get(path);
    if (entry) {
      this.open.delete(path); // re-insert: most recently used last
    } else {
      const db = openActorDb(path, address, create);
      if (!db) return null;
      entry = { db, users: 0 };
    }
    entry.users++;
    this.open.set(path, entry);
    this.evict();
    return entry.db;
  }

  release(db: Db): void {
    const entry = this.open.get(db.name);
    if (entry) entry.users = Math.max(0, entry.users - 1);
    this.evict();
  }

  /** Closes the actor's database if open (idle, or before removal). */
  close(address: ActorAddress): void {
    const path = actorDbPath(this.dataDir, address);
    const entry = this.open.get(path);
    if (!entry) return;
    this.open.delete(path);
    entry.db.close();
  }

  /** Closes and deletes the actor's files. */
  remove(address: ActorAddress): void {
    this.close(address);
    removeActorDb(actorDbPath(this.dataDir, address));
  }

  closeAll(): void {
    for (const { db } of this.open.values()) db.close();
    this.open.clear();
  }

  get size(): number {
    return this.open.size;
  }

  private evict(): void {
    for (const [path, entry] of this.open) {
      if (this.open.size <= this.max) return;
      if (entry.users > 0) continue;
      this.open.delete(path);
      entry.db.close();
    }
  }
}
