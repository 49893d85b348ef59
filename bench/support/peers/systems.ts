/**
 * The systems bench/peers compares, each as processes it starts, kills -9 and starts again on the
 * same data: keepwork (`keepwork start` from dist/, the default bucket; plain or durable calls),
 * Restate (the native server binary and an SDK endpoint) and workerd (Durable Objects on SQLite).
 * Each turns a call (class, key, method, args) into an HTTP request and its answer into a value.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync, writeSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { keepworkStartArgs } from './keepwork-command.js';

export const PEERS_DIR = fileURLToPath(new URL('../../peers/', import.meta.url));
const RESTATE_BIN = join(PEERS_DIR, 'node_modules/@restatedev/restate-server-linux-x64/bin/restate-server');
const WORKERD_BIN = join(PEERS_DIR, 'node_modules/@cloudflare/workerd-linux-64/bin/workerd');
export const PEER_BINARIES = [RESTATE_BIN, WORKERD_BIN];

export type ClassName = 'Counter' | 'Reminder';

export interface Request {
  path: string;
  body: string;
}

export interface System {
  /** The column of the table. */
  readonly label: string;
  /** Version (or mode) shown under the table. */
  readonly about: string;
  /** Starts the system on a fresh data folder; resolves once it takes calls. Returns the origin. */
  start(dir: string): Promise<string>;
  /** kill -9 of the process that holds the state. */
  kill9(): void;
  /** Starts that process again on the same data (does not wait for it to serve). */
  restart(): Promise<void>;
  stop(): Promise<void>;
  request(cls: ClassName, key: string, method: string, args: unknown[], write: boolean): Request;
  /** The value a call answered, from its JSON body. */
  result(json: unknown): unknown;
  /** Starts that failed and were tried again after a kill -9 (keepwork only). */
  readonly refusedStarts?: number;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` every 50 ms until it resolves true; throws after `timeoutMs`. */
export async function waitFor(what: string, timeoutMs: number, probe: () => Promise<boolean>): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (await probe().catch(() => false)) return;
    if (Date.now() > until) throw new Error(`${what}: not ready after ${timeoutMs} ms`);
    await sleep(50);
  }
}

function logTo(dir: string, name: string): number {
  mkdirSync(dir, { recursive: true });
  return openSync(join(dir, `${name}.log`), 'a');
}

function exited(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((r) => child.once('exit', () => r()));
}

async function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const t = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited(child);
  clearTimeout(t);
}

/** keepwork: one node process (`keepwork start`: keepwork-command.ts), its data and bucket in the temp dir. */
export class KeepworkSystem implements System {
  readonly label: string;
  readonly about: string;
  private child: ChildProcess | undefined;
  private dir = '';
  private port = 0;
  private stopping = false;
  /** Starts refused after a kill -9 (the node's own lease was still live). */
  refusedStarts = 0;

  /** `tunables`: name=value settings for the node (keepwork-command.ts), e.g. newActorsInMemory=true. */
  constructor(
    private readonly durable: boolean,
    private readonly tunables: string[] = [],
  ) {
    const kind = durable ? 'durable' : 'plain';
    this.label = ['keepwork', kind, ...tunables].join(' ');
    this.about = durable
      ? 'keepwork, every write a durable call (?durable=1: replies once its link is in the bucket)'
      : 'keepwork, plain calls (reply after the local SQLite commit; uploaded within the group-commit window: replicationDelayMs idle, up to replicationDelayMaxMs busy)';
    if (tunables.length > 0) this.about += `, with ${tunables.join(', ')} (docs/tuning.md)`;
  }

  async start(dir: string): Promise<string> {
    this.dir = dir;
    this.port = await freePort();
    await this.spawn(true);
    return `http://127.0.0.1:${this.port}`;
  }

  private spawn(wait: boolean): Promise<void> {
    const log = logTo(this.dir, 'keepwork');
    const child = spawn(process.execPath, keepworkStartArgs(this.dir, this.port, this.tunables), {
      stdio: ['ignore', log, 'pipe'],
    });
    this.child = child;
    let served = false;
    let stderr = '';
    const ready = new Promise<void>((resolve, reject) => {
      child.stderr!.on('data', (chunk: Buffer) => {
        writeSync(log, chunk);
        if (served) return;
        stderr = (stderr + chunk.toString()).slice(-4096);
        if (!/ serving http/.test(stderr)) return;
        served = true;
        resolve();
      });
      child.once('exit', (code, signal) => {
        reject(new Error(`keepwork node exited (${code ?? signal}) before it served; see ${this.dir}`));
        // After a kill -9 the node refuses to start while its own lease is live: start it again
        // every 0.5 s, as a supervisor (systemd Restart=always) would.
        if (!served && !wait && !this.stopping) {
          this.refusedStarts++;
          setTimeout(() => !this.stopping && void this.spawn(false), 500);
        }
      });
    });
    ready.catch(() => undefined);
    return wait ? ready : Promise.resolve();
  }

  kill9(): void {
    this.child?.kill('SIGKILL');
  }

  async restart(): Promise<void> {
    await exited(this.child);
    await this.spawn(false);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await stopChild(this.child);
  }

  request(cls: ClassName, key: string, method: string, args: unknown[], write: boolean): Request {
    const q = write && this.durable ? '?durable=1' : '';
    return { path: `/v1/actors/bench/${cls}/${encodeURIComponent(key)}/${method}${q}`, body: JSON.stringify(args) };
  }

  result(json: unknown): unknown {
    return (json as { result: unknown }).result;
  }
}

