/**
 * FsStore: the embedded bucket, a folder that every process and thread of one host may share
 * (DESIGN.md §2). It keeps the `ObjectStore` contract of `store/types.ts`, conditional writes
 * included, between threads and between OS processes.
 *
 * On-disk format. Each key segment is percent-encoded byte by byte (every UTF-8 byte outside
 * [A-Za-z0-9._-] becomes %XX, `%` and `~` included). A folder is an encoded segment; an object
 * file is its encoded last segment + `~`. A segment whose encoding exceeds PIECE_CHARS_MAX is
 * cut between characters into pieces, every piece but the last a folder named piece + `+`.
 * Names starting with `~` are the store's own: `~lock.db` (the host lock) and `~tmp/` (temp
 * files). None of `~`, `+` can occur in an encoded segment, so objects, folders, continuation
 * folders and internal files never collide, and `a` can be both an object and a folder:
 *
 *   <root>/~lock.db                          SQLite file with one empty table: only its lock is used
 *   <root>/~tmp/<pid>-<hex>                  temp files (an orphan is left by a killed writer)
 *   <root>/holds/t1/Counter/6a6f65~          key holds/t1/Counter/6a6f65
 *   <root>/a~  <root>/a/b~                   keys a and a/b
 *   <root>/x/caf%C3%A9%20bar~                key x/café bar
 *   <root>/n/<240 chars>+/<rest>~            key n/<a segment of more than 240 encoded chars>
 *
 * Writes (body first written to a temp file and fsynced, outside any lock):
 *   create (ifNoneMatch '*')   link(temp, target): atomic exclusive create; EEXIST → PreconditionFailed
 *   replace (ifMatch / none)   BEGIN IMMEDIATE on ~lock.db { check etag; rename(temp, target) } ROLLBACK
 *   delete                     BEGIN IMMEDIATE { unlink(target) } ROLLBACK
 * then fsync the folder. Readers see whole objects only: an object name only ever appears by an
 * atomic link or rename of a complete, fsynced file, and no object file is written in place.
 *
 * Concurrency argument. The SQLite write lock (an fcntl lock, released by the kernel when its
 * process dies; SQLite also arbitrates connections of one process) serialises every replace and
 * delete host-wide. Each operation takes effect at one atomic kernel step: link, rename, unlink,
 * or — for a failing conditional write — the read that saw the precondition fail. An ifMatch
 * reads the current version before the lock and, under it, checks with lstat that the same inode
 * is still in place (its file handle stays open, so the inode number cannot be reused; a
 * different inode is re-read under the lock); between that check and its rename no other replace
 * or delete can run (lock), and no create can succeed because the target exists throughout. A
 * create needs the target absent: it cannot slip into a locked section (the target exists
 * there), and against a lone unlink or rename the kernel orders the two directory operations.
 * So all operations are linearisable without creates ever taking the lock.
 *
 * The lock is the one SQLite takes for BEGIN IMMEDIATE; no pid or mtime staleness is involved. The
 * expensive work (writing and fsyncing the temp file, reading the version an ifMatch expects) is
 * done before it; the section itself is a few synchronous syscalls, and a waiter polls without
 * blocking its event loop, for at most `lockWaitMs`.
 *
 * Listing walks folders depth-first in key order (see ListWalk), starting at the folder of the
 * prefix's complete segments and skipping subtrees that cannot hold a wanted key; it stops at
 * maxKeys + 1 keys. Folders emptied by a delete are removed (best effort); a write that meets
 * ENOENT because such a removal raced with it re-creates the folder and retries, at most
 * `folderRacesMax` times.
 *
 * Limits: one host, a local POSIX filesystem with hard links and fcntl locks (not NFS/SMB), case-
 * sensitive names; the root path plus up to 3× the key length must fit in PATH_MAX (4096).
 * Errors: `BadKey`/`BadRequest` before any I/O; `PreconditionFailed`; `StoreUnavailable` when the
 * write did not happen (or a read failed); `AmbiguousWrite` when the object became visible but the
 * folder fsync failed.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { link, mkdir, open, readFile, readdir, rmdir, unlink, type FileHandle } from 'node:fs/promises';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { AmbiguousWrite, BadConfig, BadRequest, KeepworkError, PreconditionFailed, StoreUnavailable } from '../core/errors.js';
import { etagOf } from './etag.js';
import { compareKeys, pageOf, resolveList, validateKey } from './keys.js';
import type { ListOptions, ListPage, ObjectHead, ObjectStore, PutCondition, StoredObject } from './types.js';

// ---------------------------------------------------------------------------------------------
// Options

export interface FsStoreOptions {
  /** fsync temp files and folders (turn off only for throwaway data). */
  fsync?: boolean;
  /** How long a replace or delete waits for the host lock before `StoreUnavailable`. */
  lockWaitMs?: number;
  /** Attempts of an I/O step that fails with a transient error (EMFILE, EAGAIN, ...). */
  attemptsMax?: number;
  /** First delay between those attempts (doubles). */
  retryBaseMs?: number;
  /** Retries of a write whose folder a concurrent delete removed. */
  folderRacesMax?: number;
  /** Keys removed per lock acquisition in `deleteMany`. */
  deleteBatchKeys?: number;
}

