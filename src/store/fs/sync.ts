/**
 * Folder fsyncs shared by the writes waiting for the same folder at once (group commit).
 *
 * A write's name is durable once an fsync of its folder has *started* after the rename, link or
 * unlink that made it. Writes of many actors land in one folder (every hold of a class, the chain
 * folders of a class, an index folder): an fsync of that folder per write would cost one round
 * trip to another thread and one disk flush each. Instead a folder has at most one fsync running and one
 * waiting to start:
 *
 *   sync(dir) ─▶ one waiting to start?  join it (it starts after the caller's change)
 *             └▶ none                   queue one behind the running one (which may have started
 *                                       before the caller's change, so it does not count)
 *
 * Everyone who joined an fsync gets its outcome, so a failed fsync fails each of their writes
 * (AmbiguousWrite in fs/write.ts), never only the first.
 */
import { fsyncPath } from './io.js';

interface Folder {
  /** An fsync queued behind the running one, not started yet: callers join it. */
  waiting: Promise<void> | null;
  /** Settles when the last fsync queued for the folder has finished. */
  tail: Promise<void>;
}

const settled = (): void => undefined;

export class FolderSyncs {
  readonly #folders = new Map<string, Folder>();

  /** `fsyncDir`: a test seam (counts and orders the fsyncs); fsync(2) of the folder by default. */
  constructor(private readonly fsyncDir: (dir: string) => Promise<void> = fsyncPath) {}

  /** Resolves once an fsync of `dir` that started after this call has completed. */
  sync(dir: string): Promise<void> {
    let folder = this.#folders.get(dir);
    if (folder?.waiting) return folder.waiting;
    if (!folder) {
      folder = { waiting: null, tail: Promise.resolve() };
      this.#folders.set(dir, folder);
    }
    const f = folder;
    const run = f.tail.then(() => {
      f.waiting = null; // started: later callers queue the next one
      return this.fsyncDir(dir);
    });
    f.waiting = run;
    const tail = run.then(settled, settled);
    f.tail = tail;
    void tail.then(() => {
      if (f.tail === tail) this.#folders.delete(dir); // nothing queued after it: forget the folder
    });
    return run;
  }

  /** Folders with an fsync running or waiting (bounded by the writes in flight). */
  get size(): number {
    return this.#folders.size;
  }
}
