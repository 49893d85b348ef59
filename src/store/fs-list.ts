/**
 * FsStore's listing: the walk that yields keys in byte order from the folder tree of fs-paths.ts.
 *
 * It walks folders depth-first in key order, starting at the folder of the prefix's complete
 * segments (the caller's `walk(dir, base)`), skips subtrees that cannot hold a wanted key, and
 * stops at `limit` keys (the store asks for maxKeys + 1 to know whether a page is the last).
 * Names it did not write (bad encoding, `~` internal names) are ignored; a folder that vanished
 * mid-walk (a racing delete) reads as empty.
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
  path: string;
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
    const entries = await this.#entries(await dirents, dir, base);
    entries.sort((a, b) => compareKeys(a.key, b.key));
    const ahead = new Map<number, Promise<Dirent[]>>();
    for (let i = 0; i < entries.length && this.keys.length < this.limit; i++) {
      const entry = entries[i]!;
      if (!entry.folder) {
        this.keys.push(entry.key);
        continue;
      }
      this.#readAhead(entries, i, ahead);
      await this.walk(entry.path, entry.key, ahead.get(i));
      ahead.delete(i);
    }
  }

  /** Starts reading the next few folders while this one is walked (readdir is the cost of a listing). */
  #readAhead(entries: Entry[], from: number, ahead: Map<number, Promise<Dirent[]>>): void {
    for (let j = from; j < entries.length && j <= from + LIST_READ_AHEAD; j++) {
      if (!entries[j]!.folder || ahead.has(j)) continue;
      const read = readDirents(entries[j]!.path);
      read.catch(() => undefined); // surfaced when awaited; ignored if the page fills first
      ahead.set(j, read);
    }
  }

  async #entries(dirents: Dirent[], dir: string, base: string): Promise<Entry[]> {
    const out: Entry[] = [];
    for (const dirent of dirents) {
      const name = dirent.name;
      if (name.startsWith(INTERNAL_MARK)) continue;
      const full = path.join(dir, name);
      if (dirent.isFile() && name.endsWith(OBJECT_MARK)) this.#addObject(out, base, name.slice(0, -1), full);
      else if (dirent.isDirectory() && name.endsWith(CONTINUED_MARK)) await this.#addContinued(out, base, name.slice(0, -1), full);
      else if (dirent.isDirectory()) this.#addFolder(out, base, name, full);
    }
    return out;
  }

  #addObject(out: Entry[], base: string, name: string, full: string): void {
    const text = decodeSegment(name);
    if (text === null) return;
    const key = base + text;
    if (key.startsWith(this.prefix) && compareKeys(key, this.after) > 0) out.push({ key, folder: false, path: full });
  }

  #addFolder(out: Entry[], base: string, name: string, full: string): void {
    const text = decodeSegment(name);
    if (text !== null && this.#mayHold(base + text + '/')) out.push({ key: base + text + '/', folder: true, path: full });
  }

  async #addContinued(out: Entry[], base: string, name: string, full: string): Promise<void> {
    const text = decodeSegment(name);
    if (text !== null && this.#mayHold(base + text)) out.push(...(await this.#entries(await readDirents(full), full, base + text)));
  }

  /** Whether some key longer than `start` and starting with it can be wanted. */
  #mayHold(start: string): boolean {
    const matches = start.startsWith(this.prefix) || this.prefix.startsWith(start);
    const allBelow = compareKeys(start, this.after) < 0 && !this.after.startsWith(start);
    return matches && !allBelow;
  }
}
