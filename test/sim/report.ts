/** How a run is printed: `SEED=N`, its parameters, the verdict, and the one-line repro command. */
import { describeParams } from './params.js';
import type { RunResult } from './run-seed.js';

export function reproCommand(r: Pick<RunResult, 'seed' | 'variant'>): string {
  return `npm run sim -- --seed ${r.seed}${r.variant === 'none' ? '' : ` --variant ${r.variant}`}`;
}

/** The lines for one finished run; `withParams` adds its parameters (when they were not printed at its start). */
export function report(r: RunResult, withParams: boolean): string[] {
  const lines: string[] = [];
  const s = r.stats;
  if (withParams) lines.push(`SEED=${r.seed} ${describeParams(r.params)}`);
  lines.push(
    `SEED=${r.seed} ${r.variant === 'none' ? '' : `variant=${r.variant} `}${r.verdict.toUpperCase()} takeovers=${s.takeovers} alarms=${s.alarmsSet} fired=${s.alarmsFired} checks=${s.invariantTicks} crashes=${s.crashes} cuts=${s.cuts} joins=${s.joins} aimed=${s.aimed} ${s.wallMs}ms trace=${r.trace}`,
  );
  if (r.verdict !== 'ok') {
    lines.push(`SEED=${r.seed} ${r.verdict} at ${r.atMs} ms: ${r.message}`);
    lines.push(`repro: ${reproCommand(r)}`);
  }
  return lines;
}
