/**
 * The sweep's next delay (alarms/sweep-cadence.ts), as pure functions: fixed (the design's cadence) or adaptive;
 * and when a sweep of a sharded index walks another node's folder (the slow walk).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { minGapLeftMs, nextSweepDelayMs, waitsForRoom, walksOtherShard } from '../../src/alarms/sweep-cadence.js';

const NOW = 1_800_000_000_000;
const adaptive = { alarmSweepMs: 10_000, sweepAdaptive: true, sweepMinGapMs: 100, marginMs: 15_000, deliveriesPerSweep: 256 };
const fixed = { ...adaptive, sweepAdaptive: false };

describe('the sweep cadence', () => {
  it('fixed (the design’s cadence): every alarmSweepMs, whatever the sweep found', () => {
    assert.equal(nextSweepDelayMs({ full: true }, 0, NOW, fixed), 10_000);
    assert.equal(nextSweepDelayMs({ full: false, nextDueMs: NOW - 14_999 }, 0, NOW, fixed), 10_000);
    assert.equal(waitsForRoom({ full: true }, 1_000, fixed), false);
  });
  it('adaptive: a full sweep with capacity free goes again after sweepMinGapMs; without, it waits for room', () => {
    assert.equal(nextSweepDelayMs({ full: true }, 255, NOW, adaptive), 100);
    assert.equal(nextSweepDelayMs({ full: true }, 256, NOW, adaptive), 10_000);
    assert.equal(waitsForRoom({ full: true }, 256, adaptive), true);
    assert.equal(waitsForRoom({ full: true }, 255, adaptive), false);
    assert.equal(waitsForRoom({ full: false }, 1_000, adaptive), false);
  });
  it('adaptive: at the next entry’s due time + margin, within [sweepMinGapMs, alarmSweepMs]', () => {
    assert.equal(nextSweepDelayMs({ full: false, nextDueMs: NOW - 12_000 }, 0, NOW, adaptive), 3_000);
    assert.equal(nextSweepDelayMs({ full: false, nextDueMs: NOW - 15_000 }, 0, NOW, adaptive), 100);
    assert.equal(nextSweepDelayMs({ full: false, nextDueMs: NOW + 60_000 }, 0, NOW, adaptive), 10_000);
    assert.equal(nextSweepDelayMs({ full: false }, 0, NOW, adaptive), 10_000, 'no next entry seen');
  });
  it('adaptive: sweepMinGapMs spaces sweeps start to start: a sweep that took the gap or longer goes again at once', () => {
    assert.equal(nextSweepDelayMs({ full: true, startedMs: NOW - 30 }, 0, NOW, adaptive), 70);
    assert.equal(nextSweepDelayMs({ full: true, startedMs: NOW - 250 }, 0, NOW, adaptive), 0);
    assert.equal(nextSweepDelayMs({ full: false, nextDueMs: NOW - 15_000, startedMs: NOW - 40 }, 0, NOW, adaptive), 60);
    assert.equal(nextSweepDelayMs({ full: false, nextDueMs: NOW - 12_000, startedMs: NOW - 40 }, 0, NOW, adaptive), 3_000);
    assert.equal(minGapLeftMs(undefined, NOW, adaptive), 100, 'unknown start: the whole gap from now');
  });
  it('the delay is always within [sweepMinGapMs, alarmSweepMs]', () => {
    fc.assert(
      fc.property(
        fc.boolean(),
        fc.nat(600),
        fc.option(fc.integer({ min: -100_000, max: 100_000 }), { nil: undefined }),
        (full, backlog, d) => {
          const ms = nextSweepDelayMs({ full, nextDueMs: d === undefined ? undefined : NOW + d }, backlog, NOW, adaptive);
          assert.ok(ms >= adaptive.sweepMinGapMs && ms <= adaptive.alarmSweepMs);
        },
      ),
    );
  });
});

describe('the slow walk’s cadence', () => {
  const every = { otherShardWalkMs: 10_000 };
  it('walks at the first sweep, then once otherShardWalkMs has passed since the last walk started', () => {
    assert.equal(walksOtherShard(undefined, NOW, every), true);
    assert.equal(walksOtherShard({ startedMs: NOW - 9_999, took: false }, NOW, every), false);
    assert.equal(walksOtherShard({ startedMs: NOW - 10_000, took: false }, NOW, every), true);
  });
  it('walks again at once after a walk whose entries the plan took (more may follow them)', () => {
    assert.equal(walksOtherShard({ startedMs: NOW - 1, took: true }, NOW, every), true);
  });
  it('never leaves two walks more than otherShardWalkMs apart, whatever the sweeps between', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 3_000 }), { minLength: 1, maxLength: 200 }), (gaps) => {
        let now = NOW;
        let last: { startedMs: number; took: boolean } | undefined;
        for (const gap of gaps) {
          now += gap;
          if (walksOtherShard(last, now, every)) last = { startedMs: now, took: false };
          // a sweep starts at most 3 s after the last: the walk is at most that late
          assert.ok(now - last!.startedMs < every.otherShardWalkMs, `no walk for ${now - last!.startedMs} ms`);
        }
      }),
    );
  });
});
