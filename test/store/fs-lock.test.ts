/**
 * The fs store's host lock: waiters of one client take turns in arrival order, and the wait
 * limit counts from arrival.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { ErrorCode } from '../../src/core/errors.js';
import { HostLock } from '../../src/store/fs/lock.js';
import { elapse } from '../helpers/wait.js';

const root = mkdtempSync(join(tmpdir(), 'kw-fslock-'));
after(() => rmSync(root, { recursive: true, force: true }));

/** Another client (as another process would) holding the lock until released. */
function holdElsewhere(file: string): () => void {
  const db = new Database(file);
  db.exec('BEGIN IMMEDIATE');
  return () => {
    db.exec('ROLLBACK');
    db.close();
  };
}

describe('fs store host lock', () => {
  it('waiters of one client run in arrival order: a newcomer does not overtake waiters backing off', async () => {
    const file = join(root, 'order.db');
    const lock = new HostLock(file, 1_000);
    const release = holdElsewhere(file);
    const order: number[] = [];
    const runs = [0, 1, 2].map((i) => lock.run(() => order.push(i), 5_000));
    await elapse(150); // the waiters are in their longest backoff now (no seam shows it)
    release();
    runs.push(lock.run(() => order.push(3), 5_000)); // tries at once: the lock is free
    await Promise.all(runs);
    assert.deepEqual(order, [0, 1, 2, 3]);
    lock.close();
  });

  it('the wait limit counts from arrival: queued waiters behind a stuck lock all give up, none runs', async () => {
    const file = join(root, 'stuck.db');
    const lock = new HostLock(file, 1_000);
    const release = holdElsewhere(file);
    let ran = 0;
    const settled = await Promise.allSettled([0, 1, 2].map(() => lock.run(() => ran++, 200)));
    release();
    assert.equal(ran, 0);
    for (const s of settled) assert.equal(s.status === 'rejected' && (s.reason as { code?: string }).code, ErrorCode.StoreUnavailable);
    assert.equal(await lock.run(() => 'free', 200), 'free', 'and the lock works again once released');
    lock.close();
  });
});
