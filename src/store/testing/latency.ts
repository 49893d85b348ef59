/**
 * LatencyStore: any store with S3-like latency, for benchmarks. Every request waits `ms` on the
 * injected Clock (one timer, no CPU while waiting) before it is sent to the inner store; a
 * `deleteMany` counts as one request per 1,000 keys, as S3's DeleteObjects does. `close` is not
 * delayed. Under SimClock the delay is virtual time, so the simulator could use it.
 *
 *   caller ──▶ clock.sleep(ms) ──▶ inner store ──▶ reply
 *
 * Opened by `openStore` from `latency+<inner url>` with an optional `ms` query parameter (default
 * 20), e.g. `latency+file:///tmp/bucket?ms=20` or `latency+s3://b/p?endpoint=http://h:7480&ms=5`.
 */
import type { Clock } from '../../core/clock.js';
import { BadConfig } from '../../core/errors.js';
import {
  LIST_MAX_KEYS,
  type ListOptions,
  type ListPage,
  type ObjectHead,
  type ObjectStore,
  type PutCondition,
  type StoredObject,
} from '../types.js';
import { splitWrapperUrl } from './wrapper-url.js';

export const DEFAULT_LATENCY_MS = 20;
export const LATENCY_SCHEME = 'latency+';

export class LatencyStore implements ObjectStore {
  readonly description: string;

  constructor(
    private readonly inner: ObjectStore,
    private readonly clock: Clock,
    readonly ms: number = DEFAULT_LATENCY_MS,
  ) {
    if (!Number.isFinite(ms) || ms < 0) throw new BadConfig(`latency must be a number of milliseconds ≥ 0, got ${ms}`);
    this.description = `latency(${ms} ms)+${inner.description}`;
  }

  async get(key: string): Promise<StoredObject | null> {
    await this.delay();
    return this.inner.get(key);
  }

  async head(key: string): Promise<ObjectHead | null> {
    await this.delay();
    return this.inner.head(key);
  }

  async put(key: string, body: Uint8Array, condition?: PutCondition): Promise<{ etag: string }> {
    await this.delay();
    return this.inner.put(key, body, condition);
  }

  async delete(key: string): Promise<void> {
    await this.delay();
    return this.inner.delete(key);
  }

  async deleteMany(keys: readonly string[]): Promise<void> {
    for (let i = 0; i < Math.max(1, keys.length); i += LIST_MAX_KEYS) await this.delay(); // one DeleteObjects per 1,000 keys
    return this.inner.deleteMany(keys);
  }

  async list(options?: ListOptions): Promise<ListPage> {
    await this.delay();
    return this.inner.list(options);
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  private delay(): Promise<void> {
    return this.ms > 0 ? this.clock.sleep(this.ms) : Promise.resolve();
  }
}

/** Splits `latency+<inner>[?…ms=N…]` into the inner URL (without `ms`) and the delay. */
export function parseLatencyUrl(url: string): { inner: string; ms: number } {
  const { inner, params } = splitWrapperUrl(url, LATENCY_SCHEME, ['ms']);
  const text = params.get('ms');
  const ms = text === undefined ? DEFAULT_LATENCY_MS : Number(text);
  if (text !== undefined && (text.trim() === '' || !Number.isFinite(ms) || ms < 0))
    throw new BadConfig(`latency URL ${JSON.stringify(url)}: ms must be a number ≥ 0, got ${JSON.stringify(text)}`);
  return { inner, ms };
}
