/**
 * bench/peers' pure helpers: the load summary, the timers' firing summary, the writes lost across
 * a kill -9 and the table cells. (The bench itself, and its peers, never run under npm test.)
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cell, lostWrites, summarizeFiring, summarizeLoad } from '../../bench/support/peers/stats.js';

describe('bench/peers helpers', () => {
  it('summarizes a timed load from the latencies of the calls that succeeded', () => {
    const s = summarizeLoad([3, 1, 2, 4], 5, 2);
    assert.deepEqual(s, { ops: 4, errors: 5, seconds: 2, perSec: 2, p50Ms: 3, p99Ms: 4 });
    assert.equal(summarizeLoad([], 0, 0).perSec, 0);
  });

  it('firing: rate from the due time to the last firing, lateness percentiles, timers that never fired', () => {
    const due = 1_000_000;
    const s = summarizeFiring(due, [due + 500, due + 100, null, due + 2000]);
    assert.equal(s.timers, 4);
    assert.equal(s.fired, 3);
    assert.equal(s.firedPerSec, 2); // 3 fired by 2 s after they were due
    assert.equal(s.latenessP50Ms, 500);
    assert.equal(s.latenessP99Ms, 2000);
    assert.equal(s.latenessMaxMs, 2000);
    assert.equal(s.spreadMs, 1900);
    assert.ok(Number.isNaN(summarizeFiring(due, [null]).firedPerSec));
  });

  it('lost writes: the shortfall of each key below its highest acknowledged total; unreadable keys apart', () => {
    assert.deepEqual(lostWrites([10, 5, 7], [10, 6, 4]), { lost: 3, unreadable: 0 });
    assert.deepEqual(lostWrites([10, 5], [null, 5]), { lost: 0, unreadable: 1 });
  });

  it('cells: thousands separators, a dash for what is missing', () => {
    assert.equal(cell(12345.678), '12,345.68');
    assert.equal(cell(3, ' s'), '3 s');
    assert.equal(cell(NaN), '—');
    assert.equal(cell(undefined), '—');
  });
});
