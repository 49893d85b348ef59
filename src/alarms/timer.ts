/**
 * The node's in-memory alarm timer (docs/architecture.md): the committed alarm of each actor this node
 * ran, in a min-heap, with one clock timer armed for the earliest. When an alarm comes due the
 * timer calls `onDue(actor, at)` and forgets it; the caller runs the ordinary alarm event, which
 * re-reads the committed alarm and sets the timer again from the outcome. Alarms are set for an
 * actor's address (the value `onDue` hands back) and looked up by its key.
 *
 * Backpressure: `onDue` may refuse an alarm (returns false: the caller's queue is full). The
 * alarm then stays in the heap, the timer stops firing, and `resume()` (called once there is room)
 * fires what is due, in due order. Nothing is dropped or re-timed while held.
 *
 * Time comes from the injected Clock; the heap is bounded by `maxEntries` (a set beyond it
 * throws `Overloaded`, it never drops an alarm silently). Stale heap entries (replaced or cleared) are
 * skipped lazily when they reach the top.
 */
import type { ActorAddress } from '../core/address.js';
import type { Clock, TimerHandle } from '../core/clock.js';
import { Overloaded } from '../core/errors.js';

/**
 * The timer's backoff horizon (docs/alarm-index.md "The sweep"): an entry the sweep offers for an actor whose
 * alarm this timer already holds does not replace it when the held time is earlier (it fires
 * first anyway) or within the longest backoff from now (a committed retry is pending: delivering
 * the entry now would skip the backoff).
 */
export function sweepOffer(held: number | undefined, entryAt: number, nowMs: number, retryMaxMs: number): 'keep' | 'deliver' {
  if (held === undefined) return 'deliver';
  return held <= entryAt || held <= nowMs + retryMaxMs ? 'keep' : 'deliver';
}

interface Slot {
  at: number;
  actor: ActorAddress;
}

export class AlarmTimer {
  private readonly heap: Slot[] = [];
  /** Actor key → its alarm. */
  private readonly due = new Map<string, Slot>();
  /** Deferred alarms: the due time they are reported with when they fire later (see defer). */
  private readonly deferredDue = new Map<string, number>();
  private armed: { at: number; handle: TimerHandle } | undefined;
  private stopped = false;
  /** The last due alarm was refused: nothing fires until resume(). */
  private held = false;

  constructor(
    private readonly clock: Clock,
    /** An alarm came due; returning false refuses it for now (see resume). */
    private readonly onDue: (actor: ActorAddress, at: number) => unknown,
    private readonly maxEntries = 1_000_000,
  ) {}

  /** Sets (or replaces) the alarm of `actor`; null clears it. */
  set(actor: ActorAddress, at: number | null): void {
    const { key } = actor;
    this.deferredDue.delete(key);
    if (at === null) return this.clear(actor);
    if (!this.due.has(key) && this.due.size >= this.maxEntries) {
      throw new Overloaded(`alarm timer holds ${this.maxEntries} alarms already (timerEntriesMax)`, { details: { key, at } });
    }
    if (this.due.get(key)?.at === at) return;
    const slot = { at, actor };
    this.due.set(key, slot);
    this.push(slot);
    this.compact();
    this.arm();
  }

  /**
   * Holds `actor`'s alarm due at `dueMs` until `untilMs` (a full delivery queue, a failed delivery,
   * an entry to offer again later): it fires then, reported as due at `dueMs`, so the delivery
   * still matches the entry or committed alarm it was for. A later set() or clear() replaces it.
   */
  defer(actor: ActorAddress, dueMs: number, untilMs: number): void {
    this.set(actor, untilMs);
    this.deferredDue.set(actor.key, dueMs);
  }

  /** An entry offered by the sweep: set unless the backoff horizon says to keep what is held. */
  offer(actor: ActorAddress, entryAt: number, retryMaxMs: number): boolean {
    if (sweepOffer(this.get(actor.key), entryAt, this.clock.now(), retryMaxMs) === 'keep') return false;
    this.set(actor, entryAt);
    return true;
  }

  clear(actor: ActorAddress): void {
    this.deferredDue.delete(actor.key);
    this.due.delete(actor.key);
  }

  /** When the alarm of the actor with this key fires, if it has one here. */
  get(key: string): number | undefined {
    return this.due.get(key)?.at;
  }

  get size(): number {
    return this.due.size;
  }

  /** The earliest pending alarm, if any. */
  next(): Slot | undefined {
    this.dropStale();
    return this.heap[0];
  }

  /** True while a refused alarm waits for resume(). */
  get isHeld(): boolean {
    return this.held;
  }

  /** There is room again: fire what is due now (and arm for the rest). */
  resume(): void {
    if (!this.held) return;
    this.held = false;
    this.fire();
  }

  stop(): void {
    this.stopped = true;
    this.armed?.handle.cancel();
    this.armed = undefined;
  }

  private fire(): void {
    this.armed = undefined;
    const now = this.clock.now();
    for (;;) {
      const top = this.next();
      if (!top || top.at > now || this.stopped) break;
      this.pop();
      const { key } = top.actor;
      this.due.delete(key);
      const dueMs = this.deferredDue.get(key) ?? top.at;
      this.deferredDue.delete(key);
      if (this.onDue(top.actor, dueMs) === false) {
        // Refused: back in the heap exactly as it was (unless onDue set the actor's alarm itself).
        if (!this.due.has(key)) {
          this.due.set(key, top);
          this.push(top);
          if (dueMs !== top.at) this.deferredDue.set(key, dueMs);
        }
        this.held = true;
        return;
      }
    }
    this.arm();
  }

  private arm(): void {
    if (this.stopped || this.held) return;
    const top = this.next();
    if (!top) return;
    if (this.armed && this.armed.at <= top.at) return;
    this.armed?.handle.cancel();
    const handle = this.clock.setTimer(Math.max(0, top.at - this.clock.now()), () => this.fire());
    this.armed = { at: top.at, handle };
  }

  private dropStale(): void {
    while (this.heap.length > 0 && this.get(this.heap[0]!.actor.key) !== this.heap[0]!.at) this.pop();
  }

  /** Rebuilds the heap when stale slots outnumber live ones (keeps memory bounded). */
  private compact(): void {
    if (this.heap.length <= 2 * this.due.size + 64) return;
    this.heap.length = 0;
    for (const slot of this.due.values()) this.push(slot);
  }

  private push(slot: Slot): void {
    const h = this.heap;
    h.push(slot);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (h[p]!.at <= h[i]!.at) break;
      [h[p], h[i]] = [h[i]!, h[p]!];
      i = p;
    }
  }

  private pop(): void {
    const h = this.heap;
    const last = h.pop()!;
    if (h.length === 0) return;
    h[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && h[l]!.at < h[m]!.at) m = l;
      if (r < h.length && h[r]!.at < h[m]!.at) m = r;
      if (m === i) break;
      [h[m], h[i]] = [h[i]!, h[m]!];
      i = m;
    }
  }
}