/** Restate: the native restate-server (single node) and the SDK endpoint bench/peers/restate-service.mjs. */
export class RestateSystem implements System {
  readonly label = 'Restate';
  readonly about = 'Restate 1.7.12 (restate-server, single node) + @restatedev/restate-sdk 1.17.2 endpoint; every call durable';
  private server: ChildProcess | undefined;
  private service: ChildProcess | undefined;
  private dir = '';
  private ports = { ingress: 0, admin: 0, fabric: 0, service: 0 };

  async start(dir: string): Promise<string> {
    this.dir = dir;
    this.ports = { ingress: await freePort(), admin: await freePort(), fabric: await freePort(), service: await freePort() };
    const log = logTo(dir, 'restate-service');
    this.service = spawn(process.execPath, [join(PEERS_DIR, 'restate-service.mjs'), String(this.ports.service)], {
      cwd: PEERS_DIR,
      stdio: ['ignore', 'pipe', log],
    });
    await new Promise<void>((resolve, reject) => {
      this.service!.stdout!.on('data', (b: Buffer) => b.toString().includes('ready') && resolve());
      this.service!.once('exit', (code) => reject(new Error(`restate-service exited (${code})`)));
    });
    this.spawnServer();
    const admin = `http://127.0.0.1:${this.ports.admin}`;
    await waitFor('restate-server admin', 60_000, async () => (await fetch(`${admin}/health`)).ok);
    const reg = await fetch(`${admin}/deployments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ uri: `http://127.0.0.1:${this.ports.service}` }),
    });
    if (!reg.ok) throw new Error(`restate: registering the deployment failed: HTTP ${reg.status} ${await reg.text()}`);
    return `http://127.0.0.1:${this.ports.ingress}`;
  }

  private spawnServer(): void {
    const log = logTo(this.dir, 'restate-server');
    // Its scratch folders (48 `invoker-*` a start, never removed) go in the run's folder, removed with it.
    const scratch = join(this.dir, 'restate-tmp');
    mkdirSync(scratch, { recursive: true });
    this.server = spawn(
      RESTATE_BIN,
      ['--base-dir', join(this.dir, 'restate'), '--node-name', 'bench', '--no-logo', '--listen-mode', 'tcp'],
      {
        stdio: ['ignore', log, log],
        env: {
          ...process.env,
          TMPDIR: scratch,
          RESTATE_DISABLE_TELEMETRY: 'true',
          DO_NOT_TRACK: '1',
          RESTATE_LOG_DISABLE_ANSI_CODES: 'true',
          RESTATE_INGRESS__BIND_ADDRESS: `127.0.0.1:${this.ports.ingress}`,
          RESTATE_ADMIN__BIND_ADDRESS: `127.0.0.1:${this.ports.admin}`,
          RESTATE_BIND_ADDRESS: `127.0.0.1:${this.ports.fabric}`,
        },
      },
    );
  }

  kill9(): void {
    this.server?.kill('SIGKILL');
  }

  async restart(): Promise<void> {
    await exited(this.server);
    this.spawnServer();
  }

  async stop(): Promise<void> {
    await stopChild(this.server);
    await stopChild(this.service);
  }

  request(cls: ClassName, key: string, method: string, args: unknown[]): Request {
    // The ingress takes the handler's argument as a bare JSON value.
    return { path: `/${cls}/${encodeURIComponent(key)}/${method}`, body: JSON.stringify(args[0] ?? 0) };
  }

  result(json: unknown): unknown {
    return json;
  }
}

/** workerd: Durable Objects with SQLite storage on local disk (bench/peers/workerd.capnp). */
export class WorkerdSystem implements System {
  readonly label = 'workerd';
  readonly about = 'workerd 1.20261117.1 (Durable Objects, enableSql, localDisk storage); replies after the WAL fsync (output gate)';
  private child: ChildProcess | undefined;
  private dir = '';
  private port = 0;

  async start(dir: string): Promise<string> {
    this.dir = dir;
    this.port = await freePort();
    mkdirSync(join(dir, 'do'), { recursive: true });
    this.spawn();
    const origin = `http://127.0.0.1:${this.port}`;
    await waitFor('workerd', 30_000, async () => (await fetch(`${origin}/`)).status === 404);
    return origin;
  }

  private spawn(): void {
    const log = logTo(this.dir, 'workerd');
    const args = [
      'serve',
      'workerd.capnp',
      '--directory-path',
      `do-storage=${join(this.dir, 'do')}`,
      '--socket-addr',
      `http=127.0.0.1:${this.port}`,
    ];
    this.child = spawn(WORKERD_BIN, args, { cwd: PEERS_DIR, stdio: ['ignore', log, log] });
  }

  kill9(): void {
    this.child?.kill('SIGKILL');
  }

  async restart(): Promise<void> {
    await exited(this.child);
    this.spawn();
  }

  stop(): Promise<void> {
    return stopChild(this.child);
  }

  request(cls: ClassName, key: string, method: string, args: unknown[]): Request {
    return { path: `/${cls}/${encodeURIComponent(key)}/${method}`, body: JSON.stringify(args) };
  }

  result(json: unknown): unknown {
    return (json as { result: unknown }).result;
  }
}
