/**
 * `S3Store`: the `ObjectStore` on an S3 bucket (AWS, Ceph RGW, other S3-compatible servers),
 * addressed as `s3://bucket/optional/prefix?endpoint=http://host:port&region=us-east-1` (parsed by
 * s3/url.ts); failed requests are classified by s3/errors.ts.
 *
 * Contract (src/store/types.ts): keys are validated before any I/O and live under the URL's
 * prefix (stripped again in listings); listings come back in S3's UTF-8 byte order, paged with
 * S3's own continuation tokens; etags are unquoted; `put` maps the conditions to `If-None-Match: *`
 * and `If-Match: <etag>`. Every request is tried at most `storeAttemptsMax` times, with jittered,
 * doubling delays drawn from the injected `Random` and slept on the injected `Clock`.
 *
 * Conditional writes never claim an outcome they cannot prove:
 *
 *   PUT ──2xx──────────────────────────────────────────────→ success
 *    ├──412 (or 404 on If-Match), no earlier unknown attempt ─→ PreconditionFailed
 *    ├──5xx / network error: outcome unknown ──retry──┐
 *    ├──409 ConditionalRequestConflict: not applied ──retry──┤
 *    ├──throttled (503 SlowDown, 429, …), no earlier unknown attempt ─→ throttled StoreUnavailable
 *    │    (not applied: the governor above sends it again; after an unknown attempt: retry here)
 *    └──other 4xx: not applied ─────────────────────────────→ StoreUnavailable
 *   retries exhausted, or a 412 after an unknown attempt ──→ GET: our body → success (its etag)
 *                                                             else → AmbiguousWrite
 *
 * The requests go through one of two clients (s3/requests.ts), made at the store's first request:
 * keepwork's lean client (s3/lean-client.ts), or with `s3SdkClient` the AWS SDK's (s3/sdk-client.ts,
 * which loads the SDK then).
 *
 * Server differences handled here (and, for the etag quotes and checksums, in the clients):
 * - If-Match on a missing key: AWS answers 404 NoSuchKey, RGW 412; both become PreconditionFailed.
 * - Concurrent If-Match losers on RGW often get 500 (its ECANCELED) instead of 412: a 5xx on a
 *   conditional write is ambiguous, resolved by the read-back above. AWS may answer 409
 *   ConditionalRequestConflict, which it documents as "not applied, retry".
 * - RGW error bodies carry no message: errors are classified by name and HTTP status only.
 * - Bodies are sent as Buffers: streamed ones get 411 from RGW with the SDK's default checksums
 *   (or are stored with their chunk trailers by other servers).
 * - The SDK's own retries are off: this file retries, within the config's budget.
 *
 * Throttle answers (503 SlowDown, 429 and the codes of s3/errors.ts `THROTTLE_CODES`) are not
 * retried here: each becomes a StoreUnavailable marked throttled, with the answer's Retry-After
 * (store/throttle/signal.ts), which the governor openStore puts around this store takes as a
 * signal for the request's whole class (store/throttle/governor.ts). So is a DeleteObjects answer
 * that reports throttle codes for some of its keys.
 */
import type { PutConditions, S3ClientOptions, S3Requests } from './requests.js';
import { LeanS3Client } from './lean-client.js';
import { connectSdk } from './sdk-client.js';
import type { Clock } from '../../core/clock.js';
import { AmbiguousWrite, BadKey, BadRequest, PreconditionFailed, StoreUnavailable } from '../../core/errors.js';
import type { Random } from '../../core/random.js';
import { retry } from '../../core/retry.js';
import type { Settings } from '../../core/config.js';

export type S3Settings = Settings<'storeAttemptsMax' | 'storeRetryBaseMs' | 'storeRequestTimeoutMs' | 'storeSocketsMax' | 's3SdkClient'>;
import { sameBytes, unquoteEtag } from '../etag.js';
import { THROTTLE_CODES, TRANSIENT_DELETE_CODES, classifyS3Error, describe, isRetryableS3Error, retryAfterOf } from './errors.js';
import { parseRetryAfter } from '../../core/retry-after.js';
import { throttledError } from '../throttle/signal.js';
import { KEY_MAX_BYTES, resolveList, validateKey, validatePrefix } from '../keys.js';
import {
  LIST_MAX_KEYS,
  type ListOptions,
  type ListPage,
  type ObjectHead,
  type ObjectStore,
  type PutCondition,
  type StoredObject,
} from '../types.js';

