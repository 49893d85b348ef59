/**
 * The per-tenant rate of new actors (`newActorsPerTenantPerSecond`): a token bucket per tenant,
 * holding at most one second's worth, refilled continuously. A new actor — a hold created with
 * `If-None-Match: *` (holds.ts) — takes a token; with none left, the create is refused with
 * OVERLOADED (HTTP 503) and `details.retryAfterMs`, the time until the next token. Actors that
 * exist are never counted: taking, forwarding or calling them does not touch the bucket.
 *
 *   tokens(now) = min(rate, tokens(then) + (now − then) × rate / 1000)
 *
 * kept in thousandths of a token: with whole milliseconds and a whole rate every step is then exact
 * (in fractions of a token, a wait computed to the next token could fall a hair short of it).
 *
 * `refill` is the pure decision; `NewActorRate` keeps one bucket per tenant, bounded: a bucket
 * that has refilled to full is the same as none and is forgotten, and past TENANTS_MAX the oldest
 * are forgotten first (a forgotten tenant starts full, which errs toward admitting).
 */
import type { ActorAddress } from '../core/address.js';
import type { Settings } from '../core/config.js';
import { Overloaded } from '../core/errors.js';

/** Tenants with a bucket below full kept at most. */
const TENANTS_MAX = 65_536;

export interface RateBucket {
  /** Thousandths of a token. */
  milliTokens: number;
  atMs: number;
}

/** The bucket at `nowMs`, and whether one token could be taken from it (taken when so); `waitMs`: until the next token. */
export function refill(b: RateBucket | undefined, nowMs: number, perSecond: number): { bucket: RateBucket; waitMs: number } {
  const full = perSecond * 1000;
  const elapsed = b === undefined ? Infinity : Math.max(0, nowMs - b.atMs);
  const milliTokens = Math.min(full, (b?.milliTokens ?? full) + elapsed * perSecond);
  if (milliTokens >= 1000) return { bucket: { milliTokens: milliTokens - 1000, atMs: nowMs }, waitMs: 0 };
  return { bucket: { milliTokens, atMs: nowMs }, waitMs: Math.ceil((1000 - milliTokens) / perSecond) };
}

export class NewActorRate {
  private readonly buckets = new Map<string, RateBucket>();
  private readonly perSecond: number;
  /** A full bucket, in thousandths of a token. */
  private readonly full: number;

  constructor(config: Settings<'newActorsPerTenantPerSecond'>) {
    this.perSecond = config.newActorsPerTenantPerSecond;
    this.full = this.perSecond * 1000;
  }

  /** Takes a token for a new actor of `a`'s tenant, or throws OVERLOADED with the wait until the next one. */
  take(a: ActorAddress, nowMs: number): void {
    const { bucket, waitMs } = refill(this.buckets.get(a.tenant), nowMs, this.perSecond);
    this.keep(a.tenant, bucket);
    if (waitMs > 0)
      throw new Overloaded(
        `tenant ${a.tenant} creates new actors faster than ${this.perSecond} per second (newActorsPerTenantPerSecond); ` +
          `${a.key} was not created, retry in ${waitMs} ms`,
        { details: { resource: 'newActors', tenant: a.tenant, retryAfterMs: waitMs } },
      );
  }

  /** Whether a token is there for `a`'s tenant now (nothing taken). */
  has(a: ActorAddress, nowMs: number): boolean {
    return refill(this.buckets.get(a.tenant), nowMs, this.perSecond).waitMs === 0;
  }

  /** Gives back the token of a create that found the actor existed (its PUT lost to a hold). */
  giveBack(a: ActorAddress): void {
    const b = this.buckets.get(a.tenant);
    if (b) this.keep(a.tenant, { milliTokens: Math.min(this.full, b.milliTokens + 1000), atMs: b.atMs });
  }

  private keep(tenant: string, bucket: RateBucket): void {
    this.buckets.delete(tenant); // re-insert: the least recently used first in line to be forgotten
    if (bucket.milliTokens >= this.full) return;
    this.buckets.set(tenant, bucket);
    if (this.buckets.size > TENANTS_MAX) this.buckets.delete(this.buckets.keys().next().value!);
  }
}
