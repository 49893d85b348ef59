/**
 * Delivery of an index entry (docs/alarm-index.md "The sweep": a delivery is the ordinary alarm event): take the actor
 * (restoring it from the bucket), read the committed alarm, and
 *
 *   entry time = committed alarm ─▶ the ordinary alarm event (runs `alarm` if due)
 *   entry time ≠ committed alarm ─▶ stale: the committed alarm is already indexed (every commit
 *       lists it); remove the actor's entries at that time that the state does not name (R2),
 *       never one of a higher generation (R3) — after the owner fence, unless the bucket had
 *       nothing (then remove nothing, retry after retryMaxMs, release the hold)
 *   no state (no committed alarm, no init recorded; or deleted) ─▶ remove without running it
 *
 * Costs one LIST of the actor's tagged entries at that time; a legacy key is deleted by name. Under
 * a sharded index, also one LIST of each shard folder the actor's entries at that time may be in
 * (`shardFolders`): the one the delivered entry was found in, the one the state names, and the
 * one this node writes in.
 */
import type { ActorAddress } from '../core/address.js';
import { actorEntriesPrefix, entryKey, parseEntryKey, parseIndexed, shardOf, type IndexEntry, type Indexed } from '../alarms/keys.js';
import { staleEntries, staleRemoval } from '../alarms/stale.js';
import { listAll } from '../store/keys.js';
import { readAlarm, readMeta } from './actor-db.js';
import type { Slot } from './actor-slots.js';
import type { EventResult } from './messages.js';
import type { PipelineDeps } from './deps.js';

/** Where an entry is, as far as stale removal needs: the shard folder the sweep found it in (absent: unsharded). */
export interface EntryPlace {
  shard?: number;
}

/** The shard folders an actor's entries at one time are looked for in: where one was found, where the state names one, where this node writes. */
export function shardFolders(deps: PipelineDeps, a: ActorAddress, found: EntryPlace, named: Indexed | null): number[] {
  const folders = [found.shard, named?.shard, shardOf(a, deps.config.indexShards)];
  return [...new Set(folders.filter((s): s is number => s !== undefined))];
}

/** Every entry of the actor at `dueMs`: its tagged ones (one LIST per layout folder) and the legacy key if present. */
async function entriesAt(deps: PipelineDeps, a: ActorAddress, dueMs: number, shards: readonly number[]): Promise<IndexEntry[]> {
  const out: IndexEntry[] = [];
  for (const shard of [undefined, ...shards]) {
    for await (const key of listAll(deps.store, { prefix: actorEntriesPrefix(a, dueMs, shard) })) {
      const e = parseEntryKey(key);
      if (e) out.push(e);
    }
  }
  const legacy: IndexEntry = { address: a, dueMs, tag: null };
  if (await deps.store.head(entryKey(legacy))) out.push(legacy);
  return out;
}

async function remove(
  deps: PipelineDeps,
  a: ActorAddress,
  dueMs: number,
  found: EntryPlace,
  named: Indexed | null,
  generation: number,
): Promise<number> {
  const listed = await entriesAt(deps, a, dueMs, shardFolders(deps, a, found, named));
  const doomed = staleEntries(listed, named, generation, deps.rules).map(entryKey);
  if (doomed.length > 0) await deps.store.deleteMany(doomed);
  deps.log.info({ actor: a.key, dueMs, removed: doomed.length }, 'stale index entries removed');
  return doomed.length;
}

/** The actor has no slot: nothing local and nothing (or a tombstone) in the bucket. */
export async function deliverWithoutState(
  deps: PipelineDeps,
  a: ActorAddress,
  dueMs: number,
  deleted: boolean,
  generation: number,
  found: EntryPlace = {},
): Promise<EventResult> {
  if (!deleted && deps.rules.keepOnEmptyBucket) {
    // Empty bucket: an earlier owner's first snapshot may still land naming this entry (R4).
    return {
      type: 'ok',
      alarmAt: null,
      deleted: false,
      ran: false,
      retryAtMs: deps.clock.now() + deps.config.retryMaxMs,
      releaseHold: true,
    };
  }
  const removed = await remove(deps, a, dueMs, found, null, generation); // deleted: the state names none
  return { type: 'ok', alarmAt: null, deleted: true, ran: false, removed };
}

/** The actor is taken; `runAlarm` is the ordinary alarm event. */
export async function deliverTo(
  deps: PipelineDeps,
  slot: Slot,
  a: ActorAddress,
  dueMs: number,
  runAlarm: () => Promise<EventResult>,
  found: EntryPlace = {},
): Promise<EventResult> {
  const committed = readAlarm(slot.db);
  if (committed === dueMs) return runAlarm();
  const base = { type: 'ok' as const, alarmAt: committed, deleted: false, ran: false };
  // No state here (no alarm, no init recorded) is no exception to the fence: an upload given up
  // earlier may still land and name the entry (the simulator's seed 175).
  const rule = staleRemoval(slot.replica, deps.rules);
  if (rule === 'emptyBucket') return { ...base, retryAtMs: deps.clock.now() + deps.config.retryMaxMs, releaseHold: true };
  if (rule === 'fenceFirst') await slot.replica.index.fence();
  else await slot.replica.sync(); // R2: what the *replicated* state names — local commits go up first
  const named = parseIndexed(readMeta(slot.db, 'alarm_indexed'));
  return { ...base, removed: await remove(deps, a, dueMs, found, named, slot.replica.generation) };
}
