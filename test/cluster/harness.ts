/**
 * Real keepwork node processes on loopback for the cluster tests (docs/architecture.md): one temp folder
 * per test holding the bucket (unless an S3 URL is given), each node's data dir and its log.
 *
 *   Cluster.create(name) ─▶ start(nodeId) ─▶ `node --import tsx src/cli/cli.ts start --port 0 …`
 *        │                      └─ resolves with the URL the node prints on stderr (`serving http://…`)
 *        ├─ node.kill('SIGKILL' | 'SIGTERM' | 'SIGSTOP' | 'SIGCONT'), node.exited
 *        ├─ call(url, address, method, args, {durable}) ─▶ { ok, status, result | error }
 *        ├─ status() ─▶ `keepwork status --json` of the bucket
 *        └─ dispose() ─▶ SIGCONT + SIGKILL whatever still runs, temp folder removed (KEEPWORK_KEEP_TMP=1 keeps it)
 *
 * Every line a node writes (pino JSON on stdout, the CLI's lines on stderr) goes to
 * `<root>/logs/<nodeId>.log`. `killLeftovers()` (each test file runs it in `after()`, and the
 * process runs it on exit, also when node:test stops the file with SIGTERM after a timeout) kills
 * every child this module ever started that is still running; each child also kills itself once
 * this process is gone (test/helpers/die-with-parent.mjs), should it die by SIGKILL.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestContext } from 'node:test';
import type { NodeStatus } from '../../src/cli/status-command.js';
import { openStore } from '../../src/store/open.js';
import type { ObjectStore } from '../../src/store/types.js';
import { onExit } from '../helpers/exit.js';
import { KEEP_TMP, makeTempDir, removeTempDir } from '../helpers/temp.js';
export { waitFor } from '../helpers/wait.js';

export const REPO = fileURLToPath(new URL('../..', import.meta.url));
const CLI = ['--import', 'tsx', '--import', join(REPO, 'test/helpers/die-with-parent.mjs'), join(REPO, 'src/cli/cli.ts')];
export const PROBE_MODULE = join(REPO, 'test/fixtures/classes/probe.ts');

/**
 * Short timings so a takeover takes seconds: a lease of 2 s renewed every ~667 ms, half a second
 * of grace, one worker thread per node (2 cores), and no idle release during a test.
 */
export const FAST: Readonly<Record<string, number>> = Object.freeze({
  leasePeriodMs: 2000,
  graceMs: 500,
  skewBoundMs: 200,
  idleTimeoutMs: 600_000,
  workerThreads: 1,
});

export const START_BOUND_MS = 30_000;
const EXIT_BOUND_MS = 15_000;

const children = new Set<ChildProcess>();

const running = (c: ChildProcess) => c.exitCode === null && c.signalCode === null;

/** Kills (SIGCONT first, for a stopped one, then SIGKILL) every child still running. */
export function killLeftovers(): number {
  let n = 0;
  for (const c of children) {
    if (running(c)) {
      n++;
      c.kill('SIGCONT');
      c.kill('SIGKILL');
    }
    children.delete(c);
  }
  return n;
}
onExit(() => void killLeftovers());

// ---------------------------------------------------------------------------------------------
// HTTP calls

export interface CallResult {
  ok: boolean;
  /** HTTP status; 0 when no answer came (connection refused, timeout). */
  status: number;
  result?: unknown;
  error?: string;
  message?: string;
}

export function actorUrl(base: string, address: string): string {
  return `${base}/v1/actors/${address.split('/').map(encodeURIComponent).join('/')}`;
}

export interface CallOptions {
  durable?: boolean;
  timeoutMs?: number;
  /** Sent as `Idempotency-Key` (with `durable`). */
  idempotencyKey?: string;
}

/** POST one method call; never throws (a failure comes back as `ok: false`). */
export async function call(base: string, address: string, method: string, args: unknown[] = [], o: CallOptions = {}): Promise<CallResult> {
  const url = `${actorUrl(base, address)}/${method}${o.durable ? '?durable=1' : ''}`;
  try {
    const res = await fetch(url, {
      method: 'POST',
      body: JSON.stringify(args),
      headers: { 'content-type': 'application/json', ...(o.idempotencyKey === undefined ? {} : { 'idempotency-key': o.idempotencyKey }) },
      signal: AbortSignal.timeout(o.timeoutMs ?? 10_000),
    });
    const body = (await res.json().catch(() => ({}))) as { result?: unknown; error?: string; message?: string };
    return { ok: res.ok, status: res.status, ...body };
  } catch (e) {
    return { ok: false, status: 0, error: 'NO_ANSWER', message: (e as Error).message };
  }
}

/** A call that must succeed: its result, or an assertion-style error naming what came back. */
export async function mustCall<T = unknown>(
  base: string,
  address: string,
  method: string,
  args: unknown[] = [],
  o: CallOptions = {},
): Promise<T> {
  const r = await call(base, address, method, args, o);
  if (!r.ok)
    throw new Error(`${method}${o.durable ? ' (durable)' : ''} on ${address} via ${base} failed: ${r.status} ${r.error}: ${r.message}`);
  return r.result as T;
}

