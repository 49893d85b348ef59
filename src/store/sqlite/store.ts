/**
 * A bucket in one SQLite file on this host (`sqlite:<path>`), for a cluster whose nodes all run on
 * one machine. On a disk, the folder bucket pays an fsync of its own for every object it writes
 * (a file's data must be on disk before its name appears), and a first call to a new actor writes
 * two or three objects: on a disk without a journal that is the whole cost of the call. Here every
 * object is a row of one table, and writes share their fsyncs (group commit).
 *
 *   put / delete / deleteMany ─▶ queue ─▶ one batch at a time:
 *       BEGIN IMMEDIATE · each write's condition checked and applied, in queue order · COMMIT
 *       (synchronous=NORMAL: no fsync) ─▶ fsync of the WAL off the thread ─▶ every write answered
 *   writes that arrive while a batch is syncing form the next batch
 *
 * Why answering after that one fsync is enough: the WAL is one sequence, and an fsync makes all of
 * it up to that point durable. A reader may see a committed row before its fsync, but anything it
 * then writes durably lands later in the same WAL, so a power loss keeps both or drops the later
 * one too; and only processes on this host can read the file, which a power loss ends as well.
 * SQLite's checkpoints (every ~4 MB of WAL, in the thread whose commit crossed it) fsync the WAL
 * before copying it into the database file and the file after.
 *
 * Every thread of every node opens its own connection (WAL mode: readers never wait for writers).
 * The write lock is held for one batch's statements only; a thread that finds it taken yields to
 * its event loop and tries again (SQLite's own busy handler would sleep on the thread), for at
 * most `lockWaitMs`. Opening waits the same way: nodes started together open a new file at once,
 * and SQLite answers all but one of them busy, without waiting, when they switch it to WAL. One
 * host only: SQLite's WAL needs shared memory, which a network file system does not give.
 *
 * Contract: src/store/types.ts (test/store/conformance.ts). Etags are the MD5 of the body, as in
 * every store. Errors: `BadKey`/`BadRequest` before any I/O; `PreconditionFailed`;
 * `AmbiguousWrite` when a batch's commit or its fsync failed after its writes were applied;
 * `StoreUnavailable` otherwise (nothing applied).
 */
import Database from 'better-sqlite3';
import { closeSync, fstatSync, mkdirSync, openSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Clock } from '../../core/clock.js';
import { AmbiguousWrite, BadConfig, StoreUnavailable } from '../../core/errors.js';
import { etagOf } from '../etag.js';
import { FsyncThread } from '../fs/fsync-thread.js';
import { fsyncDoesNothing, fsyncFd, fsyncPathSync, sleepOn, type FsDurability } from '../fs/io.js';
import { createFailed, mismatch, modeOf, type Mode } from '../conditions.js';
import { compareKeys, pageOf, resolveList, validateKey } from '../keys.js';
import type { ListOptions, ListPage, ObjectHead, ObjectStore, PutCondition, StoredObject } from '../types.js';

export const SQLITE_SCHEME = 'sqlite:';

/** `sqlite:/abs/file`, `sqlite:///abs/file` or `sqlite:./relative/file` → an absolute path. */
export function parseSqliteUrl(url: string): string {
  const path = url.slice(SQLITE_SCHEME.length).replace(/^\/\/(?=\/)/, '');
  if (path === '' || path.startsWith('//'))
    throw new BadConfig(`bucket ${JSON.stringify(url)}: sqlite: takes a file path (sqlite:./bucket.db)`);
  return resolve(path);
}

export interface SqliteStoreSettings {
  /** How long a write waits for the write lock before it fails with StoreUnavailable. */
  lockWaitMs: number;
  /** Whether writes are fsynced (on tmpfs they are skipped anyway: fs/io.ts `fsyncDoesNothing`). */
  fsync?: boolean;
  /** Test seam: how the WAL is fsynced (counts and holds the syncs); fsync(2) on libuv's pool by default. */
  fsyncWal?: (fd: number) => Promise<void>;
  /** Where the WAL's fsync is made: the node's fsync pool (fs/fsync-queue.ts); libuv's pool when not given. */
  fsyncs?: FsDurability;
  /** The WAL's fsyncs on a thread of the store's own (fs/fsync-thread.ts), in place of `fsyncs`: the node's lease. */
  fsyncThread?: boolean;
}

type Write =
  | { kind: 'put'; key: string; body: Buffer; mode: Mode; etag: string; done: Settle<{ etag: string }> }
  | { kind: 'delete'; keys: string[]; done: Settle<void> };

interface Settle<T> {
  resolve(value: T): void;
  reject(error: unknown): void;
}

