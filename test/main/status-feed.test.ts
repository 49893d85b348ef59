/** The status feed's bounded rings of deliveries and samples (status-feed.ts). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DELIVERIES_MAX, ERROR_CHARS_MAX, FAILURES_MAX, Ring, StatusFeed } from '../../src/main/status-feed.js';

describe('status feed', () => {
  it('keeps the newest items of a bounded ring', () => {
    const r = new Ring<number>(3);
    for (let i = 1; i <= 5; i++) r.push(i);
    assert.deepEqual(r.toArray(), [3, 4, 5]);
  });

  it('records deliveries by outcome and counts them into the next sample', () => {
    const f = new StatusFeed();
    f.delivered('t/C/a', 1_000, { type: 'ok', alarmAt: null, deleted: false, ran: true }, 1_500);
    f.delivered('t/C/b', 1_000, { type: 'ok', alarmAt: null, deleted: false, ran: false, removed: 2 }, 1_600);
    f.delivered('t/C/c', 1_000, { type: 'error', error: { code: 'HANDLER_FAILED', message: 'boom' }, alarmAt: 2_000 }, 1_700);
    f.failed('t/C/d', 1_000, new Error('no bucket'), 1_800);
    assert.deepEqual(f.totals, { ran: 1, stale: 1, kept: 0, failed: 2 });
    assert.deepEqual(
      f.deliveries.toArray().map((d) => [d.actor, d.outcome, d.lateMs, d.error ?? d.removed ?? null]),
      [
        ['t/C/a', 'ran', 500, null],
        ['t/C/b', 'stale', 600, 2],
        ['t/C/c', 'failed', 700, 'boom'],
        ['t/C/d', 'failed', 800, 'no bucket'],
      ],
    );
    f.sample({ atMs: 2_000, backlog: 1, lagSeconds: 0, held: 1, timer: 0 });
    f.sample({ atMs: 3_000, backlog: 0, lagSeconds: 0, held: 1, timer: 0 });
    assert.deepEqual(
      f.samples.toArray().map((s) => [s.delivered, s.failed, s.ran, s.stale, s.kept]),
      [
        [2, 2, 1, 1, 0],
        [0, 0, 0, 0, 0],
      ],
    );
    for (let i = 0; i < DELIVERIES_MAX + 10; i++) f.failed('x/C/y', 0, 'e', i);
    assert.equal(f.deliveries.toArray().length, DELIVERIES_MAX);
  });

  it('keeps the last failures apart, with their codes and errors cut short, however many deliveries ran since', () => {
    const f = new StatusFeed();
    const coded = Object.assign(new Error('x'.repeat(ERROR_CHARS_MAX * 2)), { code: 'LEASE_LOST' });
    f.failed('t/C/a', 1_000, coded, 1_100);
    f.delivered('t/C/b', 1_000, { type: 'error', error: { code: 'HANDLER_FAILED', message: 'boom' }, alarmAt: 2_000 }, 1_200);
    for (let i = 0; i < DELIVERIES_MAX; i++) f.delivered('t/C/c', 0, { type: 'ok', alarmAt: null, deleted: false, ran: true }, 2_000 + i);
    assert.equal(
      f.deliveries.toArray().some((d) => d.outcome === 'failed'),
      false,
    );
    const [a, b] = f.failures.toArray();
    assert.deepEqual([a!.actor, a!.code, a!.error!.length, a!.error!.endsWith('…')], ['t/C/a', 'LEASE_LOST', ERROR_CHARS_MAX, true]);
    assert.deepEqual([b!.actor, b!.code, b!.error], ['t/C/b', 'HANDLER_FAILED', 'boom']);
    for (let i = 0; i < FAILURES_MAX + 5; i++) f.failed('t/C/d', 0, `e${i}`, 3_000 + i);
    assert.equal(f.failures.toArray().length, FAILURES_MAX);
    assert.equal(f.failures.toArray().at(-1)!.error, `e${FAILURES_MAX + 4}`);
  });
});
