/**
 * The owner's side of the alarm index (docs/alarm-index.md "The owner's sequencing"): before an
 * event that changed the alarm commits, PUT an entry for the new alarm under a fresh key and
 * record it in `alarm_indexed` (same transaction); once the link holding that event
 * is in the bucket, DELETE the entry the state named before. A crash in between leaves an extra
 * entry, never a missing one.
 *
 *   indexPlan(after, indexed, rules)  pure: keep · list a new entry · clear — and which entry it replaces
 *   listEntry(...)             the PUT (R1: a fresh key; only its own immediate retry reuses it)
 *   deletable(entry, gen, rules)      R3: never delete an entry whose generation is above one's own
 */
import type { ActorAddress } from '../core/address.js';
import type { Random } from '../core/random.js';
import { isTransientStoreError, retry } from '../core/retry.js';
import type { Clock } from '../core/clock.js';
import type { ObjectStore } from '../store/types.js';
import { entryKey, shardOf, type Indexed, type NonceSource } from './keys.js';
import type { ProtocolRules } from './rules.js';

export interface IndexPlan {
  /** A new entry to list for this alarm time (null: keep what is listed, or list nothing). */
  list: number | null;
  /** The entry the state names now and will stop naming (deleted after the upload). */
  replaces: Indexed | null;
}

/**
 * An unchanged alarm keeps its entry, whichever owner wrote it; a legacy entry is replaced by a
 * tagged one (migration); a changed or cleared alarm replaces what was listed.
 */
export function indexPlan(after: number | null, indexed: Indexed | null, rules: ProtocolRules): IndexPlan {
  if (after === null) return { list: null, replaces: indexed };
  if (indexed && indexed.at === after && (indexed.tag !== null || !rules.taggedKeys)) return { list: null, replaces: null };
  return { list: after, replaces: indexed };
}

/** R3: an entry written under a higher generation belongs to a newer owner. */
export function deletable(entry: Indexed, ownGeneration: number, rules: ProtocolRules): boolean {
  return entry.tag === null || entry.tag.generation <= ownGeneration || !rules.generationCheck;
}

export interface ListingDeps {
  store: ObjectStore;
  clock: Clock;
  random: Random;
  nonces: NonceSource;
  rules: ProtocolRules;
  attemptsMax: number;
  retryBaseMs: number;
  /** The layout new entries are written in (`indexShards`: 1, unsharded). */
  indexShards: number;
}

/**
 * PUTs a fresh entry for `at` under `generation`, in the layout of `indexShards` (a legacy entry
 * is never sharded); returns what `alarm_indexed` must now say.
 */
export async function listEntry(d: ListingDeps, a: ActorAddress, at: number, generation: number): Promise<Indexed> {
  const tag = d.rules.taggedKeys ? { generation, nonce: d.nonces.next() } : null;
  const shard = tag === null ? undefined : shardOf(a, d.indexShards);
  const named: Indexed = shard === undefined ? { at, tag } : { at, tag, shard };
  const policy = { attemptsMax: d.attemptsMax, baseMs: d.retryBaseMs, retryable: isTransientStoreError };
  const key = keyOf(a, named);
  await retry(d, policy, () => d.store.put(key, new Uint8Array(0))); // the same key again
  return named;
}

export function keyOf(a: ActorAddress, i: Indexed): string {
  return entryKey({ address: a, dueMs: i.at, tag: i.tag, shard: i.shard });
}
