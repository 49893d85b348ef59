/**
 * The node processes this module starts: spawned from the repository's root with their output
 * appended, line by line, to a log file (stdout as it comes, stderr lines tagged `[stderr] `),
 * and remembered until they exit. `killLeftovers()` kills every one still running; the process
 * runs it on exit, also when node:test stops a file with SIGTERM after a timeout (support/exit.ts),
 * and each child also kills itself once this process is gone (support/die-with-parent.mjs),
 * should it die by SIGKILL.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { onExit } from '../exit.js';
import { REPO } from '../repo.js';

const children = new Set<ChildProcess>();

export const isRunning = (c: ChildProcess) => c.exitCode === null && c.signalCode === null;

/** Kills (SIGCONT first, for a stopped one, then SIGKILL) every child still running; how many were. */
export function killLeftovers(): number {
  let n = 0;
  for (const c of children) {
    if (isRunning(c)) {
      n++;
      c.kill('SIGCONT');
      c.kill('SIGKILL');
    }
    children.delete(c);
  }
  return n;
}
onExit(() => void killLeftovers());

/** Starts `node <args>` (under `launcher`, e.g. `ip netns exec ns1`) with its output going to `logPath`. */
export function spawnLogged(
  args: string[],
  logPath: string,
  launcher: readonly string[] = [],
  env: Readonly<Record<string, string>> = {},
): ChildProcess {
  const [file, ...pre] = [...launcher, process.execPath];
  const child = spawn(file!, [...pre, ...args], {
    cwd: REPO,
    env: { ...process.env, KEEPWORK_LOG_LEVEL: 'info', ...env },
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

export interface ProcessOutcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * How a process expected to end by itself ended, and what it printed; killed after `boundMs`
 * (an error naming `what`), or at once should it start serving HTTP after all.
 */
export async function outcomeOf(child: ChildProcess, what: string, boundMs: number): Promise<ProcessOutcome> {
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
        reject(new Error(`${what} did not exit within ${boundMs} ms; stderr: ${stderr}`));
      }, boundMs);
      child.once('exit', (c, s) => resolve({ code: c, signal: s }));
    });
    return { code, signal, stdout, stderr };
  } finally {
    clearTimeout(timer);
  }
}
