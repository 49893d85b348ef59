/**
 * The open actors of one worker: each actor's database and its replica, in a bounded LRU.
 *
 *   acquire ─▶ (closing? wait) ─▶ replica.take() (bucket ⇄ local file) ─▶ open db ─▶ attach
 *   evict / close ─▶ replica.release() (uploaded, WAL folded, sidecar) ─▶ db.close()
 *   drop (given up) ─▶ db.close() without flushing; the next acquire takes it again
 *   discardUnwritten (a new actor whose events all failed) ─▶ drop, local files deleted
 *
 * An actor in use by a running event is never evicted; the LRU may exceed `max` by the number in
 * use at once. Open and closing actors together (a closing one keeps its files open until its
 * upload is done) are bounded by `filesMax`: an actor that is not open waits for room before it
 * is taken (main/file-budget.ts plans the process's files on that bound).
 */
import type { ActorAddress } from '../core/address.js';
import type { Settings } from '../core/config.js';
import { ActorReplica, type ReplicaDeps } from '../replication/replica.js';
import { removeSidecar } from '../replication/sidecar.js';
import { existsSync } from 'node:fs';
import {
  actorDbPath,
  createActorDb,
  createActorDbFromSpare,
  createActorDbSync,
  newMemoryImage,
  openActorDb,
  openMemoryActorDb,
  removeActorDb,
  neverCommitted,
  startWal,
  type Db,
} from './actor-db.js';
import type { SpareActorFiles } from './spare-files.js';
import { fsyncFd, type FsyncFile } from '../store/fs/io.js';

export interface Slot {
  readonly db: Db;
  readonly replica: ActorReplica;
  users: number;
  /** Just taken: the owner has not yet checked its index entry (R4 of docs/alarm-index.md, migration). */
  fresh: boolean;
  /** In memory, not in a local file: an alarm of an actor with no local file, or a new actor. */
  readonly memory: boolean;
  /**
   * A new actor in memory stays open like a file's actor; its next event, if nothing else is using
   * it, moves it to a local file first (`toFile`). Any other actor in memory is closed once released.
   */
  readonly keep?: boolean;
}

export interface SlotsSettings {
  /** Open actors kept per worker (LRU). */
  max: number;
  /** Open and closing actors per worker, at most (default `max` + 64): more wait for room. */
  filesMax?: number;
  /** Actors with no local file are taken into memory for events that do not create them. */
  inMemory: boolean;
  /** An event that creates a new actor (nothing in the bucket, no local file) runs it in memory. */
  newInMemory?: boolean;
  /**
   * A new actor's file is fsynced off the worker thread (actor-db.ts createActorDb). Off in the
   * simulator: virtual time needs synchronous file I/O.
   */
  createOffThread?: boolean;
  /**
   * How a new actor's file is fsynced off the thread (the node's fsync pool; libuv's pool by
   * default); null where fsync does nothing (the data dir on tmpfs): it is not fsynced.
   */
  newFileFsync?: FsyncFile | null;
  /** New actors' files made ahead (spare-files.ts): a new actor's file is one of them, renamed into place. */
  spares?: SpareActorFiles;
}

/** How `acquire` takes an actor that is not open here. */
export interface TakeOptions {
  /** Told what the take found in the bucket ('ready', 'absent' or 'deleted'). */
  onTake?: (state: string) => void;
  /**
   * Nothing was ever written to the actor's chain: the first event under a hold this node created
   * (holds.ts `claimCreated`). The take goes on as if a LIST had found no link, without the LIST.
   */
  chainEmpty?: boolean;
}

/** Actors remembered as fenced under their hold (see `uploadedUnder`). */
const UPLOADED_UNDER_MAX = 4096;

