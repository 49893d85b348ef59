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
 * The signal is the one TCP Vegas uses: how long a delivery takes against how long it takes
 * when few run. While the round trips are the limit, more in flight does not make each one take
 * longer; once the threads are the limit, it does (the deliveries wait for a thread). Both are
 * medians: a delivery on S3 is four round trips whose times vary by 3–4× between the median and
 * the 99th percentile, so the shortest delivery of a window is far below its typical one and
 * would read as queueing that is not there (Vegas' minimum suits the steady round trips of a
 * network path, not a bucket's).
 *
 *   every `limit` completed deliveries (at least WINDOW_MIN), a window:
 *     ratio = base / the window's median
 *     ratio ≥ GROW_AT and deliveries waited for a slot  ─▶ limit × GROWTH (at most `max`)
 *     ratio < SHRINK_AT                                 ─▶ limit × SHRINKAGE (at least `min`)
 *   the first window, and every PROBE_EVERY windows one more, runs at `min` (as BBR probes its
 *   round-trip time): its median is the base, so the base follows a bucket that slows down or
 *   speeds up, and is not raised by the queueing of the deliveries the limit itself let in.
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
  /** The current window's delivery times: room for the largest window. */
  readonly #times: Float64Array;
  #count = 0;
  #waited = false;
  #base = Infinity;
  #windowsToProbe = PROBE_EVERY;
  /** While a probe window runs at `min`: the limit to go back to. The first window is a probe. */
  #probing: number | undefined;
  /** Deliveries still to end that began before the probe, under a larger limit: not counted. */
  #skip = 0;

  constructor(
    readonly min: number,
    readonly max: number,
  ) {
    if (!(Number.isInteger(min) && min >= 1 && Number.isInteger(max) && max >= min))
      throw new RangeError(`delivery limit: need whole numbers 1 ≤ min ≤ max, got ${min} and ${max}`);
    this.#limit = min;
    this.#probing = min;
    this.#times = new Float64Array(Math.max(WINDOW_MIN, max));
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
    if (this.#skip > 0) {
      this.#skip--;
      return this.#limit;
    }
    this.#times[this.#count++] = ms;
    this.#waited ||= waiting;
    if (this.#count >= Math.max(WINDOW_MIN, this.#limit)) this.#endWindow();
    return this.#limit;
  }

  #endWindow(): void {
    const median = medianOf(this.#times.subarray(0, this.#count));
    if (this.#probing !== undefined) {
      this.#base = median;
      this.#limit = this.#probing;
      this.#probing = undefined;
    } else {
      const ratio = this.#base / median;
      if (ratio >= GROW_AT && this.#waited) this.#limit = Math.min(this.max, Math.ceil(this.#limit * GROWTH));
      else if (ratio < SHRINK_AT) this.#limit = Math.max(this.min, Math.floor(this.#limit * SHRINKAGE));
      if (--this.#windowsToProbe <= 0) {
        this.#windowsToProbe = PROBE_EVERY;
        if (this.#limit > this.min) {
          this.#probing = this.#limit;
          this.#skip = this.#limit; // at most this many are in flight as the probe begins
          this.#limit = this.min;
        } else this.#base = median; // already at min: this window was the probe
      }
    }
    this.#count = 0;
    this.#waited = false;
  }
}

function medianOf(times: Float64Array): number {
  const sorted = Float64Array.from(times).sort();
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
