/**
 * The tunables section of `keepwork start --help`, generated from `DEFAULTS` and `RULES`
 * (src/core/config.ts) so it lists every tunable with its default, unit and range and never goes
 * stale; and `parseTunable`, the `--set name=value` form (the CLI's and the benches'). Units come
 * from the names (STYLE: names end in their unit): …Ms in milliseconds, …Bytes in bytes, a
 * boolean default is a switch, anything else a count.
 */
import { BadConfig } from '../core/errors.js';
import { DEFAULTS, RULES, isSwitch, type Switch, type Tunable } from '../core/config.js';

/** How a switch may be written after `--set name=`: true or 1 turns it on, false or 0 off. */
const SWITCH_TEXT: Readonly<Record<string, boolean>> = Object.freeze({ true: true, 1: true, false: false, 0: false });

/**
 * `name=value` → its name and value: an integer (`leasePeriodMs=2000`), or for a switch true,
 * false, 1 or 0 (`sweepAdaptive=false`). Undefined for text of another form, or an integer
 * tunable's value that is not an integer; throws `BadConfig` for a switch given any other value.
 * The name is not checked here: `resolveOptions` refuses an unknown one.
 */
export function parseTunable(text: string): [name: string, value: number | boolean] | undefined {
  const m = /^([A-Za-z]+)=(.*)$/.exec(text);
  if (!m) return undefined;
  const name = m[1]!;
  const value = m[2]!;
  if (isSwitch(name)) return [name, switchFromText(name, value)];
  return /^-?\d+$/.test(value) ? [name, Number(value)] : undefined;
}

function switchFromText(name: Switch, text: string): boolean {
  const on = Object.hasOwn(SWITCH_TEXT, text) ? SWITCH_TEXT[text] : undefined;
  if (on === undefined) throw new BadConfig(`${name} must be true, false, 1 or 0, got ${JSON.stringify(text)}`);
  return on;
}

export function unitOf(name: Tunable): string {
  if (isSwitch(name)) return 'switch';
  if (name.endsWith('Ms')) return 'ms';
  if (name.endsWith('Bytes')) return 'bytes';
  return 'count';
}

function rangeOf(name: Tunable): string {
  if (isSwitch(name)) return 'true or false';
  const { min, max } = RULES[name];
  return max === undefined ? `≥ ${min}` : `${min}–${max}`;
}

export function tunablesHelp(): string {
  const names = Object.keys(DEFAULTS) as Tunable[];
  const table = [['name', 'default', 'unit', 'allowed'], ...names.map((n) => [n, String(DEFAULTS[n]), unitOf(n), rangeOf(n)])];
  const widths = [0, 1, 2].map((c) => Math.max(...table.map((row) => row[c]!.length)));
  const lines = table.map((row) => `  ${row.map((cell, c) => (c < 3 ? cell.padEnd(widths[c]!) : cell)).join('  ')}`.trimEnd());
  return ['', 'Tunables (--set name=value, repeatable; what each does: docs/tuning.md):', ...lines].join('\n');
}
