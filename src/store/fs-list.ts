/**
 * FsStore's listing: the walk that yields keys in byte order from the folder tree of fs-paths.ts.
 *
 * A folder's names stand for ranges of keys: an object file its one key, a folder every key
 * under `<segment>/`, a continuation folder (`piece+`, a long or due-time segment cut into
 * pieces) every key that extends `<piece>` within the same segment. Continuation keys interleave
 * with siblings that share the piece (a folder `piece/`, a longer unsplit segment), so the walk
 * is a lazy k-way merge: one sorted run per folder read, each run's next name standing for the
 * smallest key it can yield; the smallest head is taken, an object's key is returned, a folder
 * is read and its run joins the merge. A folder is read only when the smallest key it can hold
 * is the smallest still wanted, so a page reads the folders its keys are in — not the folders
 * beside them.
 *
 * It starts at the folder of the prefix's complete segments (the caller's `walk(dir, base)`),
 * skips names that cannot hold a wanted key, and stops at `limit` keys (the store asks for
 * maxKeys + 1 to know whether a page is the last). Names it did not write (bad encoding, `~`
 * internal names) are ignored; a folder that vanished mid-walk (a racing delete) reads as empty.
 *
 * Cost (issue 15): each folder read is read whole (readdir has no order); of its names only the
 * wanted ones become entries, and a run orders only the `limit` smallest of those at a time (a
 * bounded heap, O(names · log limit)). With due-time segments cut into folders of at most 1,000
 * names (fs-paths.ts), a sweep's page costs about what it returns, however large the index.
 * Small folders are read synchronously (a page reads ~4 small folders per key; a threadpool round
 * trip each cost twice the CPU and, on a loaded machine, most of the time), yielding to the event
 * loop every YIELD_EVERY folders so a 1,000-key page does not hold it for long; a folder whose
 * size says it holds thousands of names is read in the threadpool (fs-io.ts `readDirentsQuick`).
 */
import type { Dirent } from 'node:fs';
import * as path from 'node:path';
import { readDirentsQuick } from './fs-io.js';
import { CONTINUED_MARK, INTERNAL_MARK, OBJECT_MARK, decodeSegment } from './fs-paths.js';
import { compareKeys } from './keys.js';

/** Folders read between two turns of the event loop. */
const YIELD_EVERY = 128;

interface Entry {
  /**
   * An object: its key. A folder: its segment + `/`. A continuation folder: the key text so far
   * (every key in it is longer). In each case the smallest key the entry can yield (or a bound
   * below it), and the base of the names inside a folder.
   */
  key: string;
  folder: boolean;
  /** The name in `dir` (its path is made only for entries walked). */
  name: string;
  dir: string;
}

/** Entry order: by key; an object before a continuation folder of the same text (whose keys are longer). */
const byEntry = (a: Entry, b: Entry) => compareKeys(a.key, b.key) || Number(a.folder) - Number(b.folder);

/** One folder's wanted entries, taken in order: the `want` smallest are ordered at a time. */
class Run {
  #rest: Entry[];
  #batch: Entry[] = [];
  #at = 0;

  constructor(entries: Entry[], want: number) {
    this.#rest = entries;
    this.#refill(want);
  }

  get head(): Entry | undefined {
    return this.#batch[this.#at];
  }

  take(want: number): Entry {
    const entry = this.#batch[this.#at++]!;
    if (this.#at === this.#batch.length) this.#refill(want);
    return entry;
  }

  #refill(want: number): void {
    const last = this.#batch[this.#batch.length - 1];
    if (last !== undefined) {
      if (this.#batch === this.#rest) this.#rest = [];
      else this.#rest = this.#rest.filter((e) => byEntry(e, last) > 0); // entries past the batch taken
    }
    this.#batch = this.#rest.length <= 2 * want ? (this.#rest = this.#rest.sort(byEntry)) : smallest(this.#rest, want);
    this.#at = 0;
  }
}

/**
 * Walks folders in key order (see the file comment). Subtrees that cannot hold a key > `after`
 * under `prefix` are skipped.
 */
export class ListWalk {
  readonly keys: string[] = [];
  /** Folders read, and their names: the walk's cost. */
  foldersRead = 0;
  namesRead = 0;