export const FS_STORE_DEFAULTS = Object.freeze({
  fsync: true,
  lockWaitMs: 10_000,
  attemptsMax: 4,
  retryBaseMs: 50,
  folderRacesMax: 16,
  deleteBatchKeys: 256,
});

type FsConfig = { -readonly [K in keyof typeof FS_STORE_DEFAULTS]: (typeof FS_STORE_DEFAULTS)[K] extends boolean ? boolean : number };

function resolveFsOptions(options: FsStoreOptions = {}): FsConfig {
  const merged: FsConfig = { ...FS_STORE_DEFAULTS };
  for (const [name, value] of Object.entries(options)) {
    if (!(name in FS_STORE_DEFAULTS)) throw new BadConfig(`unknown FsStore option ${name}; known: ${Object.keys(FS_STORE_DEFAULTS).join(', ')}`);
    if (value === undefined) continue;
    if (name === 'fsync') {
      if (typeof value !== 'boolean') throw new BadConfig(`fsync must be a boolean, got ${JSON.stringify(value)}`);
    } else if (!Number.isSafeInteger(value) || (value as number) < (name === 'retryBaseMs' ? 0 : 1)) {
      throw new BadConfig(`${name} must be a ${name === 'retryBaseMs' ? 'non-negative' : 'positive'} integer, got ${JSON.stringify(value)}`);
    }
    (merged as Record<string, unknown>)[name] = value;
  }
  return merged;
}

// ---------------------------------------------------------------------------------------------
// Key ↔ path mapping

/** Internal names start with this; no encoded segment does. */
export const INTERNAL_MARK = '~';
export const LOCK_FILE_NAME = '~lock.db';
export const TEMP_DIR_NAME = '~tmp';
const OBJECT_MARK = '~';
const CONTINUED_MARK = '+';
/** Longest piece name (NAME_MAX is 255 bytes; a mark is added). */
export const PIECE_CHARS_MAX = 240;
const ENCODED_NAME = /^(?:[A-Za-z0-9._-]|%[0-9A-F]{2})+$/;

