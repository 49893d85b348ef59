/**
 * `npm run bench -- <name> [--quick] [...]`: runs bench/<name>.ts. Each benchmark prints a table
 * and writes JSON under bench/results/.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { filesystemOf } from './support/filesystem.js';

const dir = fileURLToPath(new URL('.', import.meta.url));
const names = readdirSync(dir)
  .filter((f) => f.endsWith('.ts') && !['run.ts', 'lib.ts'].includes(f))
  .map((f) => f.slice(0, -3));
const [name, ...rest] = process.argv.slice(2);
if (!name || !existsSync(`${dir}/${name}.ts`)) {
  console.error(`usage: npm run bench -- <${names.join('|')}> [--quick]`);
  process.exit(2);
}
// Benchmarks make their data dirs and buckets under TMPDIR (scripts/bench-disk.sh makes a journaled disk for it).
console.error(`bench ${name}: data under ${tmpdir()}, ${filesystemOf(tmpdir()).summary}`);
const r = spawnSync(process.execPath, ['--import', 'tsx', `${dir}/${name}.ts`, ...rest], { stdio: 'inherit' });
process.exit(r.status ?? 1);
