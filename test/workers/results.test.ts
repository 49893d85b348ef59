/**
 * An event's error as data (src/workers/results.ts): a full disk under the data dir — SQLite's
 * SQLITE_FULL at a handler's write, an fs ENOSPC — is OVERLOADED with resource "disk" (nothing
 * ran; retry), not HANDLER_FAILED; a handler's own error stays HANDLER_FAILED.
 */
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { describe, it } from 'node:test';
import { errorData } from '../../src/workers/results.js';

/** A real SQLITE_FULL: a database capped at a few pages, written past them. */
function sqliteFull(): unknown {
  const db = new Database(':memory:');
  try {
    db.pragma('max_page_count = 4');
    db.exec('CREATE TABLE t (v TEXT)');
    const insert = db.prepare('INSERT INTO t VALUES (?)');
    for (let i = 0; i < 100; i++) insert.run('x'.repeat(1_000));
  } catch (e) {
    return e;
  } finally {
    db.close();
  }
  throw new Error('the capped database took every row');
}

describe('event errors as data', () => {
  it('a full disk is OVERLOADED (resource disk, a Retry-After), not a handler failure', () => {
    const full = sqliteFull();
    assert.equal((full as { code?: string }).code, 'SQLITE_FULL');
    const enospc = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    for (const e of [full, enospc, new Error('the handler caught it', { cause: enospc })]) {
      const data = errorData(e);
      assert.equal(data.code, 'OVERLOADED', data.message);
      assert.equal(data.details?.resource, 'disk');
      assert.equal(data.details?.retryAfterMs, 1_000);
      assert.match(data.message, /disk is full/);
    }
  });

  it("a handler's own error is HANDLER_FAILED", () => {
    assert.equal(errorData(new Error('boom')).code, 'HANDLER_FAILED');
  });
});
