/**
 * CPU time and peak memory of a process (all its threads) from Linux's /proc:
 *   cpuMs(pid)   utime + stime of /proc/<pid>/stat, in ms (clock ticks are 1/100 s on Linux)
 *   peakRssMb(pid)  VmHWM of /proc/<pid>/status: the resident set's high-water mark, in MB
 * Both return NaN when the process is gone or /proc is missing (not Linux).
 */
import { readFileSync } from 'node:fs';

const TICK_MS = 10;

export function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
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
