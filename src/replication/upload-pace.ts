/**
 * How long a plain call's commit waits for others of its actor to join its upload (replica.ts
 * `committed`): `replicationDelayMs` while the worker thread has time to spare, growing to
 * `replicationDelayMaxMs` as its event loop gets busy. A link costs about the same CPU however
 * many commits it carries (the WAL's capture, the deflate, the hash, the put), so a busy worker
 * that waits longer makes fewer, larger links and leaves the CPU to its calls; an idle one
 * uploads each commit within replicationDelayMs. The wait is bounded either way.
 *
 *   u: the share of time the worker's event loop was busy since the last reading (the caller's
 *      `busy()`, read at most every SAMPLE_MS of the injected clock)
 *   u ≤ 0.5 → replicationDelayMs    u ≥ 0.9 → replicationDelayMaxMs    linear between
 *
 * Uploads a caller waits for (a durable call, an alarm's delivery, an actor's close) do not wait
 * for the window: they call the replica's `sync` directly.
 */
import type { Clock } from '../core/clock.js';
import type { Settings } from '../core/config.js';

export type UploadPaceSettings = Settings<'replicationDelayMs' | 'replicationDelayMaxMs'>;

/** Readings of the worker's load are at least this far apart (ms). */
export const SAMPLE_MS = 50;
/** Busy shares at which the window starts to grow, and reaches its longest. */
export const IDLE_BELOW = 0.5;
export const BUSY_ABOVE = 0.9;

export class UploadPace {
  #delayMs: number;
  #readAt: number;

  /**
   * `busy`: the share (0–1) of time the worker's event loop was busy since the last call;
   * `onWindow`: told each new window (the node's metrics).
   */
  constructor(
    private readonly settings: UploadPaceSettings,
    private readonly busy: () => number,
    private readonly clock: Clock,
    private readonly onWindow: (ms: number) => void = () => undefined,
  ) {
    this.#delayMs = settings.replicationDelayMs;
    this.#readAt = clock.now();
  }

  /** The group-commit window for a commit made now. */
  delayMs(): number {
    const now = this.clock.now();
    if (now - this.#readAt >= SAMPLE_MS) {
      this.#readAt = now;
      const next = windowFor(this.busy(), this.settings);
      if (next !== this.#delayMs) this.onWindow(next);
      this.#delayMs = next;
    }
    return this.#delayMs;
  }
}

/** The window for a busy share `u`. */
export function windowFor(u: number, s: UploadPaceSettings): number {
  const min = s.replicationDelayMs;
  const max = Math.max(min, s.replicationDelayMaxMs);
  const x = Math.min(1, Math.max(0, (u - IDLE_BELOW) / (BUSY_ABOVE - IDLE_BELOW)));
  return Math.round(min + (max - min) * x);
}
