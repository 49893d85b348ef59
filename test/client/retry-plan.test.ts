/** client/retry-plan.ts: which failed attempts of keepwork/client go again, and after how long. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BadRequest, NodeUnreachable, OwnerUnreachable } from '../../src/core/errors.js';
import { parseRetryAfter, retryDelayMs, type Failure, type RetryInput } from '../../src/client/retry-plan.js';

const S = { callAttemptsMax: 5, callRetryBaseMs: 200, callRetryMaxMs: 5_000, callRetryTotalMs: 30_000 };
const busy: Failure = { error: new OwnerUnreachable('x'), transient: true, retryAfterMs: 1_000 };
const unreachable: Failure = { error: new NodeUnreachable('x'), transient: true };
const input = (over: Partial<RetryInput>): RetryInput => ({ failure: busy, durable: true, attempt: 1, elapsedMs: 0, random: 0.5, ...over });

describe('retryDelayMs', () => {
  it('retries only a durable call (it carries a key), only a transient failure', () => {
    assert.equal(retryDelayMs(input({ durable: false }), S), undefined);
    assert.equal(retryDelayMs(input({ failure: { error: new BadRequest('x'), transient: false } }), S), undefined);
    assert.equal(retryDelayMs(input({}), S), 1_000);
    assert.ok(retryDelayMs(input({ failure: unreachable }), S)! > 0);
  });

  it('waits at least the Retry-After, else a doubling backoff with equal jitter, capped', () => {
    assert.equal(retryDelayMs(input({ failure: unreachable, attempt: 1, random: 0 }), S), 100);
    assert.equal(retryDelayMs(input({ failure: unreachable, attempt: 1, random: 0.999999 }), S), 200);
    assert.equal(retryDelayMs(input({ failure: unreachable, attempt: 3, random: 0 }), S), 400);
    assert.equal(retryDelayMs(input({ failure: unreachable, attempt: 4, random: 0.999999, elapsedMs: 0 }), S), 1_600);
    const capped = { ...S, callRetryMaxMs: 1_000, callAttemptsMax: 100 };
    assert.equal(retryDelayMs(input({ failure: unreachable, attempt: 20, random: 0.999999 }), capped), 1_000);
    assert.equal(retryDelayMs(input({ attempt: 4, random: 0.999999 }), S), 1_600, 'a backoff past the Retry-After wins');
  });

  it('is bounded by attempts and by total time; a Retry-After is never cut short', () => {
    assert.equal(retryDelayMs(input({ attempt: 4 }), S) !== undefined, true);
    assert.equal(retryDelayMs(input({ attempt: 5 }), S), undefined, 'callAttemptsMax attempts in all');
    assert.equal(retryDelayMs(input({ elapsedMs: 29_000 }), S), 1_000, 'ends at the bound');
    assert.equal(retryDelayMs(input({ elapsedMs: 29_001 }), S), undefined, 'would end past callRetryTotalMs');
    assert.equal(retryDelayMs(input({ failure: { ...busy, retryAfterMs: 60_000 } }), S), undefined);
  });
});

describe('parseRetryAfter', () => {
  it('reads delay-seconds and HTTP dates; nothing else', () => {
    assert.equal(parseRetryAfter('1', 0), 1_000);
    assert.equal(parseRetryAfter(' 0 ', 0), 0);
    const now = Date.UTC(2026, 0, 1, 12, 0, 0);
    assert.equal(parseRetryAfter('Thu, 01 Jan 2026 12:00:03 GMT', now), 3_000);
    assert.equal(parseRetryAfter('Thu, 01 Jan 2026 11:00:00 GMT', now), 0, 'a past date: at once');
    assert.equal(parseRetryAfter(null, now), undefined);
    assert.equal(parseRetryAfter('soon', now), undefined);
    assert.equal(parseRetryAfter('-1', now), undefined);
  });
});
