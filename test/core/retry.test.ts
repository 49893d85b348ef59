/**
 * The one retry loop (core/retry.ts) on virtual time: attempt counts, the doubling delays with
 * and without jitter, which errors are retried, and the abort signal.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { SimClock } from '../../src/core/clock.js';
import { AmbiguousWrite, PreconditionFailed, StoreUnavailable } from '../../src/core/errors.js';
import { jitter, SeededRandom } from '../../src/core/random.js';
import { isTransientStoreError, retry, retryDelayMs, type RetryPolicy } from '../../src/core/retry.js';

class Flaky extends Error {}

/** Runs `retry` to its end on a SimClock; records when each attempt started (ms from the start). */
async function run(p: RetryPolicy, failures: number, seed = 1, fail: () => Error = () => new Flaky('flaky')) {
  const clock = new SimClock(0);
  const startedAt: number[] = [];
  const done = retry({ clock, random: new SeededRandom(seed) }, p, async (n) => {
    startedAt.push(clock.now());
    assert.equal(n, startedAt.length, 'attempts are numbered from 1');
    if (startedAt.length <= failures) throw fail();
    return 'ok';
  });
  const outcome: Promise<{ value?: string; error?: unknown }> = done.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  await clock.advance(1_000_000);
  return { startedAt, ...(await outcome) };
}

const policy = (over: Partial<RetryPolicy> = {}): RetryPolicy => ({
  attemptsMax: 4,
  baseMs: 100,
  retryable: (e) => e instanceof Flaky,
  ...over,
});

describe('retry', () => {
  it('returns the first success; a success at once never sleeps', async () => {
    assert.deepEqual(await run(policy(), 0), { startedAt: [0], value: 'ok' });
    const r = await run(policy({ jitter: false }), 2);
    assert.equal(r.value, 'ok');
    assert.deepEqual(r.startedAt, [0, 100, 300]);
  });

  it('gives up after attemptsMax attempts with the last attempt’s own error', async () => {
    const r = await run(policy({ jitter: false }), 10);
    assert.deepEqual(r.startedAt, [0, 100, 300, 700]);
    assert.ok(r.error instanceof Flaky);
    const once = await run(policy({ attemptsMax: 1 }), 10);
    assert.deepEqual(once.startedAt, [0]);
  });

  it('an error the policy does not retry is thrown at once', async () => {
    const r = await run(policy(), 10, 1, () => new Error('refused'));
    assert.deepEqual(r.startedAt, [0]);
    assert.equal((r.error as Error).message, 'refused');
  });

  it('delays double from baseMs, capped at maxDelayMs before jitter', async () => {
    const r = await run(policy({ jitter: false, attemptsMax: 6, maxDelayMs: 250 }), 10);
    assert.deepEqual(r.startedAt, [0, 100, 300, 550, 800, 1050]);
  });

  it('jittered delays are jitter(random, doubled delay): one draw per delay, so a seed replays exactly', async () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1_000_000 }),
        fc.integer({ min: 0, max: 10_000 }),
        fc.integer({ min: 1, max: 8 }),
        (seed, baseMs, n) => {
          const p = policy({ baseMs });
          const a = new SeededRandom(seed);
          const b = new SeededRandom(seed);
          const ms = retryDelayMs(p, n, a);
          assert.equal(ms, jitter(b, baseMs * 2 ** (n - 1)));
          assert.ok(ms >= Math.floor((baseMs * 2 ** (n - 1)) / 2) && ms <= baseMs * 2 ** (n - 1));
        },
      ),
    );
    const [x, y] = [await run(policy(), 3, 7), await run(policy(), 3, 7)];
    assert.deepEqual(x.startedAt, y.startedAt);
    const random = new SeededRandom(7);
    const want = [0];
    for (let n = 1; n <= 3; n++) want.push(want[n - 1]! + jitter(random, 100 * 2 ** (n - 1)));
    assert.deepEqual(x.startedAt, want);
  });

  it('`failed` hears every failed attempt, the last included, before the decision', async () => {
    const heard: string[] = [];
    const r = await run(policy({ failed: (e) => heard.push((e as Error).message) }), 10);
    assert.deepEqual(heard, ['flaky', 'flaky', 'flaky', 'flaky']);
    assert.ok(r.error instanceof Flaky);
  });

  it('a jittered policy with no Random is refused', () => {
    assert.throws(() => retryDelayMs(policy(), 1), TypeError);
  });

  it('aborting ends the sleep with the signal’s reason, and no attempt starts after', async () => {
    const clock = new SimClock(0);
    const ac = new AbortController();
    let attempts = 0;
    const done = retry({ clock }, policy({ jitter: false, signal: ac.signal }), async () => {
      attempts++;
      throw new Flaky('flaky');
    }).catch((e: unknown) => e);
    await clock.advance(150); // attempt 1 at 0, attempt 2 at 100, sleeping until 300
    ac.abort(new Error('stopped'));
    assert.equal(((await done) as Error).message, 'stopped');
    await clock.advance(10_000);
    assert.equal(attempts, 2);
    const before = new AbortController();
    before.abort(new Error('never'));
    await assert.rejects(
      retry({ clock }, policy({ signal: before.signal }), async () => assert.fail('must not run')),
      /never/,
    );
  });

  it('a store error may go again when the store is unavailable or the outcome unknown, never on a 412', () => {
    assert.equal(isTransientStoreError(new StoreUnavailable('down')), true);
    assert.equal(isTransientStoreError(new AmbiguousWrite('maybe')), true);
    assert.equal(isTransientStoreError(new PreconditionFailed('taken')), false);
    assert.equal(isTransientStoreError(new Error('plain')), false);
  });
});
