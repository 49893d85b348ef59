/**
 * FsStore's listing: the walk that yields keys in byte order from the folder tree of fs-paths.ts.
 *
 * It walks folders depth-first in key order, starting at the folder of the prefix's complete
 * segments (the caller's `walk(dir, base)`), skips subtrees that cannot hold a wanted key, and
 * stops at `limit` keys (the store asks for maxKeys + 1 to know whether a page is the last).
 * Names it did not write (bad encoding, `~` internal names) are ignored; a folder that vanished
 * mid-walk (a racing delete) reads as empty.
 *
 * Cost (issue 15): a folder is read whole (readdir has no order), but of its names only the
 * wanted ones become entries, and only the `limit` smallest of those are ordered and given a
 * path (a bounded heap, O(names · log limit)), since each folder or object yields at least one
 * key. Sorting and materialising every name of a 100k-entry due-time folder for a 129-key page
 * was most of a sweep's cost on this store. The readdir itself stays: O(names in the folder).
 */
import type { Dirent } from 'node:fs';
import * as path from 'node:path';
import { readDirents } from './fs-io.js';
import { CONTINUED_MARK, INTERNAL_MARK, OBJECT_MARK, decodeSegment } from './fs-paths.js';
import { compareKeys } from './keys.js';

/** Folders read ahead of the walk (each listing holds at most this many extra readdirs). */
const LIST_READ_AHEAD = 8;

interface Entry {
  /** The full key, with a trailing `/` for a folder. */
  key: string;
  folder: boolean;
  /** The name in `dir` (its path is made only for entries walked). */
  name: string;
  dir: string;
}

/**
 * Walks folders in key order. An entry sorts by its decoded segment (object) or segment + `/`
 * (folder); every folder's keys are contiguous in byte order, so a depth-first walk in that order
 * yields keys in global byte order. Continuation folders are lifted into their parent first (their
 * keys interleave with siblings). Subtrees that cannot hold a key > `after` under `prefix` are skipped.
 */
export class ListWalk {
  readonly keys: string[] = [];

  constructor(
    readonly prefix: string,
    readonly after: string,
    readonly limit: number,
  ) {}

  async walk(dir: string, base: string, dirents: Promise<Dirent[]> = readDirents(dir)): Promise<void> {
    let rest = await this.#entries(await dirents, dir, base);
    while (rest.length > 0 && this.keys.length < this.limit) {
      const want = this.limit - this.keys.length; // each entry yields at least one key, unless it vanished
      const batch = rest.length <= 2 * want ? rest.sort(byKey) : smallest(rest, want);
      const ahead = new Map<number, Promise<Dirent[]>>();
      for (let i = 0; i < batch.length && this.keys.length < this.limit; i++) {
        const entry = batch[i]!;
        if (!entry.folder) {
          this.keys.push(entry.key);
          continue;
        }
        this.#readAhead(batch, i, ahead);
        await this.walk(path.join(entry.dir, entry.name), entry.key, ahead.get(i));
        ahead.delete(i);
      }
      if (batch === rest) return;
      const last = batch[batch.length - 1]!.key; // folders that turned out empty: the next smallest
      rest = rest.filter((e) => compareKeys(e.key, last) > 0);
    }
  }

  /** Starts reading the next few folders while this one is walked (readdir is the cost of a listing). */
  #readAhead(entries: Entry[], from: number, ahead: Map<number, Promise<Dirent[]>>): void {
    for (let j = from; j < entries.length && j <= from + LIST_READ_AHEAD; j++) {
      if (!entries[j]!.folder || ahead.has(j)) continue;
      const read = readDirents(path.join(entries[j]!.dir, entries[j]!.name));
      read.catch(() => undefined); // surfaced when awaited; ignored if the page fills first
      ahead.set(j, read);
    }
  }

  async #entries(dirents: Dirent[], dir: string, base: string): Promise<Entry[]> {
    const out: Entry[] = [];
    for (const dirent of dirents) {
      const name = dirent.name;
      if (name.startsWith(INTERNAL_MARK)) continue;
      if (name.endsWith(OBJECT_MARK)) {
        if (dirent.isFile()) this.#addObject(out, base, name, dir);
      } else if (!dirent.isDirectory()) continue;
      else if (name.endsWith(CONTINUED_MARK)) await this.#addContinued(out, base, name, dir);
      else this.#addFolder(out, base, name, dir);
    }
    return out;
  }

  #addObject(out: Entry[], base: string, name: string, dir: string): void {
    const text = decodeSegment(name.slice(0, -1));
    if (text === null) return;
    const key = base + text;
    if (key.startsWith(this.prefix) && compareKeys(key, this.after) > 0) out.push({ key, folder: false, name, dir });
  }

  #addFolder(out: Entry[], base: string, name: string, dir: string): void {
    const text = decodeSegment(name);
    if (text !== null && this.#mayHold(base + text + '/')) out.push({ key: base + text + '/', folder: true, name, dir });
  }

  async #addContinued(out: Entry[], base: string, name: string, dir: string): Promise<void> {
    const text = decodeSegment(name.slice(0, -1));
    const full = path.join(dir, name);
    if (text !== null && this.#mayHold(base + text)) out.push(...(await this.#entries(await readDirents(full), full, base + text)));
  }

  /** Whether some key longer than `start` and starting with it can be wanted. */
  #mayHold(start: string): boolean {
    const matches = start.startsWith(this.prefix) || this.prefix.startsWith(start);
    const allBelow = compareKeys(start, this.after) < 0 && !this.after.startsWith(start);
    return matches && !allBelow;
  }
}

const byKey = (a: Entry, b: Entry) => compareKeys(a.key, b.key);

/** The `k` smallest entries by key, in order: a bounded max-heap over one pass. */
function smallest(entries: Entry[], k: number): Entry[] {
  const heap: Entry[] = [];
  const up = (i: number) => {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (byKey(heap[i]!, heap[parent]!) <= 0) return;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  };
  const down = (i: number) => {
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let top = i;
      if (l < heap.length && byKey(heap[l]!, heap[top]!) > 0) top = l;
      if (r < heap.length && byKey(heap[r]!, heap[top]!) > 0) top = r;
      if (top === i) return;
      [heap[i], heap[top]] = [heap[top]!, heap[i]!];
      i = top;
    }
  };
  for (const e of entries) {
    if (heap.length < k) (heap.push(e), up(heap.length - 1));
    else if (byKey(e, heap[0]!) < 0) ((heap[0] = e), down(0));
  }
  return heap.sort(byKey);
}
