/**
 * bench/restart: how soon a node serves again after kill -9, from the spawn of its new process to
 * the first durable call it answers, on the same data dir and its default bucket, started the way an
 * operator starts it (the `keepwork start` command):
 *
 *   dist      node dist/cli/cli.js start … (what `npm start` runs; `npm run build` first), the
 *             example classes compiled to .js
 *   dist-ts   node dist/cli/cli.js start … with the TypeScript classes (loaded through tsx)
 *   node-tsx  node --import tsx src/cli/cli.ts start … (the sources, as `npm run keepwork` runs
 *             them), TypeScript classes
 *   tsx       node_modules/.bin/tsx src/cli/cli.ts start … (tsx's launcher, which runs the node as
 *             its child process), TypeScript classes
 *
 * First ACTORS actors (--actors, 1,000) get a file each, so the restart finds a data dir to scan.
 * Each round: 8 lanes of durable add(1) on 8 keys for 300 ms, kill -9 of the node's process group,
 * spawn again, a durable add(0) every 2 ms until one answers 200; then every key read back (an
 * acknowledged add missing is a lost write). Variants take turns round by round, so a shared
 * machine's load falls on each alike.
 *
 * The split comes from bench/support/restart/marks.mjs (a preload; src knows nothing of it):
 * exec → preload (Node's boot; for tsx, its CLI's process and then the node's) → listen (module
 * loading, class checks, the data dir's lock) → workers online → first call served (the lease, the
 * actor's hold, the durable write).
 *
 *   npm run bench -- restart [--quick] [--rounds N] [--actors N] [--variants dist,dist-ts,…] [--set name=value …]
 *
 * A variant may name another checkout (e.g. an unpacked older commit with node_modules and its
 * dist built), to compare builds in one run: `--variants dist,dist@/tmp/before` runs both.
 * --quick: 3 rounds (full: 10). Writes bench/results/restart.json (restart-quick.json).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { benchArgs, percentile, quick, round, setPairs, table, words, writeResult } from './lib.js';
import { freePort, sleep } from './support/peers/systems.js';
import { filesystemOf } from './support/filesystem.js';
import ts from 'typescript';

const { transpileModule, ModuleKind, ScriptTarget } = ts;

const HERE = fileURLToPath(new URL('..', import.meta.url));
const MARKS = fileURLToPath(new URL('./support/restart/marks.mjs', import.meta.url));
const LANES = 8;
const LOAD_MS = 300;
const POLL_MS = 2;
const SERVE_TIMEOUT_MS = 120_000;

const args = benchArgs({
  rounds: { type: 'string' },
  actors: { type: 'string', default: '1000' },
  variants: { type: 'string', default: 'dist,dist-ts' },
  set: { type: 'string', multiple: true },
});
/** `--set name=value` (repeatable): a tunable for every node (docs/tuning.md), as `keepwork start --set`. */
const SET = Object.entries(setPairs(args.set)).flatMap(([name, value]) => ['--set', `${name}=${value}`]);
const ROUNDS = Number(args.rounds ?? (quick ? 3 : 10));
const ACTORS = Number(args.actors);

/** Each variant's command, up to `start`. */
const COMMANDS = {
  'node-tsx': () => [process.execPath, '--import', 'tsx', 'src/cli/cli.ts'],
  tsx: (root: string) => [join(root, 'node_modules/.bin/tsx'), 'src/cli/cli.ts'],
  dist: () => [process.execPath, 'dist/cli/cli.js'],
  'dist-ts': () => [process.execPath, 'dist/cli/cli.js'],
};

interface Variant {
  label: string;
  kind: keyof typeof COMMANDS;
  root: string;
}

function variantOf(spec: string): Variant {
  const [kind, root = HERE] = spec.split('@') as [Variant['kind'], string?];
  if (!(kind in COMMANDS)) throw new Error(`--variants: ${kind} is not one of ${Object.keys(COMMANDS).join(', ')}`);
  if (kind.startsWith('dist') && !existsSync(join(root, 'dist/cli/cli.js')))
    throw new Error(`${spec}: no ${root}/dist/cli/cli.js (npm run build)`);
  return { label: root === HERE ? kind : spec, kind, root: resolve(root) };
}