interface Statements {
  get: Database.Statement<[string], { etag: string; body: Buffer }>;
  head: Database.Statement<[string], { etag: string; size: number }>;
  etag: Database.Statement<[string], { etag: string }>;
  upsert: Database.Statement<[string, string, Buffer]>;
  delete: Database.Statement<[string]>;
  /** One statement per kind of bound, so that SQLite ranges over the key index (it uses one lower bound only). */
  list: Record<'from' | 'after' | 'fromBelow' | 'afterBelow', Database.Statement<unknown[], { key: string }>>;
}

const SCHEMA = 'CREATE TABLE IF NOT EXISTS objects (key TEXT PRIMARY KEY, etag TEXT NOT NULL, body BLOB NOT NULL)';

/** Quick polls for the write lock (yielding to the event loop each time) before waiting 1 ms between tries. */
const QUICK_POLLS = 16;

export class SqliteStore implements ObjectStore {
  readonly description: string;
  readonly #db: Database.Database;
  readonly #walPath: string;
  readonly #fsync: boolean;
  readonly #fsyncWal: (fd: number) => Promise<void>;
  /** With `fsyncThread`: the thread the WAL's fsyncs are made on. */
  readonly #thread: FsyncThread | undefined;
  #walFd: number | undefined;
  #queue: Write[] = [];
  /** Settles when the batch being written (if any) has been answered. */
  #running: Promise<void> | null = null;
  #closed = false;
  /** The prepared statements: set once the set-up has succeeded. */
  #stmt: Statements | undefined;
  /** The set-up being retried, while another connection holds the lock it needs. */
  #opening: Promise<Statements> | undefined;

  constructor(
    readonly path: string,
    private readonly settings: SqliteStoreSettings,
    private readonly clock: Clock,
  ) {
    this.description = `sqlite:${path}`;
    try {
      mkdirSync(dirname(path), { recursive: true });
      // No busy handler: SQLite's would sleep on this thread; a taken lock is retried off it (`#retried`).
      this.#db = new Database(path, { timeout: 0 });
    } catch (e) {
      throw this.#badFile(e);
    }
    this.#walPath = `${path}-wal`;
    this.#fsync = settings.fsync !== false && (settings.fsyncWal !== undefined || !fsyncDoesNothing(dirname(path)));
    const thread = (this.#thread = settings.fsyncThread === true ? new FsyncThread() : undefined);
    this.#fsyncWal = settings.fsyncWal ?? (thread ? (fd) => thread.fsyncFile(fd) : settings.fsyncs?.fsyncFile) ?? fsyncFd;
    // Another process opening the same new file may hold the lock the set-up needs: then the
    // set-up waits for it like any request (`#statements`); a file that is not a database fails here.
    try {
      this.#stmt = this.#setUp();
    } catch (e) {
      if (!isBusy(e)) {
        this.#db.close();
        throw this.#badFile(e);
      }
    }
  }

  /**
   * Puts the file in WAL mode, makes the table and prepares the statements. Every step may be
   * repeated: two processes opening a new file at once both ask for the lock that switches it to
   * WAL, and SQLite answers one of them busy at once rather than wait (it would deadlock).
   */
  #setUp(): Statements {
    this.#db.pragma('journal_mode = WAL');
    this.#db.pragma('synchronous = NORMAL');
    this.#db.pragma('journal_size_limit = 67108864'); // a WAL grown by a burst is cut back to 64 MB after a checkpoint
    this.#db.exec(SCHEMA);
    const statements: Statements = {
      get: this.#db.prepare('SELECT etag, body FROM objects WHERE key = ?'),
      head: this.#db.prepare('SELECT etag, length(body) AS size FROM objects WHERE key = ?'),
      etag: this.#db.prepare('SELECT etag FROM objects WHERE key = ?'),
      upsert: this.#db.prepare(
        'INSERT INTO objects (key, etag, body) VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET etag = excluded.etag, body = excluded.body',
      ),
      delete: this.#db.prepare('DELETE FROM objects WHERE key = ?'),
      list: {
        from: this.#db.prepare('SELECT key FROM objects WHERE key >= ? ORDER BY key LIMIT ?'),
        after: this.#db.prepare('SELECT key FROM objects WHERE key > ? ORDER BY key LIMIT ?'),
        fromBelow: this.#db.prepare('SELECT key FROM objects WHERE key >= ? AND key < ? ORDER BY key LIMIT ?'),
        afterBelow: this.#db.prepare('SELECT key FROM objects WHERE key > ? AND key < ? ORDER BY key LIMIT ?'),
      },
    };
    // The file and its WAL exist now; their names must be durable before any write is answered
    // (SQLite itself would sync the folder only at its first checkpoint). Once: this connection
    // keeps the WAL from being deleted while it is open.
    if (this.#fsync && this.settings.fsyncWal === undefined) fsyncPathSync(dirname(this.path));
    return statements;
  }

