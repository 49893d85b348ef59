/**
 * One actor's SQLite database: where its file lives, how it is opened, and keepwork's internal
 * tables inside it (docs/architecture.md), so that guest writes, the alarm and the metadata commit in
 * one transaction.
 *
 *   <dataDir>/actors/<tenant>/<class>/<name hex>.db      (names over 100 bytes: h-<sha256>.db)
 *   _keep_alarm(id = 0, at)        zero or one row: the committed alarm in ms
 *   _keep_meta(key, value)         address, initialized, deleted, alarm_failures, alarm_indexed,
 *                                  owner_fence (the last two used by the alarm index)
 *   _keep_idem(key, args_hash,     the idempotency keys of durable calls and their outcomes
 *      result, error, at)          (idempotency.ts); created in the first event that records one
 */
import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, statfsSync, statSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { nameHex, type ActorAddress } from '../core/address.js';
import { forMemory } from '../replication/memory-image.js';
import { preparedOnce } from '../replication/replica-deps.js';
import { fsyncFd, type FsyncFile } from '../store/fs/io.js';
import { diskFull, isDiskFull } from '../core/disk-full.js';
import { actorFileHeld } from '../core/file-held.js';
import { filesExhausted, isOutOfFiles } from '../core/files-exhausted.js';
import type { SpareActorFiles } from './spare-files.js';

export type Db = Database.Database;

export type MetaKey = 'address' | 'initialized' | 'deleted' | 'alarm_failures' | 'alarm_indexed' | 'owner_fence';

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS _keep_alarm (id INTEGER PRIMARY KEY CHECK (id = 0), at INTEGER NOT NULL);
  CREATE TABLE IF NOT EXISTS _keep_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
`;

/** Created by the first event that records an idempotency key, in its transaction (idempotency.ts). */
export const IDEM_SCHEMA = `
  CREATE TABLE IF NOT EXISTS _keep_idem (key TEXT PRIMARY KEY, args_hash TEXT NOT NULL, result TEXT, error TEXT, at INTEGER NOT NULL);
  CREATE INDEX IF NOT EXISTS _keep_idem_at ON _keep_idem (at);
