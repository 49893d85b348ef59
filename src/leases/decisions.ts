/**
 * The ownership decisions of docs/architecture.md as pure functions: inputs in, a decision out.
 *
 *   live        a node record that is `live` with expiresAtMs + grace in the future
 *   fenceable   a `live` record whose lease expired more than grace ago: write it `fenced`
 *               (If-Match) before taking any of its holds, so it can never renew again
 *   holdDecision  what to do to own an actor, given its hold and its holder's node record
 *   renewConflictIsFence  whether a 412 on this node's renew means it was fenced
 */
import type { HoldRecord, NodeRecord } from './records.js';

export function isLive(n: NodeRecord, nowMs: number, graceMs: number): boolean {
  return n.state === 'live' && n.expiresAtMs + graceMs > nowMs;
}

export function isFenceable(n: NodeRecord, nowMs: number, graceMs: number): boolean {
  return n.state === 'live' && n.expiresAtMs + graceMs <= nowMs;
}

/** Until when this node may act on its lease: send time of the last successful renew + lease − skew. */
export function leaseValidUntil(lastRenewSentAtMs: number, leasePeriodMs: number, skewBoundMs: number): number {
  return lastRenewSentAtMs + leasePeriodMs - skewBoundMs;
}

/**
 * A 412 on renew is a fence only if the record says so: it is gone, not `live`, or of another
 * epoch. A renewal that timed out but landed also changes the etag: then the record (`current`,
 * read after the 412) is still ours and live.
 */
export function renewConflictIsFence(current: NodeRecord | null, ownEpoch: number): boolean {
  return current === null || current.state !== 'live' || current.epoch !== ownEpoch;
}

export type HoldDecision =
  | { kind: 'create' }
  | { kind: 'ours'; generation: number }
  | { kind: 'take'; generation: number }
  | { kind: 'fenceThenTake'; generation: number }
  | { kind: 'forward'; nodeId: string; addr: string };

/**
 * @param hold    the actor's hold, or null when there is none
 * @param holder  the node record of the hold's nodeId (null: no such record), when it is not us
 */
export function holdDecision(
  hold: HoldRecord | null,
  holder: NodeRecord | null,
  self: { nodeId: string; epoch: number },
  nowMs: number,
  graceMs: number,
): HoldDecision {
  if (!hold) return { kind: 'create' };
  const next = hold.generation + 1;
  if (hold.nodeId === self.nodeId) {
    if (hold.epoch === self.epoch && hold.state === 'held') return { kind: 'ours', generation: hold.generation };
    return { kind: 'take', generation: next }; // released, or an earlier run of this node
  }
  if (hold.state === 'released' || !holder || holder.state !== 'live' || holder.epoch !== hold.epoch)
    return { kind: 'take', generation: next };
  // A live holder (its lease, plus grace, not yet over) keeps the actor: calls go to it.
  if (isLive(holder, nowMs, graceMs)) return { kind: 'forward', nodeId: holder.nodeId, addr: holder.addr };
  return { kind: 'fenceThenTake', generation: next };
}
