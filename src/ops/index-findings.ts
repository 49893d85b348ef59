/**
 * What `keepwork index check` reports, as pure decisions over what it read (docs/alarm-index.md):
 *
 *   actorFinding(actor, listed)   a committed alarm: is its named entry there? (the index's invariant)
 *   entryFinding(entry, actor)    an index entry: named by its actor's committed head, or a leftover
 *                                 of one of the kinds docs/alarm-index.md explains
 *
 * `EXPLAIN` holds, per kind, the explanation and what happens to it; the CLI prints it and
 * docs/operations.md repeats it. Nothing here reads the bucket.
 */
import type { IndexEntry, Indexed } from '../alarms/keys.js';
import type { CommittedActor } from './committed-state.js';

/** Per actor with a committed alarm. */
export type ActorKind =
  | 'ok' //             the entry alarm_indexed names exists, at the committed alarm's time
  | 'listedUnnamed' //  the named entry is not there, but another entry lists the alarm at its time
  | 'missing' //        alarm_indexed names an entry that is not there, and nothing lists the alarm
  | 'unindexed' //      the committed alarm has no alarm_indexed at all, and nothing lists it
  | 'unreadable'; //    the chain cannot be restored, or alarm_indexed cannot be parsed

/** Per index entry. */
export type EntryKind =
  | 'named' //           the entry the actor's committed head names
  | 'unnamedAtAlarm' //  at the committed alarm's time, but not the named one
  | 'stale' //           at another time (or the actor has no alarm); generation <= the head's
  | 'newerGeneration' // written under a generation above the head's (R3)
  | 'noState' //         the bucket has no chain for the actor (R4)
  | 'deleted' //         the actor's chain ends in a tombstone
  | 'unreadable' //      the actor's chain cannot be restored
  | 'notAnEntry'; //     a key under alarms/ that is not an index key

export const EXPLAIN: Record<ActorKind | EntryKind, string> = {
  ok: 'the committed alarm’s named entry exists (the index’s invariant holds)',
  listedUnnamed:
    'the named entry is missing but an unnamed entry lists the alarm at its time: the index’s one known exception (recording the new entry failed after its PUT) or an entry `--repair` listed; the alarm still fires, the extra entry is removed after',
  missing:
    'the committed alarm names an entry that is not in the bucket and no entry lists it: no sweep will find this alarm (the failure the index’s rules exist to prevent; also the result of deleting index keys by hand). `--repair` lists a fresh entry for it',
  unindexed:
    'the committed alarm was never indexed (alarm_indexed is empty): set by code from before the index, or by an old node during a rolling upgrade (docs/operations.md, “What can still go wrong”); it has no entry until an event moves it. `--repair` lists a fresh entry for it',
  unreadable: 'the actor’s chain cannot be restored, or alarm_indexed cannot be parsed: see the error; no node can run this actor either',
  named: 'the entry the actor’s committed head names',
  unnamedAtAlarm:
    'an entry at the committed alarm’s time that the state does not name (the index’s one known exception, a `--repair` entry, or an owner between its PUT and its upload): delivered when due, then removed as unnamed',
  stale:
    'an entry the committed head no longer names (a crash between the PUT and the upload, a PUT that landed after the actor was given up, a delete that failed, or an event in flight now): costs one wake-up when it comes due, then the delivering node removes it (R2)',
  newerGeneration:
    'written by an owner with a newer generation than the head’s writer: its upload is in flight, or it died before uploading (R3: no older owner deletes it); a later owner removes it at delivery once its state does not name it',
  noState:
    'the bucket has no chain for this actor: a joining node listed its alarm and has not uploaded it yet, or died before its first upload (R4). It stays, woken every retryMaxMs (5 min) without creating the actor; it clears when that node comes back and uploads, and stays if it never does',
  deleted: 'the actor was deleted (its chain ends in a tombstone): the next delivery removes the entry without running the actor',
  notAnEntry: 'a key under alarms/ that is not an index key: sweeps skip it; nothing removes it',
};

/** The actor-side verdict for an actor whose head has a committed alarm. */
export function actorFinding(actor: CommittedActor, namedExists: boolean, othersAtAlarm: number): ActorKind {
  if (actor.state === 'corrupt' || actor.indexed === undefined) return 'unreadable';
  if (actor.alarmAt === null) return 'ok';
  const named = actor.indexed;
  if (named && named.at === actor.alarmAt && namedExists) return 'ok';
  if (othersAtAlarm > 0) return 'listedUnnamed';
  return named ? 'missing' : 'unindexed';
}

/** The verdict for one entry, given what its actor's committed head says. */
export function entryFinding(entry: IndexEntry, actor: CommittedActor): EntryKind {
  if (actor.state === 'empty') return 'noState';
  if (actor.state === 'deleted') return 'deleted';
  if (actor.state === 'corrupt' || actor.indexed === undefined) return 'unreadable';
  if (isNamed(entry, actor.indexed)) return 'named';
  if (entry.tag !== null && entry.tag.generation > (actor.generation ?? 0)) return 'newerGeneration';
  if (actor.alarmAt !== null && entry.dueMs === actor.alarmAt) return 'unnamedAtAlarm';
  return 'stale';
}

/** The entry `named` says: same time, same tag and same layout (a copy of it in another shard folder is not it). */
export function isNamed(entry: IndexEntry, named: Indexed | null): boolean {
  if (named === null || entry.dueMs !== named.at || entry.shard !== named.shard) return false;
  if (entry.tag === null || named.tag === null) return entry.tag === named.tag;
  return entry.tag.generation === named.tag.generation && entry.tag.nonce === named.tag.nonce;
}

/** Kinds that are a problem for the alarm (the rest are leftovers the sweep cleans or explains). */
export const ACTOR_PROBLEMS: readonly ActorKind[] = ['missing', 'unindexed', 'unreadable'];
