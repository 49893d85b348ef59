/**
 * FsStore's host lock: a host-wide mutex held in `<root>/~lock.db`, serialising every replace and
 * delete of one bucket between the threads and processes of a host.
 *
 * It is SQLite's write lock (BEGIN IMMEDIATE … ROLLBACK), an fcntl lock the kernel releases when
 * its process dies (SQLite also arbitrates connections of one process); no pid or mtime staleness
 * is involved. The database holds one empty table, written once when the first client creates it;
 * after that a lock round trip does no file I/O (on a still-empty file SQLite would write a
 * journal). `busy_timeout` is 0 and waiting is asynchronous, so a waiter never blocks its event
 * loop and gives up after `waitMsMax` with `StoreUnavailable`; the section itself is synchronous
 * (a few syscalls), so one connection never nests transactions. The first clients of a new bucket
 * create the table at once: that one write waits for the others' (SQLite's busy handler, up to
 * `lockWaitMs`, once per store) rather than fail.
 */
import Database from 'better-sqlite3';
import { StoreUnavailable } from '../../core/errors.js';
import { SystemClock, type Clock } from '../../core/clock.js';
import { codeOf, sleepOn } from './io.js';

export class HostLock {
  readonly #db: Database.Database;
  readonly #begin: Database.Statement;
  readonly #release: Database.Statement;

  constructor(
    file: string,
    initWaitMs: number,
    readonly clock: Clock = new SystemClock(),
  ) {
    this.#db = new Database(file, { timeout: initWaitMs });
    const ready = this.#db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'keepwork_lock'").get();
    if (ready === undefined) this.#db.exec('CREATE TABLE IF NOT EXISTS keepwork_lock (unused INTEGER)');
    this.#db.pragma('busy_timeout = 0');
    this.#begin = this.#db.prepare('BEGIN IMMEDIATE');
    this.#release = this.#db.prepare('ROLLBACK'); // nothing is ever written: ROLLBACK cannot be busy
  }

  /** This client's waiters, in arrival order: only the first polls the lock. */
  #turns: Promise<unknown> = Promise.resolve();

  /**
   * Runs `section` holding the lock. Waiters of one client take turns in arrival order (polling
   * with backoff is unfair: a newcomer's first try often beats a waiter sleeping its backoff, so
   * under a burst one call could wait far longer than the rest); `waitMsMax` counts from arrival,
   * queue time included.
   */
  run<T>(section: () => T, waitMsMax: number): Promise<T> {
    const deadline = performance.now() + waitMsMax;
    const turn = this.#turns.then(() => this.#runWhenFree(section, deadline, waitMsMax));
    this.#turns = turn.catch(() => undefined);
    return turn;
  }

  async #runWhenFree<T>(section: () => T, deadline: number, waitMsMax: number): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      if (this.#tryBegin()) {
        try {
          return section();
        } finally {
          this.#release.run();
        }
      }
      const delayMs = attempt < 8 ? 0 : Math.min(16, 1 << Math.min(attempt - 8, 4));
      if (performance.now() >= deadline) throw new StoreUnavailable(`host lock still busy after ${waitMsMax} ms (lockWaitMs)`);
      await sleepOn(this.clock, delayMs);
    }
  }

  #tryBegin(): boolean {
    try {
      this.#begin.run();
      return true;
    } catch (e) {
      if (codeOf(e) === 'SQLITE_BUSY' || codeOf(e) === 'SQLITE_LOCKED') return false;
      throw e;
    }
  }

  close(): void {
    this.#db.close();
  }
}
