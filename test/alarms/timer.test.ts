import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SimClock } from '../../src/core/clock.js';
import { ErrorCode, isKeepworkError } from '../../src/core/errors.js';
import { AlarmTimer, sweepOffer } from '../../src/alarms/timer.js';
import { parseAddress } from '../../src/core/address.js';

const actor = (name: string) => parseAddress(`t/C/${name}`);

describe('AlarmTimer', () => {
  it('fires each key once at its latest time, in time order', async () => {
    const clock = new SimClock(0);
    const fired: [string, number][] = [];
    const t = new AlarmTimer(clock, (k, at) => fired.push([k.name, at]));
    t.set(actor('a'), 300);
    t.set(actor('b'), 100);
    t.set(actor('a'), 200); // replaces 300
    t.set(actor('c'), 150);
    t.clear(actor('c'));
    await clock.advance(1_000);
    assert.deepEqual(fired, [
      ['b', 100],
      ['a', 200],
    ]);
    assert.equal(t.size, 0);
  });

  it('refuses more than maxEntries alarms instead of dropping one', () => {
    const t = new AlarmTimer(new SimClock(0), () => {}, 2);
    t.set(actor('a'), 1);
    t.set(actor('b'), 2);
    assert.throws(
      () => t.set(actor('c'), 3),
      (e: unknown) => isKeepworkError(e, ErrorCode.Overloaded),
    );
    t.set(actor('a'), 5); // replacing is fine
  });

  it('a deferred alarm fires later but reports the time it was due; a set or clear replaces it', async () => {
    const clock = new SimClock(0);
    const fired: [string, number][] = [];
    const t = new AlarmTimer(clock, (k, at) => fired.push([k.name, at]));
    t.defer(actor('a'), 100, 1_100); // the delivery queue was full at 100
    t.defer(actor('b'), 200, 1_200);
    t.set(actor('b'), 1_500); // an event committed a new alarm for b meanwhile
    t.defer(actor('c'), 300, 1_300);
    t.clear(actor('c'));
    assert.equal(t.get(actor('a').key), 1_100, 'get() is when it fires');
    await clock.advance(1_099);
    assert.deepEqual(fired, []);
    await clock.advance(1_000);
    assert.deepEqual(fired, [
      ['a', 100],
      ['b', 1_500],
    ]);
    t.defer(actor('a'), 100, 2_500);
    t.set(actor('a'), 2_600);
    await clock.advance(1_000);
    assert.deepEqual(fired.at(-1), ['a', 2_600], 'a set after a defer fires as set');
  });

  it('keeps its heap bounded under many replacements', async () => {
    const clock = new SimClock(0);
    let n = 0;
    const t = new AlarmTimer(clock, () => n++);
    for (let i = 0; i < 10_000; i++) t.set(actor('k'), 1_000_000 - i);
    assert.ok((t as unknown as { heap: unknown[] }).heap.length < 200);
    await clock.advance(2_000_000);
    assert.equal(n, 1);
  });
});

describe('the timer’s backoff horizon', () => {
  const now = 1_000_000;
  const retryMax = 300_000;
  it('an entry offered for an actor the timer does not hold is delivered', () => {
    assert.equal(sweepOffer(undefined, now - 50_000, now, retryMax), 'deliver');
  });
  it('a time the timer already holds earlier wins', () => {
    assert.equal(sweepOffer(now - 60_000, now - 50_000, now, retryMax), 'keep');
  });
  it('a held time within the longest backoff (a pending retry) wins over an overdue entry', () => {
    assert.equal(sweepOffer(now + 120_000, now - 50_000, now, retryMax), 'keep');
  });
  it('a held time beyond the longest backoff does not: the overdue entry is delivered', () => {
    assert.equal(sweepOffer(now + 3_600_000, now - 50_000, now, retryMax), 'deliver');
  });
  it('offer() applies the rule to the timer', async () => {
    const clock = new SimClock(now);
    const t = new AlarmTimer(clock, () => {});
    t.set(actor('retrying'), now + 8_000);
    assert.equal(t.offer(actor('retrying'), now - 45_000, retryMax), false);
    assert.equal(t.get(actor('retrying').key), now + 8_000);
    assert.equal(t.offer(actor('orphan'), now - 45_000, retryMax), true);
    assert.equal(t.get(actor('orphan').key), now - 45_000);
  });
});

describe('AlarmTimer backpressure', () => {
  it('a refused alarm stays, nothing fires until resume(), then everything due fires in due order', async () => {
    const clock = new SimClock();
    const fired: string[] = [];
    let room = 1;
    const timer = new AlarmTimer(clock, (key) => {
      if (room === 0) return false;
      room--;
      fired.push(key.name);
      return true;
    });
    const t0 = clock.now();
    timer.set(actor('a'), t0 + 10);
    timer.set(actor('b'), t0 + 20);
    timer.set(actor('c'), t0 + 30);
    await clock.advance(40);
    assert.deepEqual(fired, ['a']);
    assert.equal(timer.isHeld, true);
    assert.equal(timer.size, 2, 'b and c wait in the timer');
    timer.set(actor('d'), t0 + 35); // arriving while held: waits too
    await clock.advance(1_000);
    assert.deepEqual(fired, ['a']);
    room = 10;
    timer.resume();
    assert.deepEqual(fired, ['a', 'b', 'c', 'd']);
    assert.equal(timer.isHeld, false);
    assert.equal(timer.size, 0);
  });

  it('a refused deferred alarm keeps the due time it is reported with', async () => {
    const clock = new SimClock();
    const seen: number[] = [];
    let refuse = true;
    const timer = new AlarmTimer(clock, (_key, at) => {
      if (refuse) return false;
      seen.push(at);
      return true;
    });
    const t0 = clock.now();
    timer.defer(actor('a'), t0 - 5_000, t0 + 10);
    await clock.advance(20);
    assert.deepEqual(seen, []);
    refuse = false;
    timer.resume();
    assert.deepEqual(seen, [t0 - 5_000]);
  });
});
