/**
 * Deletes gathered into `deleteMany` requests: keys handed in by many callers (one worker's
 * actors, each deleting the index entry its last upload replaced) go out together, at most
 * `keysMax` per request, once `delayMs` has passed since the first key waited or as soon as
 * `keysMax` keys wait. `flush()` sends what waits now (at close).
 *
 * For deletes whose timing does not matter to anyone's correctness: a key that waits, or whose
 * request fails, is only an object left in place a little longer (a failure is logged, not
 * retried: the caller's protocol must tolerate the object staying, as extra index entries are).
 * Memory is bounded by `pendingMax`: past it, a key is sent at once in a request of its own.
 * Time comes from the injected Clock.
 */
import type { Clock, TimerHandle } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { ObjectStore } from './types.js';

export interface DeleteBatchSettings {
  /** Keys per deleteMany request (S3 takes up to 1,000). */
  keysMax: number;
  /** How long the first waiting key waits for others. */
  delayMs: number;
  /** Keys waiting at most; more go out at once. */
  pendingMax: number;
}

const DELETE_BATCH_DEFAULTS: DeleteBatchSettings = Object.freeze({ keysMax: 1000, delayMs: 50, pendingMax: 100_000 });

export class DeleteBatcher {
  private pending: string[] = [];
  private timer: TimerHandle | undefined;
  private inFlight = new Set<Promise<void>>();

  constructor(
    private readonly store: ObjectStore,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly settings: DeleteBatchSettings = DELETE_BATCH_DEFAULTS,
  ) {}

  /** Keys to delete soon. */
  add(keys: readonly string[]): void {
    if (keys.length === 0) return;
    if (this.pending.length + keys.length > this.settings.pendingMax) {
      this.send([...keys]);
      return;
    }
    this.pending.push(...keys);
    if (this.pending.length >= this.settings.keysMax) this.sendPending();
    else this.timer ??= this.clock.setTimer(this.settings.delayMs, () => this.sendPending());
  }

  /** Keys waiting now. */
  get size(): number {
    return this.pending.length;
  }

  /** Sends every waiting key; resolves once every request sent so far has ended. */
  async flush(): Promise<void> {
    this.sendPending();
    await Promise.all([...this.inFlight]);
  }

  private sendPending(): void {
    this.timer?.cancel();
    this.timer = undefined;
    while (this.pending.length > 0) this.send(this.pending.splice(0, this.settings.keysMax));
  }

  private send(keys: string[]): void {
    for (let i = 0; i < keys.length; i += this.settings.keysMax) {
      const batch = keys.slice(i, i + this.settings.keysMax);
      const run = this.store
        .deleteMany(batch)
        .catch((e: unknown) =>
          this.log.warn({ keys: batch.length, first: batch[0], err: e }, 'deleting a batch of keys failed; they stay in place'),
        );
      this.inFlight.add(run);
      void run.finally(() => this.inFlight.delete(run));
    }
  }
}
