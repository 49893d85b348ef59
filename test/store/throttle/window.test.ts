/** AimdWindow (src/store/throttle/window.ts): halving once per window, growth per success, Retry-After pauses on the injected time. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AimdWindow } from '../../../src/store/throttle/window.js';

describe('AIMD window', () => {
  it('starts at its max and admits that many at once', () => {
    const w = new AimdWindow(4);
    const tickets = Array.from({ length: 4 }, () => (assert.ok(w.canSend(0)), w.admit()));
    assert.equal(w.canSend(0), false);
    w.released(tickets[0]!);
    assert.equal(w.canSend(0), true);
    assert.equal(w.size, 4, 'a failure that is not a throttle leaves the size');
  });

  it('halves what was in flight on a throttle, once per window: the others sent under it do not halve again', () => {
    const w = new AimdWindow(64);
    const tickets = Array.from({ length: 20 }, () => w.admit());
    w.throttled(tickets[0]!, 0);
    assert.equal(w.size, 10, 'min(64, 20 in flight) / 2');
    for (const t of tickets.slice(1, 5)) w.throttled(t, 0);
    assert.equal(w.size, 10, 'sent before the decrease: no second halving');
    assert.equal(w.decreases, 1);
    const after = w.admit();
    w.throttled(after, 0);
    assert.equal(w.size, 5, 'sent after it: halves again, min(10, 16 in flight) / 2');
  });

  it('never goes below one', () => {
    const w = new AimdWindow(8);
    for (let i = 0; i < 10; i++) w.throttled(w.admit(), 0);
    assert.equal(w.size, 1);
    assert.equal(w.canSend(0), true);
  });

  it('grows by one per window of successes, up to its max', () => {
    const w = new AimdWindow(8);
    for (let i = 0; i < 3; i++) w.throttled(w.admit(), 0);
    assert.equal(w.size, 1);
    w.succeeded(w.admit());
    assert.equal(w.size, 2, 'a window of 1: one success');
    w.succeeded(w.admit());
    assert.equal(w.size, 2);
    w.succeeded(w.admit());
    assert.equal(w.size, 3, 'a window of 2: two successes');
    for (let i = 0; i < 1_000; i++) w.succeeded(w.admit());
    assert.equal(w.size, 8);
  });

  it('a Retry-After pauses sending until then, on the time it is given', () => {
    const w = new AimdWindow(8);
    w.throttled(w.admit(), 1_000, 3_000);
    assert.equal(w.canSend(3_999), false);
    assert.equal(w.canSend(4_000), true);
    w.throttled(w.admit(), 4_000, 500);
    w.throttled(w.admit(), 4_100, 100);
    assert.equal(w.pausedUntilMs, 4_500, 'the later end holds');
  });
});
