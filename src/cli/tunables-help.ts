/**
 * The tunables section of `keepwork start --help`, generated from `DEFAULTS` and `RULES`
 * (src/core/config.ts) so it lists every tunable with its default, unit and range and never goes
 * stale; and `parseTunable`, the `--set name=value` form (the CLI's and bench/drain's). Units come from the names (STYLE: names end in their unit): …Ms in milliseconds, …Bytes
 * in bytes, a 0–1 range is a switch, anything else a count.
 */
import { DEFAULTS, RULES } from '../core/config.js';

type Tunable = keyof typeof DEFAULTS;

/** `name=integer` (`leasePeriodMs=2000`) → its name and value; undefined for any other text. */
export function parseTunable(text: string): [name: string, value: number] | undefined {
  const m = /^([A-Za-z]+)=(-?\d+)$/.exec(text);
  return m ? [m[1]!, Number(m[2])] : undefined;
}

export function unitOf(name: Tunable): string {
  if (name.endsWith('Ms')) return 'ms';
  if (name.endsWith('Bytes')) return 'bytes';
  const rule = RULES[name];
  if (rule.min === 0 && rule.max === 1) return 'switch';
  return 'count';
}

function rangeOf(name: Tunable): string {
  const { min, max } = RULES[name];
  if (min === 0 && max === 1) return '0 or 1';
  return max === undefined ? `≥ ${min}` : `${min}–${max}`;
}

export function tunablesHelp(): string {
  const names = Object.keys(DEFAULTS) as Tunable[];
  const table = [['name', 'default', 'unit', 'allowed'], ...names.map((n) => [n, String(DEFAULTS[n]), unitOf(n), rangeOf(n)])];
  const widths = [0, 1, 2].map((c) => Math.max(...table.map((row) => row[c]!.length)));
  const lines = table.map((row) => `  ${row.map((cell, c) => (c < 3 ? cell.padEnd(widths[c]!) : cell)).join('  ')}`.trimEnd());
  return ['', 'Tunables (--set name=value, repeatable; what each does: docs/tuning.md, src/core/config.ts):', ...lines].join('\n');
}
