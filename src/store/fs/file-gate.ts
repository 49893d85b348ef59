/**
 * A bound on the files one FsStore has open at once. A put holds its temp file open while it is
 * fsynced off the thread, a sync holds its folder, a large folder's listing its directory stream;
 * without a bound a burst of puts (every new actor's hold, its first link) opens one file each at
 * once and the process runs out of file descriptors (main/file-budget.ts counts `max` per store,
 * that is per thread). Steps past the bound wait, first come first served; the callers' own
 * bounds (deliveries, events, sweeps) bound how many wait.
 */
export class FileGate {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly max: number) {}

  async run<T>(step: () => Promise<T>): Promise<T> {
    if (this.running >= this.max) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running++;
    try {
      return await step();
    } finally {
      const next = this.waiting.shift();
      if (next)
        next(); // the slot passes on
      else this.running--;
    }
  }
}
