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
  /** `key` without the base its folder's entries share: what a run orders by (shorter to compare). */
  rel: string;
  folder: boolean;
  /** The name in `dir` (its path is made only for entries walked). */
  name: string;
  dir: string;
}

/** Entry order: by key; an object before a continuation folder of the same text (whose keys are longer). */
const byEntry = (a: Entry, b: Entry) => compareKeys(a.key, b.key) || Number(a.folder) - Number(b.folder);
/** The same order within one folder, whose entries' keys all start with the folder's base. */
const byRel = (a: Entry, b: Entry) => compareKeys(a.rel, b.rel) || Number(a.folder) - Number(b.folder);

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
      else this.#rest = this.#rest.filter((e) => byRel(e, last) > 0); // entries past the batch taken
    }
    this.#batch = this.#rest.length <= 2 * want ? (this.#rest = this.#rest.sort(byRel)) : smallest(this.#rest, want);
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

  /**
   * A folder's wanted entries. Every key in it starts with `base`; when `after` and `prefix` do
   * too (or the prefix is a prefix of the base), the tests below compare the parts past the base —
   * a sweep's page of one due time holds keys sharing ~40 characters — and keys are made only for
   * the entries kept.
   */
  #entries(dirents: Dirent[], dir: string, base: string): Entry[] {
    const out: Entry[] = [];
    // After below the base (and not a prefix of it): every key here is past it, as every rel is past ''.
    const below = compareKeys(this.after, base) < 0;
    const after = this.after.startsWith(base) ? this.after.slice(base.length) : below ? '' : undefined;
    const prefix = base.startsWith(this.prefix) ? '' : this.prefix.startsWith(base) ? this.prefix.slice(base.length) : undefined;
    // Seen from the base when both allow it; else whole keys (`lead` is put back in front of each name).
    const scope: Scope =
      after !== undefined && prefix !== undefined ? { lead: '', after, prefix } : { lead: base, after: this.after, prefix: this.prefix };
    for (const dirent of dirents) {
      const name = dirent.name;
      if (name.startsWith(INTERNAL_MARK)) continue;
      if (name.endsWith(OBJECT_MARK)) {
        if (dirent.isFile()) this.#addObject(out, base, name, dir, scope);
      } else if (!dirent.isDirectory()) continue;
      else if (name.endsWith(CONTINUED_MARK)) this.#addFolder(out, base, name.slice(0, -1), '', name, dir, scope);
      else this.#addFolder(out, base, name, '/', name, dir, scope);
    }
    return out;
  }

  #addObject(out: Entry[], base: string, name: string, dir: string, scope: Scope): void {
    const rel = decodeSegment(name.slice(0, -1));
    if (rel === null) return;
    const seen = scope.lead + rel;
    const wanted = seen.startsWith(scope.prefix) && compareKeys(seen, scope.after) > 0;
    if (wanted) out.push({ key: base + rel, rel, folder: false, name, dir });
  }

  /** A folder (`end` "/") or a continuation folder (`end` ""): every key in it extends base + text + end. */
  #addFolder(out: Entry[], base: string, encoded: string, end: string, name: string, dir: string, scope: Scope): void {
    const text = decodeSegment(encoded);
    if (text === null) return;
    const rel = text + end;
    if (mayHold(scope.lead + rel, scope.prefix, scope.after)) out.push({ key: base + rel, rel, folder: true, name, dir });
  }
}

/** `prefix` and `after` as one folder's names are tested against them: `lead` + name. */
interface Scope {
  lead: string;
  prefix: string;
  after: string;
}

/** Whether some key longer than `start` and starting with it can be wanted (all three seen from the same base). */
function mayHold(start: string, prefix: string, after: string): boolean {
  const matches = start.startsWith(prefix) || prefix.startsWith(start);
  const allBelow = compareKeys(start, after) < 0 && !after.startsWith(start);
  return matches && !allBelow;
}

/** The `k` smallest entries of one folder, in order: a bounded max-heap over one pass. */
function smallest(entries: Entry[], k: number): Entry[] {
  const heap: Entry[] = [];
  const up = (i: number) => {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (byRel(heap[i]!, heap[parent]!) <= 0) return;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  };
  const down = (i: number) => {
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let top = i;
      if (l < heap.length && byRel(heap[l]!, heap[top]!) > 0) top = l;
      if (r < heap.length && byRel(heap[r]!, heap[top]!) > 0) top = r;
      if (top === i) return;
      [heap[i], heap[top]] = [heap[top]!, heap[i]!];
      i = top;
    }
  };
  for (const e of entries) {
    if (heap.length < k) (heap.push(e), up(heap.length - 1));
    else if (byRel(e, heap[0]!) < 0) ((heap[0] = e), down(0));
  }
  return heap.sort(byRel);
}
