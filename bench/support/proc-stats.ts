/**
 * CPU time and peak memory of a process (all its threads) from Linux's /proc:
 *   cpuMs(pid)   utime + stime of /proc/<pid>/stat, in ms (clock ticks are 1/100 s on Linux);
 *                cpuMs(pid, pid) the same of its main thread alone
 *   peakRssMb(pid)  VmHWM of /proc/<pid>/status: the resident set's high-water mark, in MB
 * Both return NaN when the process is gone or /proc is missing (not Linux).
 */
import { readdirSync, readFileSync } from 'node:fs';

const TICK_MS = 10;

export function cpuMs(pid: number, thread?: number): number {
  try {
    const stat = readFileSync(thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // After "pid (comm) ": state is field 3, utime 14, stime 15 → indexes 11 and 12 here.
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return NaN;
  }
}

export function peakRssMb(pid: number): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : NaN;
  } catch {
    return NaN;
  }
}

export type ThreadCpu = Map<string, { name: string; ms: number }>;

/** CPU ms (user + system) of each thread of this process so far, by thread id, with its name. */
export function threadCpu(): ThreadCpu {
  const out: ThreadCpu = new Map();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(tid, { name, ms: (Number(fields[11]) + Number(fields[12])) * TICK_MS });
    } catch {
      // the thread ended
    }
  }
  return out;
}

/**
 * CPU ms of this process's threads since `before`, grouped: "main", "libuv pool" (every pool
 * thread together), and each other thread by name and id; first a row of all threads together.
 */
export function cpuSince(before: ThreadCpu): { thread: string; ms: number }[] {
  const main = String(process.pid);
  const byName = new Map<string, number>();
  for (const [tid, t] of threadCpu()) {
    const ms = t.ms - (before.get(tid)?.ms ?? 0);
    if (ms <= 0) continue;
    const label = tid === main ? 'main' : t.name.startsWith('libuv') ? 'libuv pool' : `${t.name} ${tid}`;
    byName.set(label, (byName.get(label) ?? 0) + ms);
  }
  const rows = [...byName].map(([thread, ms]) => ({ thread, ms })).sort((a, b) => b.ms - a.ms);
  return [{ thread: 'all threads', ms: rows.reduce((sum, r) => sum + r.ms, 0) }, ...rows];
}
