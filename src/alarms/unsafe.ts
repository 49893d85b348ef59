/**
 * TEST-ONLY switches that turn off one rule of ADR 0009 each, so the deterministic simulator
 * (test/sim) can show that its invariant catches the breakage. Production never sets them: every
 * flag is false, and each is read at one decision point as a plain boolean (no cost worth naming).
 *
 *   untaggedKeys        R1 off: entries are written under the legacy key (no generation, no
 *                       nonce), so a later PUT can reuse a key an earlier DELETE still targets
 *   noGenerationCheck   R3 off: entries of a higher generation may be deleted
 *   noFence             the owner fence off: an owner that uploaded nothing removes stale entries
 *   uploadBeforeEntry   R4 order off: a local-only actor's first snapshot goes before its entry
 *   clearOnEmptyBucket  the empty-bucket rule off: entries are removed while the bucket has
 *                       nothing for the actor
 */
export interface UnsafeFlags {
  untaggedKeys: boolean;
  noGenerationCheck: boolean;
  noFence: boolean;
  uploadBeforeEntry: boolean;
  clearOnEmptyBucket: boolean;
}

export const unsafe: UnsafeFlags = {
  untaggedKeys: false,
  noGenerationCheck: false,
  noFence: false,
  uploadBeforeEntry: false,
  clearOnEmptyBucket: false,
};

/** Sets every flag back to false (the simulator calls it between runs). */
export function resetUnsafe(): void {
  for (const k of Object.keys(unsafe) as (keyof UnsafeFlags)[]) unsafe[k] = false;
}
