/**
 * An actor database on a full disk (src/workers/actor-db.ts, core/disk-full.ts, results.ts). Opened
 * in EXCLUSIVE locking mode it needs no new block (its WAL's index is in memory, not a -shm file),
 * so it opens and reads; a write fails with SQLITE_FULL, which an event answers OVERLOADED,
 * resource disk (nothing ran; retry), not HANDLER_FAILED. An open that does need space (in shared
 * locking mode, the -shm file) fails with an I/O error that does not say why: the open tells a full
 * disk apart by its folder's free space. Needs root for the small tmpfs; skipped loudly without it.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseAddress, type ActorAddress } from '../../src/core/address.js';
import { isKeepworkError } from '../../src/core/errors.js';
import { actorDbHooks, createActorDbSync, openActorDb, readMeta } from '../../src/workers/actor-db.js';
import { errorData } from '../../src/workers/results.js';

const ROOT = process.getuid?.() === 0;
if (!ROOT) console.error('\n!!! NOT ROOT: the full-disk open test needs a tmpfs mount — SKIPPING !!!\n');

/** Writes into `dir` until its file system has no byte left. */
function fill(dir: string): void {
  const fd = openSync(join(dir, 'filler'), 'a');
  try {
    for (const size of [1 << 16, 1 << 12, 1])
      for (;;)
        try {
          writeSync(fd, Buffer.alloc(size));
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code === 'ENOSPC') break;
          throw e;
        }
  } finally {
    closeSync(fd);
  }
}

describe('an actor database on a full disk', { skip: !ROOT && 'needs root (tmpfs)' }, () => {
  /** `body` with an actor's file (`a.db`, address committed) on a tmpfs of 1 MiB filled to the last byte. */
  function onFullDisk(body: (path: string, a: ActorAddress) => void): void {
    const dir = mkdtempSync(join(tmpdir(), 'kw-full-'));
    const mnt = join(dir, 'mnt');
    mkdirSync(mnt);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mnt]);
    try {
      const a = parseAddress('t/C/full');
      const path = join(mnt, 'a.db');
      createActorDbSync(path, a).close();
      fill(mnt);
      body(path, a);
    } finally {
      actorDbHooks.sharedLocking = undefined;
      execFileSync('umount', ['-l', mnt]);
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it('it opens and reads; a write is OVERLOADED, resource disk', () => {
    onFullDisk((path, a) => {
      const db = openActorDb(path, a, false);
      assert.ok(db, 'the open needs no space');
      try {
        assert.equal(readMeta(db, 'address'), a.key);
        let raised: unknown;
        try {
          db.exec('BEGIN IMMEDIATE; CREATE TABLE big (b BLOB); INSERT INTO big VALUES (zeroblob(65536)); COMMIT');
        } catch (e) {
          raised = e;
          if (db.inTransaction) db.exec('ROLLBACK');
        }
        assert.equal((raised as { code?: unknown } | undefined)?.code, 'SQLITE_FULL');
        const data = errorData(raised);
        assert.equal(data.code, 'OVERLOADED');
        assert.equal(data.details?.resource, 'disk');
      } finally {
        db.close();
      }
    });
  });

  it('an open that needs space (shared locking: a -shm file) is OVERLOADED, resource disk', () => {
    onFullDisk((path, a) => {
      actorDbHooks.sharedLocking = true;
      let raised: unknown;
      try {
        openActorDb(path, a, false)?.close();
      } catch (e) {
        raised = e;
      }
      assert.ok(raised, 'the open failed');
      assert.ok(isKeepworkError(raised, 'OVERLOADED'), `OVERLOADED, not ${String(raised)}`);
      assert.equal((raised as { details?: { resource?: string } }).details?.resource, 'disk');
    });
  });
});