// ---------------------------------------------------------------------------------------------
// Node processes

export interface LogLine {
  msg?: string;
  level?: number;
  [field: string]: unknown;
}

export class ClusterNode {
  url = '';
  epoch = 0;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(
    readonly nodeId: string,
    readonly dataDir: string,
    readonly logPath: string,
    readonly child: ChildProcess,
  ) {
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  get pid(): number {
    return this.child.pid!;
  }

  get running(): boolean {
    return running(this.child);
  }

  kill(signal: 'SIGKILL' | 'SIGTERM' | 'SIGSTOP' | 'SIGCONT'): void {
    if (!this.running) throw new Error(`node ${this.nodeId} (pid ${this.pid}) is not running; cannot send ${signal}`);
    this.child.kill(signal);
  }

  /** Sends `signal` and waits (bounded) for the process to exit. */
  async killAndWait(
    signal: 'SIGKILL' | 'SIGTERM',
    boundMs = EXIT_BOUND_MS,
  ): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    this.kill(signal);
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`node ${this.nodeId} did not exit within ${boundMs} ms of ${signal}`)), boundMs);
    });
    try {
      return await Promise.race([this.exited, bound]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Every JSON line the node logged so far. */
  logLines(): LogLine[] {
    if (!existsSync(this.logPath)) return [];
    const out: LogLine[] = [];
    for (const line of readFileSync(this.logPath, 'utf8').split('\n')) {
      if (!line.startsWith('{')) continue;
      try {
        out.push(JSON.parse(line) as LogLine);
      } catch {
        // a line cut short by SIGKILL
      }
    }
    return out;
  }

  logged(msgPart: string): LogLine[] {
    return this.logLines().filter((l) => typeof l.msg === 'string' && l.msg.includes(msgPart));
  }

  logTail(lines = 30): string {
    if (!existsSync(this.logPath)) return '(no log)';
    return readFileSync(this.logPath, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  }
}

export interface StartOptions {
  /** Tunables beyond FAST (or overriding it). */
  set?: Record<string, number | boolean>;
  /** Another data dir than `<root>/<nodeId>` (e.g. to share one). */
  dataDir?: string;
  /** The HTTP listen address (default: the CLI's 127.0.0.1). */
  host?: string;
  /** A command the node runs under, e.g. `['ip', 'netns', 'exec', 'ns1']` (it must exec node in place). */
  launcher?: readonly string[];
  /** Environment variables for this node's process, on top of the test's own. */
  env?: Readonly<Record<string, string>>;
}

export interface ProcessOutcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export class Cluster {
  readonly nodes: ClusterNode[] = [];
  private storeHandle: ObjectStore | undefined;

  private constructor(
    readonly name: string,
    readonly root: string,
    /** The bucket URL every node (and the checks) use. */
    readonly bucket: string,
  ) {}

  /** A fresh temp folder (in `parent`); the bucket is `<root>/bucket` unless `bucket` names another (S3). */
  static create(name: string, bucket?: string, parent = tmpdir()): Cluster {
    const root = makeTempDir(`kw-cluster-${name}-`, parent);
    mkdirSync(join(root, 'logs'));
    return new Cluster(name, root, bucket ?? `file://${join(root, 'bucket')}`);
  }

  /** The bucket, opened in this process (for the checks). */
  store(): ObjectStore {
    this.storeHandle ??= openStore(this.bucket);
    return this.storeHandle;
  }

  startArgs(nodeId: string, o: StartOptions = {}): string[] {
    const set = { ...FAST, ...o.set };
    return [
      ...CLI,
      'start',
      '--data',
      o.dataDir ?? join(this.root, nodeId),
      '--bucket',
      this.bucket,
      '--port',
      '0',
      ...(o.host ? ['--host', o.host] : []),
      '--class',
      `Probe=${PROBE_MODULE}`,
      '--node-id',
      nodeId,
      ...Object.entries(set).flatMap(([k, v]) => ['--set', `${k}=${v}`]),
    ];
  }

  /** Starts a node and resolves once it serves HTTP. */
  async start(nodeId: string, o: StartOptions = {}): Promise<ClusterNode> {
    const logPath = join(this.root, 'logs', `${nodeId}.log`);
    const child = this.spawn(this.startArgs(nodeId, o), logPath, o.launcher, o.env);
    const node = new ClusterNode(nodeId, o.dataDir ?? join(this.root, nodeId), logPath, child);
    this.nodes.push(node);
    const serving = await new Promise<RegExpExecArray>((resolve, reject) => {
      let err = '';
      const timer = setTimeout(
        () => reject(new Error(`node ${nodeId} did not start within ${START_BOUND_MS} ms:\n${node.logTail()}`)),
        START_BOUND_MS,
      );
      const onData = (d: Buffer) => {
        err += d.toString();
        const m = /epoch (\d+)\) serving (http:\/\/\S+)/.exec(err);
        if (!m) return;
        clearTimeout(timer);
        child.stderr!.off('data', onData);
        resolve(m);
      };
      child.stderr!.on('data', onData);
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`node ${nodeId} exited (${code ?? signal}) before serving:\n${node.logTail()}`));
      });
    });
    node.epoch = Number(serving[1]);
    node.url = serving[2]!;
    return node;
  }

  startAll(nodeIds: string[], o: StartOptions = {}): Promise<ClusterNode[]> {
    return Promise.all(nodeIds.map((id) => this.start(id, o)));
  }

  /** Runs `start` for a node expected to refuse: how it ended and what it printed (bounded). */
  async startExpectingExit(nodeId: string, o: StartOptions & { logName: string }): Promise<ProcessOutcome> {
    const child = this.spawn(this.startArgs(nodeId, o), join(this.root, 'logs', `${o.logName}.log`));
    return this.outcome(child, `start of a second ${nodeId}`);
  }

  /** `keepwork status --json` of this cluster's bucket. */
  async status(): Promise<NodeStatus[]> {
    const child = this.spawn([...CLI, 'status', '--json', '--bucket', this.bucket], join(this.root, 'logs', 'status.log'));
    const r = await this.outcome(child, 'keepwork status');
    if (r.code !== 0) throw new Error(`keepwork status exited ${r.code ?? r.signal}: ${r.stderr}`);
    return JSON.parse(r.stdout) as NodeStatus[];
  }

  /** Kills what still runs; on failure puts the log tails in the test's diagnostics; removes the folder (KEEPWORK_KEEP_TMP=1 keeps it). */
  async dispose(t: TestContext, failed: boolean): Promise<void> {
    for (const n of this.nodes) {
      if (n.running) {
        n.child.kill('SIGCONT');
        n.child.kill('SIGKILL');
        await n.exited;
      }
    }
    await this.storeHandle?.close();
    if (failed) {
      for (const n of this.nodes) {
        t.diagnostic(`--- ${n.nodeId} (pid ${n.pid}) log tail, whole log in ${n.logPath} ---`);
        for (const line of n.logTail(15).split('\n')) t.diagnostic(line.length > 600 ? line.slice(0, 600) + '…' : line);
      }
      t.diagnostic(KEEP_TMP ? `cluster folder kept for inspection: ${this.root}` : 'set KEEPWORK_KEEP_TMP=1 to keep the cluster folder');
    }
    removeTempDir(this.root);
  }

  private spawn(
    args: string[],
    logPath: string,
    launcher: readonly string[] = [],
    env: Readonly<Record<string, string>> = {},
  ): ChildProcess {
    const [file, ...pre] = [...launcher, process.execPath];
    const child = spawn(file!, [...pre, ...args], {
      cwd: REPO,
      env: { ...process.env, KEEPWORK_LOG_LEVEL: 'info', UV_THREADPOOL_SIZE: process.env.UV_THREADPOOL_SIZE ?? '16', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    child.once('exit', () => children.delete(child));
    for (const [stream, tag] of [
      [child.stdout!, ''],
      [child.stderr!, '[stderr] '],
    ] as const) {
      let pending = '';
      stream.on('data', (d: Buffer) => {
        pending += d.toString();
        const cut = pending.lastIndexOf('\n');
        if (cut < 0) return;
        const lines = pending.slice(0, cut + 1);
        pending = pending.slice(cut + 1);
        appendFileSync(logPath, tag ? lines.replace(/^(?=.)/gm, tag) : lines);
      });
      stream.on('end', () => pending && appendFileSync(logPath, tag + pending + '\n'));
    }
    return child;
  }

  private async outcome(child: ChildProcess, what: string): Promise<ProcessOutcome> {
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
      // A process that was expected to refuse but serves: no need to wait for the bound.
      if (/serving http/.test(stderr)) child.kill('SIGKILL');
    });
    let timer: NodeJS.Timeout | undefined;
    try {
      const { code, signal } = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
        timer = setTimeout(() => {
          child.kill('SIGKILL');
          reject(new Error(`${what} did not exit within ${START_BOUND_MS} ms; stderr: ${stderr}`));
        }, START_BOUND_MS);
        child.once('exit', (c, s) => resolve({ code: c, signal: s }));
      });
      return { code, signal, stdout, stderr };
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * Runs one cluster test: a fresh Cluster, the body, then (always) every node killed; on failure
 * the nodes' log tails go to the test's diagnostics and the folder is kept.
 */
export async function withCluster(t: TestContext, name: string, body: (c: Cluster) => Promise<void>, bucket?: string): Promise<void> {
  const c = Cluster.create(name, bucket);
  let failed = true;
  try {
    await body(c);
    failed = false;
  } finally {
    await c.dispose(t, failed);
  }
}
