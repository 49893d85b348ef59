/**
 * How many alarm deliveries a node runs at once: at least `deliveryConcurrency`, more while the
 * bucket's round trips, not the node's threads, are what a delivery waits for.
 *
 * A delivery is a handful of requests in a row (the hold, the chain's LIST, the snapshot's GET,
 * the new link's PUT). On a bucket that answers in microseconds (a folder) the threads are the
 * limit, and more deliveries in flight only queue in front of them. On S3 each request is a
 * round trip of tens of milliseconds, and 32 in flight would cap a node at a few hundred alarms
 * a second while its threads sit idle.
 *
 * The signal is the one TCP Vegas uses: how long a delivery takes against the shortest it takes
 * when few run. While the round trips are the limit, more in flight does not make each one take
 * longer; once the threads are the limit, it does (the deliveries wait for a thread).
 *
 *   every `limit` completed deliveries (at least WINDOW_MIN), a window:
 *     base  = the shortest delivery seen since the last probe
 *     ratio = base / the window's mean
 *     ratio ≥ GROW_AT and deliveries waited for a slot  ─▶ limit × GROWTH (at most `max`)
 *     ratio < SHRINK_AT                                 ─▶ limit × SHRINKAGE (at least `min`)
 *   every PROBE_EVERY windows, one window at `min` (as BBR probes its round-trip time): its
 *   shortest delivery is the new base, so the base follows a bucket that slows down, and is not
 *   raised by the queueing of the deliveries the limit itself let in.
 *
 * Durations come from the caller's clock (the simulator's virtual time in tests).
 */

/** Completed deliveries per window, at least (a small limit still averages over this many). */
const WINDOW_MIN = 16;
/** Deliveries take at most 1/GROW_AT times the base: the threads keep up, so more may run. */
const GROW_AT = 0.85;
/** Deliveries take over 1/SHRINK_AT times the base: they queue for the threads, so fewer run. */
const SHRINK_AT = 0.6;
const GROWTH = 1.25;
const SHRINKAGE = 0.8;
/** Windows between two probes of the base at `min`. */
const PROBE_EVERY = 32;

export class DeliveryLimit {
  #limit: number;
  #count = 0;
  #sum = 0;
  #shortest = Infinity;
  #waited = false;
  #base = Infinity;
  #windowsToProbe = PROBE_EVERY;
  /** While a probe window runs at `min`: the limit to go back to. */
  #probing: number | undefined;

  constructor(
    readonly min: number,
    readonly max: number,
  ) {
    if (!(Number.isInteger(min) && min >= 1 && Number.isInteger(max) && max >= min))
      throw new RangeError(`delivery limit: need whole numbers 1 ≤ min ≤ max, got ${min} and ${max}`);
    this.#limit = min;
  }

  /** Deliveries that may run at once now. */
  get limit(): number {
    return this.#limit;
  }

  /**
   * A delivery ended after `ms`; `waiting`: others were queued for a slot when it ended (only
   * then is the limit what holds the node back). Returns the limit, changed at a window's end.
   */
  ended(ms: number, waiting: boolean): number {
    this.#count++;
    this.#sum += ms;
    this.#shortest = Math.min(this.#shortest, ms);
    this.#waited ||= waiting;
    if (this.#count >= Math.max(WINDOW_MIN, this.#limit)) this.#endWindow();
    return this.#limit;
  }

  #endWindow(): void {
    if (this.#probing !== undefined) {
      this.#base = this.#shortest;
      this.#limit = this.#probing;
      this.#probing = undefined;
    } else {
      this.#base = Math.min(this.#base, this.#shortest);
      const ratio = this.#base / (this.#sum / this.#count);
      if (ratio >= GROW_AT && this.#waited) this.#limit = Math.min(this.max, Math.ceil(this.#limit * GROWTH));
      else if (ratio < SHRINK_AT) this.#limit = Math.max(this.min, Math.floor(this.#limit * SHRINKAGE));
      if (--this.#windowsToProbe <= 0) {
        this.#windowsToProbe = PROBE_EVERY;
        if (this.#limit > this.min) {
          this.#probing = this.#limit;
          this.#limit = this.min;
        } else this.#base = this.#shortest; // already at min: this window was the probe
      }
    }
    this.#count = 0;
    this.#sum = 0;
    this.#shortest = Infinity;
    this.#waited = false;
  }
}
