/**
 * The package as a user gets it (docs/guide.md "Use it in your app"):
 *
 *   npm pack (prepack builds) ─▶ keepwork-x.y.z.tgz ─▶ npm init -y; npm install <tgz> in a temp app
 *     ├─ the tarball: dist code (no source maps, nothing only tests use), docs, README, package.json
 *     ├─ library: `node app.js` (import { startNode } from 'keepwork'; a class given as a file URL)
 *     ├─ client: `node client.js` calls that node (keepwork/client), loading no SQLite, threads or logger
 *     ├─ CLI: `npx keepwork start --class Reminder=reminder.js` (path against the working directory)
 *     ├─ `npx keepwork bench drain` with a small sweep: a recommendation and an HTML report
 *     └─ a .ts class without tsx installed: refused at start, saying to install tsx or compile
 *
 * The app's classes are test/fixtures/app/*.js, which docs/guide.md shows verbatim. The install is
 * offline when npm's cache has every package (else it fetches what is missing) and skips install
 * scripts: better-sqlite3's native build (minutes on the shared machine) is this repository's own,
 * the same version for the same Node.js, copied in. Every process runs in its own process group,
 * killed when the test ends, however it ends; each node process also dies with its parent.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess, type SpawnSyncOptions } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import ts from 'typescript';
import { onExit } from '../../support/exit.js';
import { REPO } from '../../support/repo.js';
import { tempDirs } from '../helpers/temp.js';
import { waitFor } from '../helpers/wait.js';

const FIXTURE = join(REPO, 'test/fixtures/app');
const DIE_WITH_PARENT = join(REPO, 'support/die-with-parent.mjs');
const tempDir = tempDirs('kw-pack-');

/** The environment of npm and the app's processes: none of the npm_* variables of an `npm test` around this one. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
  return { ...env, KEEPWORK_LOG_LEVEL: 'warn', NODE_OPTIONS: `--import=${DIE_WITH_PARENT}`, ...extra };
}

function run(cmd: string, args: string[], cwd: string, options: SpawnSyncOptions = {}): string {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', env: cleanEnv(), timeout: 240_000, ...options });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')} failed (${r.status ?? r.signal}):\n${String(r.stdout)}\n${String(r.stderr)}`);
  return String(r.stdout);
}

const started = new Set<ChildProcess>();
function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
    try {
      process.kill(-child.pid, signal);
    } catch {
      /* already gone */
    }
  }
}
const killAll = () => [...started].forEach((c) => killGroup(c, 'SIGKILL'));
onExit(killAll);
after(killAll);

/** Starts a process in its own group; resolves with it and the URL it prints ("serving http://…"). */
async function serve(
  cmd: string,
  args: string[],
  cwd: string,
  env: Record<string, string> = {},
): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(cmd, args, { cwd, env: cleanEnv(env), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  started.add(child);
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (d: Buffer) => {
      output += d.toString();
      const m = /serving (http:\/\/\S+)/.exec(output);
      if (m) resolve(m[1]!);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code, signal) => reject(new Error(`${cmd} ${args.join(' ')} exited (${code ?? signal}):\n${output}`)));
  });
  return { child, url };
}

/** Starts a process in its own group that must end by itself, not serve; resolves with its stderr. */
async function refused(cmd: string, args: string[], cwd: string): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(cmd, args, { cwd, env: cleanEnv(), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  started.add(child);
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('exit', (c) => resolve(c));
    child.stderr!.on('data', () =>
      /serving http/.test(stderr) ? reject(new Error(`${cmd} ${args.join(' ')} started:\n${stderr}`)) : undefined,
    );
  });
  return { code, stderr };
}

/** SIGINT to the process group (Ctrl-C): the node stops and the process ends by itself. */
async function stop(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve({ code: child.exitCode, signal: child.signalCode });
    else child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  killGroup(child, 'SIGINT');
  return exited;
}

/** The alarms an actor's handler recorded, once there is one. */
async function firedOnce(url: string, name: string): Promise<Array<{ at: number; text: string }> | undefined> {
  const rows = await fired(url, name);
  return rows.length > 0 ? rows : undefined;
}

