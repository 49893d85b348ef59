/**
 * Assertions where a wrong state must stop the program (TigerBeetle's habit): `invariant(cond,
 * message)` throws an `Internal` error (code INTERNAL) when `cond` is false, at the step that
 * went wrong rather than wherever its consequences surface later. A failed invariant is a bug in
 * keepwork or a broken premise (a bucket that lost an acknowledged conditional write), never an
 * ordinary fault of the bucket, the network or a handler: those have codes of their own.
 *
 *   invariant(plan.length <= cap, () => `plan of ${plan.length} deliveries over its cap ${cap}`);
 *
 * The message may be a function, so a hot path builds no string unless the check fails.
 * `invariantHooks.onFailure` hears every failure as it is raised, even one a caller later turns
 * into a reply or a log line: the simulator ends its run there (test/sim/run-seed.ts). It is an
 * observer only; production leaves it unset and the error alone decides what happens.
 */
import { Internal } from './errors.js';

export type InternalError = InstanceType<typeof Internal>;

export const invariantHooks: { onFailure?: (e: InternalError) => void } = {};

/** Throws an INTERNAL error unless `cond` holds. */
export function invariant(cond: unknown, message: string | (() => string), details?: Record<string, unknown>): asserts cond {
  if (!cond) throw invariantFailure(message, details);
}

/** The INTERNAL error of a failed invariant (reported to the hook), for a caller that must act before throwing it. */
export function invariantFailure(message: string | (() => string), details?: Record<string, unknown>): InternalError {
  const e = new Internal(`invariant failed: ${typeof message === 'function' ? message() : message}`, { details });
  invariantHooks.onFailure?.(e);
  return e;
}
