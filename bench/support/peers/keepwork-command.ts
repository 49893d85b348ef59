/**
 * How bench/peers starts a keepwork node: as an operator does, `node dist/cli/cli.js start` (the
 * bundle `npm run build` makes) with the bench's Counter and Reminder compiled to JavaScript, on a
 * the bucket a node picks when given none (DATA_DIR/node/bucket.db; `bucket=folder` among the
 * settings: the folder bucket DATA_DIR/bucket); the other `name=value` settings go to `--set`. The classes are compiled
 * once per data dir, into DATA_DIR/classes/, each importing the package's dist/actor.js.
 *
 * The node prints `… serving <url> …` on stderr once it serves (src/cli/cli.ts).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { transformSync } from 'esbuild';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const CLI = join(ROOT, 'dist/cli/cli.js');
const CLASSES = { Counter: 'counter', Reminder: 'reminder' };
/** The setting that puts a node on a folder bucket instead of the default SQLite file. */
export const FOLDER_BUCKET = 'bucket=folder';

/** argv (after the node binary) of `keepwork start` for a node on `dataDir`, listening on 127.0.0.1:`port`. */
export function keepworkStartArgs(dataDir: string, port: number, settings: string[]): string[] {
  if (!existsSync(CLI)) throw new Error(`no ${CLI}: run npm run build first`);
  const argv = [CLI, 'start', '--data', join(dataDir, 'node'), '--port', String(port), '--host', '127.0.0.1', '--node-id', 'bench'];
  if (settings.includes(FOLDER_BUCKET)) argv.push('--bucket', join(dataDir, 'bucket'));
  for (const [name, file] of Object.entries(CLASSES)) argv.push('--class', `${name}=${compiled(dataDir, file)}`);
  for (const s of settings.filter((t) => t !== FOLDER_BUCKET)) argv.push('--set', s);
  return argv;
}

function compiled(dataDir: string, name: string): string {
  const path = join(dataDir, 'classes', `${name}.js`);
  if (existsSync(path)) return path;
  const source = readFileSync(fileURLToPath(new URL(`./${name}.ts`, import.meta.url)), 'utf8');
  const { code } = transformSync(source, { loader: 'ts', format: 'esm', target: 'node20' });
  mkdirSync(join(dataDir, 'classes'), { recursive: true });
  writeFileSync(
    path,
    code.replace(/from ["']\.\.\/\.\.\/\.\.\/src\/actor\.js["']/, `from '${pathToFileURL(join(ROOT, 'dist/actor.js')).href}'`),
  );
  return path;
}
