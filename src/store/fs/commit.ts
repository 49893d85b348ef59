/**
 * Group commit of FsStore's puts: the puts waiting when a flush ends are made durable together.
 *
 *   put ─▶ temp file written (fs/write.ts), queued ─▶ flush of the batch, one at a time:
 *            1. fsync every temp file at once (on the node's fsync pool, the store's fsync
 *               thread, or libuv's pool: fs/io.ts; the disk's journal commits them together)
 *            2. install each: link or, under one acquisition of the host lock, rename
 *            3. fsync each distinct folder the batch changed, once (fs/sync.ts)
 *            4. answer every put of the batch
 *
 * A flush starts as soon as the queue is not empty and no flush runs: a lone put waits for nothing
 * (no timer); puts arriving in the same turn of the event loop share its batch (the flush starts
 * on a microtask). A batch takes at most `putBatchObjectsMax` puts and `putBatchBytesMax` bytes of
 * bodies (one put, however large, always fits).
 *
 * The promises of the folder bucket hold per put as they did one at a time: a name appears only
 * by a link or rename of a complete file whose fsync has completed (step 2 after step 1), and a
 * put is answered only once an fsync of its folder that started after its link or rename has
 * completed (step 3 before step 4). A put's failure is its own: a failed fsync of its temp file, a
 * condition that fails, or its folder's fsync failing (AmbiguousWrite) answers that put only; its
 * batch-mates go on. Without `fsync` (tmpfs, or turned off) steps 1 and 3 are skipped.
 */
import { closeSync } from 'node:fs';
import type { FsDurability } from './io.js';
import { unlinkQuiet } from './io.js';
import type { FolderSyncs } from './sync.js';
import { folderSyncFailed, foldersToSync, type Install, type Installed, type Outcome, type TempFile } from './write.js';

/** One put waiting for its flush. */
export interface PendingPut extends Install {
  fd: number;
  bytes: number;
}

interface Waiter {
  put: PendingPut;
  resolve: () => void;
  reject: (e: unknown) => void;
}

export interface PutCommitsOptions {
  root: string;
  fsync: boolean;
  putBatchObjectsMax: number;
  putBatchBytesMax: number;
  durability: FsDurability;
  syncs: FolderSyncs;
  /** Installs a batch's durable temp files (fs/write.ts `installAll`, with the store's lock and config). */
  install: (installs: readonly Install[]) => Promise<Outcome<Installed>[]>;
}

export class PutCommits {
  readonly #queue: Waiter[] = [];
  #flushing = false;

  constructor(private readonly o: PutCommitsOptions) {}

  /**
   * Resolves once the put's object is in place and durable; rejects with its own failure (raw I/O
   * errors, PreconditionFailed, AmbiguousWrite). The temp file is closed and removed either way.
   */
  commit(temp: TempFile, install: Omit<Install, 'temp'>, bytes: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ put: { ...install, temp: temp.file, fd: temp.fd, bytes }, resolve, reject });
      if (this.#flushing) return;
      this.#flushing = true;
      queueMicrotask(() => void this.#drain());
    });
  }

  /** Puts waiting for a flush (bounded by the puts in flight, fs/file-gate.ts). */
  get waiting(): number {
    return this.#queue.length;
  }

  async #drain(): Promise<void> {
    try {
      while (this.#queue.length > 0) await this.#flush(this.#take());
    } finally {
      this.#flushing = false;
    }
  }

  /** The next batch: puts in arrival order, up to the bounds; the first one always. */
  #take(): Waiter[] {
    let bytes = 0;
    let n = 0;
    for (const w of this.#queue) {
      if (n === this.o.putBatchObjectsMax || (n > 0 && bytes + w.put.bytes > this.o.putBatchBytesMax)) break;
      bytes += w.put.bytes;
      n++;
    }
    return this.#queue.splice(0, n);
  }

  async #flush(batch: Waiter[]): Promise<void> {
    const answered = new Set<Waiter>();
    const fail = (w: Waiter, e: unknown) => {
      answered.add(w);
      w.reject(e);
    };
    try {
      const durable = await this.#syncBodies(batch, fail);
      const outcomes = await this.o.install(durable.map((w) => w.put));
      const placed: { w: Waiter; dirs: string[] }[] = [];
      durable.forEach((w, i) => {
        const outcome = outcomes[i]!;
        if (!outcome.ok || !outcome.value.renamed) unlinkQuiet(w.put.temp); // a link left the temp name behind
        if (!outcome.ok) fail(w, outcome.error);
        else placed.push({ w, dirs: this.o.fsync ? foldersToSync(this.o.root, w.put.target, outcome.value.createdFrom) : [] });
      });
      const synced = await this.#syncFolders(placed.flatMap((p) => p.dirs));
      for (const { w, dirs } of placed) {
        const failed = dirs.map((d) => synced.get(d)).find((r) => r !== undefined && !r.ok);
        if (failed && !failed.ok) fail(w, folderSyncFailed(w.put.key, failed.error));
        else {
          answered.add(w);
          w.resolve();
        }
      }
    } catch (e) {
      // Not expected (each step settles per put): answer whoever is still waiting rather than hang.
      // Their temp names are their own: removing one a link or rename has used does no harm.
      for (const w of batch) {
        if (answered.has(w)) continue;
        unlinkQuiet(w.put.temp);
        fail(w, e);
      }
    }
  }

  /** Step 1: fsyncs every temp file at once and closes it; a put whose fsync failed is answered. */
  async #syncBodies(batch: Waiter[], fail: (w: Waiter, e: unknown) => void): Promise<Waiter[]> {
    const results = await Promise.allSettled(batch.map((w) => (this.o.fsync ? this.o.durability.fsyncFile(w.put.fd) : undefined)));
    const durable: Waiter[] = [];
    batch.forEach((w, i) => {
      closeSync(w.put.fd);
      const r = results[i]!;
      if (r.status === 'fulfilled') durable.push(w);
      else {
        unlinkQuiet(w.put.temp);
        fail(w, r.reason);
      }
    });
    return durable;
  }

  /** Step 3: one fsync per distinct folder; each folder's outcome. */
  async #syncFolders(dirs: string[]): Promise<Map<string, Outcome<void>>> {
    const distinct = [...new Set(dirs)];
    const results = await Promise.allSettled(distinct.map((d) => this.o.syncs.sync(d)));
    return new Map(
      distinct.map((d, i) => {
        const r = results[i]!;
        return [d, r.status === 'fulfilled' ? { ok: true, value: undefined } : { ok: false, error: r.reason }];
      }),
    );
  }
}
