/**
 * Per-actor serialisation on the main thread: events of one actor run one at a time, in arrival
 * order; each actor's lane holds at most `max` waiting events (more are refused with
 * OVERLOADED, changing nothing). Lanes disappear when empty, so memory follows active actors.
 */
import { Overloaded } from '../core/errors.js';

interface Lane {
  tail: Promise<unknown>;
  pending: number;
}

export class ActorLanes {
  private readonly lanes = new Map<string, Lane>();

  constructor(private readonly max: number) {}

  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    let lane = this.lanes.get(key);
    if (!lane) {
      lane = { tail: Promise.resolve(), pending: 0 };
      this.lanes.set(key, lane);
    }
    if (lane.pending >= this.max) {
      return Promise.reject(new Overloaded(`actor ${key} has ${lane.pending} events waiting (actorQueueMax); retry later`));
    }
    lane.pending++;
    const result = lane.tail.then(work, work);
    const l = lane;
    lane.tail = result.then(
      () => this.done(key, l),
      () => this.done(key, l),
    );
    return result;
  }

  /** True while the actor has events running or waiting. */
  has(key: string): boolean {
    return this.lanes.has(key);
  }

  /** Actors with events running or waiting. */
  get active(): number {
    return this.lanes.size;
  }

  /** Resolves when every lane is empty. */
  async drained(): Promise<void> {
    while (this.lanes.size > 0) await Promise.all([...this.lanes.values()].map((l) => l.tail));
  }

  private done(key: string, lane: Lane): void {
    lane.pending--;
    if (lane.pending === 0 && this.lanes.get(key) === lane) this.lanes.delete(key);
  }
}
