/**
 * The simulator's unsafe variants: each is SAFE_RULES (src/alarms/rules.ts) with one rule of
 * the alarm index (docs/alarm-index.md) off, handed to every node's pipeline deps for one run, so the invariant can show it
 * catches the breakage. Production never builds these.
 *
 *   untaggedKeys        R1 off: entries go under the legacy key (no generation, no nonce)
 *   noGenerationCheck   R3 off: entries of a higher generation may be deleted
 *   noFence             the owner fence off: an owner that uploaded nothing removes stale entries
 *   uploadBeforeEntry   R4 order off: a local-only actor's first snapshot goes before its entry
 *   clearOnEmptyBucket  the empty-bucket rule off: entries are removed while the bucket has nothing
 *   earlyDurableReply   the output gate off: a durable call replies once committed, before its link lands
 *   noOtherShards       the slow walk off: a sharded sweep lists only its own shards (caught by the
 *                       liveness check, on a seed whose index is sharded)
 *   noStartOver         a sharded sweep's walk of an own shard that read through stays at its end
 *                       for ever: entries left behind its cursor are never read again (caught by
 *                       the liveness check, on a seed whose index is sharded)
 *
 * And one unsafe setting, SAFE_RULES with a tunable out of the range the liveness bound assumes:
 *
 *   slowOtherShards     the slow walk at a cadence too slow for the bound: otherShardWalkMs is the
 *                       liveness bound itself (not alarmSweepMs), so a node's round of the other
 *                       folders takes several bounds (caught by the liveness check)
 */
import { SAFE_RULES, type ProtocolRules } from '../../src/alarms/rules.js';
import type { KeepworkOptions } from '../../src/core/config.js';
import type { SimParams } from './params.js';

export type UnsafeVariant =
  | 'untaggedKeys'
  | 'noGenerationCheck'
  | 'noFence'
  | 'uploadBeforeEntry'
  | 'clearOnEmptyBucket'
  | 'earlyDurableReply'
  | 'noOtherShards'
  | 'noStartOver';
export type UnsafeSetting = 'slowOtherShards';

const off = (rule: keyof ProtocolRules): ProtocolRules => Object.freeze({ ...SAFE_RULES, [rule]: false });

export const UNSAFE_RULES: Readonly<Record<UnsafeVariant, ProtocolRules>> = Object.freeze({
  untaggedKeys: off('taggedKeys'),
  noGenerationCheck: off('generationCheck'),
  noFence: off('ownerFence'),
  uploadBeforeEntry: off('entryBeforeUpload'),
  clearOnEmptyBucket: off('keepOnEmptyBucket'),
  earlyDurableReply: off('durableReplyAfterUpload'),
  noOtherShards: off('walkOtherShards'),
  noStartOver: off('startOverOwnShards'),
});

/** The rules a run of `variant` gives its nodes: SAFE_RULES unless it is an unsafe variant. */
export function rulesFor(variant: string): ProtocolRules {
  return Object.hasOwn(UNSAFE_RULES, variant) ? UNSAFE_RULES[variant as UnsafeVariant] : SAFE_RULES;
}

/** The options a run of `variant` gives its nodes: the seed's, but for an unsafe setting's tunable. */
export function configFor(variant: string, p: SimParams): KeepworkOptions {
  if (variant === 'slowOtherShards') return { ...p.config, otherShardWalkMs: p.livenessBoundMs };
  return p.config;
}
