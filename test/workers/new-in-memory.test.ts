/**
 * New actors in memory (`newActorsInMemory`, actor-slots.ts `takeNew`/`toFile`): the first call to
 * an actor the bucket has never seen runs without a local file and replies once its link is in the
 * bucket; its next call moves it to a local file holding the same image, without reading the bucket.
 * An alarm delivered to it meanwhile answers the node at once and goes up within the group-commit
 * window, as a file actor's would; a call that moves it to a file uploads it first.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { listChain } from '../../src/replication/chain.js';
import { readSidecar } from '../../src/replication/sidecar.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { ListOptions } from '../../src/store/types.js';
import { actorDbPath } from '../../src/workers/actor-db.js';
import { runEvent } from '../../src/workers/pipeline.js';
import { Counter, InlineActors, okResult, Timer } from '../helpers/inline-actors.js';
import { waitFor } from '../helpers/wait.js';

const A = 't/Counter/a';
const address = parseAddress(A);
const envs: InlineActors[] = [];
after(async () => {
  for (const e of envs) await e.cleanup();
});

/** A memory bucket that counts the reads of the actor's state (LIST and GET under state/). */
class CountingStore extends MemoryStore {
  stateReads = 0;
  override async get(key: string) {
    if (key.startsWith('state/')) this.stateReads++;
    return super.get(key);
  }
  override async list(opts: ListOptions = {}) {
    if (opts.prefix?.startsWith('state/')) this.stateReads++;
    return super.list(opts);
  }
}

function env(store: MemoryStore, newActorsInMemory: boolean, replicationDelayMs = 60_000): InlineActors {
  // A long replication delay by default: anything in the bucket right after a call was put there by the call.
  const e = new InlineActors({ Counter, Timer }, { replicationDelayMs, newActorsInMemory }, store);
  envs.push(e);
  return e;
}

describe('new actors in memory', () => {
  it('the first call writes no local file and replies once its link is in the bucket', async () => {
    const store = new MemoryStore();
    const e = env(store, true);
    assert.equal(okResult(await e.call(A, 'add', 5)), 5);
    const path = actorDbPath(e.dataDir, address);
    assert.equal(existsSync(path), false, 'no local file');
    assert.deepEqual(await listChain(store, address), [1], 'link 1 is up before the reply');

    const off = env(new MemoryStore(), false);
    okResult(await off.call(A, 'add', 5));
    assert.equal(existsSync(actorDbPath(off.dataDir, address)), true, 'with 0 the new actor gets its file at once');
    assert.deepEqual(await listChain(off.store, address), [], 'and a plain call replies before its upload');
  });

  it('the next call moves it to a local file without reading the bucket, and goes on as a file actor', async () => {
    const store = new CountingStore();
    const e = env(store, true);
    okResult(await e.call(A, 'add', 5));
    const reads = store.stateReads;
    assert.equal(okResult(await e.call(A, 'add', 2)), 7);
    assert.equal(store.stateReads, reads, 'the image came from memory');
    const path = actorDbPath(e.dataDir, address);
    assert.equal(existsSync(path), true);
    const side = readSidecar(path);
    assert.equal(side?.seq, 1, 'the sidecar says the file was link 1 before this call');
    // The file's WAL was started by the move (page 1 rewritten as it was, at synchronous=OFF), not
    // by the call's commit; that frame is link 1's image, so the sidecar's cursor is past it.
    const oneFrame = 32 + 24 + (side?.cursor?.pageSize ?? 0);
    assert.equal(side?.cursor?.offset, oneFrame, 'the cursor is past the one frame the move wrote');
    assert.deepEqual(await listChain(store, address), [1], 'a plain call on the file replies before its upload again');

    await e.restart({ replicationDelayMs: 60_000, newActorsInMemory: true }); // close: flushed
    assert.deepEqual(await listChain(store, address), [1, 2]);
    assert.equal(okResult(await e.call(A, 'add', 1)), 8);
  });

  it('after a kill the first call is in the bucket: another data dir restores it', async () => {
    const store = new MemoryStore();
    const e = env(store, true);
    okResult(await e.call(A, 'add', 5));
    e.crash({ replicationDelayMs: 60_000, newActorsInMemory: true });
    const other = env(store, true);
    other.generation = 1;
    assert.equal(okResult(await other.call(A, 'add', 1)), 6);
  });

  it('a first call that fails leaves nothing behind, and the next one creates the actor', async () => {
    const store = new MemoryStore();
    const e = env(store, true);
    assert.equal((await e.call(A, 'fail')).type, 'error');
    assert.deepEqual(await listChain(store, address), [], 'nothing committed, nothing uploaded');
    assert.equal(existsSync(actorDbPath(e.dataDir, address)), false);
    assert.equal(okResult(await e.call(A, 'add', 3)), 3);
    assert.deepEqual(await listChain(store, address), [1]);
  });
});