  constructor(
    readonly prefix: string,
    readonly after: string,
    readonly limit: number,
  ) {}

  async walk(dir: string, base: string): Promise<void> {
    const runs: Run[] = [];
    const join = (d: string, b: string, names: Dirent[]) => {
      this.foldersRead++;
      this.namesRead += names.length;
      const run = new Run(this.#entries(names, d, b), this.limit - this.keys.length);
      if (run.head !== undefined) runs.push(run);
    };
    const first = readDirentsQuick(dir); // a folder gone (a racing delete) reads as empty
    join(dir, base, Array.isArray(first) ? first : await first);
    while (runs.length > 0 && this.keys.length < this.limit) {
      let min = 0;
      for (let i = 1; i < runs.length; i++) if (byEntry(runs[i]!.head!, runs[min]!.head!) < 0) min = i;
      const run = runs[min]!;
      const entry = run.take(this.limit - this.keys.length);
      if (run.head === undefined) runs.splice(min, 1);
      if (!entry.folder) {
        if (this.keys.length === 0 || compareKeys(entry.key, this.keys[this.keys.length - 1]!) > 0) this.keys.push(entry.key);
        continue;
      }
      if (this.foldersRead % YIELD_EVERY === 0) await new Promise((resolve) => setImmediate(resolve));
      const sub = path.join(entry.dir, entry.name);
      const names = readDirentsQuick(sub);
      join(sub, entry.key, Array.isArray(names) ? names : await names);
    }
  }

  #entries(dirents: Dirent[], dir: string, base: string): Entry[] {
    const out: Entry[] = [];
    for (const dirent of dirents) {
      const name = dirent.name;
      if (name.startsWith(INTERNAL_MARK)) continue;
      if (name.endsWith(OBJECT_MARK)) {
        if (dirent.isFile()) this.#addObject(out, base, name, dir);
      } else if (!dirent.isDirectory()) continue;
      else if (name.endsWith(CONTINUED_MARK)) this.#addFolder(out, base, name.slice(0, -1), '', name, dir);
      else this.#addFolder(out, base, name, '/', name, dir);
    }
    return out;
  }

  #addObject(out: Entry[], base: string, name: string, dir: string): void {
    const text = decodeSegment(name.slice(0, -1));
    if (text === null) return;
    const key = base + text;
    if (key.startsWith(this.prefix) && compareKeys(key, this.after) > 0) out.push({ key, folder: false, name, dir });
  }

  /** A folder (`end` "/") or a continuation folder (`end` ""): every key in it extends base + text + end. */
  #addFolder(out: Entry[], base: string, encoded: string, end: string, name: string, dir: string): void {
    const text = decodeSegment(encoded);
    if (text !== null && this.#mayHold(base + text + end)) out.push({ key: base + text + end, folder: true, name, dir });
  }

  /** Whether some key longer than `start` and starting with it can be wanted. */
  #mayHold(start: string): boolean {
    const matches = start.startsWith(this.prefix) || this.prefix.startsWith(start);
    const allBelow = compareKeys(start, this.after) < 0 && !this.after.startsWith(start);
    return matches && !allBelow;
  }
}

/** The `k` smallest entries, in order: a bounded max-heap over one pass. */
function smallest(entries: Entry[], k: number): Entry[] {
  const heap: Entry[] = [];
  const up = (i: number) => {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (byEntry(heap[i]!, heap[parent]!) <= 0) return;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  };
  const down = (i: number) => {
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let top = i;
      if (l < heap.length && byEntry(heap[l]!, heap[top]!) > 0) top = l;
      if (r < heap.length && byEntry(heap[r]!, heap[top]!) > 0) top = r;
      if (top === i) return;
      [heap[i], heap[top]] = [heap[top]!, heap[i]!];
      i = top;
    }
  };
  for (const e of entries) {
    if (heap.length < k) (heap.push(e), up(heap.length - 1));
    else if (byEntry(e, heap[0]!) < 0) ((heap[0] = e), down(0));
  }
  return heap.sort(byEntry);
}
