/**
 * A full alarm timer (issue 14): the event that committed the alarm already succeeded, so the
 * timer's Overloaded never reaches its caller. The alarm is left to the sweep (it stays committed
 * and indexed), counted in keepwork_timer_full_total and logged.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SimClock } from '../../src/core/clock.js';
import { resolveOptions } from '../../src/core/config.js';
import { ErrorCode } from '../../src/core/errors.js';
import { AlarmDelivery } from '../../src/main/alarm-delivery.js';
import { NodeMetrics } from '../../src/main/metrics.js';
import { capturedLogger } from '../helpers/log-lines.js';

describe('alarm delivery with a full timer', () => {
  it('set and offer do not throw: the alarm is counted, logged once a minute, and left to the sweep', async () => {
    const clock = new SimClock(1_000_000);
    const { log, lines } = capturedLogger();
    const metrics = new NodeMetrics();
    const config = resolveOptions({ timerEntriesMax: 2 });
    const d = new AlarmDelivery({ clock, config, log, metrics, deliver: async () => undefined, giveBack: async () => undefined });
    d.set('t/C/a', 2_000_000);
    d.set('t/C/b', 2_000_000);
    d.set('t/C/c', 2_000_000); // the timer is full: no throw
    assert.equal(d.offer('t/C/d', 900_000), false, 'a sweep offer the timer cannot take stays in the index');
    d.set('t/C/a', 2_500_000); // replacing a held alarm needs no room
    assert.equal(d.size, 2);
    assert.equal(d.has('t/C/c'), false);
    assert.equal((await metrics.timerFull.get()).values[0]?.value, 2);
    const full = lines.filter((l) => l.msg === 'alarm timer full; alarms left to the sweep');
    assert.equal(full.length, 1, 'one line a minute');
    assert.equal(full[0]?.err?.code, ErrorCode.Overloaded);
    await clock.advance(60_000);
    d.set('t/C/e', 3_000_000);
    assert.equal(lines.filter((l) => l.msg === 'alarm timer full; alarms left to the sweep').length, 2);
    d.stop();
  });
});
