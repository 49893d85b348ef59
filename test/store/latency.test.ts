import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SimClock, SystemClock } from '../../src/core/clock.js';
import { ErrorCode } from '../../src/core/errors.js';
import { DEFAULT_LATENCY_MS, LatencyStore, parseLatencyUrl } from '../../src/store/testing/latency.js';
import { MemoryStore } from '../../src/store/memory.js';
import { openStore } from '../../src/store/open.js';
import { runConformance } from './conformance.js';
import { text } from '../helpers/bytes.js';

runConformance('latency (1 ms) around memory', async () => {
  const inner = new MemoryStore();
  const store = new LatencyStore(inner, new SystemClock(), 1);
  return { store, reopen: async () => store, cleanup: () => store.close() };
});

describe('latency store', () => {
  it('every request waits its delay on the clock before it reaches the inner store; requests in flight overlap', async () => {
    const clock = new SimClock(0);
    const inner = new MemoryStore();
    const store = new LatencyStore(inner, clock);
    assert.equal(store.ms, DEFAULT_LATENCY_MS);
    const done: string[] = [];
    const puts = ['a', 'b', 'c'].map((k) => store.put(k, text(k)).then(() => done.push(k)));
    await clock.advance(DEFAULT_LATENCY_MS - 1);
    assert.deepEqual([done, inner.counts.put], [[], 0], 'nothing sent yet');
    await clock.advance(1);
    await Promise.all(puts);
    assert.deepEqual(done, ['a', 'b', 'c'], 'all three after one delay, not three');
    const get = store.get('a');
    const list = store.list({ prefix: '' });
    await clock.advance(DEFAULT_LATENCY_MS);
    assert.equal(new TextDecoder().decode((await get)!.body), 'a');
    assert.deepEqual((await list).keys, ['a', 'b', 'c']);
  });

  it('deleteMany waits once per 1,000 keys (one DeleteObjects each); errors of the inner store pass through', async () => {
    const clock = new SimClock(0);
    const inner = new MemoryStore();
    const store = new LatencyStore(inner, clock, 5);
    let finished = false;
    const del = store.deleteMany(Array.from({ length: 2500 }, (_, i) => `k/${i}`)).then(() => (finished = true));
    await clock.advance(14);
    assert.equal(finished, false);
    await clock.advance(1);
    await del;
    const bad = assert.rejects(store.put('a//b', text('x')), { code: ErrorCode.BadKey });
    await clock.advance(5);
    await bad;
  });

  it('parses latency+<url>?ms=N, keeping the inner URL’s own parameters; opens it around that store', async () => {
    assert.deepEqual(parseLatencyUrl('latency+file:///tmp/b?ms=7'), { inner: 'file:///tmp/b', ms: 7 });
    assert.deepEqual(parseLatencyUrl('latency+file://./data/bucket'), { inner: 'file://./data/bucket', ms: 20 });
    assert.deepEqual(parseLatencyUrl('latency+s3://b/p?endpoint=http%3A%2F%2F127.0.0.1%3A7480&ms=0.5&region=x'), {
      inner: 's3://b/p?endpoint=http%3A%2F%2F127.0.0.1%3A7480&region=x',
      ms: 0.5,
    });
    for (const bad of ['latency+memory:?ms=', 'latency+memory:?ms=-1', 'latency+memory:?ms=fast'])
      assert.throws(() => parseLatencyUrl(bad), { code: ErrorCode.BadConfig }, bad);
    const clock = new SimClock(0);
    const store = openStore('latency+memory:?ms=3', { clock });
    assert.equal(store.description, 'latency(3 ms)+memory');
    const put = store.put('x', text('x'));
    await clock.advance(3);
    await put;
  });
});