/** The slots' settings from the node's resolved config. */
export function slotsSettings(
  config: Settings<'dbCacheMax' | 'workerConcurrency' | 'alarmsInMemory' | 'newActorsInMemory'>,
  extra: Pick<SlotsSettings, 'createOffThread' | 'newFileFsync' | 'spares'> = {},
): SlotsSettings {
  return {
    max: config.dbCacheMax,
    filesMax: config.dbCacheMax + config.workerConcurrency, // an event holds one actor in use
    inMemory: config.alarmsInMemory,
    newInMemory: config.newActorsInMemory,
    ...extra,
  };
}

export class ActorSlots {
  private readonly open = new Map<string, Slot>();
  private readonly closing = new Map<string, Promise<void>>();

  private readonly max: number;
  private readonly filesMax: number;
  /** Takes waiting for room under filesMax, let go (to check again) whenever an actor closes. */
  private roomWaiters: (() => void)[] = [];
  /** Takes under way: each will hold an open actor. */
  private taking = 0;
  private readonly inMemory: boolean;
  private readonly newInMemory: boolean;
  private readonly createOffThread: boolean;
  private readonly newFileFsync: FsyncFile | null;
  private readonly spares: SpareActorFiles | undefined;
  /**
   * Actors whose chain ends with a link this worker uploaded under the hold generation named,
   * remembered past close (an actor in memory is closed after every event) so the owner fence
   * goes up once per hold, not once per take. Bounded: a forgotten actor is fenced again, which
   * is safe and costs one upload.
   */
  private readonly uploadedUnder = new Map<string, number>();

  constructor(
    private readonly dataDir: string,
    settings: SlotsSettings,
    private readonly replicaDeps: ReplicaDeps,
  ) {
    this.max = settings.max;
    this.filesMax = Math.max(settings.filesMax ?? settings.max + 64, 1);
    this.inMemory = settings.inMemory;
    this.newInMemory = settings.newInMemory === true;
    this.createOffThread = settings.createOffThread === true;
    this.newFileFsync = settings.newFileFsync === undefined ? fsyncFd : settings.newFileFsync;
    this.spares = settings.spares;
  }

  /**
   * The actor, taken and opened as needed; null when it does not exist (or was deleted) and
   * !create. A slot opened under another hold generation is dropped and the actor taken again:
   * another node may have written to its chain in between.
   */
  async acquire(address: ActorAddress, create: boolean, generation: number, opts: TakeOptions = {}): Promise<Slot | null> {
    const { key } = address;
    await this.closing.get(key);
    let slot: Slot | null | undefined = this.open.get(key);
    if (slot && slot.replica.generation !== generation) {
      this.drop(address);
      slot = undefined;
    }
    if (slot) {
      this.open.delete(key); // re-insert: most recently used last
      if (slot.keep && slot.users === 0 && create && !slot.replica.firstUpload()) slot = await this.moving(key, this.toFile(slot));
    } else {
      await this.room();
      try {
        slot = await this.take(address, create, generation, opts);
      } finally {
        this.taking--;
        this.freed(); // a take that opened nothing (absent, failed) leaves its room to the next
      }
      if (!slot) return null;
    }
    slot.replica.usedUnder(generation);
    slot.users++;
    this.open.set(key, slot);
    this.evict();
    return slot;
  }

  release(slot: Slot): void {
    slot.users = Math.max(0, slot.users - 1);
    // Only this slot: a durable call waiting for its upload may release a slot closed (idle) and reopened meanwhile.
    if (slot.replica.givenUp) {
      if (this.open.get(slot.replica.address.key) === slot) this.drop(slot.replica.address);
    } else if (slot.memory && !slot.keep && slot.users === 0) void this.close(slot.replica.address);
    this.evict();
    this.freed();
  }

