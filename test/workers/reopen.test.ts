/**
 * A file actor opened again with an empty WAL (after a clean close, or restored from the bucket):
 * its WAL is started at the open with page 1 as it is, at synchronous=OFF (actor-db.ts
 * `startWal`), so that the first event's commit does not fsync a WAL header and its folder on the
 * worker thread; that frame is the head's image, so the sidecar's cursor starts past it.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { readSidecar } from '../../src/replication/sidecar.js';
import { MemoryStore } from '../../src/store/memory.js';
import { actorDbPath } from '../../src/workers/actor-db.js';
import { Counter, InlineActors, okResult } from '../helpers/inline-actors.js';

const A = 't/Counter/a';
// A long replication delay: nothing is uploaded behind the test's back.
const OPTIONS = { replicationDelayMs: 60_000 };
const envs: InlineActors[] = [];
after(async () => {
  for (const e of envs) await e.cleanup();
});

function env(store: MemoryStore): InlineActors {
  const e = new InlineActors({ Counter }, OPTIONS, store);
  envs.push(e);
  return e;
}

/** The sidecar's cursor once the WAL holds exactly one frame (page 1) after its header. */
function cursorAfterOneFrame(path: string): number | undefined {
  const side = readSidecar(path);
  return side?.cursor ? side.cursor.offset - (32 + 24 + side.cursor.pageSize) : undefined;
}

describe('a file actor opened again with an empty WAL', () => {
  it('after a clean close: the open starts the WAL, the cursor is past it, and a kill after the next call loses nothing', async () => {
    const store = new MemoryStore();
    const e = env(store);
    okResult(await e.call(A, 'add', 5));
    await e.restart(OPTIONS); // flushed, checkpointed, closed: no WAL left
    assert.equal(okResult(await e.call(A, 'add', 2)), 7);
    const path = actorDbPath(e.dataDir, parseAddress(A));
    assert.equal(cursorAfterOneFrame(path), 0, 'the sidecar’s cursor is past the one frame the open wrote');

    e.crash(OPTIONS); // the call's commit is local only
    assert.equal(okResult(await e.call(A, 'add', 1)), 8);
  });

  it('restored from the bucket on another data dir: the same', async () => {
    const store = new MemoryStore();
    const e = env(store);
    okResult(await e.call(A, 'add', 5));
    await e.restart(OPTIONS); // link 1 is up
    const other = env(store);
    other.generation = 1;
    assert.equal(okResult(await other.call(A, 'add', 3)), 8);
    assert.equal(cursorAfterOneFrame(actorDbPath(other.dataDir, parseAddress(A))), 0);
  });
});
