/**
 * What file system a folder is on, as a benchmark reports it: the mount's type and device from
 * /proc/self/mountinfo, and for ext4 whether it keeps a journal (jbd2 lists the journaled
 * devices), since creating and fsyncing files costs several times more with one. `unknown` off
 * Linux.
 */
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { basename } from 'node:path';

export interface Filesystem {
  /** e.g. `ext4 (journaled) on /dev/loop0 at /mnt/ext4j`, `tmpfs at /dev/shm`. */
  summary: string;
  type: string;
  journal: boolean | null;
  /** ext4's journal statistics (`/proc/fs/jbd2/<device>-8/info`: its first number counts commits), when it keeps one. */
  journalInfo?: string;
}

export function filesystemOf(path: string): Filesystem {
  let real: string;
  let lines: string[];
  try {
    real = realpathSync(path);
    lines = readFileSync('/proc/self/mountinfo', 'utf8').trim().split('\n');
  } catch {
    return { summary: 'unknown', type: 'unknown', journal: null };
  }
  // mountinfo: id parent major:minor root mountpoint options … - fstype source superoptions
  const mounts = lines.map((l) => {
    const [left, right = ''] = l.split(' - ');
    const mountPoint = left!.split(' ')[4]!.replace(/\\040/g, ' ');
    const [type = 'unknown', source = ''] = right.split(' ');
    return { mountPoint, type, source };
  });
  const inside = (m: { mountPoint: string }) => real === m.mountPoint || real.startsWith(m.mountPoint === '/' ? '/' : `${m.mountPoint}/`);
  const m = mounts.filter(inside).sort((a, b) => b.mountPoint.length - a.mountPoint.length)[0];
  if (!m) return { summary: 'unknown', type: 'unknown', journal: null };
  const journalInfo = `/proc/fs/jbd2/${basename(m.source)}-8/info`;
  const journal = m.type === 'ext4' ? existsSync(journalInfo) : null;
  const kind = journal === null ? m.type : `${m.type} (${journal ? 'journaled' : 'no journal'})`;
  const on = m.source.startsWith('/dev/') ? ` on ${m.source}` : '';
  return { summary: `${kind}${on} at ${m.mountPoint}`, type: m.type, journal, ...(journal ? { journalInfo } : {}) };
}
