/**
 * FsStore's listing: the walk that yields keys in byte order from the folder tree of fs/paths.ts.
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
 * Cost: each folder read is read whole (readdir has no order); of its names only the wanted ones
 * become entries, and a run orders only the `limit` smallest of those at a time (a bounded heap,
 * O(names · log limit)). With due-time segments cut into folders of at most 1,000 names
 * (fs/paths.ts), a sweep's page costs about what it returns, however large the index. Small folders
 * are read synchronously (a page reads ~4 small folders per key, and a threadpool round trip costs
 * more CPU than reading one and, on a loaded machine, waits longer), yielding to the event loop
 * every YIELD_EVERY folders so a 1,000-key page does not hold it for long.
 *
 * A folder whose size says it holds thousands of names (many actors due at the same millisecond:
 * their entries share one folder per class) is streamed (`opendir`, LARGE_CHUNK names per system
 * call, a turn of the event loop after each chunk) and reduced as it goes to the `want` smallest
 * wanted entries: the walk keeps O(limit) of it, and no more than a chunk of names is alive at
 * once. Keeping every name and entry of such a folder alive across the page's awaits would let V8
 * promote them and grow the heap of a node draining the backlog; reading it whole in the threadpool
 * (`readdir`) builds every name at once and costs more CPU than the stream (docs/benchmarks.md). If
 * the page needs more of that folder than was kept (the entries taken were empty folders), it is
 * read again above the last one taken, keeping twice as many each time.
 */
import { opendirSync, readdirSync, statSync, type Dirent } from 'node:fs';
import * as path from 'node:path';
import { isMissing } from './io.js';
import { CONTINUED_MARK, INTERNAL_MARK, OBJECT_MARK, decodeSegment } from './paths.js';
import { compareKeys } from '../keys.js';

/** Folders read between two turns of the event loop. */
const YIELD_EVERY = 128;
/** Names of a large folder read per system call, and between two turns of the event loop. */
const LARGE_CHUNK = 1024;
/** The default of FsStore's `largeFolderBytes`: st_size is about a folder's names' bytes on ext4, xfs and tmpfs. */
export const LARGE_FOLDER_BYTES = 64 * 1024;

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

/**
 * Calls `each` for every name in `dir`, LARGE_CHUNK at a time with a turn of the event loop
 * between chunks; returns how many. Throws as opendir does (a missing folder: ENOENT).
 */
async function streamFolder(dir: string, each: (d: Dirent) => void): Promise<number> {
  const handle = opendirSync(dir, { bufferSize: LARGE_CHUNK });
  let n = 0;
  try {
    for (let d = handle.readSync(); d !== null; d = handle.readSync()) {
      each(d);
      if (++n % LARGE_CHUNK === 0) await new Promise((resolve) => setImmediate(resolve));
    }
  } finally {
    handle.closeSync();
  }
  return n;
}

/** Entry order: by key; an object before a continuation folder of the same text (whose keys are longer). */
const byEntry = (a: Entry, b: Entry) => compareKeys(a.key, b.key) || Number(a.folder) - Number(b.folder);
/** The same order within one folder, whose entries' keys all start with the folder's base. */
const byRel = (a: Entry, b: Entry) => compareKeys(a.rel, b.rel) || Number(a.folder) - Number(b.folder);

/** A large folder whose run kept only part of its wanted entries: where to read it again. */
interface Rest {
  dir: string;
  base: string;
  kept: number;
}

/** One folder's wanted entries, taken in order: the `want` smallest are ordered at a time. */
class Run {
  #rest: Entry[];
  #batch: Entry[] = [];
  #at = 0;

  /** `more`: the folder has wanted entries past these (a large folder, see the file comment). */
  constructor(
    entries: Entry[],
    want: number,
    readonly more?: Rest,
  ) {
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
    this.#batch = this.#rest.length <= 2 * want ? (this.#rest = this.#rest.sort(byRel)) : smallestOf(this.#rest, want);
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
    /** Folders larger than this are read as large ones (file comment); FsStore's `largeFolderBytes`. */
    readonly largeFolderBytes = LARGE_FOLDER_BYTES,
  ) {}

  /** The most entries held for one folder at a time (a large folder: at most about `limit`). */
  heldMax = 0;

  async walk(dir: string, base: string): Promise<void> {
    const runs: Run[] = [];
    const read = async (d: string, b: string, want: number, above?: Entry, kept = 0) => {
      const run = await this.#read(d, b, want, above, kept);
      if (run?.head !== undefined) runs.push(run);
    };
    await read(dir, base, this.limit); // a folder gone (a racing delete) reads as empty
    while (runs.length > 0 && this.keys.length < this.limit) {
      let min = 0;
      for (let i = 1; i < runs.length; i++) if (byEntry(runs[i]!.head!, runs[min]!.head!) < 0) min = i;
      const run = runs[min]!;
      const entry = run.take(this.limit - this.keys.length);
      const spent = run.head === undefined;
      if (spent) runs.splice(min, 1);
      if (!entry.folder) {
        if (this.keys.length === 0 || compareKeys(entry.key, this.keys[this.keys.length - 1]!) > 0) this.keys.push(entry.key);
      } else {
        if (this.foldersRead % YIELD_EVERY === 0) await new Promise((resolve) => setImmediate(resolve));
        await read(path.join(entry.dir, entry.name), entry.key, this.limit - this.keys.length);
      }
      const more = spent ? run.more : undefined;
      if (more && this.keys.length < this.limit) await read(more.dir, more.base, this.limit - this.keys.length, entry, 2 * more.kept);
    }
  }

