import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SimClock } from '../../src/core/clock.js';
import { silentLogger } from '../../src/core/logger.js';
import { DeleteBatcher } from '../../src/store/delete-batch.js';
import { MemoryStore } from '../../src/store/memory.js';

const empty = new Uint8Array(0);

/** A memory store that records the keys of each deleteMany request. */
class Recording extends MemoryStore {
  readonly requests: string[][] = [];
  override deleteMany(keys: readonly string[]): Promise<void> {
    this.requests.push([...keys]);
    return super.deleteMany(keys);
  }
}

async function setup(keys: number, settings = { keysMax: 3, delayMs: 50, pendingMax: 10 }) {
  const clock = new SimClock();
  const store = new Recording({ clock });
  for (let i = 0; i < keys; i++) await store.put(`k${i}`, empty);
  return { clock, store, requests: store.requests, batcher: new DeleteBatcher(store, clock, silentLogger(), settings) };
}

const deletes = (requests: string[][]) => requests;

describe('DeleteBatcher', () => {
  it('holds keys for delayMs, then sends them in one deleteMany', async () => {
    const { clock, store, requests, batcher } = await setup(2);
    batcher.add(['k0']);
    batcher.add(['k1']);
    await clock.advance(49);
    assert.deepEqual(deletes(requests), []);
    assert.equal(batcher.size, 2);
    await clock.advance(1);
    await batcher.flush();
    assert.deepEqual(deletes(requests), [['k0', 'k1']]);
    assert.equal(store.peek('k0'), undefined);
    assert.equal(store.peek('k1'), undefined);
  });

  it('sends at once when keysMax keys wait, never more than keysMax per request', async () => {
    const { requests, batcher } = await setup(7);
    batcher.add(['k0', 'k1']);
    batcher.add(['k2', 'k3', 'k4', 'k5', 'k6']);
    await batcher.flush();
    assert.deepEqual(deletes(requests), [['k0', 'k1', 'k2'], ['k3', 'k4', 'k5'], ['k6']]);
  });

  it('past pendingMax, keys go out at once instead of waiting', async () => {
    const { requests, batcher } = await setup(12, { keysMax: 100, delayMs: 50, pendingMax: 10 });
    batcher.add(['k0', 'k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7', 'k8']);
    batcher.add(['k9', 'k10']);
    assert.equal(batcher.size, 9);
    await Promise.resolve();
    assert.deepEqual(deletes(requests), [['k9', 'k10']]);
    await batcher.flush();
    assert.equal(deletes(requests).length, 2);
  });

  it('a failed request is logged and leaves the keys; later batches still go', async () => {
    const clock = new SimClock();
    let fail = true;
    const store = new MemoryStore({ clock, faults: (r) => (r.op.startsWith('delete') && fail ? { fail: true } : undefined) });
    await store.put('a', empty);
    await store.put('b', empty);
    const batcher = new DeleteBatcher(store, clock, silentLogger());
    batcher.add(['a']);
    await batcher.flush();
    assert.notEqual(store.peek('a'), undefined);
    fail = false;
    batcher.add(['b']);
    await batcher.flush();
    assert.equal(store.peek('b'), undefined);
  });
});
