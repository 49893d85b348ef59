/**
 * What the status page shows over time, kept on the node in bounded rings (no I/O here):
 *
 *   samples     one point every STATUS_SAMPLE_MS: delivery backlog, index lag, held actors,
 *               timer alarms, deliveries by outcome since the previous point (≤ SAMPLES_MAX)
 *   deliveries  the most recent alarm deliveries and failures (≤ DELIVERIES_MAX)
 *   failures    the most recent failed deliveries only, with their errors (≤ FAILURES_MAX), so
 *               a burst of successes does not push the last failures out of sight
 *   filesExhausted  when an event last failed for want of file descriptors
 *   actorFilesHeld  when an event last failed because a stuck worker thread holds its actor's file
 *
 * Error messages are cut to ERROR_CHARS_MAX characters.
 *
 * Fed by the node's delivery path (`delivered`, `failed`: one call each in node.ts), its event
 * results (`outOfFiles`, `fileHeld`) and by the
 * HTTP layer's sampler (status-view.ts).
 */
import type { EventResult } from '../workers/messages.js';

const SAMPLES_MAX = 300;
export const DELIVERIES_MAX = 100;
export const FAILURES_MAX = 20;
export const ERROR_CHARS_MAX = 300;

export interface StatusSample {
  atMs: number;
  /** Deliveries queued or running. */
  backlog: number;
  /** The largest keepwork_index_lag_seconds over tenants this node swept. */
  lagSeconds: number;
  held: number;
  timer: number;
  /** Deliveries that did not fail (ran + stale + kept) since the previous sample. */
  delivered: number;
  failed: number;
  ran: number;
  stale: number;
  kept: number;
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
  /** The error's code (core/errors.ts ErrorCode) when it has one. */
  code?: string;
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
  readonly failures = new Ring<DeliveryRecord>(FAILURES_MAX);
  readonly totals: Record<DeliveryOutcome, number> = { ran: 0, stale: 0, kept: 0, failed: 0 };
  private sinceSample = { ran: 0, stale: 0, kept: 0, failed: 0 };
  /** When an event last failed for want of file descriptors (FILES_EXHAUSTED), and the message; null: never. */
  filesExhausted: { atMs: number; message: string } | null = null;

  /** When an event last failed because its actor's file is held (core/file-held.ts), and the message; null: never. */
  actorFilesHeld: { atMs: number; message: string } | null = null;

  /** An event failed with FILES_EXHAUSTED (node.ts): the node's health says so for a while (status-health.ts). */
  outOfFiles(message: string, nowMs: number): void {
    this.filesExhausted = { atMs: nowMs, message: cut(message) };
  }

  /** An event failed because its actor's file is held by a stuck worker thread (node.ts): as outOfFiles. */
  fileHeld(message: string, nowMs: number): void {
    this.actorFilesHeld = { atMs: nowMs, message: cut(message) };
  }

  /** A delivery finished with a result from the worker (an error result counts as failed). */
  delivered(actor: string, dueMs: number, r: EventResult, nowMs: number): void {
    const outcome: DeliveryOutcome = r.type === 'error' ? 'failed' : r.ran ? 'ran' : r.removed ? 'stale' : 'kept';
    const error = r.type === 'error' ? cut(r.error.message) : undefined;
    const code = r.type === 'error' ? r.error.code : undefined;
    const removed = r.type === 'ok' ? r.removed : undefined;
    this.record({ atMs: nowMs, actor, dueMs, outcome, lateMs: Math.max(0, nowMs - dueMs), removed, error, code });
  }

  /** A delivery threw (the node retries it after a lease period). */
  failed(actor: string, dueMs: number, e: unknown, nowMs: number): void {
    this.record({
      atMs: nowMs,
      actor,
      dueMs,
      outcome: 'failed',
      lateMs: Math.max(0, nowMs - dueMs),
      error: cut(e instanceof Error ? e.message : String(e)),
      code: codeOf(e),
    });
  }

  sample(s: Omit<StatusSample, 'delivered' | DeliveryOutcome>): void {
    const c = this.sinceSample;
    this.samples.push({ ...s, delivered: c.ran + c.stale + c.kept, ...c });
    this.sinceSample = { ran: 0, stale: 0, kept: 0, failed: 0 };
  }

  private record(d: DeliveryRecord): void {
    this.deliveries.push(d);
    if (d.outcome === 'failed') this.failures.push(d);
    this.totals[d.outcome]++;
    this.sinceSample[d.outcome]++;
  }
}

function cut(message: string): string {
  return message.length <= ERROR_CHARS_MAX ? message : message.slice(0, ERROR_CHARS_MAX - 1) + '…';
}

function codeOf(e: unknown): string | undefined {
  const code = typeof e === 'object' && e !== null ? (e as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? code : undefined;
}
