/**
 * `npm run sim -- [--seed N | --seeds K [--from F]] [--variant V]`
 *
 * Runs simulation seeds (run-seed.ts) and prints, per seed, `SEED=N` with the derived parameters
 * at its start and the verdict at its end; on a failure, a one-line command that replays that seed exactly. Totals at the
 * end. Exit code: 0 all ok · 1 a safety violation · 2 a liveness failure · 3 a harness error (the
 * first failure decides). Default: seeds 1..200, no variant.
 */
import { EXIT_CODES, VARIANTS, runSeed, type Variant } from './run-seed.js';
import { report } from './report.js';
import { describeParams, drawParams, withLiveness } from './params.js';
import { addTotals, formatTotals, newTotals } from './totals.js';

interface Args {
  seeds: number[];
  variant: Variant;
}

function parseArgs(argv: string[]): Args {
  const value = (flag: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const variant = (value('--variant') ?? 'none') as Variant;
  if (variant !== 'none' && !VARIANTS.includes(variant)) throw new Error(`--variant must be one of none, ${VARIANTS.join(', ')}`);
  const one = value('--seed');
  const from = Number(value('--from') ?? 1);
  const count = Number(value('--seeds') ?? 200);
  const seeds = one !== undefined ? [Number(one)] : Array.from({ length: count }, (_, i) => from + i);
  if (seeds.some((s) => !Number.isSafeInteger(s) || s < 0)) throw new Error('seeds must be non-negative integers');
  return { seeds, variant };
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const totals = newTotals();
  let exit = 0;
  for (const seed of args.seeds) {
    console.log(`SEED=${seed} ${describeParams(withLiveness(drawParams(seed)))}`);
    const r = await runSeed(seed, args.variant);
    addTotals(totals, r);
    for (const line of report(r, false)) console.log(line);
    if (r.verdict !== 'ok' && exit === 0) exit = EXIT_CODES[r.verdict];
  }
  console.log(formatTotals(totals));
  process.exitCode = exit;
}

await main();
