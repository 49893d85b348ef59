/**
 * The fleet model's alarm index: K entries of one tenant, kept as numbers (due time, actor
 * number, shard folder), never as K key strings — a LIST builds the keys of its page only. Ten
 * million entries cost ~25 bytes each (typed arrays) instead of a key string and an object each.
 *
 *   folders   one per shard folder in use, and the unsharded layout last (its keys sort after
 *             every sharded key: '-' < '0'); each an Int32Array of actor numbers in key order
 *             (due time, then name: names are fixed-width, so their hex sorts as the number)
 *   deleted   per folder, "next live position" pointers with path compression (a union–find),
 *             so a LIST from any key skips deleted entries in amortised constant time
 *   list      { prefix, startAfter, maxKeys } as S3 answers it: keys in byte order, ≤ 1,000 a
 *             page, a continuation when more follow
 *
 * Keys are built as src/alarms/keys.ts `entryKey` builds them (test/bench/fleet.test.ts checks
 * they are equal and parse back); generation 1, the actor number as the nonce.
 */
import { shardPrefix, tenantPrefix } from '../../../src/alarms/keys.js';
import { hash32 } from '../../../src/alarms/shard.js';
import { LIST_MAX_KEYS, type ListOptions, type ListPage } from '../../../src/store/types.js';

export const FLEET_TENANT = 't';
export const FLEET_CLASS = 'Fleet';
const NAME_DIGITS = 9;

/** The actor of entry `id`: its name, and its formatted address key. */
export const actorName = (id: number) => 'a' + String(id).padStart(NAME_DIGITS, '0');
export const actorKey = (id: number) => `${FLEET_TENANT}/${FLEET_CLASS}/${actorName(id)}`;
/** The actor number of an address key or an actor name. */
export const idOfKey = (key: string) => Number(key.slice(key.lastIndexOf('/') + 2));

/** The shard of actor `id` under `shards` (keys.ts `shardOf`: hash32 of the address key, low bits). */
export const shardOfId = (id: number, shards: number) => (shards > 1 ? hash32(actorKey(id)) & (shards - 1) : undefined);

const HEX_DIGIT = Array.from({ length: 10 }, (_, d) => (0x30 + d).toString(16));
const nameHexOf = (id: number) => '61' + [...String(id).padStart(NAME_DIGITS, '0')].map((c) => HEX_DIGIT[c.charCodeAt(0) - 0x30]).join('');
const GENERATION = '00000000000000000001';

interface Folder {
  prefix: string;
  shard: number | undefined;
  ids: Int32Array;
  /** next[i]: the first live position ≥ i (ids.length: none). */
  next: Int32Array;
  live: number;
}

export class IndexStore {
  private readonly folders: Folder[];
  private readonly folderOf: Uint16Array;
  private readonly posOf: Int32Array;
  /** Shard folders (the first folders), and each one's index by its prefix. */
  private readonly shardFolders: number;
  private readonly shardFolderOf = new Map<string, number>();
  /** Entries still in the index. */
  live: number;
  /** Keys returned by LISTs. */
  keysListed = 0;

  /**
   * `dueMs[id]`: each entry's due time; `shardOf(id)`: its shard folder (undefined: the unsharded
   * layout).
   */
  constructor(
    readonly dueMs: Float64Array,
    shardOf: (id: number) => number | undefined,
  ) {
    const k = dueMs.length;
    const shards = new Int32Array(k);
    const counts = new Map<number, number>();
    for (let id = 0; id < k; id++) {
      const s = shardOf(id) ?? -1;
      shards[id] = s;
      counts.set(s, (counts.get(s) ?? 0) + 1);
    }
    // Sharded folders first, by shard number (3 hex digits sort as the number), the unsharded layout last.
    const order = [...counts.keys()].sort((a, b) => (a === -1 ? 1 : b === -1 ? -1 : a - b));
    const index = new Map(order.map((s, i) => [s, i]));
    this.folders = order.map((s) => {
      const n = counts.get(s)!;
      const next = new Int32Array(n + 1);
      for (let i = 0; i <= n; i++) next[i] = i;
      const prefix = s === -1 ? tenantPrefix(FLEET_TENANT) : shardPrefix(FLEET_TENANT, s);
      return { prefix, shard: s === -1 ? undefined : s, ids: new Int32Array(n), next, live: n };
    });
    this.shardFolders = this.folders.filter((f) => f.shard !== undefined).length;
    for (let i = 0; i < this.shardFolders; i++) this.shardFolderOf.set(this.folders[i]!.prefix, i);
    const fill = new Int32Array(order.length);
    for (let id = 0; id < k; id++) {
      const f = index.get(shards[id]!)!;
      this.folders[f]!.ids[fill[f]!++] = id;
    }
    this.folderOf = new Uint16Array(k);
    this.posOf = new Int32Array(k);
    for (const [f, folder] of this.folders.entries()) {
      const ids = folder.ids;
      ids.sort((a, b) => dueMs[a]! - dueMs[b]! || a - b);
      for (let i = 0; i < ids.length; i++) ((this.folderOf[ids[i]!] = f), (this.posOf[ids[i]!] = i));
    }
    this.live = k;
  }

