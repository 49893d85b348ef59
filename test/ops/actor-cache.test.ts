/** The committed-state cache of `index check` (actor-cache.ts) is a least-recently-used cache with a size bound. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { CommittedCache } from '../../src/ops/actor-cache.js';
import type { CommittedActor } from '../../src/ops/committed-state.js';
import { MemoryStore } from '../../src/store/memory.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs('kw-actor-cache-');

const committed = (name: string): CommittedActor => ({
  address: parseAddress(`t/C/${name}`),
  state: 'empty',
  alarmAt: null,
  indexedRaw: null,
  indexed: null,
  initialized: false,
  alarmFailures: 0,
  ownerFence: null,
});

describe('CommittedCache', () => {
  it('a get refreshes recency: the least recently used actor is the one evicted', async () => {
    const cache = new CommittedCache(new MemoryStore(), tempDir(), 2);
    cache.put(committed('a'));
    cache.put(committed('b'));
    await cache.get(parseAddress('t/C/a')); // a is now more recent than b
    cache.put(committed('c')); // evicts b, not a
    await cache.get(parseAddress('t/C/a'));
    await cache.get(parseAddress('t/C/c'));
    assert.equal(cache.reads, 0, 'a and c are still cached');
    await cache.get(parseAddress('t/C/b'));
    assert.equal(cache.reads, 1, 'b was evicted and read again');
  });

  it('never holds more than its bound', async () => {
    const cache = new CommittedCache(new MemoryStore(), tempDir(), 3);
    for (let i = 0; i < 10; i++) {
      cache.put(committed(`n${i}`));
      await cache.get(parseAddress(`t/C/n${Math.floor(i / 2)}`));
      assert.ok(cache.size <= 3, `size ${cache.size} after ${i + 1} puts`);
    }
    assert.equal(cache.size, 3);
  });
});
