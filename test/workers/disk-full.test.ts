/**
 * An actor database opened on a full disk (src/workers/actor-db.ts, core/disk-full.ts): SQLite
 * fails to set up the WAL with an I/O error that does not say why; the open tells a full disk
 * apart by its folder's free space and answers OVERLOADED, resource disk (nothing ran; retry),
 * not the bare error (HANDLER_FAILED). Needs root for the small tmpfs; skipped loudly without it.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { isKeepworkError } from '../../src/core/errors.js';
import { createActorDbSync, openActorDb } from '../../src/workers/actor-db.js';

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
  it('opening it is OVERLOADED, resource disk', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kw-full-'));
    mkdirSync(join(dir, 'mnt'));
    const mnt = join(dir, 'mnt');
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mnt]);
    try {
      const a = parseAddress('t/C/full');
      const path = join(mnt, 'a.db');
      createActorDbSync(path, a).close();
      fill(mnt);
      let raised: unknown;
      try {
        openActorDb(path, a, false)?.close();
      } catch (e) {
        raised = e;
      }
      assert.ok(raised, 'the open failed');
      assert.ok(isKeepworkError(raised, 'OVERLOADED'), `OVERLOADED, not ${String(raised)}`);
      assert.equal((raised as { details?: { resource?: string } }).details?.resource, 'disk');
    } finally {
      execFileSync('umount', ['-l', mnt]);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
