/**
 * Runs every `test/**\/*.test.ts` with node's test runner under tsx (Node 20's `--test` does not
 * expand globs itself). Extra arguments are passed on, e.g. `npm test -- --test-name-pattern=fs`;
 * a path argument (a file or folder under test/) narrows the run to it.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

function collect(dir: string, out: string[]): string[] {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) collect(path, out);
    else if (name.endsWith('.test.ts')) out.push(path);
  }
  return out;
}

const args = process.argv.slice(2);
const paths = args.filter((a) => !a.startsWith('-'));
const flags = args.filter((a) => a.startsWith('-'));
const files = (paths.length ? paths : ['test']).flatMap((p) => (statSync(p).isDirectory() ? collect(p, []) : [p]));
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
console.log(`running ${files.length} test files: ${files.map((f) => relative('test', f)).join(' ')}`);
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-timeout=300000', ...flags, ...files],
  { stdio: 'inherit' },
);
process.exit(result.status ?? 1);