export interface S3StoreOptions {
  bucket: string;
  /** '' or a key prefix; a missing trailing '/' is added. */
  prefix: string;
  endpoint?: string;
  region: string;
  forcePathStyle?: boolean;
  config: S3Settings;
  random: Random;
  clock: Clock;
}

const DELETE_BATCH_KEYS = 1000;

interface PutInput {
  /** The full key. */
  key: string;
  body: Buffer;
  conditions: PutConditions;
}

function toBuffer(body: Uint8Array): Buffer {
  return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
}

function etagFrom(etag: string | undefined, what: string): string {
  if (!etag) throw new StoreUnavailable(`S3 answered ${what} without an ETag`);
  return unquoteEtag(etag);
}

// ---------------------------------------------------------------------------------------------
// Store

export class S3Store implements ObjectStore {
  readonly description: string;
  private readonly clientOptions: S3ClientOptions;
  /** Set at the first request: the client (and with s3SdkClient the SDK) is made then, not when the store is. */
  private requests: Promise<S3Requests> | undefined;
  private readonly bucket: string;
  private readonly root: string;
  private readonly config: S3Settings;
  private readonly random: Random;
  private readonly clock: Clock;

  constructor(options: S3StoreOptions) {
    this.bucket = options.bucket;
    const prefix = validatePrefix(options.prefix);
    this.root = prefix === '' || prefix.endsWith('/') ? prefix : prefix + '/';
    this.config = options.config;
    this.random = options.random;
    this.clock = options.clock;
    this.description = `s3://${this.bucket}/${this.root}`;
    this.clientOptions = {
      bucket: options.bucket,
      endpoint: options.endpoint,
      region: options.region,
      forcePathStyle: options.forcePathStyle ?? options.endpoint !== undefined,
      socketsMax: options.config.storeSocketsMax,
      requestTimeoutMs: options.config.storeRequestTimeoutMs,
    };
  }

  async get(key: string): Promise<StoredObject | null> {
    const Key = this.fullKey(key);
    return this.attempt(`GET ${key}`, async () => {
      try {
        const res = await (await this.client()).get(Key);
        return { body: res.body, etag: etagFrom(res.etag, `GET ${key}`) };
      } catch (e) {
        if (classifyS3Error(e) === 'notFound') return null;
        throw e;
      }
    });
  }

  async head(key: string): Promise<ObjectHead | null> {
    const Key = this.fullKey(key);
    return this.attempt(`HEAD ${key}`, async () => {
      try {
        const res = await (await this.client()).head(Key);
        return { etag: etagFrom(res.etag, `HEAD ${key}`), size: res.size };
      } catch (e) {
        if (classifyS3Error(e) === 'notFound') return null;
        throw e;
      }
    });
  }

  async put(key: string, body: Uint8Array, condition: PutCondition = {}): Promise<{ etag: string }> {
    const input: PutInput = { key: this.fullKey(key), body: toBuffer(body), conditions: {} };
    if ('ifNoneMatch' in condition) {
      if (condition.ifNoneMatch !== '*') throw new BadRequest(`ifNoneMatch must be '*', got ${JSON.stringify(condition.ifNoneMatch)}`);
      input.conditions.ifNoneMatch = '*';
    } else if ('ifMatch' in condition) {
      if (typeof condition.ifMatch !== 'string' || condition.ifMatch === '') throw new BadRequest(`ifMatch must be a non-empty etag`);
      input.conditions.ifMatch = condition.ifMatch; // the clients send it unquoted
    }
    if (input.conditions.ifNoneMatch === undefined && input.conditions.ifMatch === undefined) {
      return this.attempt(`PUT ${key}`, () => this.sendPut(input, key));
    }
    return this.conditionalPut(key, body, input);
  }

  async delete(key: string): Promise<void> {
    const Key = this.fullKey(key);
    await this.attempt(`DELETE ${key}`, async () => {
      try {
        await (await this.client()).delete(Key);
      } catch (e) {
        if (classifyS3Error(e) !== 'notFound') throw e;
      }
    });
  }

