/**
 * A recurring alarm as examples/reminder.ts keeps one (docs/guide.md "Recurring alarms"): each
 * firing sets the next point of the series' schedule, counted from when the series was due, so a
 * failing run backs off (committed retries) without drifting the period, a late delivery skips
 * the points it missed, and a crash and a restart keep the schedule (it is in the actor's state).
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import Reminder from '../../examples/reminder.js';
import { InlineActors, okResult } from '../helpers/inline-actors.js';

const A = 't1/Reminder/r';
const PERIOD = 10_000;

describe('a recurring alarm', () => {
  // A long replication delay: crash() needs no upload pending (inline-actors.ts).
  const env = new InlineActors({ Reminder }, { replicationDelayMs: 3_600_000 });
  after(() => env.cleanup());

  /** Runs the clock to `at` (default: the alarm's time) and delivers the alarm. */
  async function fire(at?: number) {
    await env.clock.runUntil(at ?? (await env.getAlarm(A))!);
    return env.alarm(A);
  }
  const history = async () => okResult(await env.call(A, 'history')) as { at: number; scheduledAt: number; retryCount: number }[];

  it('keeps its period through failed runs, a crash, a restart and a late delivery', async () => {
    const t0 = env.clock.now();
    okResult(await env.call(A, 'every', PERIOD, 'tick'));
    okResult(await fire());
    assert.equal(await env.getAlarm(A), t0 + 2 * PERIOD);

    okResult(await env.call(A, 'failTimes', 2));
    assert.equal((await fire()).type, 'error');
    assert.equal(await env.getAlarm(A), t0 + 2 * PERIOD + 1_000, 'backs off 1 s');
    assert.equal((await fire()).type, 'error');
    assert.equal(await env.getAlarm(A), t0 + 2 * PERIOD + 3_000, 'then 2 s more');
    okResult(await fire());
    assert.equal(await env.getAlarm(A), t0 + 3 * PERIOD, 'back on the period, not 10 s after the retry');

    env.crash();
    okResult(await fire());
    assert.equal(await env.getAlarm(A), t0 + 4 * PERIOD, 'after a kill -9');
    await env.restart();
    okResult(await fire(t0 + 6.5 * PERIOD));
    assert.equal(await env.getAlarm(A), t0 + 7 * PERIOD, 'a late delivery skips the points it missed');

    assert.deepEqual(
      (await history()).map((h) => [h.at - t0, h.retryCount]),
      [
        [PERIOD, 0],
        [2 * PERIOD + 3_000, 2],
        [3 * PERIOD, 0],
        [6.5 * PERIOD, 0],
      ],
    );
  });
});
