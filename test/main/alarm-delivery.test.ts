/**
 * Room for another actor: a delivery waits while the node's releases past heldActorsMax fall
 * behind, so a drain takes on actors no faster than it lets them go (and its open actors stay
 * bounded).
 *
 * A full alarm timer: the event that committed the alarm already succeeded, so the
 * timer's Overloaded never reaches its caller. The alarm is left to the sweep (it stays committed
 * and indexed), counted in keepwork_timer_full_total and logged.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { SimClock } from '../../src/core/clock.js';
import { resolveOptions } from '../../src/core/config.js';
import { ErrorCode } from '../../src/core/errors.js';
import { AlarmDelivery } from '../../src/main/alarm-delivery.js';
import { NodeMetrics } from '../../src/main/metrics.js';
import { capturedLogger } from '../helpers/log-lines.js';
import { silentLogger } from '../../src/core/logger.js';

describe('alarm delivery and room for another actor', () => {
  it('a due alarm is not delivered until actorRoom resolves, and the adaptive cue waits for it too', async () => {
    const clock = new SimClock(1_000_000);
    const delivered: string[] = [];
    let open: () => void = () => undefined;
    let gate = new Promise<void>((resolve) => (open = resolve));
    const d = new AlarmDelivery({
      clock,
      config: resolveOptions({}),
      log: silentLogger(),
      metrics: new NodeMetrics(),
      deliver: async (a) => (delivered.push(a.name), undefined),
      giveBack: async () => undefined,
      actorRoom: () => gate,
    });
    const settle = async () => {
      for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    };
    let cue = false;
    void d.sweepRoom().then(() => (cue = true));
    assert.equal(d.offer(parseAddress('t/C/a'), 999_000), true);
    await clock.advance(1);
    await settle();
    assert.deepEqual(delivered, [], 'no room: the delivery waits');
    assert.equal(d.backlog(), 1, 'it waits in the queue, counted in the backlog');
    assert.equal(cue, false, 'the adaptive sweep waits for room too');
    open();
    await settle();
    assert.deepEqual(delivered, ['a']);
    assert.equal(cue, true);
    gate = new Promise<void>((resolve) => (open = resolve));
    d.offer(parseAddress('t/C/b'), 999_000);
    await clock.advance(1);
    d.stop(); // stopped while waiting for room: nothing more is delivered
    open();
    await settle();
    assert.deepEqual(delivered, ['a']);
  });
});

describe('room for another sweep', () => {
  it('sweepRoom waits until the timer holds none of the last offers back, not only for half the queue', async () => {
    const clock = new SimClock(1_000_000);
    const ends: (() => void)[] = [];
    const config = resolveOptions({ deliveriesPerSweep: 4, deliveryConcurrency: 1, deliveryConcurrencyMax: 1 });
    const d = new AlarmDelivery({
      clock,
      config,
      log: silentLogger(),
      metrics: new NodeMetrics(),
      deliver: () => new Promise((resolve) => ends.push(() => resolve(undefined))),
      giveBack: async () => undefined,
    });
    const settle = async () => {
      for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    };
    for (let i = 0; i < 10; i++) assert.equal(d.offer(parseAddress(`t/C/a${i}`), 999_000), true); // a sweep's offers
    await clock.advance(1);
    await settle();
    assert.equal(d.backlog(), 5, 'one runs, four wait in the queue, five are held in the timer');
    let room = false;
    let sweepRoom = false;
    void d.room().then(() => (room = true));
    void d.sweepRoom().then(() => (sweepRoom = true));
    const finish = async (n: number) => {
      for (let i = 0; i < n; i++) {
        ends.shift()?.();
        await settle();
      }
    };
    await finish(3);
    assert.equal(room, true, 'half the queue has drained');
    assert.equal(sweepRoom, false, 'the timer still holds offers back: another sweep would only pile more there');
    await finish(4);
    assert.equal(sweepRoom, false);
    await finish(2);
    assert.equal(sweepRoom, true, 'every offer is queued or done, and the queue is under half');
    await finish(10);
  });
});

describe('alarm delivery with a full timer', () => {
  it('set and offer do not throw: the alarm is counted, logged once a minute, and left to the sweep', async () => {
    const clock = new SimClock(1_000_000);
    const { log, lines } = capturedLogger();
    const metrics = new NodeMetrics();
    const config = resolveOptions({ timerEntriesMax: 2 });
    const d = new AlarmDelivery({ clock, config, log, metrics, deliver: async () => undefined, giveBack: async () => undefined });
    d.set(parseAddress('t/C/a'), 2_000_000);
    d.set(parseAddress('t/C/b'), 2_000_000);
    d.set(parseAddress('t/C/c'), 2_000_000); // the timer is full: no throw
    assert.equal(d.offer(parseAddress('t/C/d'), 900_000), false, 'a sweep offer the timer cannot take stays in the index');
    d.set(parseAddress('t/C/a'), 2_500_000); // replacing a held alarm needs no room
    assert.equal(d.size, 2);
    assert.equal(d.has('t/C/c'), false);
    assert.equal((await metrics.timerFull.get()).values[0]?.value, 2);
    const full = lines.filter((l) => l.msg === 'alarm timer full; alarms left to the sweep');
    assert.equal(full.length, 1, 'one line a minute');
    assert.equal(full[0]?.err?.code, ErrorCode.Overloaded);
    await clock.advance(60_000);
    d.set(parseAddress('t/C/e'), 3_000_000);
    assert.equal(lines.filter((l) => l.msg === 'alarm timer full; alarms left to the sweep').length, 2);
    d.stop();
  });
});
