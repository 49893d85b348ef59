/**
 * Per-actor serialisation on the main thread: events of one actor run one at a time, in arrival
 * order; each actor's lane holds at most `max` waiting events (more are refused with
 * OVERLOADED, changing nothing). Lanes disappear when empty, so memory follows active actors.
 *
 * `batch` queues an event that may share one run with its neighbours: events that arrive while
 * the lane is busy join the batch waiting at the lane's tail (up to `cap` events), and the batch
 * runs as one unit of work once its turn comes, each event settled with its own outcome. A `run`
 * queued after a batch closes it, so nothing overtakes anything: order stays arrival order.
 */
import { Overloaded } from '../core/errors.js';

/** One event's outcome in a batch. */
export type Outcome<R> = { ok: true; value: R } | { ok: false; error: unknown };

interface Entry {
  item: unknown;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

interface Lane {
  tail: Promise<unknown>;
  pending: number;
  /** Replies still to settle after their event let the lane go on (`keep`). */
  kept: Set<Promise<unknown>>;
  /** The batch at the lane's tail that has not started yet: later batched events join it. */
  open: { entries: Entry[]; cap: number } | undefined;
}

export class ActorLanes {
  private readonly lanes = new Map<string, Lane>();

  constructor(private readonly max: number) {}

  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const lane = this.admit(key);
    if (lane instanceof Overloaded) return Promise.reject(lane);
    lane.open = undefined;
    return this.enqueue(key, lane, work, 1);
  }

  /**
   * Queues `item`; it runs with the events batched after it, up to `cap` (≥ 1) in one call of
   * `work`, which returns one outcome per item, in order. The work of the batch an item joins is
   * the one its first item brought: every caller of `batch` on a key must pass the same work.
   * If `work` throws, every item of its batch fails with that error.
   */
  batch<I, R>(key: string, item: I, cap: number, work: (items: I[]) => Promise<Outcome<R>[]>): Promise<R> {
    const lane = this.admit(key);
    if (lane instanceof Overloaded) return Promise.reject(lane);
    return new Promise<R>((resolve, reject) => {
      const entry: Entry = { item, resolve: resolve as (v: unknown) => void, reject };
      const open = lane.open;
      if (open && open.entries.length < open.cap) {
        open.entries.push(entry);
        return;
      }
      const batch = { entries: [entry], cap: Math.max(1, cap) };
      lane.open = batch;
      const runBatch = async () => {
        if (lane.open === batch) lane.open = undefined; // started: later events wait for the next batch
        const { entries } = batch;
        try {
          const outcomes = await work(entries.map((e) => e.item as I));
          entries.forEach((e, i) => {
            const o = outcomes[i];
            if (!o) e.reject(new Error(`a batch of ${entries.length} events returned ${outcomes.length} outcomes`));
            else if (o.ok) e.resolve(o.value);
            else e.reject(o.error);
          });
        } catch (err) {
          for (const e of entries) e.reject(err);
        }
      };
      void this.enqueue(key, lane, runBatch, () => batch.entries.length).catch(() => undefined);
    });
  }

  /** True while the actor has events running or waiting. */
  has(key: string): boolean {
    return this.lanes.has(key);
  }

  /** Actors with events running or waiting. */
  get active(): number {
    return this.lanes.size;
  }

  /**
   * Keeps the actor's lane (counted, `has`, `drained`) until `reply` settles, without holding up
   * the lane's next events: a durable call whose commit is done while its link is in flight.
   */
  keep<T>(key: string, reply: Promise<T>): Promise<T> {
    const l = this.laneOf(key);
    l.pending++;
    const settled = reply.then(
      () => undefined,
      () => undefined,
    );
    l.kept.add(settled);
    void settled.then(() => {
      l.kept.delete(settled);
      this.done(key, l, 1);
    });
    return reply;
  }

  /** Resolves when every lane is empty. */
  async drained(): Promise<void> {
    while (this.lanes.size > 0) await Promise.all([...this.lanes.values()].flatMap((l) => [l.tail, ...l.kept]));
  }

  /** The actor's lane, with room for one more event (counted), or OVERLOADED. */
  private admit(key: string): Lane | InstanceType<typeof Overloaded> {
    const lane = this.laneOf(key);
    if (lane.pending >= this.max) {
      return new Overloaded(`actor ${key} has ${lane.pending} events waiting (actorQueueMax); retry later`);
    }
    lane.pending++;
    return lane;
  }

  /** The actor's lane, made (empty) if it has none. */
  private laneOf(key: string): Lane {
    let lane = this.lanes.get(key);
    if (!lane) {
      lane = { tail: Promise.resolve(), pending: 0, kept: new Set(), open: undefined };
      this.lanes.set(key, lane);
    }
    return lane;
  }

  /** `count`: the events this work stands for, read when it ends (a batch grows while it waits). */
  private enqueue<T>(key: string, lane: Lane, work: () => Promise<T>, count: number | (() => number)): Promise<T> {
    const result = lane.tail.then(work, work);
    const done = () => this.done(key, lane, typeof count === 'number' ? count : count());
    lane.tail = result.then(done, done);
    return result;
  }

  private done(key: string, lane: Lane, events: number): void {
    lane.pending -= events;
    if (lane.pending === 0 && this.lanes.get(key) === lane) this.lanes.delete(key);
  }
}