  async deleteMany(keys: readonly string[]): Promise<void> {
    const full = [...new Set(keys.map((k) => this.fullKey(k)))];
    for (let i = 0; i < full.length; i += DELETE_BATCH_KEYS) {
      await this.deleteBatch(full.slice(i, i + DELETE_BATCH_KEYS));
    }
  }

  async list(options: ListOptions = {}): Promise<ListPage> {
    const { prefix, maxKeys } = resolveList({ ...options, continuation: undefined });
    const continuation = options.continuation;
    if (continuation !== undefined && (typeof continuation !== 'string' || continuation === ''))
      throw new BadRequest('malformed continuation token');
    const startAfter = options.startAfter ? this.root + options.startAfter : undefined;
    const client = await this.client();
    const res = await this.attempt(`LIST ${prefix}`, () =>
      client.list({ prefix: this.root + prefix, startAfter, maxKeys: Math.min(maxKeys, LIST_MAX_KEYS), continuation }),
    );
    const keys = res.keys.filter((k) => k.startsWith(this.root) && k.length > this.root.length).map((k) => k.slice(this.root.length));
    return res.continuation ? { keys, continuation: res.continuation } : { keys };
  }

  async close(): Promise<void> {
    const requests = this.requests;
    this.requests = undefined;
    if (requests) (await requests).destroy();
  }

  // -- internals -------------------------------------------------------------------------------

  /** The client, made at the first request (the SDK's is loaded then). */
  private client(): Promise<S3Requests> {
    this.requests ??= this.config.s3SdkClient
      ? connectSdk(this.clientOptions)
      : Promise.resolve(new LeanS3Client(this.clientOptions, { clock: this.clock }));
    return this.requests;
  }

  private fullKey(key: string): string {
    const full = this.root + validateKey(key);
    const bytes = Buffer.byteLength(full, 'utf8');
    if (bytes > KEY_MAX_BYTES) throw new BadKey(`object key with the store's prefix is ${bytes} bytes; the limit is ${KEY_MAX_BYTES}`);
    return full;
  }

  private async sendPut(input: PutInput, key: string): Promise<{ etag: string }> {
    const res = await (await this.client()).put(input.key, input.body, input.conditions);
    return { etag: etagFrom(res.etag, `PUT ${key}`) };
  }

  /**
   * Runs `fn` until it succeeds or `retryable` says no, at most storeAttemptsMax times; the delay
   * doubles from storeRetryBaseMs, bounded by the request timeout, jittered (core/retry.ts).
   */
  private retrying<T>(retryable: (e: unknown) => boolean, fn: () => Promise<T>, failed?: (e: unknown) => void): Promise<T> {
    const { storeAttemptsMax, storeRetryBaseMs, storeRequestTimeoutMs } = this.config;
    const policy = { attemptsMax: storeAttemptsMax, baseMs: storeRetryBaseMs, maxDelayMs: storeRequestTimeoutMs, retryable, failed };
    return retry({ clock: this.clock, random: this.random }, policy, fn);
  }

