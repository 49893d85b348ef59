/**
 * The deterministic simulation in `npm test`, besides the seeds (seeds-*.test.ts, 50 each, so no
 * file nears the runner's per-file cap): the simulator must be able to fail, so the three fast
 * unsafe variants must each be caught within FAST_BUDGET seeds and the canaries must fail; and a
 * run must be reproducible from its seed, so one seed replays exactly.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EXIT_CODES, runSeed } from './run-seed.js';
import { describeCatch, FAST_BUDGET, FAST_VARIANTS, hunt } from './variants.js';

test('the canary (the harness deletes a named entry) is caught: the harness can fail', async () => {
  const c = await hunt('canary', 5);
  console.log(describeCatch(c, 5));
  assert.ok(c.caught, 'the canary was not caught');
  assert.match(c.caught.message ?? '', /invariant/);
});

test('the liveness canary (every node gone at healing) ends in a liveness verdict, exit code 2', async () => {
  const r = await runSeed(1, 'livenessCanary');
  assert.equal(r.verdict, 'liveness', r.message);
  assert.equal(EXIT_CODES[r.verdict], 2);
});

for (const variant of FAST_VARIANTS) {
  test(`unsafe variant ${variant} is caught by the invariant within ${FAST_BUDGET} seeds`, async () => {
    const c = await hunt(variant, FAST_BUDGET);
    console.log(describeCatch(c, FAST_BUDGET));
    assert.ok(c.caught, `${variant} was not caught in ${FAST_BUDGET} seeds`);
  });
}

test('a seed replays exactly', async () => {
  const a = await runSeed(7);
  const b = await runSeed(7);
  assert.equal(a.trace, b.trace);
  assert.deepEqual({ ...a.stats, wallMs: 0 }, { ...b.stats, wallMs: 0 });
});
