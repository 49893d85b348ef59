import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SimClock } from '../../src/core/clock.js';
import { ErrorCode } from '../../src/core/errors.js';
import { MemoryStore, type StoreRequest } from '../../src/store/memory.js';
import { CONFORMANCE_CASE_COUNT, runConformance } from './conformance.js';
import { text } from '../helpers/bytes.js';

runConformance('memory', async () => {
  const store = new MemoryStore();
  return { store, reopen: async () => store, cleanup: () => store.close() };
});

describe('memory store faults', () => {
  it('the conformance suite has at least 25 cases', () => {
    assert.ok(CONFORMANCE_CASE_COUNT >= 25, `only ${CONFORMANCE_CASE_COUNT}`);
  });

  it('a delayed request applies after its delay on the injected clock, so requests reorder', async () => {
    const clock = new SimClock();
    const store = new MemoryStore({ clock, faults: (r) => (r.op === 'put' && r.key === 'slow' ? { delayMs: 100 } : undefined) });
    const order: string[] = [];
    const slow = store.put('slow', text('s')).then(() => order.push('slow'));
    const fast = store.put('fast', text('f')).then(() => order.push('fast'));
    await clock.advance(50);
    assert.deepEqual(order, ['fast']);
    assert.equal(store.peek('slow'), undefined);
    await clock.advance(60);
    await Promise.all([slow, fast]);
    assert.deepEqual(order, ['fast', 'slow']);
  });

  it('a failed request changes nothing and rejects with STORE_UNAVAILABLE', async () => {
    const store = new MemoryStore({ faults: (r) => (r.op === 'put' ? { fail: true } : undefined) });
    await assert.rejects(store.put('k', text('x')), { code: ErrorCode.StoreUnavailable });
    assert.equal(await store.get('k'), null);
  });

  it('a timed-out delete is reported as ambiguous and still lands later', async () => {
    const clock = new SimClock();
    const store = new MemoryStore({ clock });
    await store.put('entry', text('x'));
    store.setFaults((r) => (r.op === 'delete' ? { timeout: { afterMs: 10, landAfterMs: 500 } } : undefined));
    const del = store.delete('entry');
    const outcome = assert.rejects(del, { code: ErrorCode.AmbiguousWrite });
    await clock.advance(20);
    await outcome;
    assert.ok(store.peek('entry'), 'not applied yet');
    await clock.advance(500);
    assert.equal(store.peek('entry'), undefined, 'landed later');
  });

  it('a late conditional create is judged against the state when it lands', async () => {
    const clock = new SimClock();
    const seen: StoreRequest[] = [];
    const store = new MemoryStore({
      clock,
      faults: (r) => {
        seen.push(r);
        return r.seq === 0 ? { timeout: { afterMs: 5, landAfterMs: 100 } } : undefined;
      },
    });
    const late = assert.rejects(store.put('seq/1', text('late'), { ifNoneMatch: '*' }), { code: ErrorCode.AmbiguousWrite });
    await clock.advance(10);
    await late;
    await store.put('seq/1', text('winner'), { ifNoneMatch: '*' });
    await clock.advance(200);
    assert.equal(new TextDecoder().decode(store.peek('seq/1')!.body), 'winner');
    assert.deepEqual(
      seen.map((r) => r.op),
      ['put', 'put'],
    );
  });

  it('counts requests by operation', async () => {
    const store = new MemoryStore();
    await store.put('a', text('1'));
    await store.get('a');
    await store.list();
    assert.deepEqual(store.counts, { get: 1, head: 0, put: 1, delete: 0, list: 1 });
  });
});
