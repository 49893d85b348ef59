/**
 * The alarm index's invariant (docs/alarm-index.md), checked against the bucket as it is at one instant (read synchronously,
 * so no request can slip in between): for every actor whose committed head holds an alarm, the
 * entry named by its `alarm_indexed` exists.
 *
 *   head of the chain ─▶ newest snapshot at or below it + later deltas ─▶ SQLite image ─▶
 *   { alarm, alarm_indexed } (cached per head link) ─▶ is keyOf(alarm_indexed) in the bucket?
 *
 * The index's one known exception is recognised by its own terms, not by loosening the check: the
 * state names an entry at another time than its alarm (recording the new entry failed after its
 * PUT), and then the new, unnamed entry at the alarm's time must be in the bucket (nothing is
 * lost). In this implementation recording happens inside the event's transaction, so a failure
 * rolls the whole event back and the exception should never be seen; it is counted if it is.
 */
import Database from 'better-sqlite3';
import { formatAddress, type ActorAddress } from '../../src/core/address.js';
import { actorEntriesPrefix, entryKey, parseEntryKey, parseIndexed, shardedAreaPrefix, type Indexed } from '../../src/alarms/keys.js';
import { keyOf } from '../../src/alarms/owner.js';
import { decodeLink, type Link } from '../../src/replication/link.js';
import { chainPrefix, linkKey, seqOfKey } from '../../src/replication/state-keys.js';
import { decodeDelta } from '../../src/replication/wal.js';
import type { MemoryStore } from '../../src/store/memory.js';
import { compareKeys } from '../../src/store/keys.js';

/** The keys starting with `prefix`, from a listing in byte order (binary search, no full scan). */
export function keysUnder(sorted: readonly string[], prefix: string): string[] {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareKeys(sorted[mid]!, prefix) < 0) lo = mid + 1;
    else hi = mid;
  }
  const out: string[] = [];
  for (let i = lo; i < sorted.length && sorted[i]!.startsWith(prefix); i++) out.push(sorted[i]!);
  return out;
}

export interface HeadState {
  alarmMs: number | null;
  indexedText: string | null;
  /** The ids of durable calls (≥ 1000, sim-actor.ts) whose rows the head holds: the durable check (run-seed.ts). */
  durableIds: ReadonlySet<number>;
}

export interface Violation {
  actor: string;
  message: string;
}

export class IndexInvariant {
  ticks = 0;
  actorChecks = 0;
  knownExceptions = 0;
  private readonly cache = new Map<string, HeadState | null>();
  private readonly prefixes = new Map<string, string>();

  constructor(private readonly bucket: MemoryStore) {}

  /** Checks every actor now; the first violation found, if any. */
  check(actors: readonly ActorAddress[]): Violation | undefined {
    this.ticks++;
    for (const a of actors) {
      const v = this.checkActor(a);
      if (v) return v;
    }
    return undefined;
  }

  private checkActor(a: ActorAddress): Violation | undefined {
    const head = this.headState(a);
    if (!head || head.alarmMs === null) return undefined;
    this.actorChecks++;
    const actor = formatAddress(a);
    let named: Indexed | null;
    try {
      named = parseIndexed(head.indexedText);
    } catch (e) {
      return { actor, message: `committed alarm ${head.alarmMs}: alarm_indexed is unreadable (${(e as Error).message})` };
    }
    if (!named) return { actor, message: `committed alarm ${head.alarmMs} but alarm_indexed names no entry` };
    const key = keyOf(a, named);
    if (this.bucket.peek(key)) return undefined;
    if (named.at !== head.alarmMs && this.listedAt(a, head.alarmMs)) {
      this.knownExceptions++; // the index's one known exception: the unnamed new entry lists the alarm
      return undefined;
    }
    return { actor, message: `committed alarm ${head.alarmMs} names entry ${key}, which is not in the bucket` };
  }

  /** Some entry of the actor lists `atMs`, in either layout (rare: only the known exception asks). */
  private listedAt(a: ActorAddress, atMs: number): boolean {
    const prefix = actorEntriesPrefix(a, atMs);
    if (keysUnder(this.bucket.keys(), prefix).length > 0) return true;
    if (this.bucket.peek(entryKey({ address: a, dueMs: atMs, tag: null })) !== undefined) return true;
    return keysUnder(this.bucket.keys(), shardedAreaPrefix(a.tenant)).some((k) => {
      const e = parseEntryKey(k);
      return e !== undefined && e.address.key === a.key && e.dueMs === atMs;
    });
  }

  /** The committed head's alarm and alarm_indexed; null when the bucket has no state (or a tombstone). */
  headState(a: ActorAddress): HeadState | null {
    const actor = formatAddress(a);
    let prefix = this.prefixes.get(actor);
    if (prefix === undefined) this.prefixes.set(actor, (prefix = chainPrefix(a)));
    const links = keysUnder(this.bucket.keys(), prefix);
    const headKey = links[links.length - 1];
    if (headKey === undefined) return null;
    const cacheKey = `${headKey}:${this.bucket.peek(headKey)!.etag}`;
    if (this.cache.has(cacheKey)) return this.cache.get(cacheKey)!;
    const seqs = links.map((k) => seqOfKey(a, k)).filter((s): s is number => s !== undefined);
    const state = this.decode(a, seqs);
    this.cache.set(cacheKey, state);
    return state;
  }

  private decode(a: ActorAddress, seqs: number[]): HeadState | null {
    const links = [];
    for (let i = seqs.length - 1; i >= 0; i--) {
      const seq = seqs[i]!;
      const link = decodeLink(this.bucket.peek(linkKey(a, seq))!.body, seq);
      if (i === seqs.length - 1 && link.header.kind === 'tombstone') return null;
      links.push(link);
      if (link.header.kind !== 'delta') break;
    }
    links.reverse();
    if (links[0]!.header.kind !== 'snapshot') throw new Error(`sim: the chain of ${formatAddress(a)} has no snapshot below its head`);
    const db = new Database(imageOf(links));
    try {
      const alarm = db.prepare('SELECT at FROM _keep_alarm WHERE id = 0').get() as { at: number } | undefined;
      const meta = db.prepare("SELECT value FROM _keep_meta WHERE key = 'alarm_indexed'").get() as { value: string } | undefined;
      const calls = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'calls'").get()
        ? (db.prepare('SELECT n FROM calls WHERE n >= 1000').all() as { n: number }[])
        : [];
      return { alarmMs: alarm?.at ?? null, indexedText: meta?.value ?? null, durableIds: new Set(calls.map((c) => c.n)) };
    } finally {
      db.close();
    }
  }
}

/**
 * The database image a snapshot and its later deltas describe, built in memory (an oracle of its
 * own rather than the restore code under test), marked as a rollback-journal file so SQLite can
 * open it as a buffer.
 */
function imageOf(links: Link[]): Buffer {
  let image = Buffer.from(links[0]!.payload);
  for (const link of links.slice(1)) {
    const d = decodeDelta(link.payload);
    const next = Buffer.alloc(d.pageCountAfter * d.pageSize);
    image.copy(next, 0, 0, Math.min(image.length, next.length));
    for (const { pgno, data } of d.pages) if (pgno <= d.pageCountAfter) next.set(data, (pgno - 1) * d.pageSize);
    image = next;
  }
  image[18] = 1; // file format versions: 1 = rollback journal (2 = WAL)
  image[19] = 1;
  return image;
}