describe('an alarm of a new actor kept in memory', () => {
  const T = 't/Timer/a';
  const timer = parseAddress(T);
  const entries = (store: MemoryStore) => store.keys().filter((k) => k.startsWith('alarms/'));

  /** A Timer armed by its first call (link 1 up), then its alarm delivered: answered before its upload. */
  async function delivered(windowMs: number): Promise<{ e: InlineActors; store: MemoryStore }> {
    const store = new MemoryStore();
    const e = env(store, true, windowMs);
    assert.equal(okResult(await e.call(T, 'arm', 1_000)), 1);
    assert.deepEqual(await listChain(store, timer), [1], 'the first call replied once link 1 was up');
    const [entry] = entries(store);
    assert.ok(entry, 'the alarm is indexed');
    await e.clock.advance(1_000);
    const due = (await e.getAlarm(T))!;
    const r = await e.deliver(T, due);
    assert.ok(r.type === 'ok' && r.ran && r.alarmAt === null && !r.closed, 'the alarm ran; the actor stays open');
    assert.deepEqual(await listChain(store, timer), [1], 'the delivery answered before its upload');
    assert.deepEqual(entries(store), [entry], 'the entry it replaced stays until the upload lands');
    assert.equal(existsSync(actorDbPath(e.dataDir, timer)), false, 'still in memory');
    return { e, store };
  }

  it('its outcome goes up within the group-commit window, then its entry is deleted', async () => {
    const { e, store } = await delivered(20);
    await e.clock.advance(20);
    await waitFor('the alarm’s link', 10_000, async () => (await listChain(store, timer)).length === 2);
    await waitFor('the replaced entry to go', 10_000, () => entries(store).length === 0);
  });

  it('closing it, as the node does before it releases the hold, waits for the alarm’s upload', async () => {
    const { e, store } = await delivered(60_000);
    okResult(await runEvent(e.deps, { type: 'close', address: timer }));
    assert.deepEqual(await listChain(store, timer), [1, 2], 'link 2 was up when the close answered');
    await waitFor('the replaced entry to go', 10_000, () => entries(store).length === 0);
  });

  it('a call moves it to a file once the alarm’s outcome is in the bucket', async () => {
    const { e, store } = await delivered(60_000);
    assert.equal(okResult(await e.call(T, 'count')), 1);
    assert.deepEqual(await listChain(store, timer), [1, 2], 'link 2, the alarm’s, went up before the move');
    assert.equal(existsSync(actorDbPath(e.dataDir, timer)), true, 'the call moved it to a file');
    assert.equal(await e.getAlarm(T), null);
    await e.restart({ replicationDelayMs: 60_000, newActorsInMemory: true }); // close: flushed
    assert.deepEqual(await listChain(store, timer), [1, 2], 'nothing else to upload: the file holds link 2');
    assert.equal(okResult(await e.call(T, 'count')), 1);
  });
});

describe('a first call under a hold the node created (chainEmpty): no read of the bucket', () => {
  for (const newActorsInMemory of [false, true]) {
    it(`newActorsInMemory ${newActorsInMemory}: the actor is created without a LIST, and its first link is link 1`, async () => {
      const store = new CountingStore();
      const e = env(store, newActorsInMemory);
      const first = { type: 'request' as const, address, method: 'add', args: [5], durable: false, generation: 0, chainEmpty: true };
      assert.equal(okResult(await runEvent(e.deps, first)), 5);
      assert.equal(store.stateReads, 0, 'no LIST of the chain');
      await e.restart({ replicationDelayMs: 60_000, newActorsInMemory }); // close: flushed
      assert.deepEqual(await listChain(store, address), [1]);
      const reads = store.stateReads;
      assert.equal(okResult(await e.call(A, 'add', 1)), 6, 'a later take lists the chain and goes on from it');
      assert.ok(store.stateReads > reads);
    });
  }
});
