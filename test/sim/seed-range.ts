/**
 * The simulation's seeds in `npm test`, split over several test files (seeds-*.test.ts) so none
 * comes near the runner's per-file cap on a loaded machine: each file runs one range of
 * `SIM_SEEDS` (default 200) and prints its totals. docs/simulator.md has the sums of
 * earlier runs.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runSeed } from './run-seed.js';
import { report } from './report.js';
import { addTotals, formatTotals, newTotals } from './totals.js';

export const SEEDS = Number(process.env.SIM_SEEDS ?? 200);
/** Seeds per file: 25 take about 40 s alone at load 15 on the 2 cores; 50 ran past 300 s beside another file at load 18. */
export const PER_FILE = 25;

export interface RangeOptions {
  /** The range includes the fault aimed at a joining node's first upload (R4's own case; seeds 1..5 have one). */
  firstUploadDelayed?: boolean;
}

/** Registers the tests of the `part`-th range (1-based) of PER_FILE seeds, cut to SEEDS. */
export function seedRangeTests(part: number, o: RangeOptions = {}): void {
  const from = (part - 1) * PER_FILE + 1;
  const to = Math.min(SEEDS, part * PER_FILE);
  if (from > to) {
    test(`seeds ${from}..${part * PER_FILE}`, { skip: `SIM_SEEDS=${SEEDS}` }, () => {});
    return;
  }
  const totals = newTotals();
  test(`seeds ${from}..${to} keep the index invariant, deliver nothing early, and fire every alarm after healing`, async () => {
    const failures: string[] = [];
    for (let seed = from; seed <= to; seed++) {
      const r = await runSeed(seed);
      addTotals(totals, r);
      if (r.verdict !== 'ok') failures.push(...report(r, true));
    }
    assert.deepEqual(failures, []);
  });
  test(`totals over seeds ${from}..${to}`, () => {
    console.log(formatTotals(totals));
    assert.equal(totals.seeds, to - from + 1);
    assert.ok(totals.takeovers > 0 && totals.alarmsSet > 0 && totals.invariantTicks > 0, 'the runs did something');
    assert.ok(totals.expectedTakes > 0, 'some orphaned alarm’s actor was taken without a read of its hold (holds.ts expect)');
    // Under the fault aimed at a joining node's first upload the rules keep every entry: it must happen.
    if (o.firstUploadDelayed && to === part * PER_FILE)
      assert.ok(totals.firstUploadsDelayed > 0, "the fault aimed at a joining node's first upload never happened");
  });
}
