/**
 * The node processes a bench starts on this machine: each `keepwork start` of the same CLI that
 * runs the bench (the same Node.js, its flags, so a run under tsx starts nodes under tsx), on a
 * free port (`--port 0`), with its own data dir, serving the bench's class only.
 *
 *   LocalNodes.start(id, bucket, set) ─▶ LocalNode { url, pid }   (once it prints "serving http://…")
 *   node.kill9()                      ─▶ SIGKILL, resolves once it exited
 *   nodes.stopAll()                   ─▶ SIGKILL every one still running (also on this process's exit)
 *
 * Every child also dies with this process, even when it is killed -9 and can stop nothing: a
 * preloaded module (a data: URL, so no file has to ship) kills the node once it is re-parented.
 * Each node's output goes to `<dataDir>.log`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Where the command and the bench's class are: `.ts` when this runs from source. Each path goes up
 * a folder first, so it holds from dist/chunks/ too (scripts/build.mjs).
 */
const EXT = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
const CLI_PATH = fileURLToPath(new URL('../cli/cli' + EXT, import.meta.url));
export const BENCH_CLASS_MODULE = fileURLToPath(new URL('../bench/bench-actor' + EXT, import.meta.url));
export const BENCH_CLASS = 'BenchAlarmed';

const DIE_WITH_PARENT =
  'data:text/javascript,' +
  encodeURIComponent(
    "import{isMainThread}from'node:worker_threads';if(isMainThread){const p=process.ppid;setInterval(()=>{if(process.ppid!==p)process.kill(process.pid,'SIGKILL')},500).unref()}",
  );

/** How long a node may take to serve (loading classes, joining the bucket). */
const START_BOUND_MS = 60_000;

export interface LocalNode {
  readonly nodeId: string;
  readonly url: string;
  readonly pid: number;
  readonly logPath: string;
  readonly exited: Promise<void>;
  running(): boolean;
  /** SIGKILL; resolves once the process is gone. */
  kill9(): Promise<void>;
}

export class LocalNodes {
  private readonly children = new Set<ChildProcess>();
  private readonly onExit = () => this.killSync();

  constructor(private readonly root: string) {
    process.once('exit', this.onExit);
  }

  /** Starts `keepwork start` for `nodeId` on `bucket`; resolves once it serves. */
  async start(nodeId: string, bucket: string, set: Readonly<Record<string, number | boolean>>): Promise<LocalNode> {
    const dataDir = join(this.root, nodeId);
    const logPath = `${dataDir}.log`;
    const args = [
      ...process.execArgv,
      '--import',
      DIE_WITH_PARENT,
      CLI_PATH,
      'start',
      '--data',
      dataDir,
      '--bucket',
      bucket,
      '--port',
      '0',
      '--node-id',
      nodeId,
      '--class',
      `${BENCH_CLASS}=${BENCH_CLASS_MODULE}`,
      ...Object.entries(set).flatMap(([k, v]) => ['--set', `${k}=${v}`]),
    ];
    const child = spawn(process.execPath, args, {
      env: { ...process.env, KEEPWORK_LOG_LEVEL: process.env.KEEPWORK_LOG_LEVEL ?? 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.children.add(child);
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    void exited.then(() => this.children.delete(child));
    const log = createWriteStream(logPath);
    child.stdout!.pipe(log);
    const { url, before } = await servingUrl(child, nodeId, logPath);
    log.write(before);
    child.stderr!.pipe(log);
    const running = () => child.exitCode === null && child.signalCode === null;
    return {
      nodeId,
      url,
      pid: child.pid!,
      logPath,
      exited,
      running,
      kill9: async () => {
        if (running()) child.kill('SIGKILL');
        await exited;
      },
    };
  }

  /** SIGKILLs every node still running and waits until each has exited. */
  async stopAll(): Promise<void> {
    const left = [...this.children];
    this.killSync();
    await Promise.all(left.map((c) => (c.exitCode === null && c.signalCode === null ? new Promise((r) => c.once('exit', r)) : undefined)));
    process.off('exit', this.onExit);
  }

  private killSync(): void {
    for (const c of this.children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  }
}

/** The URL the node prints once serving (`(epoch N) serving http://…`) and its stderr so far; rejects if it exits or takes too long. */
function servingUrl(child: ChildProcess, nodeId: string, logPath: string): Promise<{ url: string; before: string }> {
  return new Promise((resolve, reject) => {
    let err = '';
    const fail = (why: string) => {
      clearTimeout(timer);
      reject(new Error(`bench node ${nodeId} ${why}; its output:\n${err.trim().split('\n').slice(-15).join('\n')}\n(log: ${logPath})`));
    };
    const timer = setTimeout(() => fail(`did not serve within ${START_BOUND_MS} ms`), START_BOUND_MS);
    const onData = (d: Buffer) => {
      err += d.toString();
      const m = /\) serving (https?:\/\/\S+)/.exec(err);
      if (!m) return;
      clearTimeout(timer);
      child.stderr!.off('data', onData);
      child.off('exit', onExit);
      resolve({ url: m[1]!, before: err });
    };
    const onExit = (code: number | null, signal: string | null) => fail(`exited (${code ?? signal}) before serving`);
    child.stderr!.on('data', onData);
    child.once('exit', onExit);
  });
}