  /** Runs a request that is safe to repeat; retries unknown outcomes and conflicts. */
  private async attempt<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await this.retrying(isRetryableS3Error, fn);
    } catch (e) {
      if (classifyS3Error(e) === 'throttled') throw this.throttled(what, e);
      if (!isRetryableS3Error(e)) throw new StoreUnavailable(`S3 ${this.description} refused ${what}: ${describe(e)}`, { cause: e });
      const times = this.config.storeAttemptsMax;
      throw new StoreUnavailable(`S3 ${this.description} failed ${what} ${times} times; last: ${describe(e)}`, { cause: e });
    }
  }

  /** The throttled StoreUnavailable for a throttle answer to `what`, with its Retry-After. */
  private throttled(what: string, e: unknown): Error {
    const after = parseRetryAfter(retryAfterOf(e), this.clock.now());
    return throttledError(
      `S3 ${this.description} throttled ${what}: ${describe(e)}`,
      after === undefined ? {} : { retryAfterMs: after },
      e,
    );
  }

  /** A PUT with If-None-Match or If-Match; see the diagram at the top of the file. */
  private async conditionalPut(key: string, body: Uint8Array, input: PutInput): Promise<{ etag: string }> {
    let unknown = false; // an earlier attempt's outcome is unknown: a 412 may be our own write
    const failed = (e: unknown) => void (unknown ||= classifyS3Error(e) === 'unknown');
    // Once an attempt's outcome is unknown, a throttle is retried here: only the read-back can settle it.
    const retryable = (e: unknown) => isRetryableS3Error(e) || (unknown && classifyS3Error(e) === 'throttled');
    try {
      return await this.retrying(retryable, () => this.sendPut(input, key), failed);
    } catch (last) {
      const failure = classifyS3Error(last);
      if (failure === 'throttled' && !unknown) throw this.throttled(`PUT ${key}`, last);
      if ((failure === 'precondition' || failure === 'notFound') && !unknown)
        throw new PreconditionFailed(`precondition failed for PUT ${key} on ${this.description}`, { cause: last, details: { key } });
      if (failure === 'fatal' && !unknown)
        throw new StoreUnavailable(`S3 ${this.description} refused PUT ${key}: ${describe(last)}`, { cause: last });
      return this.readBack(key, body, last); // retries spent, or a refusal after an unknown attempt
    }
  }

  /** After an unresolved conditional write: success only if the object now holds our body. */
  private async readBack(key: string, body: Uint8Array, last: unknown): Promise<{ etag: string }> {
    let found: StoredObject | null;
    try {
      found = await this.get(key);
    } catch (e) {
      throw new AmbiguousWrite(`PUT ${key} on ${this.description}: outcome unknown (${describe(last)}) and the read-back failed`, {
        cause: e,
        details: { key },
      });
    }
    if (found && sameBytes(found.body, body)) return { etag: found.etag };
    throw new AmbiguousWrite(
      `PUT ${key} on ${this.description}: outcome unknown (${describe(last)}); the object does not hold our body now`,
      {
        cause: last,
        details: { key },
      },
    );
  }

  /**
   * One DeleteObjects request, retrying the keys it reports as failed (a missing key is fine).
   * Per-key errors map as a request's would: a transient code (InternalError, SlowDown, …) is
   * retried within storeAttemptsMax; any other (AccessDenied, …) fails at once with StoreUnavailable.
   */
  private async deleteBatch(keys: string[]): Promise<void> {
    let pending = keys;
    const once = async () => {
      const client = await this.client();
      const res = await this.attempt(`DELETE ${pending.length} keys`, () => client.deleteMany(pending));
      const failed = res.filter((x) => x.code !== 'NoSuchKey');
      if (failed.length === 0) return;
      const throttled = failed.find((x) => THROTTLE_CODES.has(x.code));
      if (throttled) throw throttledError(`S3 ${this.description} throttled DELETE of ${failed.length} keys (${throttled.code})`);
      const refused = failed.filter((x) => !TRANSIENT_DELETE_CODES.has(x.code));
      if (refused.length > 0) {
        const sample = refused
          .slice(0, 3)
          .map((x) => `${x.key}: ${x.code}`)
          .join(', ');
        throw new StoreUnavailable(`S3 ${this.description} refused to delete ${refused.length} keys (${sample})`);
      }
      pending = failed.map((x) => x.key).filter((k) => k !== '');
      throw new KeysNotDeleted(failed);
    };
    try {
      await this.retrying((e) => e instanceof KeysNotDeleted, once);
    } catch (e) {
      if (!(e instanceof KeysNotDeleted)) throw e;
      const sample = e.failed
        .slice(0, 3)
        .map((x) => `${x.key}: ${x.code}`)
        .join(', ');
      const attempts = this.config.storeAttemptsMax;
      throw new StoreUnavailable(`S3 ${this.description} failed to delete ${e.failed.length} keys after ${attempts} attempts (${sample})`);
    }
  }
}

/** Some keys of a DeleteObjects request were not deleted (internal to deleteBatch's retries). */
class KeysNotDeleted extends Error {
  constructor(readonly failed: { key: string; code: string }[]) {
    super(`${failed.length} keys not deleted`);
  }
}
