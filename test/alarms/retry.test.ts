import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { alarmOutcome, retryDelayMs } from '../../src/alarms/retry.js';

const s = { retryBaseMs: 1000, retryMaxMs: 300_000 };
const untouched = { touched: false, at: null };

describe('committed retries (pure rules)', () => {
  it('backoff is 1 s doubling to 5 min by the failure count', () => {
    assert.deepEqual(
      [1, 2, 3, 4, 8, 9, 10, 50].map((f) => retryDelayMs(f, s)),
      [1000, 2000, 4000, 8000, 128_000, 256_000, 300_000, 300_000],
    );
  });

  it('a failed alarm that left its alarm due moves it to the retry time and counts the failure', () => {
    assert.deepEqual(alarmOutcome('alarm', { at: 100, failures: 2 }, untouched, true, 500, s), { at: 4500, failures: 3 });
  });

  it('an alarm the failing handler set for now (or before the retry time) also moves to the retry time', () => {
    assert.deepEqual(alarmOutcome('alarm', { at: 100, failures: 0 }, { touched: true, at: 600 }, true, 500, s), { at: 1500, failures: 1 });
  });

  it('an alarm the failing handler set later than the retry time stands', () => {
    assert.deepEqual(alarmOutcome('alarm', { at: 100, failures: 0 }, { touched: true, at: 99_000 }, true, 500, s), {
      at: 99_000,
      failures: 1,
    });
  });

  it('a clear by the failing handler stands', () => {
    assert.deepEqual(alarmOutcome('alarm', { at: 100, failures: 4 }, { touched: true, at: null }, true, 500, s), { at: null, failures: 0 });
  });

  it('a successful alarm consumes the alarm and resets the count; one it set stands', () => {
    assert.deepEqual(alarmOutcome('alarm', { at: 100, failures: 4 }, untouched, false, 500, s), { at: null, failures: 0 });
    assert.deepEqual(alarmOutcome('alarm', { at: 100, failures: 4 }, { touched: true, at: 900 }, false, 500, s), { at: 900, failures: 0 });
  });

  it('setting or clearing outside a failed run resets the count; a failed request changes nothing', () => {
    assert.deepEqual(alarmOutcome('request', { at: 5000, failures: 3 }, { touched: true, at: 7000 }, false, 500, s), {
      at: 7000,
      failures: 0,
    });
    assert.deepEqual(alarmOutcome('request', { at: 5000, failures: 3 }, untouched, false, 500, s), { at: 5000, failures: 3 });
    assert.deepEqual(alarmOutcome('request', { at: 5000, failures: 3 }, { touched: true, at: null }, true, 500, s), {
      at: 5000,
      failures: 3,
    });
  });

  it('after a failure the alarm is never earlier than the retry time, and the count grows by one', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1e6 }),
        fc.integer({ min: 0, max: 20 }),
        fc.option(fc.integer({ min: 0, max: 2e6 }), { nil: null }),
        fc.integer({ min: 0, max: 1e6 }),
        (at, failures, set, now) => {
          const out = alarmOutcome('alarm', { at, failures }, set === null ? untouched : { touched: true, at: set }, true, now, s);
          assert.equal(out.failures, failures + 1);
          assert.ok(out.at !== null && out.at >= now + retryDelayMs(failures + 1, s));
          if (set !== null && set > now + retryDelayMs(failures + 1, s)) assert.equal(out.at, set);
        },
      ),
    );
  });
});
