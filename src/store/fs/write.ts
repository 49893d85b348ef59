/**
 * FsStore's write path: how a put's body becomes the object, its condition checked atomically.
 *
 * Writes (body first written to a temp file and fsynced, outside any lock, the fsyncs shared by a
 * batch of puts, fs/commit.ts; every step a synchronous system call but the fsyncs, fs/io.ts says why):
 *   create (ifNoneMatch '*')   link(temp, target): atomic exclusive create; EEXIST → PreconditionFailed
 *   unconditional              link(temp, target) as a create; EEXIST → as a replace without etag
 *   replace (ifMatch)          BEGIN IMMEDIATE on ~lock.db { check etag; rename(temp, target) } ROLLBACK
 *   delete                     BEGIN IMMEDIATE { unlink(target) } ROLLBACK   (in fs/store.ts)
 * then fsync the folder (once per batch, and shared with other writes to it, fs/sync.ts). The
 * replaces of one batch share one acquisition of the lock, each checked and renamed in turn as it
 * would be alone: to any other writer the section is one atomic step. Readers see whole objects
 * only: an object name only ever appears by an atomic link or rename of a complete, fsynced
 * file, and no object file is written in place.
 *
 * Concurrency argument. The host lock (fs/lock.ts) serialises every replace and delete host-wide.
 * Each operation takes effect at one atomic kernel step: link, rename, unlink, or — for a failing
 * conditional write — the read that saw the precondition fail. An ifMatch reads the current
 * version before the lock and, under it, checks with lstat that the same inode is still in place
 * (its file handle stays open, so the inode number cannot be reused; a different inode is re-read
 * under the lock); between that check and its rename no other replace or delete can run (lock),
 * and no create can succeed because the target exists throughout. A create needs the target
 * absent: it cannot slip into a locked section (the target exists there), and against a lone
 * unlink or rename the kernel orders the two directory operations. So all operations are
 * linearisable without creates ever taking the lock. An unconditional write to an absent key
 * (every alarm index entry: a fresh key each time) is such a create, so it tries the link first
 * and takes the lock only when the key exists; the lock is what keeps a rename from landing
 * between an ifMatch writer's check and its own rename.
 *
 * The expensive work (writing and fsyncing the temp file, reading the version an ifMatch expects)
 * is done before the lock; the section itself is a few synchronous syscalls per replace. A write that meets
 * ENOENT because a delete's folder pruning raced with it re-creates the folder and retries, at
 * most `folderRacesMax` times.
 *
 * Errors: `BadRequest` for a malformed condition; `PreconditionFailed`; `AmbiguousWrite` when the
 * object is in place but its folder fsync failed; raw I/O errors otherwise (the store maps them).
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { AmbiguousWrite, StoreUnavailable } from '../../core/errors.js';
import { etagOf } from '../etag.js';
import { codeOf, isMissing, unlinkQuiet } from './io.js';
import type { HostLock } from './lock.js';
import type { FsConfig } from './options.js';
import type { Target } from './paths.js';
import { createFailed, mismatch, type Mode } from '../conditions.js';

/** The version an ifMatch read before taking the lock, kept open so its inode stays unique. */
interface Held {
  fd: number;
  dev: bigint;
  ino: bigint;
}

/**
 * Temp file names: the process, 48 random bits drawn once per thread (threads share the pid), and
 * a counter — unique without a call to the system's random source (a system call) per write.
 * The open is exclusive (`wx`) anyway: a name in use fails the write instead of sharing a file.
 */
const TEMP_PREFIX = `${process.pid}-${randomBytes(6).toString('hex')}-`;
let tempSeq = 0;

/** A put's body in a new temp file, written but not fsynced: `fd` stays open for the fsync. */
export interface TempFile {
  file: string;
  fd: number;
}

/**
 * Writes `body` to a new file in `tempDir` and leaves it open (fs/commit.ts fsyncs and closes it).
 * Synchronous (fs/io.ts says why); on a failure the file is closed and removed.
 */
export function writeTemp(tempDir: string, body: Uint8Array): TempFile {
  const file = path.join(tempDir, `${TEMP_PREFIX}${(tempSeq++).toString(36)}`);
  let fd: number;
  try {
    fd = fs.openSync(file, 'wx', 0o644);
  } catch (e) {
    if (codeOf(e) !== 'ENOENT') throw e;
    fs.mkdirSync(tempDir, { recursive: true }); // someone removed ~tmp
    fd = fs.openSync(file, 'wx', 0o644);
  }
  try {
    for (let at = 0; at < body.byteLength;) at += fs.writeSync(fd, body, at, body.byteLength - at);
  } catch (e) {
    fs.closeSync(fd);
    unlinkQuiet(file);
    throw e;
  }
  return { file, fd };
}

/** One put to install: its durable temp file, where it goes and its condition. */
export interface Install {
  temp: string;
  target: Target;
  mode: Mode;
  key: string;
}

/**
 * `createdFrom`: the first folder the install had to create, if any; `renamed`: the temp file
 * became the object (a replace), so there is none left to remove (a create links it, and the
 * caller removes it).
 */
export interface Installed {
  createdFrom?: string;
  renamed: boolean;
}

