import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OffsetClock, SimClock, SystemClock } from '../../src/core/clock.js';

describe('SimClock', () => {
  it('fires timers in time order, same-time timers in the order set, only when time moves', async () => {
    const clock = new SimClock(1000);
    const fired: string[] = [];
    clock.setTimer(30, () => fired.push('c'));
    clock.setTimer(10, () => fired.push('a'));
    clock.setTimer(10, () => fired.push('b'));
    assert.deepEqual(fired, []);
    await clock.advance(10);
    assert.deepEqual(fired, ['a', 'b']);
    assert.equal(clock.now(), 1010);
    await clock.advance(100);
    assert.deepEqual(fired, ['a', 'b', 'c']);
    assert.equal(clock.now(), 1110);
  });

  it('a cancelled timer never fires', async () => {
    const clock = new SimClock();
    let fired = false;
    clock.setTimer(5, () => (fired = true)).cancel();
    await clock.advance(10);
    assert.equal(fired, false);
    assert.equal(clock.pending(), 0);
  });

  it('sleep resolves at the virtual time, and async code chained on it can set the next timer', async () => {
    const clock = new SimClock(0);
    const seen: number[] = [];
    const loop = (async () => {
      for (let i = 0; i < 3; i++) {
        await clock.sleep(100);
        seen.push(clock.now());
      }
    })();
    await clock.advance(1000);
    await loop;
    assert.deepEqual(seen, [100, 200, 300]);
  });

  it('sleep rejects with the abort reason', async () => {
    const clock = new SimClock();
    const ac = new AbortController();
    const p = clock.sleep(100, ac.signal);
    ac.abort(new Error('stop'));
    await assert.rejects(p, /stop/);
    assert.equal(clock.pending(), 0);
  });
});

describe('SystemClock', () => {
  it('reads wall time and sleeps for real', async () => {
    const clock = new SystemClock();
    const t0 = clock.now();
    assert.ok(Math.abs(t0 - Date.now()) < 1000);
    await clock.sleep(20);
    assert.ok(clock.now() - t0 >= 15);
  });
});

describe('OffsetClock (TEST-ONLY: a skewed node)', () => {
  it("reads the machine's clock moved by its offset, either way", () => {
    for (const offsetMs of [3_000, -150]) {
      const before = Date.now();
      const read = new OffsetClock(offsetMs).now();
      const after = Date.now();
      assert.ok(read >= before + offsetMs && read <= after + offsetMs, `${read} within [${before}, ${after}] + ${offsetMs}`);
    }
  });
});