async function fired(url: string, name: string): Promise<Array<{ at: number; text: string }>> {
  const r = await fetch(`${url}/v1/actors/demo/Reminder/${name}/fired`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
  });
  assert.equal(r.status, 200, await r.clone().text());
  return ((await r.json()) as { result: Array<{ at: number; text: string }> }).result;
}

/** An app in another process: calls the node at $URL with keepwork/client and prints what r1 recorded. */
const CLIENT_APP = `import { connect } from 'keepwork/client';
const kw = connect({ url: process.env.URL });
console.log(JSON.stringify(await kw.actor('demo/Reminder/r1').call('fired')));
`;

/** `node --import ./refuse-heavy.js`: an import of a package keepwork/client must not load fails. */
const REFUSE_HEAVY = `import { register } from 'node:module';
register('./refuse-heavy-hooks.js', import.meta.url);
`;
const REFUSE_HEAVY_HOOKS = `const HEAVY = ['better-sqlite3', 'piscina', 'pino', '@aws-sdk', '@smithy', 'rxjs', 'p-queue', 'prom-client'];
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  if (HEAVY.some((p) => r.url.includes('/node_modules/' + p + '/'))) throw new Error('a heavy package was loaded: ' + r.url);
  return r;
}
`;

/** Relative imports of the built files, from the package's entry points: what can ever run. */
function reachable(pkgDir: string, entries: string[]): Set<string> {
  const seen = new Set<string>();
  const todo = entries.map((e) => resolve(pkgDir, e));
  while (todo.length) {
    const file = todo.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    // imports, exports and import() as the compiler reads them (not an example in a comment)
    for (const { fileName } of ts.preProcessFile(text, true, true).importedFiles)
      if (fileName.startsWith('.')) todo.push(resolve(dirname(file), fileName));
    // The worker file: new URL('../workers/event-worker' + (FROM_SOURCE ? '.ts' : '.js'), import.meta.url)
    for (const m of text.matchAll(/new URL\(['"](\.{1,2}\/[^'"]+)['"]\s*\+/g)) todo.push(resolve(dirname(file), m[1]! + '.js'));
  }
  return seen;
}

function listFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => join(d.parentPath, d.name));
}

