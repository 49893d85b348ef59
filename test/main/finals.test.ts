/**
 * A durable batch's finals (src/main/worker-group.ts `Finals`): a final is answered whether it
 * came before or after it was asked for; one that never came by the port's close is lost; and the
 * lost outcome is made only for those, not again for finals already answered.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Finals } from '../../src/main/worker-group.js';
import { ErrorCode } from '../../src/core/errors.js';
import type { BatchOutcome } from '../../src/workers/messages.js';

const ok = (result: number): BatchOutcome => ({ type: 'ok', result, alarmAt: null, deleted: false, ran: true });

describe('Finals', () => {
  it('answers each final once it came, and makes the lost outcome only for those that never came', async () => {
    let lostMade = 0;
    const lost = (): BatchOutcome => {
      lostMade++;
      return { type: 'error', error: { code: ErrorCode.ActorGivenUp, message: 'lost' }, alarmAt: null };
    };
    const finals = new Finals(lost);
    finals.came(0, ok(10)); // before it is asked for
    const asked = [finals.of(0), finals.of(1), finals.of(2)];
    finals.came(1, ok(11)); // after
    finals.close(); // 2 never came
    const [a, b, c] = await Promise.all(asked);
    assert.deepEqual(a, ok(10));
    assert.deepEqual(b, ok(11));
    assert.equal(c!.type, 'error');
    assert.equal(lostMade, 1, 'the lost outcome was made for the final that never came only');
    assert.equal((await finals.of(3)).type, 'error', 'asked after the close: lost');
    assert.equal(lostMade, 2);
  });
});
