/**
 * `npm run sim:variants [-- --budget-fast 40 --budget-slow 2000]`
 *
 * Each unsafe variant (unsafe-rules.ts) must be caught by the invariant on some seed: the
 * first four (untaggedKeys, noGenerationCheck, noFence, earlyDurableReply — caught by the durable
 * check, run-seed.ts) and the liveness ones within the fast budget, the last two
 * (uploadBeforeEntry, clearOnEmptyBucket) within the slow one; the canary (the harness deletes a
 * named entry itself) on the first seed it can. Seeds run from 1 upwards until the first catch;
 * prints how many seeds each took. Exit 0 when every variant was caught in budget, 1 otherwise.
 * A catch must be a safety verdict: a liveness failure or a harness error does not count —
 * except for noOtherShards and noStartOver (liveness rules) and slowOtherShards (the slow walk at
 * a cadence too slow for the bound), which must be caught by a liveness verdict.
 */
import { runSeed, type RunResult, type Variant } from './run-seed.js';
import { reproCommand } from './report.js';

export const FAST_VARIANTS: readonly Variant[] = ['untaggedKeys', 'noGenerationCheck', 'noFence', 'earlyDurableReply'];
/**
 * Seeds each fast variant may take. 80, not 20: half the seeds run alarm-only actors in memory,
 * where the owner fence is remembered per hold across takes, and half start new actors in memory,
 * whose first event uploads at once (so the owner has uploaded under its hold) — both make "an
 * owner that uploaded nothing removes entries" (what noFence breaks) come up less often. noFence
 * was first caught by seed 16–28 before new actors could start in memory, by seed 57 after, by 15
 * since the group-commit window is paced (upload-pace.ts).
 */
export const FAST_BUDGET = 80;
export const SLOW_VARIANTS: readonly Variant[] = ['uploadBeforeEntry', 'clearOnEmptyBucket'];
/**
 * Variants that break a liveness rule or bound: caught by the liveness check, within the fast
 * budget. noStartOver needs an entry behind a live node's cursor of an own shard that no other
 * path delivers: the network's aimed delivery fault (network.ts aimAtDelivery) makes one.
 */
export const LIVENESS_VARIANTS: readonly Variant[] = ['noOtherShards', 'slowOtherShards', 'noStartOver'];

export interface Catch {
  variant: Variant;
  /** Seeds run, the catching one included; undefined when none caught it within the budget. */
  seedsRun: number;
  caught: RunResult | undefined;
  /** Runs that ended in liveness or error verdicts on the way (reported, not counted). */
  other: RunResult[];
}

export async function hunt(variant: Variant, budget: number, firstSeed = 1): Promise<Catch> {
  const other: RunResult[] = [];
  const catches = LIVENESS_VARIANTS.includes(variant) ? 'liveness' : 'safety';
  for (let i = 0; i < budget; i++) {
    const r = await runSeed(firstSeed + i, variant);
    if (r.verdict === catches) return { variant, seedsRun: i + 1, caught: r, other };
    if (r.verdict !== 'ok') other.push(r);
  }
  return { variant, seedsRun: budget, caught: undefined, other };
}

export function describeCatch(c: Catch, budget: number): string {
  if (!c.caught) return `${c.variant}: NOT caught in ${budget} seeds`;
  return `${c.variant}: caught by SEED=${c.caught.seed} after ${c.seedsRun} seed(s): ${c.caught.message} (repro: ${reproCommand(c.caught)})`;
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const arg = (flag: string, dflt: number) => (argv.includes(flag) ? Number(argv[argv.indexOf(flag) + 1]) : dflt);
  const fast = arg('--budget-fast', FAST_BUDGET);
  const slow = arg('--budget-slow', 2000);
  let missed = 0;
  const live = await runSeed(1, 'livenessCanary');
  console.log(
    `livenessCanary: SEED=1 ended ${live.verdict}${live.verdict === 'liveness' ? ' (as it must)' : ' — it must end in liveness'}`,
  );
  if (live.verdict !== 'liveness') missed++;
  const plan: [Variant, number][] = [
    ['canary', 5],
    ...FAST_VARIANTS.map((v) => [v, fast] as [Variant, number]),
    ...LIVENESS_VARIANTS.map((v) => [v, fast] as [Variant, number]),
    ...SLOW_VARIANTS.map((v) => [v, slow] as [Variant, number]),
  ];
  for (const [variant, budget] of plan) {
    const t0 = performance.now();
    const c = await hunt(variant, budget);
    console.log(`${describeCatch(c, budget)} [${((performance.now() - t0) / 1000).toFixed(1)} s]`);
    for (const o of c.other) console.log(`  (seed ${o.seed} ended ${o.verdict}: ${o.message?.split('\n')[0]})`);
    if (!c.caught) missed++;
  }
  process.exitCode = missed === 0 ? 0 : 1;
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