  /**
   * One folder's run: every wanted entry (above `above`, when given) of a small folder; of a
   * large one only the smallest — twice what the page wants, or `kept` if more. Twice: some
   * entries yield no key (the folder of the key the page starts after; the last folder entry is
   * taken before the key inside it), and a run spent before the page is full is read again.
   * Undefined when the folder is not there.
   */
  async #read(dir: string, base: string, want: number, above?: Entry, kept = 0): Promise<Run | undefined> {
    try {
      const large = statSync(dir).size > this.largeFolderBytes;
      const scope = this.#scope(base);
      const best = large ? new Smallest(Math.max(2 * want, kept)) : undefined;
      const entries: Entry[] = [];
      const add = (dirent: Dirent) => {
        const e = this.#entry(dirent, dir, base, scope);
        if (!e || (above && byRel(e, above) <= 0)) return;
        if (best) best.add(e);
        else entries.push(e);
      };
      this.foldersRead++;
      if (best) this.namesRead += await streamFolder(dir, add);
      else {
        const dirents = readdirSync(dir, { withFileTypes: true });
        this.namesRead += dirents.length;
        dirents.forEach(add);
      }
      const held = best ? best.sorted() : entries;
      this.heldMax = Math.max(this.heldMax, held.length);
      return new Run(held, want, best?.dropped ? { dir, base, kept: best.k } : undefined);
    } catch (e) {
      if (isMissing(e)) return undefined;
      throw e;
    }
  }

  /**
   * How a folder's names are tested. Every key in it starts with `base`; when `after` and `prefix`
   * do too (or the prefix is a prefix of the base), the tests compare the parts past the base —
   * a sweep's page of one due time holds keys sharing ~40 characters — and keys are made only for
   * the entries kept.
   */
  #scope(base: string): Scope {
    // After below the base (and not a prefix of it): every key here is past it, as every rel is past ''.
    const below = compareKeys(this.after, base) < 0;
    const after = this.after.startsWith(base) ? this.after.slice(base.length) : below ? '' : undefined;
    const prefix = base.startsWith(this.prefix) ? '' : this.prefix.startsWith(base) ? this.prefix.slice(base.length) : undefined;
    // Seen from the base when both allow it; else whole keys (`lead` is put back in front of each name).
    return after !== undefined && prefix !== undefined
      ? { lead: '', after, prefix }
      : { lead: base, after: this.after, prefix: this.prefix };
  }

  /** The entry `dirent` stands for, if it is wanted. */
  #entry(dirent: Dirent, dir: string, base: string, scope: Scope): Entry | undefined {
    const name = dirent.name;
    if (name.startsWith(INTERNAL_MARK)) return undefined;
    if (name.endsWith(OBJECT_MARK)) return dirent.isFile() ? this.#object(base, name, dir, scope) : undefined;
    if (!dirent.isDirectory()) return undefined;
    if (name.endsWith(CONTINUED_MARK)) return this.#folder(base, name.slice(0, -1), '', name, dir, scope);
    return this.#folder(base, name, '/', name, dir, scope);
  }

  #object(base: string, name: string, dir: string, scope: Scope): Entry | undefined {
    const rel = decodeSegment(name.slice(0, -1));
    if (rel === null) return undefined;
    const seen = scope.lead + rel;
    const wanted = seen.startsWith(scope.prefix) && compareKeys(seen, scope.after) > 0;
    return wanted ? { key: base + rel, rel, folder: false, name, dir } : undefined;
  }

  /** A folder (`end` "/") or a continuation folder (`end` ""): every key in it extends base + text + end. */
  #folder(base: string, encoded: string, end: string, name: string, dir: string, scope: Scope): Entry | undefined {
    const text = decodeSegment(encoded);
    if (text === null) return undefined;
    const rel = text + end;
    return mayHold(scope.lead + rel, scope.prefix, scope.after) ? { key: base + rel, rel, folder: true, name, dir } : undefined;
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

/**
 * The `k` smallest entries added, in order; `dropped` says whether any were left out. Entries
 * gather unsorted up to 2k, then are sorted and cut to k, the k-th becoming the bound that later
 * entries must be below. V8's sort finds runs, so names that come in key order or in reverse (a
 * folder on tmpfs lists its newest first) cost about one comparison each; random order
 * O(log k) each.
 */
class Smallest {
  #kept: Entry[] = [];
  #bound: Entry | undefined;
  dropped = false;

  constructor(readonly k: number) {}

  get size(): number {
    return this.#kept.length;
  }

  add(e: Entry): void {
    if (this.#bound !== undefined && byRel(e, this.#bound) >= 0) {
      this.dropped = true;
      return;
    }
    this.#kept.push(e);
    if (this.#kept.length >= 2 * this.k) this.#cut();
  }

  sorted(): Entry[] {
    this.#cut();
    return this.#kept;
  }

  #cut(): void {
    this.#kept.sort(byRel);
    if (this.#kept.length <= this.k) return;
    this.#kept.length = this.k;
    this.#bound = this.#kept[this.k - 1];
    this.dropped = true;
  }
}

/** The `k` smallest of one folder's entries, in order. */
function smallestOf(entries: Entry[], k: number): Entry[] {
  const best = new Smallest(k);
  for (const e of entries) best.add(e);
  return best.sorted();
}