`;

const NAME_HEX_MAX = 200;

export function actorDbPath(dataDir: string, a: ActorAddress): string {
  const hex = nameHex(a.name);
  const file = hex.length <= NAME_HEX_MAX ? hex : 'h-' + createHash('sha256').update(a.name, 'utf8').digest('hex');
  return join(dataDir, 'actors', a.tenant, a.className, `${file}.db`);
}

/**
 * Test seams (the deterministic simulator), unset in production. `onOpen`: told of every actor
 * database opened, so a simulated crash can keep the dead process's handles from being closed by
 * the garbage collector (a close folds the WAL into the file, which a real crash never does).
 * `sharedLocking`: open in SQLite's NORMAL locking mode, since those handles stay open beside the
 * restarted node's, which EXCLUSIVE mode (setUp) would refuse.
 */
export const actorDbHooks: { onOpen?: (db: Db) => void; sharedLocking?: boolean } = {};

/**
 * Creates an actor's database from a spare file (spare-files.ts: a new actor's empty image,
 * already fsynced) renamed into place; null when none could be had (the caller writes the file).
 */
export function createActorDbFromSpare(spares: SpareActorFiles, path: string, address: ActorAddress): Db | null {
  clearTarget(path);
  return spares.moveTo(path) ? openFile(path, address, true) : null;
}

/** Opens (creating when `create`) the actor's database; null when it does not exist and !create. */
export function openActorDb(path: string, address: ActorAddress, create: boolean): Db | null {
  if (!existsSync(path)) return create ? createActorDbSync(path, address) : null;
  return openFile(path, address, false);
}

/**
 * Creates an actor's database (there is no file at `path`) from `image` (a WAL-mode database;
 * default: a new actor's empty one), its file fsynced off the thread by `fsync` (the node's fsync
 * pool; libuv's pool by default), so the worker's event loop goes on while the disk works
 * (actor-slots.ts); every other step is a synchronous system call of microseconds, cheaper than a
 * round trip to another thread. `fsync` null skips the fsync where it does nothing (the data dir
 * on tmpfs: fs/io.ts `fsyncDoesNothing`). The simulator
 * keeps to openActorDb, every file operation synchronous.
 */
export async function createActorDb(
  path: string,
  address: ActorAddress,
  image: Buffer = newFileImage(),
  fsync: FsyncFile | null = fsyncFd,
): Promise<Db> {
  const fd = startNewFile(path, image);
  try {
    if (fsync) await fsync(fd);
  } catch (e) {
    closeSync(fd);
    throw e;
  }
  finishNewFile(path, fd);
  return openFile(path, address, true);
}

/**
 * How long an open waits for the file's lock: the one other connection that may have it for a
 * moment is the start-up scan's read (scan.ts); past that, the holder is a restarted worker's old
 * thread that has not ended (main/worker-group.ts), stuck in native code, and waiting longer
 * (SQLite's default here is 5 s) would only stall this worker.
 */
const OPEN_BUSY_MS = 100;

/**
 * Opens the file; held by another connection, OVERLOADED resource actorFile (core/file-held.ts);
 * out of file descriptors, FILES_EXHAUSTED (core/files-exhausted.ts); on a full
 * disk, OVERLOADED resource disk (core/disk-full.ts). SQLite opens the WAL and its index at the
 * first statement, and says only SQLITE_CANTOPEN (or an I/O error) when it cannot: a failed open
 * is told apart by trying to open the file here, and by the free space of its folder.
 */
function openFile(path: string, address: ActorAddress, created: boolean): Db {
  let db: Db | undefined;
  try {
    db = new Database(path, { timeout: OPEN_BUSY_MS });
    return setUp(db, path, address, created);
  } catch (e) {
    const held = (e as { code?: unknown }).code === 'SQLITE_BUSY';
    const outOfFiles = !held && (isOutOfFiles(e) || (isSqliteOpenFailure(e) && outOfFilesNow(path))); // before the close frees some
    const full = !held && !outOfFiles && (isDiskFull(e) || (isSqliteOpenFailure(e) && noSpaceLeft(dirname(path))));
    if (db?.open) db.close();
    if (held) throw actorFileHeld(`open actor database ${path}`, e);
    if (outOfFiles) throw filesExhausted(`open actor database ${path}`, e);
    throw full ? diskFull(`open actor database ${path}`, e) : e;
  }
}

function isSqliteOpenFailure(e: unknown): boolean {
  const code = (e as { code?: unknown })?.code;
  return typeof code === 'string' && (code.startsWith('SQLITE_CANTOPEN') || code.startsWith('SQLITE_IOERR'));
}

/** Whether opening `path` now fails for want of a file descriptor. */
function outOfFilesNow(path: string): boolean {
  try {
    closeSync(openSync(path, 'r'));
    return false;
  } catch (e) {
    return isOutOfFiles(e);
  }
}

/** Whether the file system of `dir` has no block left for this process. */
function noSpaceLeft(dir: string): boolean {
  try {
    return statfsSync(dir).bavail === 0;
  } catch {
    return false;
  }
}

function setUp(db: Db, path: string, address: ActorAddress, created: boolean): Db {
  actorDbHooks.onOpen?.(db);
  // One exec for the settings: each `db.pragma` call prepares a statement and reads its rows
  // (~10 µs apiece, a new actor's open makes five). A new file's first commit starts a brand-new
  // WAL: its header fsync (and the folder's) guards against frames of an earlier WAL in the same
  // file being read as new after a power loss, and there are none (startNewFile), hence
  // synchronous=OFF until the address is committed. synchronous=NORMAL syncs the WAL, then its
  // folder, at the first checkpoint, which also syncs the file. cache_size: 512 KiB per open
  // actor, since many actors stay open per worker. locking_mode=EXCLUSIVE, set before the first
  // access: one connection (this one) ever has the file open, so it takes the file's lock once and
  // keeps it until it closes, and keeps the WAL's index in its own memory: no -shm file to create,
  // map and remove, and no lock calls in each transaction (~10 µs of the ~20 a small one costs on
  // a disk: docs/benchmarks.md#first-touch). Another connection to the file meanwhile gets SQLITE_BUSY
  // (the start-up scan skips such a file: scan.ts).
  const locking = actorDbHooks.sharedLocking ? '' : 'PRAGMA locking_mode = EXCLUSIVE; ';
  db.exec(
    `${locking}PRAGMA journal_mode = WAL; PRAGMA synchronous = ${created ? 'OFF' : 'NORMAL'}; PRAGMA foreign_keys = ON; PRAGMA cache_size = -512;`,
  );
  if (!created) db.exec(SCHEMA); // a file created here holds an image with the tables
  if (readMeta(db, 'address') === null) writeMeta(db, 'address', address.key);
  if (created) db.exec('PRAGMA synchronous = NORMAL');
  return db;
}

/**
 * For a file opened with no WAL, or an empty one (closed cleanly, checkpointed with TRUNCATE, or
 * just written from an image that has its address): starts its WAL by committing page 1 as it is
 * (`application_id` set to what it is: SQLite writes the page whatever the value) at
 * synchronous=OFF, as a new file's first commit is (openFile), and says whether it did. Otherwise
 * the first event's commit would start it at NORMAL: the WAL header (and, the first time, its
 * folder) fsynced on the worker thread, which on a journaled disk would make a new actor's move out
 * of memory cost more than its first call (docs/benchmarks.md). That header fsync guards against
 * frames of an earlier WAL being read as new after a power loss, and an empty WAL has none. The
 * caller decides whether the frame counts as uploaded (ActorReplica.walStarted).
 */
export function startWal(db: Db, path: string): boolean {
  const wal = statSync(`${path}-wal`, { throwIfNoEntry: false });
  if (wal !== undefined && wal.size > 0) return false;
  db.pragma('synchronous = OFF');
  try {
    db.pragma(`application_id = ${Number(db.pragma('application_id', { simple: true }))}`);
  } finally {
    db.pragma('synchronous = NORMAL');
  }
  return true;
}

/**
 * The bytes of a new actor's file: an empty database already in WAL mode (header bytes 18 and 19
 * = 2, what `journal_mode = WAL` writes) with keepwork's tables. Built once per thread.
 */
let emptyImage: Buffer | undefined;

export function newFileImage(): Buffer {
  if (!emptyImage) {
    const mem = new Database(':memory:');
    mem.exec(SCHEMA);
    const image = mem.serialize();
    mem.close();
    image[18] = 2;
    image[19] = 2;
    emptyImage = image;
  }
  return emptyImage;
}

/** A new actor's database as SQLite opens it in memory (memory-image.ts `forMemory`); shared, since opening copies it. */
let emptyMemoryImage: Buffer | undefined;

export function newMemoryImage(): Buffer {
  return (emptyMemoryImage ??= forMemory(newFileImage()));
}

/**
 * createActorDb with every step synchronous, the fsync too (the simulator's path, and openActorDb):
 * the file is written in one piece — to a temp file, fsynced, renamed into place.
 * One fsync, where letting SQLite create it (a rollback-journal transaction to switch an empty
 * file to WAL, at the default synchronous=FULL) takes four on the worker thread — journal twice,
 * its folder, the file — and a journal file created and unlinked; and the first commit's WAL
 * header and folder fsyncs are not needed (openFile). The name is made durable by the folder
 * fsync SQLite does at the first checkpoint (nothing of the actor is synced before that anyway).
 */
export function createActorDbSync(path: string, address: ActorAddress, image: Buffer = newFileImage()): Db {
  const fd = startNewFile(path, image);
  try {
    fsyncSync(fd);
  } catch (e) {
    closeSync(fd);
    throw e;
  }
  finishNewFile(path, fd);
  return openFile(path, address, true);
}

/**
 * The first half of a new file: its place cleared (clearTarget), `image` written to the temp
 * file, whose descriptor is returned for the caller to fsync.
 */
function startNewFile(path: string, image: Buffer): number {
  clearTarget(path);
  const fd = openSync(`${path}.new`, 'w', 0o644);
  try {
    writeSync(fd, image);
  } catch (e) {
    closeSync(fd);
    throw e;
  }
  return fd;
}

/**
 * Makes the file's folder; a stale WAL or shm of an earlier file of that name belongs to no
 * database now and is removed. Looked for first: `rmSync` of a missing file costs an exception
 * (~15 µs), and a new actor's target has neither.
 */
function clearTarget(path: string): void {
  mkdirSync(dirname(path), { recursive: true });
  for (const suffix of ['-wal', '-shm']) if (existsSync(path + suffix)) rmSync(path + suffix, { force: true });
}

/** The second half, once the temp file is fsynced: its name appears, whole. */
function finishNewFile(path: string, fd: number): void {
  closeSync(fd);
  renameSync(`${path}.new`, path);
}

/**
 * Opens an actor's database in memory from its image (memory-image.ts `forMemory`): nothing on
 * the local disk; the replica uploads its changes from `db.serialize()`.
 */
export function openMemoryActorDb(image: Buffer, address: ActorAddress): Db {
  const db = new Database(image);
  actorDbHooks.onOpen?.(db);
  db.exec(`PRAGMA foreign_keys = ON; ${SCHEMA}`);
  if (readMeta(db, 'address') === null) writeMeta(db, 'address', address.key);
  return db;
}

/** Removes the database and its WAL files (the handle must be closed). */
export function removeActorDb(path: string): void {
  for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
}

/** keepwork's own statements on an actor's database (replica-deps.ts `preparedOnce`). */
export function stmt(db: Db, sql: string): Database.Statement {
  return preparedOnce(db, sql);
}

export function readMeta(db: Db, key: MetaKey): string | null {
  const row = stmt(db, 'SELECT value FROM _keep_meta WHERE key = ?').get(key) as { value: string } | undefined;
  return row ? row.value : null;
}

export function writeMeta(db: Db, key: MetaKey, value: string | null): void {
  if (value === null) stmt(db, 'DELETE FROM _keep_meta WHERE key = ?').run(key);
  else stmt(db, 'INSERT INTO _keep_meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value').run(key, value);
}

/**
 * No event ever committed to the actor: every request's transaction marks it initialized (the
 * pipeline's init step runs in each), and the only other commit a request makes — a durable
 * call's recorded error — creates `_keep_idem` (IDEM_SCHEMA runs in the transaction that records).
 * Alarms and deliveries never create an actor.
 */
export function neverCommitted(db: Db): boolean {
  if (readMeta(db, 'initialized') === '1') return false;
  return !hasIdemTable(db);
}

/** Whether `_keep_idem` exists (IDEM_SCHEMA: made by the first event that records a key). */
export function hasIdemTable(db: Db): boolean {
  return stmt(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_keep_idem'").get() !== undefined;
}

export function readAlarm(db: Db): number | null {
  const row = stmt(db, 'SELECT at FROM _keep_alarm WHERE id = 0').get() as { at: number } | undefined;
  return row ? row.at : null;
}

export function writeAlarm(db: Db, at: number | null): void {
  if (at === null) stmt(db, 'DELETE FROM _keep_alarm WHERE id = 0').run();
  else stmt(db, 'INSERT INTO _keep_alarm (id, at) VALUES (0, ?) ON CONFLICT(id) DO UPDATE SET at = excluded.at').run(at);
}

export function readFailures(db: Db): number {
  return Number(readMeta(db, 'alarm_failures') ?? '0');
}