export type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** A put that needs the host lock: an ifMatch, or an unconditional write that found the key. */
interface Replace {
  at: number;
  expected?: string;
  held?: Held;
  createdFrom?: string;
}

/**
 * Makes each temp file its object, in order; one outcome per install, a failure (a condition,
 * an I/O error) its own only. Creates link without the lock; every replace of the batch then runs
 * in one acquisition of the host lock, each checked and renamed as it would be alone.
 */
export async function installAll(installs: readonly Install[], lock: HostLock, config: FsConfig): Promise<Outcome<Installed>[]> {
  const outcomes: Outcome<Installed>[] = new Array(installs.length);
  const replaces: Replace[] = [];
  installs.forEach((put, at) => {
    try {
      const step = linkOrPrepare(put, at, config.folderRacesMax);
      if ('at' in step) replaces.push(step);
      else outcomes[at] = { ok: true, value: step };
    } catch (error) {
      outcomes[at] = { ok: false, error };
    }
  });
  if (replaces.length === 0) return outcomes;
  try {
    await lock.run(() => {
      for (const r of replaces) {
        const put = installs[r.at]!;
        try {
          const made = replaceLocked(put.temp, put.target, r.expected, r.held, put.key, config.folderRacesMax);
          outcomes[r.at] = { ok: true, value: { createdFrom: made ?? r.createdFrom, renamed: true } };
        } catch (error) {
          outcomes[r.at] = { ok: false, error };
        }
      }
    }, config.lockWaitMs);
  } catch (error) {
    for (const r of replaces) outcomes[r.at] ??= { ok: false, error };
  } finally {
    for (const r of replaces) if (r.held) fs.closeSync(r.held.fd);
  }
  return outcomes;
}

/**
 * Before the lock: a create or unconditional write links (done, unless the key exists); an
 * ifMatch reads the version it expects, failing early when that is not current.
 */
function linkOrPrepare(put: Install, at: number, folderRacesMax: number): Installed | Replace {
  if (put.mode.kind === 'match') return { at, expected: put.mode.etag, held: readCurrent(put.target, put.mode.etag, put.key) };
  const linked = linkNew(put.temp, put.target, put.key, folderRacesMax);
  if (!linked.exists) return { renamed: false, createdFrom: linked.createdFrom };
  if (put.mode.kind === 'create') throw createFailed(put.key);
  return { at, createdFrom: linked.createdFrom };
}

/** link(temp, target): the object appears whole if the key was absent; `exists` if it was not. */
function linkNew(temp: string, target: Target, key: string, folderRacesMax: number): { exists: boolean; createdFrom?: string } {
  let createdFrom: string | undefined;
  for (let race = 0; race <= folderRacesMax; race++) {
    try {
      fs.linkSync(temp, target.file);
      return { exists: false, createdFrom };
    } catch (e) {
      if (codeOf(e) === 'EEXIST') return { exists: true, createdFrom };
      if (codeOf(e) !== 'ENOENT') throw e;
    }
    createdFrom = fs.mkdirSync(target.dir, { recursive: true }) ?? createdFrom;
  }
  throw new StoreUnavailable(`put ${key}: its folder kept disappearing (folderRacesMax ${folderRacesMax})`);
}

/** Reads the version an ifMatch expects; fails early (unlocked) when it is not current. */
function readCurrent(target: Target, etag: string, key: string): Held {
  let fd: number;
  try {
    fd = fs.openSync(target.file, 'r');
  } catch (e) {
    if (isMissing(e)) throw mismatch(key, etag, null);
    throw e;
  }
  try {
    const current = etagOf(fs.readFileSync(fd));
    if (current !== etag) throw mismatch(key, etag, current);
    const st = fs.fstatSync(fd, { bigint: true });
    return { fd, dev: st.dev, ino: st.ino };
  } catch (e) {
    fs.closeSync(fd);
    throw e;
  }
}

/** Under the host lock: re-check the precondition, then rename. Synchronous on purpose. */
function replaceLocked(
  temp: string,
  target: Target,
  expected: string | undefined,
  held: Held | undefined,
  key: string,
  folderRacesMax: number,
): string | undefined {
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
      if (codeOf(e) !== 'ENOENT' || race >= folderRacesMax) throw e;
    }
    createdFrom = fs.mkdirSync(target.dir, { recursive: true }) ?? createdFrom;
  }
}

/**
 * The folders to fsync once an object is in place: its own, and the parents (below `root`) of any
 * folder the write created.
 */
export function foldersToSync(root: string, target: Target, createdFrom: string | undefined): string[] {
  const dirs = [target.dir];
  if (createdFrom !== undefined) {
    for (let d = target.dir; d !== path.dirname(createdFrom) && d.length > root.length;) dirs.push((d = path.dirname(d)));
  }
  return dirs;
}

/** The object is in place (others may read it) but a power loss could still undo it. */
export function folderSyncFailed(key: string, e: unknown): InstanceType<typeof AmbiguousWrite> {
  return new AmbiguousWrite(`put ${key}: the object is in place but its folder could not be fsynced (${codeOf(e)})`, {
    cause: e,
    details: { key },
  });
}
