/**
 * One node process of a Cluster: its id, data dir, log and child process; the URL and epoch it
 * printed once serving; signals (`kill`, `killAndWait`, bounded); and its log read back.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { isRunning } from './processes.js';

const EXIT_BOUND_MS = 15_000;

/** A line the node logged (pino JSON). */
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
    return isRunning(this.child);
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