  /** The key of entry `id` (keys.ts `entryKey` of its address, due time, tag and shard). */
  keyOf(id: number): string {
    const f = this.folders[this.folderOf[id]!]!;
    const due = String(this.dueMs[id]!).padStart(15, '0');
    return `${f.prefix}${due}/${FLEET_CLASS}.t/${nameHexOf(id)}/${GENERATION}-${id.toString(16).padStart(8, '0')}`;
  }

  has(id: number): boolean {
    const f = this.folders[this.folderOf[id]!]!;
    const p = this.posOf[id]!;
    return this.find(f, p) === p;
  }

  delete(id: number): void {
    if (!this.has(id)) return;
    const f = this.folders[this.folderOf[id]!]!;
    f.next[this.posOf[id]!] = this.posOf[id]! + 1;
    f.live--;
    this.live--;
  }

  list(o: ListOptions): ListPage {
    const prefix = o.prefix ?? '';
    const want = Math.min(o.maxKeys ?? LIST_MAX_KEYS, LIST_MAX_KEYS);
    const startAfter = o.continuation ?? o.startAfter;
    const keys: string[] = [];
    let more = false;
    const [from, to] = this.foldersOf(prefix, startAfter);
    for (let i = from; i < to; i++) {
      const f = this.folders[i]!;
      if (f.live === 0) continue;
      const whole = f.prefix.startsWith(prefix);
      if (!whole && !prefix.startsWith(f.prefix)) continue;
      if (startAfter !== undefined && f.prefix + '\u{10ffff}' <= startAfter) continue;
      let p = startAfter === undefined || startAfter < f.prefix ? 0 : this.firstAfter(f, startAfter);
      for (p = this.find(f, p); p < f.ids.length; p = this.find(f, p + 1)) {
        const key = this.keyOf(f.ids[p]!);
        if (!whole && !key.startsWith(prefix)) {
          if (key > prefix) break; // past the prefix: nothing further in this folder matches
          continue;
        }
        if (keys.length === want) {
          more = true;
          break;
        }
        keys.push(key);
      }
      if (more) break;
    }
    this.keysListed += keys.length;
    return more ? { keys, continuation: keys.at(-1)! } : { keys };
  }

  /**
   * The folders [from, to) a LIST of `prefix` after `startAfter` can reach: a shard folder's own
   * prefix lists that folder alone; otherwise from the first shard folder not wholly at or before
   * `startAfter` (shard folders sort by shard; the unsharded layout, last, sorts after them all).
   */
  private foldersOf(prefix: string, startAfter: string | undefined): [number, number] {
    const own = this.shardFolderOf.get(prefix);
    if (own !== undefined) return [own, own + 1];
    return [this.firstAfterStart(startAfter), this.folders.length];
  }

  private firstAfterStart(startAfter: string | undefined): number {
    if (startAfter === undefined) return 0;
    let lo = 0;
    let hi = this.shardFolders;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.folders[mid]!.prefix + '\u{10ffff}' <= startAfter) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The first position of `f` whose key sorts after `after` (deleted or not). */
  private firstAfter(f: Folder, after: string): number {
    let lo = 0;
    let hi = f.ids.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.keyOf(f.ids[mid]!) <= after) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private find(f: Folder, p: number): number {
    const next = f.next;
    let root = p;
    while (next[root] !== root) root = next[root]!;
    while (next[p] !== root) {
      const up = next[p]!;
      next[p] = root;
      p = up;
    }
    return root;
  }
}