  /** The statements, once the set-up has succeeded: it is retried while another connection holds the lock it needs. */
  #statements(): Statements | Promise<Statements> {
    if (this.#stmt !== undefined) return this.#stmt;
    this.#opening ??= this.#retried(() => (this.#stmt ??= this.#setUp()), 'opening the file').finally(() => (this.#opening = undefined));
    return this.#opening;
  }

  #badFile(e: unknown): InstanceType<typeof BadConfig> {
    return new BadConfig(`bucket ${this.description} cannot be opened: ${(e as Error).message}`, { cause: e });
  }

  async get(key: string): Promise<StoredObject | null> {
    validateKey(key);
    const row = await this.#read((st) => st.get.get(key));
    return row ? { body: new Uint8Array(row.body.buffer, row.body.byteOffset, row.body.byteLength), etag: row.etag } : null;
  }

  async head(key: string): Promise<ObjectHead | null> {
    validateKey(key);
    const row = await this.#read((st) => st.head.get(key));
    return row ? { etag: row.etag, size: row.size } : null;
  }

  async list(options: ListOptions = {}): Promise<ListPage> {
    const { prefix, after, maxKeys } = resolveList(options);
    const below = prefixEnd(prefix);
    // The keys from the prefix on, or past `after` when that is further (one lower bound).
    const past = after !== '' && compareKeys(after, prefix) >= 0;
    const lower = past ? after : prefix;
    const rows = await this.#read(({ list }) => {
      if (below === null) return (past ? list.after : list.from).all(lower, maxKeys + 1);
      return (past ? list.afterBelow : list.fromBelow).all(lower, below, maxKeys + 1);
    });
    return pageOf(
      rows.map((r) => r.key),
      maxKeys,
    );
  }

  async put(key: string, body: Uint8Array, condition?: PutCondition): Promise<{ etag: string }> {
    validateKey(key);
    const mode = modeOf(condition);
    const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
    return this.#enqueue<{ etag: string }>((done) => ({ kind: 'put', key, body: bytes, mode, etag: etagOf(bytes), done }));
  }

  async delete(key: string): Promise<void> {
    validateKey(key);
    return this.#enqueue<void>((done) => ({ kind: 'delete', keys: [key], done }));
  }

  async deleteMany(keys: readonly string[]): Promise<void> {
    for (const key of keys) validateKey(key);
    if (keys.length === 0) return;
    return this.#enqueue<void>((done) => ({ kind: 'delete', keys: [...keys], done }));
  }

  async close(): Promise<void> {
    this.#closed = true;
    while (this.#running) await this.#running;
    await this.#opening?.catch(() => undefined);
    if (this.#walFd !== undefined) closeSync(this.#walFd);
    this.#walFd = undefined;
    if (this.#db.open) this.#db.close();
    await this.#thread?.close();
  }

  #enqueue<T>(make: (done: Settle<T>) => Write): Promise<T> {
    if (this.#closed) return Promise.reject(new StoreUnavailable(`${this.description} is closed`));
    return new Promise<T>((resolve, reject) => {
      this.#queue.push(make({ resolve, reject }) as Write);
      this.#running ??= this.#drain();
    });
  }

  /** Writes batch after batch until the queue is empty: each batch is what queued while the last one was written and synced. */
  async #drain(): Promise<void> {
    await Promise.resolve(); // writes issued in the same turn join the first batch
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue;
        this.#queue = [];
        await this.#writeBatch(batch).catch((e: unknown) => {
          for (const w of batch) w.done.reject(unavailable(this.description, 'a batch of writes', e)); // settled ones ignore it
        });
      }
    } finally {
      this.#running = null;
    }
  }

  async #writeBatch(batch: Write[]): Promise<void> {
    const outcomes: (() => void)[] = [];
    const applied: Write[] = [];
    let st: Statements;
    try {
      st = this.#stmt ?? (await this.#statements());
      await this.#retried(() => this.#db.exec('BEGIN IMMEDIATE'), 'a write');
    } catch (e) {
      for (const w of batch) w.done.reject(e);
      return;
    }
    try {
      for (const w of batch) {
        const failed = this.#apply(st, w);
        if (failed) outcomes.push(() => w.done.reject(failed));
        else applied.push(w);
      }
    } catch (e) {
      this.#rollback();
      for (const w of batch) w.done.reject(unavailable(this.description, 'a batch of writes', e));
      return;
    }
    try {
      this.#db.exec('COMMIT');
      if (this.#fsync && applied.length > 0) await this.#fsyncWal(this.#wal());
    } catch (e) {
      // A commit that failed with its transaction still open changed nothing; otherwise (or when
      // the fsync failed) the writes may be in place without being durable: only a read can tell.
      const rolledBack = this.#db.inTransaction && this.#rollback();
      for (const w of rolledBack ? batch : applied)
        w.done.reject(
          rolledBack
            ? unavailable(this.description, 'a batch of writes', e)
            : new AmbiguousWrite(`${this.description}: a write's commit or fsync failed; it may be in place`, {
                cause: e,
                details: keysOf(w),
              }),
        );
      if (!rolledBack) for (const answer of outcomes) answer();
      return;
    }
    for (const w of applied) {
      if (w.kind === 'put') w.done.resolve({ etag: w.etag });
      else w.done.resolve();
    }
    for (const answer of outcomes) answer();
  }

  /** Rolls the batch's transaction back if SQLite has not already; whether nothing of it is left. */
  #rollback(): boolean {
    try {
      if (this.#db.inTransaction) this.#db.exec('ROLLBACK');
      return true;
    } catch {
      return !this.#db.inTransaction;
    }
  }

  /** Applies one write inside the batch's transaction; the error it fails with (its condition), if any. */
  #apply(st: Statements, w: Write): Error | undefined {
    if (w.kind === 'delete') {
      for (const key of w.keys) st.delete.run(key);
      return undefined;
    }
    const { key, mode } = w;
    if (mode.kind !== 'any') {
      const current = st.etag.get(key)?.etag ?? null;
      if (mode.kind === 'create' && current !== null) return createFailed(key);
      if (mode.kind === 'match' && current !== mode.etag) return mismatch(key, mode.etag, current);
    }
    st.upsert.run(key, w.etag, w.body);
    return undefined;
  }

  /** The WAL file, open for fsync (opened again if it was replaced: the last connection to close deletes it). */
  #wal(): number {
    if (this.#walFd !== undefined && fstatSync(this.#walFd).nlink > 0) return this.#walFd;
    if (this.#walFd !== undefined) closeSync(this.#walFd);
    this.#walFd = openSync(this.#walPath, 'r');
    return this.#walFd;
  }

  /**
   * Runs `op`, trying again while another connection holds the lock it needs, for at most
   * `lockWaitMs`, yielding to the event loop between tries. A failure other than a taken lock
   * fails at once: BAD_CONFIG while opening the file, StoreUnavailable otherwise.
   */
  async #retried<T>(op: () => T, what: 'opening the file' | 'a write' | 'a read'): Promise<T> {
    const started = this.clock.now();
    for (let attempt = 0; ; attempt++) {
      try {
        return op();
      } catch (e) {
        if (!isBusy(e)) throw what === 'opening the file' ? this.#badFile(e) : unavailable(this.description, 'a request', e);
        if (this.clock.now() - started >= this.settings.lockWaitMs)
          throw unavailable(this.description, `${what} (waited ${this.settings.lockWaitMs} ms for the lock)`, e);
      }
      await sleepOn(this.clock, attempt < QUICK_POLLS ? 0 : 1);
    }
  }

  /** A read: in WAL mode it waits for no writer, but SQLite may still say busy while a connection rebuilds the WAL index. */
  async #read<T>(op: (st: Statements) => T): Promise<T> {
    if (this.#closed) throw new StoreUnavailable(`${this.description} is closed`);
    const st = this.#stmt ?? (await this.#statements());
    return this.#retried(() => op(st), 'a read');
  }
}

/** The least string above every string that starts with `prefix` (code point order), or null if there is none. */
export function prefixEnd(prefix: string): string | null {
  const points = [...prefix];
  while (points.length > 0) {
    const last = points.pop()!.codePointAt(0)!;
    if (last < 0x10ffff) {
      const next = last + 1 === 0xd800 ? 0xe000 : last + 1;
      return points.join('') + String.fromCodePoint(next);
    }
  }
  return null;
}

function isBusy(e: unknown): boolean {
  const code = (e as { code?: unknown })?.code;
  return typeof code === 'string' && (code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY_') || code === 'SQLITE_LOCKED');
}

function unavailable(description: string, what: string, e: unknown): InstanceType<typeof StoreUnavailable> {
  return new StoreUnavailable(`${description}: ${what} failed (${(e as Error)?.message ?? String(e)})`, { cause: e });
}

function keysOf(w: Write): { key: string } | { keys: string[] } {
  return w.kind === 'put' ? { key: w.key } : { keys: w.keys };
}