describe('the packed package installed into an app', () => {
  /** The app the first test installed the package into (the bench test reuses it). */
  let installedApp: string | undefined;

  it('ships only what runs, and runs a class with an alarm as a library, with npx keepwork, and refuses a .ts class without tsx', async () => {
    const work = tempDir();

    // npm pack: prepack builds dist/ in the repository
    const packed = JSON.parse(
      run('npm', ['pack', '--json', '--pack-destination', work], REPO, { stdio: ['ignore', 'pipe', 'pipe'] }),
    ) as Array<{
      filename: string;
      files: Array<{ path: string }>;
    }>;
    const shipped = packed[0]!.files.map((f) => f.path);
    assert.deepEqual(
      shipped.filter((p) => p.endsWith('.map')),
      [],
      'no source maps (they would point at src/, which is not shipped)',
    );
    assert.deepEqual(
      shipped.filter((p) => !p.startsWith('dist/') && !p.startsWith('docs/') && !['package.json', 'README.md', 'LICENSE'].includes(p)),
      [],
      'only dist/, docs/ (the CLI’s help names them), README.md, LICENSE and package.json',
    );
    assert.ok(shipped.includes('docs/security.md') && shipped.includes('docs/tuning.md'), 'the docs the CLI names');
    for (const f of [
      'dist/index.js',
      'dist/index.d.ts',
      'dist/actor.js',
      'dist/actor.d.ts',
      'dist/client/index.js',
      'dist/client/index.d.ts',
      'dist/cli/cli.js',
      'dist/workers/event-worker.js',
    ]) {
      assert.ok(shipped.includes(f), `${f} is shipped`);
    }

    // the app: npm init -y, an ES module package, keepwork installed from the tarball
    const app = join(work, 'app');
    mkdirSync(app);
    run('npm', ['init', '-y'], app);
    run('npm', ['pkg', 'set', 'type=module'], app);
    run('npm', ['install', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund', join(work, packed[0]!.filename)], app);
    const installed = join(app, 'node_modules/keepwork');
    const sqliteBuild = 'node_modules/better-sqlite3/build/Release/better_sqlite3.node';
    const sameSqlite = (dir: string) =>
      (JSON.parse(readFileSync(join(dir, 'node_modules/better-sqlite3/package.json'), 'utf8')) as { version: string }).version;
    if (existsSync(join(REPO, sqliteBuild)) && sameSqlite(REPO) === sameSqlite(app)) {
      mkdirSync(dirname(join(app, sqliteBuild)), { recursive: true });
      copyFileSync(join(REPO, sqliteBuild), join(app, sqliteBuild));
    } else {
      run('npm', ['rebuild', 'better-sqlite3'], app); // the native build: slow
    }
    installedApp = app;

    // nothing in the installed package is unreachable from its entry points (no test-only modules)
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as {
      bin: Record<string, string>;
      peerDependenciesMeta?: Record<string, { optional?: boolean }>;
    };
    const runs = reachable(installed, ['dist/index.js', 'dist/actor.js', 'dist/client/index.js', manifest.bin.keepwork!]);
    const dead = listFiles(join(installed, 'dist'))
      .filter((f) => f.endsWith('.js') && !runs.has(f))
      .filter((f) => withoutComments(readFileSync(f, 'utf8')) !== 'export {};') // types only: their .d.ts is what is used
      .map((f) => relative(installed, f));
    assert.deepEqual(dead, [], 'every shipped module is reachable from index.js, actor.js, client/index.js or the keepwork command');
    // The build bundles some packages into dist/ (scripts/build.mjs): none may come in through keepwork/client.
    const bundledIntoClient = [...reachable(installed, ['dist/client/index.js'])]
      .filter((f) => /^\/\/ node_modules\//m.test(readFileSync(f, 'utf8')))
      .map((f) => relative(installed, f));
    assert.deepEqual(bundledIntoClient, [], 'keepwork/client bundles no package in');
    // ASCII only (scripts/build.mjs asciiOnly): one other character makes V8 hold a file as two-byte text.
    const notAscii = listFiles(join(installed, 'dist'))
      .filter((f) => f.endsWith('.js') && /[^\x00-\x7f]/.test(readFileSync(f, 'utf8')))
      .map((f) => relative(installed, f));
    assert.deepEqual(notAscii, [], 'every shipped .js file is ASCII');
    assert.equal(manifest.peerDependenciesMeta?.tsx?.optional, true, 'tsx is an optional peer dependency');

    for (const f of ['app.js', 'reminder.js']) copyFileSync(join(FIXTURE, f), join(app, f));

    // as a library: app.js sets r1's alarm for 1 s after the node starts
    const lib = await serve(process.execPath, ['app.js'], app, { PORT: '0' });
    const r1 = await waitFor('r1 alarm to fire in the library app', 60_000, () => firedOnce(lib.url, 'r1'));
    assert.equal(r1[0]!.text, 'stand up');

    // keepwork/client from another process, with a loader hook that refuses the node's heavy packages
    writeFileSync(join(app, 'client.js'), CLIENT_APP);
    writeFileSync(join(app, 'refuse-heavy.js'), REFUSE_HEAVY);
    writeFileSync(join(app, 'refuse-heavy-hooks.js'), REFUSE_HEAVY_HOOKS);
    const root = spawnSync(process.execPath, ['--import', './refuse-heavy.js', '--input-type=module', '-e', "await import('keepwork')"], {
      cwd: app,
      encoding: 'utf8',
      env: cleanEnv(),
      timeout: 60_000,
    });
    assert.match(root.stderr, /a heavy package was loaded: /, 'the hook refuses the package root (it can fail)');
    const viaClient = run(process.execPath, ['--import', './refuse-heavy.js', 'client.js'], app, { env: cleanEnv({ URL: lib.url }) });
    assert.deepEqual(JSON.parse(viaClient), r1, 'keepwork/client reads what the node recorded');
    assert.deepEqual(await stop(lib.child), { code: 0, signal: null }, 'app.js ends by itself after node.stop()');
    assert.ok(existsSync(join(app, 'data', 'bucket.db')) && !existsSync(join(app, 'data', 'bucket')), 'the default bucket: data/bucket.db');

    // with the command, on the same data dir: r1 is still there, and r2's alarm fires
    const cli = await serve('npx', ['keepwork', 'start', '--data', './data', '--port', '0', '--class', 'Reminder=reminder.js'], app);
    assert.equal((await fired(cli.url, 'r1'))[0]?.text, 'stand up');
    const set = await fetch(`${cli.url}/v1/actors/demo/Reminder/r2/remind`, {
      method: 'POST',
      body: JSON.stringify([500, 'stretch']),
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(set.status, 200, await set.clone().text());
    const r2 = await waitFor('r2 alarm to fire under npx keepwork', 60_000, () => firedOnce(cli.url, 'r2'));
    assert.equal(r2[0]!.text, 'stretch');
    // npx itself dies of the SIGINT; the keepwork process under it stops its node and lets the port go
    const npx = await stop(cli.child);
    assert.ok(npx.code === 0 || npx.signal === 'SIGINT', `npx keepwork start ended with ${JSON.stringify(npx)}`);
    await waitFor('keepwork start to close its port', 30_000, () =>
      fetch(`${cli.url}/v1/status`).then(
        () => false,
        () => true,
      ),
    );

    // a TypeScript class with no tsx in the app: refused at start, with what to do
    writeFileSync(join(app, 'reminder.ts'), readFileSync(join(FIXTURE, 'reminder.js'), 'utf8'));
    const ts = await refused('npx', ['keepwork', 'start', '--data', './data-ts', '--port', '0', '--class', 'Reminder=reminder.ts'], app);
    assert.notEqual(ts.code, 0, ts.stderr);
    assert.match(ts.stderr, /classes\.Reminder: \S+reminder\.ts is TypeScript/);
    assert.match(ts.stderr, /npm install tsx/);
    assert.match(ts.stderr, /compile your classes/);
  });

  it('runs npx keepwork bench drain with a sweep from the installed package: a recommendation and an HTML report', () => {
    assert.ok(installedApp, 'the package was installed by the test above');
    const app = installedApp;
    const benched = run(
      'npx',
      [
        'keepwork',
        'bench',
        'drain',
        '--bucket',
        './tmp-bucket',
        '--alarms',
        '40',
        '--nodes',
        '1',
        '--sweep',
        'deliveryConcurrencyMax=32,128',
        ...['leasePeriodMs=2000', 'graceMs=500', 'skewBoundMs=200', 'workerThreads=1'].flatMap((s) => ['--set', s]),
      ],
      app,
      { timeout: 280_000 },
    );
    assert.match(benched, /^recommendation: deliveryConcurrencyMax=(32|128) \(/m);
    const benchHtml = /^report:\s+(\S+\.html)$/m.exec(benched)?.[1];
    assert.ok(benchHtml && existsSync(benchHtml) && readFileSync(benchHtml, 'utf8').includes('<svg'), benched);
    assert.equal(existsSync(join(app, 'tmp-bucket')), false, 'the bench removes the bucket folder it created');
  });

  it('shows the fixture app in the guide verbatim', () => {
    const guide = readFileSync(join(REPO, 'docs/guide.md'), 'utf8');
    for (const f of ['app.js', 'reminder.js'])
      assert.ok(guide.includes(readFileSync(join(FIXTURE, f), 'utf8')), `docs/guide.md shows test/fixtures/app/${f}`);
  });
});

/** A compiled module's code without its comments (a types-only module keeps its header comment). */
function withoutComments(js: string): string {
  return js
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/^\s*\/\/.*$/gm, '')
    .trim();
}