/** The examples compiled for a dist node: each .ts class as .js beside the data, importing dist/actor.js. */
function jsClasses(root: string, into: string): string[] {
  const actor = pathToFileURL(join(root, 'dist/actor.js')).href;
  return ['counter', 'reminder'].map((name) => {
    const ts = readFileSync(join(root, `examples/${name}.ts`), 'utf8');
    const js = transpileModule(ts, { compilerOptions: { module: ModuleKind.ESNext, target: ScriptTarget.ES2022 } }).outputText;
    const path = join(into, `${name}.js`);
    writeFileSync(path, js.replace(/from 'keepwork\/actor'/, `from '${actor}'`));
    return path;
  });
}

class NodeProcess {
  private child: ChildProcess | undefined;
  readonly port: Promise<number> = freePort();
  private readonly marks: string;
  private readonly classes: string[];

  constructor(
    readonly v: Variant,
    readonly dir: string,
  ) {
    this.marks = join(dir, 'marks.jsonl');
    this.classes = v.kind === 'dist' ? jsClasses(v.root, dir) : ['counter', 'reminder'].map((n) => join(v.root, `examples/${n}.ts`));
  }

  async spawn(): Promise<number> {
    const port = await this.port;
    writeFileSync(this.marks, '');
    const [cmd, ...first] = COMMANDS[this.v.kind](this.v.root) as [string, ...string[]];
    const [counter, reminder] = this.classes;
    const argv = [...first, 'start', '--data', join(this.dir, 'data'), '--port', String(port)];
    argv.push('--class', `Counter=${counter}`, '--class', `Reminder=${reminder}`, ...SET);
    const at = performance.timeOrigin + performance.now();
    this.child = spawn(cmd, argv, {
      cwd: this.v.root,
      detached: true, // its own process group: kill -9 reaches tsx's node too
      stdio: ['ignore', 'ignore', 'inherit'],
      env: {
        ...process.env,
        NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${pathToFileURL(MARKS).href}`,
        KW_RESTART_MARKS: this.marks,
      },
    });
    return at;
  }

  async kill9(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    process.kill(-child.pid!, 'SIGKILL');
    await exited;
  }

  /** Marks of the process that served, relative to `spawnedAt`, and its CPU time so far (`cpu`, ms: user + system). */
  split(spawnedAt: number): Record<string, number> {
    const lines = readFileSync(this.marks, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { pid: number; mark: string; at: number });
    const pid = lines.find((l) => l.mark === 'worker')?.pid; // the node's process (tsx's launcher listens too, but starts no thread)
    const mine = lines.filter((l) => l.pid === pid);
    const at = (m: string) => mine.find((l) => l.mark === m)?.at;
    const online = mine.filter((l) => l.mark.startsWith('online')).map((l) => l.at);
    const points: [string, number | undefined][] = [
      ['exec', at('exec')],
      ['preload', at('preload')],
      ['listen', at('listen')],
      ['online', online.length ? Math.max(...online) : undefined],
      ['served', at('served')],
    ];
    const split = Object.fromEntries(points.filter(([, t]) => t !== undefined).map(([m, t]) => [m, Math.round(t! - spawnedAt)]));
    return pid === undefined ? split : { ...split, cpu: cpuMs(pid) };
  }
}

/** A process's CPU time so far, ms (/proc/<pid>/stat: utime + stime, in clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return NaN;
  }
}

function call(port: number, key: string, by: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const body = JSON.stringify([by]);
    const req = request(
      { port, host: '127.0.0.1', method: 'POST', path: `/v1/actors/bench/Counter/${key}/add?durable=1`, agent: false },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c));
        res.on('end', () => resolve(res.statusCode === 200 ? (JSON.parse(text) as { result: number }).result : undefined));
        res.on('error', () => resolve(undefined));
      },
    );
    req.on('error', () => resolve(undefined));
    req.setHeader('content-type', 'application/json');
    req.end(body);
  });
}

/** Durable add(0) every POLL_MS until one answers; the time from `from`. */
async function firstServed(port: number, from: number): Promise<number> {
  const until = performance.now() + SERVE_TIMEOUT_MS;
  while (performance.now() < until) {
    if ((await call(port, 'k0', 0)) !== undefined) return performance.timeOrigin + performance.now() - from;
    await sleep(POLL_MS);
  }
  throw new Error(`no call served within ${SERVE_TIMEOUT_MS} ms`);
}

interface Round {
  variant: string;
  servedMs: number;
  split: Record<string, number>;
  acked: number;
  lost: number;
}

/** Lanes of durable add(1) for LOAD_MS; per key, the highest total acknowledged. */
async function load(port: number): Promise<number[]> {
  const acked = new Array<number>(LANES).fill(0);
  const until = performance.now() + LOAD_MS;
  await Promise.all(
    acked.map(async (_, i) => {
      while (performance.now() < until) {
        const total = await call(port, `k${i}`, 1);
        if (total !== undefined) acked[i] = Math.max(acked[i]!, total);
      }
    }),
  );
  return acked;
}

/** ACTORS actors with a file each (durable add(1), 32 in flight): the data dir a restart finds. */
async function fill(port: number): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < ACTORS) {
      const i = next++;
      while ((await call(port, `a${i}`, 1)) === undefined) await sleep(10);
    }
  };
  await Promise.all(Array.from({ length: 32 }, lane));
}

async function round1(node: NodeProcess): Promise<Round> {
  const port = await node.port;
  const acked = await load(port);
  await node.kill9();
  const spawnedAt = await node.spawn();
  const servedMs = round(await firstServed(port, spawnedAt), 0);
  const split = node.split(spawnedAt);
  let lost = 0;
  for (let i = 0; i < LANES; i++) {
    const now = await call(port, `k${i}`, 0);
    if (now === undefined || now < acked[i]!) lost += acked[i]! - (now ?? 0);
  }
  return { variant: node.v.label, servedMs, split, acked: acked.reduce((a, b) => a + b, 0), lost };
}

async function main(): Promise<void> {
  const variants = (words(args.variants) ?? []).map(variantOf);
  const base = mkdtempSync(join(tmpdir(), 'kw-bench-restart-'));
  console.log(
    `bench/restart: ${ACTORS} actors${SET.length ? `, ${SET.join(' ')}` : ''}, ${ROUNDS} rounds of kill -9 and start per variant (${variants.map((v) => v.label).join(', ')}), ` +
      `under ${filesystemOf(base).summary}; load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')} on ${cpus().length} cores`,
  );
  const nodes = variants.map((v, i) => {
    const dir = join(base, `v${i}`);
    mkdirSync(dir);
    return new NodeProcess(v, dir);
  });
  const rounds: Round[] = [];
  try {
    for (const node of nodes) {
      const port = await node.port;
      await firstServed(port, await node.spawn());
      await fill(port);
    }
    for (let r = 0; r < ROUNDS; r++) {
      for (const node of nodes) {
        const one = await round1(node);
        rounds.push(one);
        const split = Object.entries(one.split)
          .map(([m, t]) => `${m} ${t}`)
          .join(', ');
        console.log(
          `  ${one.variant} round ${r + 1}: served after ${one.servedMs} ms (${split}); lost ${one.lost} of ${one.acked} (load ${loadavg()[0]!.toFixed(1)})`,
        );
      }
    }
  } finally {
    for (const node of nodes) await node.kill9();
  }
  const rows = variants.map((v) => {
    const mine = rounds.filter((r) => r.variant === v.label);
    const med = (f: (r: Round) => number | undefined) => {
      const xs = mine
        .map(f)
        .filter((x): x is number => x !== undefined)
        .sort((a, b) => a - b);
      return xs.length ? Math.round(percentile(xs, 50)) : '—';
    };
    return {
      variant: v.label,
      'served, ms (min / median / max)': `${Math.min(...mine.map((r) => r.servedMs))} / ${med((r) => r.servedMs)} / ${Math.max(...mine.map((r) => r.servedMs))}`,
      'node booted (preload)': med((r) => r.split.preload),
      listening: med((r) => r.split.listen),
      'workers online': med((r) => r.split.online),
      'CPU of the node, ms': med((r) => r.split.cpu),
      'lost of acked': `${mine.reduce((a, r) => a + r.lost, 0)} of ${mine.reduce((a, r) => a + r.acked, 0)}`,
    };
  });
  console.log();
  console.log('medians of the split, ms after spawn:');
  console.log(table(rows));
  console.log(
    `load average after ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  const path = writeResult(quick ? 'restart-quick' : 'restart', {
    rounds: ROUNDS,
    loadAverage: loadavg(),
    dataUnder: tmpdir(),
    results: rounds,
  });
  console.log(`wrote ${path}`);
  rmSync(base, { recursive: true, force: true });
}

await main();