  /** Flushes and closes the actor (idle, or an owner giving it back). */
  close(address: ActorAddress): Promise<void> {
    const { key } = address;
    const slot = this.open.get(key);
    if (!slot) return this.closing.get(key) ?? Promise.resolve();
    this.open.delete(key);
    this.remember(key, slot.replica);
    const done = slot.replica
      .release()
      .catch(() => undefined) // a failed flush gave the actor up; the chain stays the truth
      .finally(() => {
        if (slot.replica.givenUp) this.uploadedUnder.delete(key);
        slot.replica.beforeClose();
        slot.db.close();
        this.closing.delete(key);
        this.freed();
      });
    this.closing.set(key, done);
    return done;
  }

  /** Closes without flushing: the actor was given up, the bucket's chain is the truth (and may no longer end with our link). */
  drop(address: ActorAddress): void {
    const { key } = address;
    this.uploadedUnder.delete(key);
    const slot = this.open.get(key);
    if (!slot) return;
    this.open.delete(key);
    slot.replica.beforeClose();
    if (slot.db.open) slot.db.close();
    this.freed();
  }

  /**
   * After an event: a new actor — created by this take, nothing of it in the bucket — that no
   * event has committed to (its first calls all failed) is closed and its local files deleted, so
   * a call its handler refused leaves no file behind. Its hold stays: the next event takes the
   * actor again as if new (a LIST finds no link). True if the actor was discarded.
   */
  discardUnwritten(slot: Slot): boolean {
    const { replica } = slot;
    if (slot.users > 0 || !replica.newFile || !replica.firstUpload() || replica.givenUp) return false;
    if (this.open.get(replica.address.key) !== slot || !neverCommitted(slot.db)) return false;
    if (slot.memory) this.drop(replica.address);
    else this.remove(replica.address);
    return true;
  }

