/**
 * A child process's stdout read line by line: `line(prefix)` waits for the next line that is
 * `prefix` or starts with `prefix + ' '`, consumes it and everything before it, and fails once the
 * child has exited without writing it (with the child's stderr in the message).
 */
import { once } from 'node:events';
import type { ChildProcess } from 'node:child_process';

export interface ChildLines {
  line(prefix: string): Promise<string>;
  stderr(): string;
}

export function childLines(child: ChildProcess): ChildLines {
  let out = '';
  let err = '';
  const waiters: (() => void)[] = [];
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
    waiters.splice(0).forEach((w) => w());
  });
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = once(child, 'exit');
  async function line(prefix: string): Promise<string> {
    for (;;) {
      const found = out.split('\n').find((l) => l.startsWith(prefix + ' ') || l === prefix);
      if (found !== undefined) {
        out = out.slice(out.indexOf(found) + found.length + 1);
        return found;
      }
      const more = new Promise<void>((r) => waiters.push(r));
      const ended = await Promise.race([more.then(() => false), exited.then(() => true)]);
      if (ended && !out.includes(prefix)) throw new Error(`the node exited before "${prefix}": ${err}`);
    }
  }
  return { line, stderr: () => err };
}
