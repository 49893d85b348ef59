/**
 * Real keepwork node processes on loopback, for the cluster tests and the benches that run a
 * cluster (docs/architecture.md): one temp folder per cluster holding the bucket (unless an S3
 * URL is given), each node's data dir and its log.
 *
 *   Cluster.create(name) ─▶ start(nodeId) ─▶ `node --import tsx src/cli/cli.ts start --port 0 …`
 *        │                      └─ resolves with the URL the node prints on stderr (`serving http://…`)
 *        ├─ node.kill('SIGKILL' | 'SIGTERM' | 'SIGSTOP' | 'SIGCONT'), node.exited   (node.ts)
 *        ├─ call(url, address, method, args, {durable}) ─▶ { ok, status, result | error }   (calls.ts)
 *        ├─ status() ─▶ the node rows of `keepwork status --json` of the bucket
 *        └─ dispose() ─▶ SIGCONT + SIGKILL whatever still runs, temp folder removed (KEEPWORK_KEEP_TMP=1 keeps it)
 *
 * Every line a node writes (pino JSON on stdout, the CLI's lines on stderr) goes to
 * `<root>/logs/<nodeId>.log`; processes.ts kills what is left when this process ends.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NodeStatus, StatusJson } from '../../src/cli/status-command.js';
import { openStore } from '../../src/store/open.js';
import type { ObjectStore } from '../../src/store/types.js';
import { REPO } from '../repo.js';
import { KEEP_TMP, makeTempDir, removeTempDir } from '../temp-dir.js';
import { ClusterNode } from './node.js';
import { outcomeOf, spawnLogged, type ProcessOutcome } from './processes.js';

const CLI = ['--import', 'tsx', '--import', join(REPO, 'support/die-with-parent.mjs'), join(REPO, 'src/cli/cli.ts')];
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

/** Where a cluster reports on failure: a node:test TestContext. */
export interface Diagnostics {
  diagnostic(message: string): void;
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
  /** More arguments to `start`, e.g. `['--auth-file', path]`. */
  args?: readonly string[];
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
      ...(o.args ?? []),
    ];
  }

  /** Starts a node and resolves once it serves HTTP. */
  async start(nodeId: string, o: StartOptions = {}): Promise<ClusterNode> {
    const logPath = join(this.root, 'logs', `${nodeId}.log`);
    const child = spawnLogged(this.startArgs(nodeId, o), logPath, o.launcher, o.env);
    const node = new ClusterNode(nodeId, o.dataDir ?? join(this.root, nodeId), logPath, child);
    this.nodes.push(node);
    const serving = await servingLine(child, node);
    node.epoch = Number(serving[1]);
    node.url = serving[2]!;
    return node;
  }

  startAll(nodeIds: string[], o: StartOptions = {}): Promise<ClusterNode[]> {
    return Promise.all(nodeIds.map((id) => this.start(id, o)));
  }

  /** Runs `start` for a node expected to refuse: how it ended and what it printed (bounded). */
  async startExpectingExit(nodeId: string, o: StartOptions & { logName: string }): Promise<ProcessOutcome> {
    const child = spawnLogged(this.startArgs(nodeId, o), join(this.root, 'logs', `${o.logName}.log`));
    return outcomeOf(child, `start of a second ${nodeId}`, START_BOUND_MS);
  }

  /** The node rows of `keepwork status --json --no-index` of this cluster's bucket. */
  async status(): Promise<NodeStatus[]> {
    const child = spawnLogged([...CLI, 'status', '--json', '--no-index', '--bucket', this.bucket], join(this.root, 'logs', 'status.log'));
    const r = await outcomeOf(child, 'keepwork status', START_BOUND_MS);
    if (r.code !== 0) throw new Error(`keepwork status exited ${r.code ?? r.signal}: ${r.stderr}`);
    return (JSON.parse(r.stdout) as StatusJson).nodes;
  }

  /** Kills what still runs; on failure puts the log tails in the test's diagnostics; removes the folder (KEEPWORK_KEEP_TMP=1 keeps it). */
  async dispose(t: Diagnostics, failed: boolean): Promise<void> {
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
}

/** The node's `(epoch N) serving http(s)://…` line on stderr: [line, epoch, url]; rejects if it exits first or takes too long. */
function servingLine(child: ChildProcess, node: ClusterNode): Promise<RegExpExecArray> {
  return new Promise<RegExpExecArray>((resolve, reject) => {
    let err = '';
    const timer = setTimeout(
      () => reject(new Error(`node ${node.nodeId} did not start within ${START_BOUND_MS} ms:\n${node.logTail()}`)),
      START_BOUND_MS,
    );
    const onData = (d: Buffer) => {
      err += d.toString();
      const m = /epoch (\d+)\) serving (https?:\/\/\S+)/.exec(err);
      if (!m) return;
      clearTimeout(timer);
      child.stderr!.off('data', onData);
      resolve(m);
    };
    child.stderr!.on('data', onData);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`node ${node.nodeId} exited (${code ?? signal}) before serving:\n${node.logTail()}`));
    });
  });
}

/**
 * Runs one cluster test: a fresh Cluster, the body, then (always) every node killed; on failure
 * the nodes' log tails go to the test's diagnostics (and KEEPWORK_KEEP_TMP=1 keeps the folder).
 */
export async function withCluster(t: Diagnostics, name: string, body: (c: Cluster) => Promise<void>, bucket?: string): Promise<void> {
  const c = Cluster.create(name, bucket);
  let failed = true;
  try {
    await body(c);
    failed = false;
  } finally {
    await c.dispose(t, failed);
  }
}
