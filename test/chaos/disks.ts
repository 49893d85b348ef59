/**
 * The chaos run's small disks: one tmpfs of DISK_MB per node slot, holding that slot's data dirs,
 * so a `diskFull` fault can fill it (a file written until ENOSPC) and free it again. Mounting needs
 * root; without it `mountDisks` says why and the run skips its diskFull faults (counted, and said
 * loudly). On tmpfs fsync does nothing, and the node makes none there (src/store/fs/io.ts): the
 * fault is a write refused with ENOSPC (SQLite's SQLITE_FULL), not a failing fsync.
 *
 * The mounts live in a folder of their own (not the run's temp folder, which is removed at exit
 * before they could be unmounted): `dispose` unmounts them (lazily when a process still holds a
 * file) and removes it, also at exit.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, cpSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onExit } from '../../support/exit.js';

export const DISK_MB = 64;
const FILLER = 'filler';

export class SlotDisks {
  private disposed = false;

  private constructor(
    private readonly root: string,
    private readonly count: number,
  ) {
    onExit(() => this.dispose());
  }

  /** One tmpfs per slot, or why there cannot be (not root, mount refused). */
  static mount(count: number, seed: number): SlotDisks | { unavailable: string } {
    if (process.getuid?.() !== 0) return { unavailable: 'not root: tmpfs mounts need root' };
    const disks = new SlotDisks(mkdtempSync(join(tmpdir(), `kw-chaos-${seed}-disks-`)), count);
    try {
      for (let n = 0; n < count; n++) {
        mkdirSync(disks.dir(n));
        execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${DISK_MB}m`, 'tmpfs', disks.dir(n)], { stdio: 'pipe' });
      }
    } catch (e) {
      disks.dispose();
      return { unavailable: `mount -t tmpfs failed: ${String((e as { stderr?: Buffer }).stderr ?? e).trim()}` };
    }
    return disks;
  }

  /** Where slot n's data dirs go. */
  dir(n: number): string {
    return join(this.root, `n${n}`);
  }

  /** Fills slot n's disk to the last byte; the bytes written. */
  fill(n: number): number {
    const fd = openSync(join(this.dir(n), FILLER), 'a');
    let written = 0;
    try {
      for (const size of [1 << 20, 1 << 12, 1]) {
        const chunk = Buffer.alloc(size);
        for (;;) {
          try {
            written += writeSync(fd, chunk);
          } catch (e) {
            if ((e as NodeJS.ErrnoException).code === 'ENOSPC') break;
            throw e;
          }
        }
      }
    } finally {
      closeSync(fd);
    }
    return written;
  }

  free(n: number): void {
    rmSync(join(this.dir(n), FILLER), { force: true });
  }

  /** A copy of every slot's data dirs (a failed run's folder keeps them). */
  copyInto(dest: string): void {
    for (let n = 0; n < this.count; n++)
      cpSync(this.dir(n), join(dest, `disk-n${n}`), { recursive: true, filter: (p) => !p.endsWith(FILLER) });
  }

  /** Unmounts every disk (lazily if a process still holds a file) and removes the folder. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (let n = 0; n < this.count; n++) {
      try {
        execFileSync('umount', [this.dir(n)], { stdio: 'pipe' });
      } catch {
        try {
          execFileSync('umount', ['-l', this.dir(n)], { stdio: 'pipe' });
        } catch {
          // never mounted
        }
      }
    }
    rmSync(this.root, { recursive: true, force: true });
  }
}
