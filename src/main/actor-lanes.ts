/**
 * Per-actor serialisation on the main thread: events of one actor run one at a time, in arrival
 * order; each actor's lane holds at most `max` waiting events (more are refused with
 * OVERLOADED, changing nothing). Lanes disappear when empty, so memory follows active actors.
 *
 * `runGated`: an event that lets the next one start before it ends (a durable call once its
 * commit is done, while its reply waits for the upload): the lane stays active — counted, `has`,
 * `drained` — until it ends.
 */
import { Overloaded } from '../core/errors.js';

interface Lane {
  /** Settles when the lane's last event lets the next one start (its end, or its `release`). */
  tail: Promise<unknown>;
  /** Settles when every event of the lane has ended. */
  all: Promise<unknown>;
  pending: number;
}

export class ActorLanes {
  private readonly lanes = new Map<string, Lane>();

  constructor(private readonly max: number) {}

  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    return this.runGated(key, () => work());
  }

  /** Like `run`, but `work` may call `release()` to let the lane's next event start before it ends. */
  runGated<T>(key: string, work: (release: () => void) => Promise<T>): Promise<T> {
    let lane = this.lanes.get(key);
    if (!lane) {
      lane = { tail: Promise.resolve(), all: Promise.resolve(), pending: 0 };
      this.lanes.set(key, lane);
    }
    if (lane.pending >= this.max) {
      return Promise.reject(new Overloaded(`actor ${key} has ${lane.pending} events waiting (actorQueueMax); retry later`));
    }
    lane.pending++;
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const start = () => work(release);
    const result = lane.tail.then(start, start);
    const ended = result.then(
      () => undefined,
      () => undefined,
    );
    const l = lane;
    lane.tail = Promise.race([released, ended]);
    lane.all = Promise.all([lane.all, ended.then(() => this.done(key, l))]);
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
    while (this.lanes.size > 0) await Promise.all([...this.lanes.values()].map((l) => l.all));
  }

  private done(key: string, lane: Lane): void {
    lane.pending--;
    if (lane.pending === 0 && this.lanes.get(key) === lane) this.lanes.delete(key);
  }
}