  /** After a tombstone: closes and deletes the local files. */
  remove(address: ActorAddress): void {
    this.drop(address);
    const path = actorDbPath(this.dataDir, address);
    removeActorDb(path);
    removeSidecar(path);
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.open.values()].map((s) => this.close(s.replica.address)));
    await Promise.all([...this.closing.values()]);
    await this.replicaDeps.deletes?.flush();
  }

  get size(): number {
    return this.open.size;
  }

  /** The actor is open here (closing counts as closed: an event taking it again waits for that to end). */
  isOpen(address: ActorAddress): boolean {
    return this.open.has(address.key);
  }

  /** Closes everything without flushing (the lease was lost). */
  dropAll(): void {
    for (const slot of [...this.open.values()]) this.drop(slot.replica.address);
  }

  private async take(
    address: ActorAddress,
    create: boolean,
    generation: number,
    { onTake, chainEmpty }: TakeOptions,
  ): Promise<Slot | null> {
    const path = actorDbPath(this.dataDir, address);
    const replica = new ActorReplica(this.replicaDeps, address, path, generation);
    if (this.uploadedUnder.get(address.key) === generation) replica.uploadedUnderHold = true;
    const noFile = !existsSync(path);
    if (noFile && !create && this.inMemory) {
      const { state, image } = await replica.takeInMemory();
      onTake?.(state);
      if (state !== 'ready' || !image) return null;
      const db = openMemoryActorDb(image, address);
      replica.attach(db);
      return { db, replica, users: 0, fresh: true, memory: true };
    }
    let seqs: number[] | undefined = create && chainEmpty ? [] : undefined;
    if (noFile && create && this.newInMemory) {
      const taken = await replica.takeNew(newMemoryImage(), seqs);
      if ('image' in taken) {
        onTake?.('absent');
        replica.newFile = true; // its first upload waits for its first event's commit
        const db = openMemoryActorDb(taken.image, address);
        replica.attachNew(db);
        return { db, replica, users: 0, fresh: true, memory: true, keep: true };
      }
      seqs = taken.seqs;
    }
    const state = await replica.take(seqs);
    onTake?.(state);
    if (state !== 'ready' && !create) return null;
    const created = !existsSync(path); // the take restores a file when the bucket has the actor
    replica.newFile = created && replica.foundNothing;
    const db = created ? await this.createDb(path, address) : openActorDb(path, address, true)!;
    replica.attach(db);
    if (!created && replica.unuploaded === 0 && startWal(db, path)) replica.walStarted();
    return { db, replica, users: 0, fresh: true, memory: false };
  }

  /**
   * A new actor kept in memory goes to a local file holding the same image, all of it in the bucket
   * first (a call in memory replies only once its commit is up; an alarm's upload may still be on
   * its way: pipeline.ts uploadFromMemory): its next events are plain calls again, without
   * restoring it from the bucket.
   */
  private async toFile(slot: Slot): Promise<Slot> {
    const { replica } = slot;
    let image: Buffer;
    try {
      await replica.sync();
      image = replica.fileImage(slot.db);
    } finally {
      slot.db.close(); // in memory: on a failure the next take restores the actor from the bucket
    }
    const db = await this.createDb(replica.dbPath, replica.address, image);
    startWal(db, replica.dbPath); // the image has its address: nothing was committed at the open
    replica.toFile(db);
    return { db, replica, users: 0, fresh: false, memory: false };
  }

  /**
   * A new database file at `path` (holding `image`, default a new actor's empty one): a spare
   * renamed into place when one is ready (or, while one is being made, when it is: spare-files.ts),
   * else written here, off the thread when the settings say so.
   */
  private createDb(path: string, address: ActorAddress, image?: Buffer): Promise<Db> | Db {
    const spares = image ? undefined : this.spares;
    const db = spares ? createActorDbFromSpare(spares, path, address) : null;
    if (db) return db;
    if (spares?.comingSoon)
      return spares.nextMade().then(() => createActorDbFromSpare(spares, path, address) ?? this.createOwnFile(path, address));
    return this.createOwnFile(path, address, image);
  }

  private createOwnFile(path: string, address: ActorAddress, image?: Buffer): Promise<Db> | Db {
    return this.createOffThread ? createActorDb(path, address, image, this.newFileFsync) : createActorDbSync(path, address, image);
  }

  /** While `work` moves the actor's slot, a close (or a take) of it waits for that to end. */
  private async moving(key: string, work: Promise<Slot>): Promise<Slot> {
    const done = work.then(
      () => undefined,
      () => undefined,
    );
    this.closing.set(key, done);
    try {
      return await work;
    } finally {
      this.closing.delete(key);
    }
  }

  /**
   * Waits until one more actor may open under filesMax (closing the least recently used idle ones
   * meanwhile), and counts its take as under way (`taking`) before it returns: the check and the
   * count in one turn, or two takes woken together would both find room for one. An actor
   * released, a close or a take finished, lets it check again.
   */
  private async room(): Promise<void> {
    while (this.open.size + this.closing.size + this.taking >= this.filesMax) {
      this.evictFor(1);
      await new Promise<void>((resolve) => this.roomWaiters.push(resolve));
    }
    this.taking++;
  }

  /** An actor closed: every waiting take checks again. */
  private freed(): void {
    if (this.roomWaiters.length === 0) return;
    for (const resolve of this.roomWaiters.splice(0)) resolve();
  }

  private remember(key: string, replica: ActorReplica): void {
    this.uploadedUnder.delete(key);
    if (!replica.uploadedUnderHold || replica.givenUp) return;
    this.uploadedUnder.set(key, replica.generation);
    if (this.uploadedUnder.size > UPLOADED_UNDER_MAX) this.uploadedUnder.delete(this.uploadedUnder.keys().next().value!);
  }

  private evict(): void {
    for (const [, slot] of this.open) {
      if (this.open.size <= this.max) return;
      if (slot.users === 0) void this.close(slot.replica.address);
    }
  }

  /** Starts closing `n` idle actors, least recently used first (room for takes under filesMax). */
  private evictFor(n: number): void {
    for (const [, slot] of this.open) {
      if (n <= 0) return;
      if (slot.users === 0) {
        void this.close(slot.replica.address);
        n--;
      }
    }
  }
}
