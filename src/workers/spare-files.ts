/**
 * New actors' database files, made before they are needed: creating an actor renames one into
 * place instead of waiting for a new file's fsync.
 *
 * Every new actor's file holds the same bytes (actor-db.ts `newFileImage`: an empty WAL-mode
 * database with keepwork's tables; the actor's address is its first commit). Such a file must be
 * fsynced before its name appears, or a power loss could leave the name with no bytes behind it.
 * On a journaled disk that fsync is a journal commit, several milliseconds under load, and every
 * new actor's first call waited for it. So each worker keeps `target` of them ready in a folder
 * of its own, each fsynced before it counts as ready:
 *
 *   <dataDir>/spare/<worker index>/<n>.db
 *
 *   moveTo(path) ─▶ a ready file renamed to the new actor's path (actor-db.ts createActorDbFromSpare)
 *               └▶ start making the next one, its fsync off the thread (the node's fsync pool), off any event's path
 *   none ready, some being made ─▶ nextMade(): wait for the next one to finish, then moveTo again
 *
 * Waiting beats making a file of one's own: a burst of new actors uses the spares up, and a file
 * started now queues its fsync behind every one already waiting, the spares' too (a long
 * wait on a journaled disk under a burst); the spare that finishes next was started earlier.
 * A rename within one file system keeps the bytes it names durable; the new name is made durable
 * by the folder fsync SQLite makes at the actor's first checkpoint, as for a file made in place.
 *
 * A file is made as `<n>.tmp` and renamed to `<n>.db` once fsynced, so a `<n>.db` found when the
 * worker starts was whole on disk before its name was: the worker keeps those an earlier run left
 * ready (when they hold exactly this worker's image) instead of making them again, which at a
 * restart took CPU and fsyncs from the first calls. Anything else in the folder (a `.tmp` an
 * earlier run was writing, a file of other bytes, more than `target`) is removed. A failure to make
 * one turns spares off for the worker, with a warning: actors are then created without spares,
 * each file written and fsynced at its first call.
 */
import { mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../core/logger.js';
import { fillNewFile, fsyncFd, isMissing, unlinkQuiet, type FsyncFile } from '../store/fs/io.js';

export class SpareActorFiles {
  private readonly ready: string[] = [];
  private making = 0;
  private next = 0;
  private off = false;
  private idle: (() => void)[] = [];
  /** Callers of nextMade(), each let go when a file being made is finished (ready, or failed). */
  private waiting: (() => void)[] = [];

  /**
   * `image`: the bytes of a new actor's file; `target`: files kept ready (0: none); `fsync`: how
   * each is fsynced (the node's fsync pool; libuv's pool by default), null where fsync does nothing
   * (the data dir on tmpfs: fs/io.ts `fsyncDoesNothing`).
   */
  constructor(
    private readonly dir: string,
    private readonly target: number,
    private readonly image: Uint8Array,
    private readonly log: Logger,
    private readonly fsync: FsyncFile | null = fsyncFd,
  ) {}

  /** Keeps the whole files an earlier run left (up to `target`), removes the rest, and makes what is missing. */
  start(): void {
    if (this.target === 0) return;
    try {
      mkdirSync(this.dir, { recursive: true });
      for (const name of readdirSync(this.dir)) {
        const file = join(this.dir, name);
        const n = /^(\d{1,9})\.db$/.exec(name)?.[1];
        if (n !== undefined && this.ready.length < this.target && this.isImage(file)) {
          this.ready.push(file);
          this.next = Math.max(this.next, Number(n) + 1);
        } else rmSync(file, { recursive: true, force: true });
      }
    } catch (e) {
      this.turnOff(e);
      return;
    }
    this.fill();
  }

  /** Whether `file` holds exactly the image (an earlier run's whole spare, of the same schema and SQLite). */
  private isImage(file: string): boolean {
    try {
      return readFileSync(file).equals(this.image);
    } catch {
      return false;
    }
  }

  /**
   * Renames a ready file to `path` (whose folder exists); false when none is ready or the rename
   * failed (a spare removed by hand; another file system: spares then turn off), and the caller
   * makes the file itself.
   */
  moveTo(path: string): boolean {
    const file = this.ready.pop();
    this.fill();
    if (file === undefined) return false;
    try {
      renameSync(file, path);
      return true;
    } catch (e) {
      unlinkQuiet(file);
      if (!isMissing(e)) this.turnOff(e);
      return false;
    }
  }

  /** Whether a file is being made that nextMade() can wait for (none ready now, spares on). */
  get comingSoon(): boolean {
    return !this.off && this.ready.length === 0 && this.making > 0;
  }

  /** Resolves when the next file being made is finished, ready or failed (at once if none is being made). */
  nextMade(): Promise<void> {
    return this.making === 0 || this.off ? Promise.resolve() : new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Files ready now. */
  get readyCount(): number {
    return this.ready.length;
  }

  /** Resolves once no file is being made (tests; every file started is then ready or failed). */
  settled(): Promise<void> {
    return this.making === 0 ? Promise.resolve() : new Promise((resolve) => this.idle.push(resolve));
  }

  private fill(): void {
    while (!this.off && this.ready.length + this.making < this.target) {
      const file = join(this.dir, `${this.next++}.db`);
      this.making++;
      this.make(file)
        .then(
          () => this.ready.push(file),
          (e: unknown) => this.turnOff(e),
        )
        .finally(() => {
          this.making--;
          this.waiting.shift()?.();
          if (this.making === 0) for (const resolve of [...this.idle.splice(0), ...this.waiting.splice(0)]) resolve();
        });
    }
  }

  /** Async, so that a failed open is a rejection (fill's `turnOff`), not a throw out of moveTo. */
  private async make(file: string): Promise<void> {
    const tmp = file.replace(/\.db$/, '.tmp');
    await fillNewFile(openSync(tmp, 'wx', 0o644), tmp, this.image, this.fsync);
    try {
      renameSync(tmp, file); // whole on disk before the name a later run keeps
    } catch (e) {
      unlinkQuiet(tmp);
      throw e;
    }
  }

  private turnOff(e: unknown): void {
    if (this.off) return;
    this.off = true;
    for (const file of this.ready.splice(0)) unlinkQuiet(file);
    for (const resolve of this.waiting.splice(0)) resolve();
    this.log.warn({ err: e, dir: this.dir }, 'making spare actor files failed; new actors get their files written as they are created');
  }
}
