/**
 * Which index entries of one actor at one time may be deleted as stale (docs/alarm-index.md: R2, R3, the
 * owner fence and the empty-bucket rule), as pure functions.
 *
 *   R2  delete only what the replicated state no longer names: every entry of the actor at that
 *       time except the one `alarm_indexed` names;
 *   R3  never an entry whose generation is above one's own (a newer owner wrote it);
 *   fence  "the latest" state holds only once the owner's own upload ends the history: an owner
 *       that has uploaded nothing under its hold uploads a one-line change (owner_fence) first;
 *   empty bucket  an owner that found nothing in the bucket for the actor and has uploaded nothing
 *       since removes nothing (an earlier owner's first snapshot may still land naming the entry),
 *       does not fence by uploading either, retries the entry after retryMaxMs and releases the hold.
 */
import type { IndexEntry, Indexed } from './keys.js';
import type { ProtocolRules } from './rules.js';

export function staleEntries(
  listed: readonly IndexEntry[],
  named: Indexed | null,
  ownGeneration: number,
  rules: ProtocolRules,
): IndexEntry[] {
  return listed.filter((e) => {
    const isNamed = named !== null && e.dueMs === named.at && e.shard === named.shard && sameTag(e.tag, named.tag);
    const newer = e.tag !== null && e.tag.generation > ownGeneration && rules.generationCheck;
    return !isNamed && !newer;
  });
}

function sameTag(a: IndexEntry['tag'], b: Indexed['tag']): boolean {
  if (a === null || b === null) return a === b;
  return a.generation === b.generation && a.nonce === b.nonce;
}

export type StaleRemoval = 'allowed' | 'fenceFirst' | 'emptyBucket';

export function staleRemoval(owner: { foundNothing: boolean; uploadedUnderHold: boolean }, rules: ProtocolRules): StaleRemoval {
  if (owner.uploadedUnderHold) return 'allowed';
  if (!rules.keepOnEmptyBucket && owner.foundNothing) return 'allowed';
  if (!rules.ownerFence && !owner.foundNothing) return 'allowed';
  return owner.foundNothing ? 'emptyBucket' : 'fenceFirst';
}