function isPlainByte(b: number): boolean {
  return (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b === 0x2e || b === 0x5f || b === 0x2d;
}

export function encodeSegment(text: string): string {
  let out = '';
  for (const b of Buffer.from(text, 'utf8')) out += isPlainByte(b) ? String.fromCharCode(b) : `%${b < 16 ? '0' : ''}${b.toString(16).toUpperCase()}`;
  return out;
}

/** The text of an encoded name, or null for a name this store never writes. */
export function decodeSegment(name: string): string | null {
  if (!ENCODED_NAME.test(name)) return null;
  const bytes = Buffer.from(name.replace(/%([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))), 'latin1');
  const text = bytes.toString('utf8');
  return encodeSegment(text) === name ? text : null; // refuses bad UTF-8 and non-canonical escapes
}

/** A segment's encoding cut between characters into names of at most PIECE_CHARS_MAX chars. */
function piecesOf(segment: string): string[] {
  const whole = encodeSegment(segment);
  if (whole.length <= PIECE_CHARS_MAX) return [whole];
  const pieces: string[] = [];
  let current = '';
  for (const ch of segment) {
    const encoded = encodeSegment(ch);
    if (current.length + encoded.length > PIECE_CHARS_MAX) pieces.push(current), (current = '');
    current += encoded;
  }
  pieces.push(current);
  return pieces;
}

/** Path components of a folder segment (continuation pieces, then the folder). */
function folderNames(segment: string): string[] {
  const pieces = piecesOf(segment);
  return pieces.map((p, i) => (i < pieces.length - 1 ? p + CONTINUED_MARK : p));
}

/** Path components of a validated key's object file, relative to the root. */
export function objectNames(key: string): string[] {
  const segments = key.split('/');
  const last = folderNames(segments.pop()!);
  last[last.length - 1] += OBJECT_MARK;
  return [...segments.flatMap(folderNames), ...last];
}

interface Target {
  file: string;
  dir: string;
}

function insideRoot(root: string, names: readonly string[]): string {
  const full = path.resolve(root, ...names);
  if (!full.startsWith(root + path.sep)) throw new BadRequest(`path ${full} escapes the bucket ${root}`);
  return full;
}

// ---------------------------------------------------------------------------------------------
// file:// URLs

/** `file:///abs`, `file://./rel` or `file://../rel` (from the cwd), or a plain path → absolute path. */
export function parseFsUrl(urlOrPath: string): string {
  if (typeof urlOrPath !== 'string' || urlOrPath === '') throw new BadConfig('bucket path must be a non-empty string');
  if (!/^file:/i.test(urlOrPath)) return path.resolve(urlOrPath);
  const rest = urlOrPath.replace(/^file:\/\//i, '');
  if (rest === urlOrPath || /[?#]/.test(rest)) throw new BadConfig(`bucket URL ${urlOrPath} must look like file:///abs/path or file://./rel/path`);
  if (rest.startsWith('./') || rest.startsWith('../') || rest === '.' || rest === '..') return path.resolve(decodeURIComponent(rest));
  try {
    return fileURLToPath(urlOrPath);
  } catch (e) {
    throw new BadConfig(`bucket URL ${urlOrPath} must look like file:///abs/path or file://./rel/path`, { cause: e });
  }
}

// ---------------------------------------------------------------------------------------------
// Small I/O helpers

function codeOf(e: unknown): string | undefined {
  return typeof e === 'object' && e !== null && 'code' in e ? String((e as { code: unknown }).code) : undefined;
}

const TRANSIENT = new Set(['EMFILE', 'ENFILE', 'EAGAIN', 'EBUSY', 'EINTR']);

function sleepMs(ms: number): Promise<void> {
  return new Promise((resolve) => (ms <= 0 ? setImmediate(resolve) : setTimeout(resolve, ms)));
}

async function fsyncPath(file: string): Promise<void> {
  const handle = await open(file, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function unlinkQuiet(file: string): Promise<void> {
  await unlink(file).catch(() => undefined);
}

function asBytes(buf: Buffer): Uint8Array {
  return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
}

// ---------------------------------------------------------------------------------------------
// The host lock

/**
 * A host-wide mutex: SQLite's write lock (BEGIN IMMEDIATE … ROLLBACK) on a database that holds one
 * empty table, written once when the first client creates it; after that a lock round trip does
 * no file I/O (on a still-empty file SQLite would write a journal). `busy_timeout` is 0 and waiting
 * is asynchronous, so a waiter never blocks its event loop; the section itself is synchronous, so
 * one connection never nests transactions.
 */
class HostLock {
  readonly #db: Database.Database;
  readonly #begin: Database.Statement;
  readonly #release: Database.Statement;

  constructor(file: string, initWaitMs: number) {
    this.#db = new Database(file, { timeout: initWaitMs });
    const ready = this.#db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'keepwork_lock'").get();
    if (ready === undefined) this.#db.exec('CREATE TABLE IF NOT EXISTS keepwork_lock (unused INTEGER)');
    this.#db.pragma('busy_timeout = 0');
    this.#begin = this.#db.prepare('BEGIN IMMEDIATE');
    this.#release = this.#db.prepare('ROLLBACK'); // nothing is ever written: ROLLBACK cannot be busy
  }

  async run<T>(section: () => T, waitMsMax: number): Promise<T> {
    let waitedMs = 0;
    for (let attempt = 0; ; attempt++) {
      if (this.#tryBegin()) {
        try {
          return section();
        } finally {
          this.#release.run();
        }
      }
      const delayMs = attempt < 8 ? 0 : Math.min(16, 1 << Math.min(attempt - 8, 4));
      if (waitedMs >= waitMsMax) throw new StoreUnavailable(`host lock still busy after ${waitMsMax} ms (lockWaitMs)`);
      waitedMs += delayMs;
      await sleepMs(delayMs);
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

// ---------------------------------------------------------------------------------------------
// Listing

/** Folders read ahead of the walk (each listing holds at most this many extra readdirs). */
const LIST_READ_AHEAD = 8;

interface Entry {
  /** The full key, with a trailing `/` for a folder. */
  key: string;
  folder: boolean;
  path: string;
}

/**
 * Walks folders in key order. An entry sorts by its decoded segment (object) or segment + `/`
 * (folder); every folder's keys are contiguous in byte order, so a depth-first walk in that order
 * yields keys in global byte order. Continuation folders are lifted into their parent first (their
 * keys interleave with siblings). Subtrees that cannot hold a key > `after` under `prefix` are skipped.
 */
class ListWalk {
  readonly keys: string[] = [];

  constructor(
    readonly prefix: string,
    readonly after: string,
    readonly limit: number,
  ) {}

  async walk(dir: string, base: string, dirents: Promise<fs.Dirent[]> = readDirents(dir)): Promise<void> {
    const entries = await this.#entries(await dirents, dir, base);
    entries.sort((a, b) => compareKeys(a.key, b.key));
    const ahead = new Map<number, Promise<fs.Dirent[]>>();
    for (let i = 0; i < entries.length && this.keys.length < this.limit; i++) {
      const entry = entries[i]!;
      if (!entry.folder) {
        this.keys.push(entry.key);
        continue;
      }
      this.#readAhead(entries, i, ahead);
      await this.walk(entry.path, entry.key, ahead.get(i));
      ahead.delete(i);
    }
  }

  /** Starts reading the next few folders while this one is walked (readdir is the cost of a listing). */
  #readAhead(entries: Entry[], from: number, ahead: Map<number, Promise<fs.Dirent[]>>): void {
    for (let j = from; j < entries.length && j <= from + LIST_READ_AHEAD; j++) {
      if (!entries[j]!.folder || ahead.has(j)) continue;
      const read = readDirents(entries[j]!.path);
      read.catch(() => undefined); // surfaced when awaited; ignored if the page fills first
      ahead.set(j, read);
    }
  }

  async #entries(dirents: fs.Dirent[], dir: string, base: string): Promise<Entry[]> {
    const out: Entry[] = [];
    for (const dirent of dirents) {
      const name = dirent.name;
      if (name.startsWith(INTERNAL_MARK)) continue;
      const full = path.join(dir, name);
      if (dirent.isFile() && name.endsWith(OBJECT_MARK)) this.#addObject(out, base, name.slice(0, -1), full);
      else if (dirent.isDirectory() && name.endsWith(CONTINUED_MARK)) await this.#addContinued(out, base, name.slice(0, -1), full);
      else if (dirent.isDirectory()) this.#addFolder(out, base, name, full);
    }
    return out;
  }

  #addObject(out: Entry[], base: string, name: string, full: string): void {
    const text = decodeSegment(name);
    if (text === null) return;
    const key = base + text;
    if (key.startsWith(this.prefix) && compareKeys(key, this.after) > 0) out.push({ key, folder: false, path: full });
  }

  #addFolder(out: Entry[], base: string, name: string, full: string): void {
    const text = decodeSegment(name);
    if (text !== null && this.#mayHold(base + text + '/')) out.push({ key: base + text + '/', folder: true, path: full });
  }

  async #addContinued(out: Entry[], base: string, name: string, full: string): Promise<void> {
    const text = decodeSegment(name);
    if (text !== null && this.#mayHold(base + text)) out.push(...(await this.#entries(await readDirents(full), full, base + text)));
  }

  /** Whether some key longer than `start` and starting with it can be wanted. */
  #mayHold(start: string): boolean {
    const matches = start.startsWith(this.prefix) || this.prefix.startsWith(start);
    const allBelow = compareKeys(start, this.after) < 0 && !this.after.startsWith(start);
    return matches && !allBelow;
  }
}

async function readDirents(dir: string): Promise<fs.Dirent[]> {
  try {
    return await readdir(dir, { withFileTypes: true });
  } catch (e) {
    if (codeOf(e) === 'ENOENT' || codeOf(e) === 'ENOTDIR') return [];
    throw e;
  }
}

// ---------------------------------------------------------------------------------------------
// The store

type Mode = { kind: 'create' } | { kind: 'match'; etag: string } | { kind: 'any' };

function modeOf(condition: PutCondition | undefined): Mode {
  const c = (condition ?? {}) as { ifNoneMatch?: unknown; ifMatch?: unknown };
  if (c.ifNoneMatch !== undefined && c.ifMatch !== undefined) throw new BadRequest('put takes ifNoneMatch or ifMatch, not both');
  if (c.ifNoneMatch !== undefined) {
    if (c.ifNoneMatch !== '*') throw new BadRequest(`ifNoneMatch must be "*", got ${JSON.stringify(c.ifNoneMatch)}`);
    return { kind: 'create' };
  }
  if (c.ifMatch !== undefined) {
    if (typeof c.ifMatch !== 'string' || c.ifMatch === '') throw new BadRequest('ifMatch must be a non-empty etag string');
    return { kind: 'match', etag: c.ifMatch };
  }
  return { kind: 'any' };
}

/** The version an ifMatch read before taking the lock, kept open so its inode stays unique. */
interface Held {
  handle: FileHandle;
  dev: bigint;
  ino: bigint;
}

export class FsStore implements ObjectStore {
  readonly description: string;
  readonly root: string;
  readonly #config: FsConfig;
  readonly #tempDir: string;
  readonly #lock: HostLock;
  #closed = false;

  constructor(root: string, options?: FsStoreOptions) {
    this.#config = resolveFsOptions(options);
    this.root = parseFsUrl(root);
    this.description = `fs:${this.root}`;
    this.#tempDir = path.join(this.root, TEMP_DIR_NAME);
    fs.mkdirSync(this.#tempDir, { recursive: true });
    this.#lock = new HostLock(path.join(this.root, LOCK_FILE_NAME), this.#config.lockWaitMs);
  }

  async get(key: string): Promise<StoredObject | null> {
    const target = this.#target(key);
    const buf = await this.#readOrNull(target.file, 'get', key);
    return buf === null ? null : { body: asBytes(buf), etag: etagOf(buf) };
  }

  async head(key: string): Promise<ObjectHead | null> {
    const target = this.#target(key);
    const buf = await this.#readOrNull(target.file, 'head', key);
    return buf === null ? null : { etag: etagOf(buf), size: buf.byteLength };
  }

  async put(key: string, body: Uint8Array, condition?: PutCondition): Promise<{ etag: string }> {
    const target = this.#target(key);
    const mode = modeOf(condition);
    if (!(body instanceof Uint8Array)) throw new BadRequest(`put ${key}: body must be a Uint8Array`);
    const temp = await this.#guard('put', key, () => this.#writeTemp(body));
    try {
      const createdFrom = await this.#guard('put', key, () => this.#install(temp, target, mode, key));
      await this.#syncAfterWrite(target, createdFrom, key);
    } finally {
      await unlinkQuiet(temp);
    }
    return { etag: etagOf(body) };
  }

  async delete(key: string): Promise<void> {
    await this.deleteMany([key]);
  }

  async deleteMany(keys: readonly string[]): Promise<void> {
    const targets = [...new Set(keys.map((k) => validateKey(k)))].map((key) => ({ key, ...this.#target(key) }));
    for (let i = 0; i < targets.length; i += this.#config.deleteBatchKeys) {
      await this.#deleteBatch(targets.slice(i, i + this.#config.deleteBatchKeys));
    }
  }

  /** Unlinks a batch under one lock acquisition, then fsyncs and prunes the folders it touched. */
  async #deleteBatch(batch: (Target & { key: string })[]): Promise<void> {
    const what = batch.length === 1 ? batch[0]!.key : `${batch.length} keys from ${batch[0]!.key}`;
    const removed = await this.#guard('delete', what, () => this.#lock.run(() => batch.filter((t) => unlinkIfPresent(t.file)), this.#config.lockWaitMs));
    const dirs = [...new Set(removed.map((t) => t.dir))];
    if (this.#config.fsync) await this.#guard('delete', what, () => Promise.all(dirs.map(fsyncPath)));
    for (const dir of dirs) await this.#pruneEmpty(dir);
  }

  async list(options?: ListOptions): Promise<ListPage> {
    const { prefix, after, maxKeys } = resolveList(options);
    this.#assertOpen();
    const segments = prefix.split('/');
    const complete = segments.slice(0, -1);
    const dir = complete.length === 0 ? this.root : insideRoot(this.root, complete.flatMap(folderNames));
    const walk = new ListWalk(prefix, after, maxKeys + 1);
    await this.#guard('list', prefix, () => walk.walk(dir, complete.length === 0 ? '' : complete.join('/') + '/'));
    return pageOf(walk.keys, maxKeys);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#lock.close();
  }

  // --- helpers -------------------------------------------------------------------------------

  #target(key: string): Target {
    const names = objectNames(validateKey(key));
    this.#assertOpen();
    const file = insideRoot(this.root, names);
    return { file, dir: path.dirname(file) };
  }

  #assertOpen(): void {
    if (this.#closed) throw new StoreUnavailable(`${this.description} is closed`);
  }

  /** Runs an I/O step, retrying transient errors; maps unexpected errors to StoreUnavailable. */
  async #guard<T>(op: string, key: string, step: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await step();
      } catch (e) {
        if (e instanceof KeepworkError) throw e;
        if (TRANSIENT.has(codeOf(e) ?? '') && attempt < this.#config.attemptsMax) {
          await sleepMs(this.#config.retryBaseMs * 2 ** (attempt - 1));
          continue;
        }
        throw new StoreUnavailable(`${this.description}: ${op} ${key} failed (${codeOf(e) ?? String(e)})`, { cause: e });
      }
    }
  }

  async #readOrNull(file: string, op: string, key: string): Promise<Buffer | null> {
    return this.#guard(op, key, async () => {
      try {
        return await readFile(file);
      } catch (e) {
        if (codeOf(e) === 'ENOENT' || codeOf(e) === 'ENOTDIR') return null;
        throw e;
      }
    });
  }

  async #writeTemp(body: Uint8Array): Promise<string> {
    const file = path.join(this.#tempDir, `${process.pid}-${randomBytes(8).toString('hex')}`);
    const handle = await open(file, 'wx', 0o644).catch(async (e) => {
      if (codeOf(e) !== 'ENOENT') throw e;
      await mkdir(this.#tempDir, { recursive: true }); // someone removed ~tmp
      return open(file, 'wx', 0o644);
    });
    try {
      await handle.writeFile(body);
      if (this.#config.fsync) await handle.sync();
    } catch (e) {
      await handle.close().catch(() => undefined);
      await unlinkQuiet(file);
      throw e;
    }
    await handle.close();
    return file;
  }

  /** Makes the temp file the object; returns the first folder it had to create, if any. */
  async #install(temp: string, target: Target, mode: Mode, key: string): Promise<string | undefined> {
    if (mode.kind === 'create') return this.#create(temp, target, key);
    const held = mode.kind === 'match' ? await this.#readCurrent(target, mode.etag, key) : undefined;
    try {
      const expected = mode.kind === 'match' ? mode.etag : undefined;
      return await this.#lock.run(() => this.#replaceLocked(temp, target, expected, held, key), this.#config.lockWaitMs);
    } finally {
      await held?.handle.close();
    }
  }

  async #create(temp: string, target: Target, key: string): Promise<string | undefined> {
    let createdFrom: string | undefined;
    for (let race = 0; race <= this.#config.folderRacesMax; race++) {
      try {
        await link(temp, target.file);
        return createdFrom;
      } catch (e) {
        if (codeOf(e) === 'EEXIST') throw new PreconditionFailed(`put ${key} with ifNoneMatch "*": the object exists`, { details: { key } });
        if (codeOf(e) !== 'ENOENT') throw e;
      }
      createdFrom = (await mkdir(target.dir, { recursive: true })) ?? createdFrom;
    }
    throw new StoreUnavailable(`put ${key}: its folder kept disappearing (folderRacesMax ${this.#config.folderRacesMax})`);
  }

  /** Reads the version an ifMatch expects; fails early (unlocked) when it is not current. */
  async #readCurrent(target: Target, etag: string, key: string): Promise<Held> {
    const handle = await open(target.file, 'r').catch((e) => {
      if (codeOf(e) === 'ENOENT' || codeOf(e) === 'ENOTDIR') throw mismatch(key, etag, null);
      throw e;
    });
    try {
      const current = etagOf(await handle.readFile());
      if (current !== etag) throw mismatch(key, etag, current);
      const st = await handle.stat({ bigint: true });
      return { handle, dev: st.dev, ino: st.ino };
    } catch (e) {
      await handle.close();
      throw e;
    }
  }

  /** Under the host lock: re-check the precondition, then rename. Synchronous on purpose. */
  #replaceLocked(temp: string, target: Target, expected: string | undefined, held: Held | undefined, key: string): string | undefined {
    if (expected !== undefined) {
      const st = fs.lstatSync(target.file, { bigint: true, throwIfNoEntry: false });
      if (st === undefined) throw mismatch(key, expected, null);
      const same = held !== undefined && st.ino === held.ino && st.dev === held.dev;
      if (!same) {
        const current = etagOf(fs.readFileSync(target.file));
        if (current !== expected) throw mismatch(key, expected, current);
      }
    }
    let createdFrom: string | undefined;
    for (let race = 0; ; race++) {
      try {
        fs.renameSync(temp, target.file);
        return createdFrom;
      } catch (e) {
        if (codeOf(e) !== 'ENOENT' || race >= this.#config.folderRacesMax) throw e;
      }
      createdFrom = fs.mkdirSync(target.dir, { recursive: true }) ?? createdFrom;
    }
  }

  /** fsyncs the object's folder and the parents of any folder the write created. */
  async #syncAfterWrite(target: Target, createdFrom: string | undefined, key: string): Promise<void> {
    if (!this.#config.fsync) return;
    const dirs = [target.dir];
    if (createdFrom !== undefined) {
      for (let d = target.dir; d !== path.dirname(createdFrom) && d.length > this.root.length; ) dirs.push((d = path.dirname(d)));
    }
    try {
      await Promise.all(dirs.map(fsyncPath));
    } catch (e) {
      throw new AmbiguousWrite(`put ${key}: the object is in place but its folder could not be fsynced (${codeOf(e)})`, { cause: e, details: { key } });
    }
  }

  /** Removes folders a delete left empty, up to (not including) the root. */
  async #pruneEmpty(dir: string): Promise<void> {
    for (let d = dir; d.startsWith(this.root + path.sep); d = path.dirname(d)) {
      try {
        await rmdir(d);
      } catch {
        return; // ENOTEMPTY, ENOENT (a racing delete), anything else: leave it
      }
    }
  }
}

function unlinkIfPresent(file: string): boolean {
  try {
    fs.unlinkSync(file);
    return true;
  } catch (e) {
    if (codeOf(e) === 'ENOENT' || codeOf(e) === 'ENOTDIR') return false;
    throw e;
  }
}

function mismatch(key: string, expected: string, current: string | null): InstanceType<typeof PreconditionFailed> {
  const now = current === null ? 'the object does not exist' : `its etag is ${current}`;
  return new PreconditionFailed(`put ${key} with ifMatch ${expected}: ${now}`, { details: { key, expected, current } });
}
