/**
 * The rules of the alarm index (docs/alarm-index.md) that the protocol code obeys, as one frozen value passed in (the pipeline's
 * deps, and an argument to each pure decision that reads one) instead of a module-level switch.
 * Production builds SAFE_RULES, every rule on; only the deterministic simulator (test/sim) and the
 * chaos run (test/chaos, through the TEST-ONLY `UnsafeTestSeams`) build values with one rule off,
 * to show that their checks catch the breakage.
 *
 *   taggedKeys          R1: entries are written under a fresh key (generation + nonce); off, under
 *                       the legacy key, so a later PUT can reuse a key an earlier DELETE still targets
 *   generationCheck     R3: entries of a higher generation are never deleted
 *   ownerFence          an owner that uploaded nothing under its hold fences before removing stale entries
 *   entryBeforeUpload   R4: a local-only actor's entry is listed before its first snapshot goes up
 *   keepOnEmptyBucket   the empty-bucket rule: nothing is removed while the bucket has nothing for the actor
 *   walkOtherShards     a sharded sweep also walks other nodes' shards, one folder every
 *                       otherShardWalkMs (anyone's entries there): without it, an entry whose
 *                       shard owner is dead, or that nodes disagree about, or that a node not
 *                       serving its class owns, waits for ever (a liveness rule, not a safety one)
 *   startOverOwnShards  a sharded sweep's walk of an own shard that read through starts over from
 *                       the folder's beginning within alarmSweepMs: without it, an entry left
 *                       behind its cursor (an offer the full timer refused, an entry listed late
 *                       at an earlier due time) waits for ever (a liveness rule)
 *   deleteAfterUpload   R2's order: the entry an event replaced is deleted only once a link holding
 *                       that event is in the bucket; off, at once after the commit (workers/pipeline.ts)
 *   durableReplyAfterUpload  not of the ADR, the output gate of durable calls (workers/pipeline.ts): a
 *                       durable call replies only once a link holding its commit is in the bucket
 *   idempotencyRecord   not of the ADR: a call with an idempotency key records its outcome in its
 *                       own transaction (workers/idempotency.ts); off, nothing is recorded and a
 *                       repeat of the key runs the handler again
 */
export interface ProtocolRules {
  readonly taggedKeys: boolean;
  readonly generationCheck: boolean;
  readonly ownerFence: boolean;
  readonly entryBeforeUpload: boolean;
  readonly keepOnEmptyBucket: boolean;
  readonly deleteAfterUpload: boolean;
  readonly durableReplyAfterUpload: boolean;
  readonly idempotencyRecord: boolean;
  readonly walkOtherShards: boolean;
  readonly startOverOwnShards: boolean;
}

export const SAFE_RULES: ProtocolRules = Object.freeze({
  taggedKeys: true,
  generationCheck: true,
  ownerFence: true,
  entryBeforeUpload: true,
  keepOnEmptyBucket: true,
  deleteAfterUpload: true,
  durableReplyAfterUpload: true,
  idempotencyRecord: true,
  walkOtherShards: true,
  startOverOwnShards: true,
});
