/**
 * What the project's lints share: the violation shape, the walk over a folder's source files and
 * the command-line entry (`--root DIR`, one `file:line:col rule` line per violation, exit 1).
 */
import { readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Violation {
  file: string;
  line: number;
  column: number;
  rule: string;
}

/** Every .ts/.js source file under `path` (a file or a folder), sorted; nothing when it is missing. */
export function filesUnder(path: string): string[] {
  let st;
  try {
    st = statSync(path);
  } catch {
    return [];
  }
  if (st.isFile()) return /\.(ts|mts|js|mjs)$/.test(path) ? [path] : [];
  return readdirSync(path)
    .sort()
    .flatMap((name) => filesUnder(join(path, name)));
}

/** Runs `lint` over the root given by `--root` (default: the project root) when `moduleUrl` is the entry point. */
export function runLint(moduleUrl: string, name: string, scope: string, lint: (root: string) => Violation[]): void {
  if (!process.argv[1] || resolve(process.argv[1]) !== fileURLToPath(moduleUrl)) return;
  const i = process.argv.indexOf('--root');
  const root = resolve(i >= 0 ? process.argv[i + 1]! : join(fileURLToPath(moduleUrl), '..', '..'));
  const violations = lint(root);
  for (const v of violations) console.error(`${v.file}:${v.line}:${v.column} ${v.rule}`);
  if (violations.length > 0) {
    console.error(`${name}: ${violations.length} violation(s) (${scope})`);
    process.exit(1);
  }
  console.log(`${name}: clean (${scope})`);
}
