/**
 * Builds the JavaScript of dist/ with esbuild: one file per entry point (the package's exports,
 * the `keepwork` command, the worker thread's module, the bench's class module), the code they
 * share in `dist/chunks/`. A node's start then loads a handful of files instead of ~180, which
 * Node's ESM loader resolves, reads, compiles and links one by one. The pure-JavaScript packages a
 * start loads are bundled in too (RxJS, prom-client and its deps, commander, p-queue: ~160 files in
 * the main thread, none in a worker); EXTERNAL ones are left to Node: better-sqlite3 (native),
 * piscina (it starts its own worker file), pino (src/core/logger.ts requires it when a logger is
 * first made, which a worker thread does only when it first logs: ~36 ms of CPU a thread saved at
 * start), the AWS SDK and undici (loaded only for an S3 bucket), tsx (an optional peer, for .ts
 * classes). A bundled CommonJS package's `require` of a Node built-in goes through the `require`
 * each output file makes for itself (BANNER). The example classes go to `examples/dist/*.js`, each
 * still importing `keepwork/actor` (the package's own dist/actor.js, the module the worker loads too).
 *
 *   node scripts/build.mjs              bundle (`npm run build` runs tsc first, for the .d.ts files)
 *   node scripts/build.mjs --if-stale   only when a source is newer than the last bundle (`prestart`)
 *
 * A module that finds files relative to its `import.meta.url` must land at its own depth below dist/ (a
 * chunk sits one folder down, as src/main/worker-group.ts does): the build fails otherwise.
 * Plain JavaScript, so that `npm start` checks for staleness without loading tsx.
 */
import { existsSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const DIST = join(ROOT, 'dist');
const ENTRIES = ['index', 'actor', 'client/index', 'cli/cli', 'workers/event-worker', 'bench/bench-actor'];
const EXAMPLES = ['counter', 'reminder'];
const EXTERNAL = /^(better-sqlite3|piscina|pino|undici|@aws-sdk\/|@smithy\/|tsx)(\/|$)/;
const BANNER = "import { createRequire as __keepworkRequire } from 'node:module';\nconst require = __keepworkRequire(import.meta.url);";
const INPUTS = ['src', 'examples', 'package.json', 'tsconfig.json', 'tsconfig.build.json', 'scripts/build.mjs'];

function newestMtimeMs(path) {
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  let newest = st.mtimeMs;
  for (const name of readdirSync(path)) if (name !== 'dist') newest = Math.max(newest, newestMtimeMs(join(path, name)));
  return newest;
}

/** What `npm start` runs: a source newer than the oldest of them (or one missing) means bundle again. */
const OUTPUTS = ['dist/cli/cli.js', 'dist/workers/event-worker.js', ...EXAMPLES.map((e) => `examples/dist/${e}.js`)];

function stale() {
  const outputs = OUTPUTS.map((p) => join(ROOT, p));
  if (!outputs.every(existsSync)) return true;
  const built = Math.min(...outputs.map((p) => statSync(p).mtimeMs));
  return INPUTS.some((p) => newestMtimeMs(join(ROOT, p)) > built);
}

/** Every .js file under dir (the previous build's, or tsc's from before the bundle). */
function removeJs(dir) {
  if (!existsSync(dir)) return;
  for (const d of readdirSync(dir, { recursive: true, withFileTypes: true }))
    if (d.isFile() && d.name.endsWith('.js')) rmSync(join(d.parentPath, d.name));
  rmSync(join(dir, 'chunks'), { recursive: true, force: true });
}

/** `new URL('../workers/event-worker' + …, import.meta.url)`: a path relative to the module's own file. */
const RELATIVE_URL = /new URL\(\s*['"]\.{1,2}\//;
const depth = (path) => path.split(/[\\/]/).length - 1;

/** The modules finding files relative to `import.meta.url` that landed at another depth below dist/ than theirs below src/. */
function misplaced(metafile) {
  const wrong = [];
  for (const [out, { inputs }] of Object.entries(metafile.outputs)) {
    for (const input of Object.keys(inputs)) {
      if (!input.startsWith('src/') || !RELATIVE_URL.test(readFileSync(join(ROOT, input), 'utf8'))) continue;
      if (depth(relative('dist', out)) !== depth(relative('src', input))) wrong.push(`${input} → ${out}`);
    }
  }
  return wrong;
}

/** The packages EXTERNAL names are left to Node (and its built-ins: esbuild's `platform: 'node'`). */
function externalPackages({ path }) {
  return EXTERNAL.test(path) ? { path, external: true } : undefined;
}

/**
 * Makes every output file ASCII. esbuild escapes non-ASCII in code (its default `charset`) but
 * copies the comments it keeps as they are, and one non-ASCII character makes V8 hold and scan
 * the whole file as two-byte text, and Node's loader decode it on its slow path: a start loads
 * about a megabyte of these files in each of three threads (docs/benchmarks.md#restart). Each
 * such character becomes `\u{…}` in the comment. Checked: the file without its comments must be
 * the same code after; one whose code would change (a character in a String.raw template, which
 * esbuild cannot escape) fails the build: write it as an escape in the source.
 */
function asciiOnly(dirs, transformSync) {
  for (const dir of dirs)
    for (const name of readdirSync(dir, { recursive: true })) {
      if (!String(name).endsWith('.js')) continue;
      const file = join(dir, String(name));
      const text = readFileSync(file, 'utf8');
      if (!/[^\x00-\x7f]/.test(text)) continue;
      const ascii = text.replace(/[^\x00-\x7f]/gu, (c) => `\\u{${c.codePointAt(0).toString(16)}}`);
      const code = (t) => transformSync(t, { minifyWhitespace: true, format: 'esm', logLevel: 'silent' }).code;
      if (code(ascii) !== code(text))
        throw new Error(`${relative(ROOT, file)}: non-ASCII outside comments (write it as an escape in the source)`);
      writeFileSync(file, ascii);
    }
}

async function bundle() {
  const { build, transformSync } = await import('esbuild');
  removeJs(DIST);
  const { metafile } = await build({
    absWorkingDir: ROOT,
    entryPoints: Object.fromEntries(ENTRIES.map((e) => [e, `src/${e}.ts`])),
    outdir: 'dist',
    chunkNames: 'chunks/[name]-[hash]',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    plugins: [{ name: 'packages', setup: (b) => b.onResolve({ filter: /^[^./]/ }, externalPackages) }],
    banner: { js: BANNER },
    tsconfig: 'tsconfig.build.json',
    metafile: true,
    logLevel: 'warning',
  });
  const wrong = misplaced(metafile);
  if (wrong.length) throw new Error(`modules that find files relative to import.meta.url moved to another depth:\n  ${wrong.join('\n  ')}`);
  rmSync(join(ROOT, 'examples/dist'), { recursive: true, force: true });
  await build({
    absWorkingDir: ROOT,
    entryPoints: EXAMPLES.map((e) => `examples/${e}.ts`),
    outdir: 'examples/dist',
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'warning',
  });
  asciiOnly([DIST, join(ROOT, 'examples/dist')], transformSync);
  const now = new Date(); // esbuild leaves an unchanged output's file (and its mtime) alone
  for (const p of OUTPUTS) utimesSync(join(ROOT, p), now, now);
}

if (!process.argv.includes('--if-stale') || stale()) {
  const started = performance.now();
  await bundle();
  const files = readdirSync(DIST, { recursive: true }).filter((f) => String(f).endsWith('.js')).length;
  console.error(`dist: ${files} .js files bundled in ${Math.round(performance.now() - started)} ms (${relative(ROOT, DIST) + sep})`);
}
