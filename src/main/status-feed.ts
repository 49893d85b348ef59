/**
 * What the status page shows over time, kept on the node in bounded rings (no I/O here):
 *
 *   samples     one point every STATUS_SAMPLE_MS: delivery backlog, index lag, held actors,
 *               timer alarms, deliveries and failures since the previous point (≤ SAMPLES_MAX)
 *   deliveries  the most recent alarm deliveries and failures, newest first (≤ DELIVERIES_MAX)
 *
 * Fed by the node's delivery path (`delivered`, `failed`: one call each in node.ts) and by the
 * HTTP layer's sampler (status-view.ts).
 */
import type { EventResult } from '../workers/messages.js';

export const SAMPLES_MAX = 300;
export const DELIVERIES_MAX = 100;

export interface StatusSample {
  atMs: number;
  /** Deliveries queued or running. */
  backlog: number;
  /** The largest keepwork_index_lag_seconds over tenants this node swept. */
  lagSeconds: number;
  held: number;
  timer: number;
  delivered: number;
  failed: number;
}

export type DeliveryOutcome = 'ran' | 'stale' | 'kept' | 'failed';

export interface DeliveryRecord {
  atMs: number;
  actor: string;
  dueMs: number;
  outcome: DeliveryOutcome;
  /** How late it started (ms after due). */
  lateMs: number;
  /** Stale entries removed, or the error of a failed delivery / handler. */
  removed?: number;
  error?: string;
}

/** A fixed-size ring: push drops the oldest. */
export class Ring<T> {
  private readonly items: T[] = [];

  constructor(readonly max: number) {}

  push(item: T): void {
    this.items.push(item);
    if (this.items.length > this.max) this.items.shift();
  }

  /** Oldest first. */
  toArray(): T[] {
    return [...this.items];
  }
}

export class StatusFeed {
  readonly samples = new Ring<StatusSample>(SAMPLES_MAX);
  readonly deliveries = new Ring<DeliveryRecord>(DELIVERIES_MAX);
  readonly totals: Record<DeliveryOutcome, number> = { ran: 0, stale: 0, kept: 0, failed: 0 };
  private sinceSample = { delivered: 0, failed: 0 };

  /** A delivery finished with a result from the worker (an error result counts as failed). */
  delivered(actor: string, dueMs: number, r: EventResult, nowMs: number): void {
    const outcome: DeliveryOutcome = r.type === 'error' ? 'failed' : r.ran ? 'ran' : r.removed ? 'stale' : 'kept';
    const error = r.type === 'error' ? r.error.message : undefined;
    const removed = r.type === 'ok' ? r.removed : undefined;
    this.record({ atMs: nowMs, actor, dueMs, outcome, lateMs: Math.max(0, nowMs - dueMs), removed, error });
  }

  /** A delivery threw (the node retries it after a lease period). */
  failed(actor: string, dueMs: number, e: unknown, nowMs: number): void {
    this.record({
      atMs: nowMs,
      actor,
      dueMs,
      outcome: 'failed',
      lateMs: Math.max(0, nowMs - dueMs),
      error: e instanceof Error ? e.message : String(e),
    });
  }

  sample(s: Omit<StatusSample, 'delivered' | 'failed'>): void {
    this.samples.push({ ...s, ...this.sinceSample });
    this.sinceSample = { delivered: 0, failed: 0 };
  }

  private record(d: DeliveryRecord): void {
    this.deliveries.push(d);
    this.totals[d.outcome]++;
    if (d.outcome === 'failed') this.sinceSample.failed++;
    else this.sinceSample.delivered++;
  }
}
