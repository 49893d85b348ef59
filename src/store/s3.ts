/**
 * `S3Store`: the `ObjectStore` on an S3 bucket (AWS, Ceph RGW, other S3-compatible servers),
 * addressed as `s3://bucket/optional/prefix?endpoint=http://host:port&region=us-east-1`.
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
 *    └──other 4xx: not applied ─────────────────────────────→ StoreUnavailable
 *   retries exhausted, or a 412 after an unknown attempt ──→ GET: our body → success (its etag)
 *                                                             else → AmbiguousWrite
 *
 * Server differences handled here:
 * - RGW rejects the quoted etag the SDK sends in `If-Match` (412 even when current): a build-step
 *   middleware strips the quotes from that header.
 * - If-Match on a missing key: AWS answers 404 NoSuchKey, RGW 412; both become PreconditionFailed.
 * - Concurrent If-Match losers on RGW often get 500 (its ECANCELED) instead of 412: a 5xx on a
 *   conditional write is ambiguous, resolved by the read-back above. AWS may answer 409
 *   ConditionalRequestConflict, which it documents as "not applied, retry".
 * - RGW error bodies carry no message: errors are classified by name and HTTP status only.
 * - Streamed bodies with the SDK's default checksums get 411 from RGW (or are stored with their
 *   chunk trailers by other servers): bodies are sent as Buffers, checksums only when required.
 * - The SDK's own retries are off (`maxAttempts: 1`): this file retries, within the config's budget.
 */
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import {
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type PutObjectCommandInput,
} from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import type { Clock } from '../core/clock.js';
import { AmbiguousWrite, BadConfig, BadKey, BadRequest, PreconditionFailed, StoreUnavailable } from '../core/errors.js';
import { jitter, type Random } from '../core/random.js';
import type { Settings } from '../core/config.js';

export type S3Settings = Settings<'storeAttemptsMax' | 'storeRetryBaseMs' | 'storeRequestTimeoutMs' | 'storeSocketsMax'>;
import { sameBytes, unquoteEtag } from './etag.js';
import { KEY_MAX_BYTES, resolveList, validateKey, validatePrefix } from './keys.js';
import {
  LIST_MAX_KEYS,
  type ListOptions,
  type ListPage,
  type ObjectHead,
  type ObjectStore,
  type PutCondition,
  type StoredObject,
} from './types.js';

export interface S3Location {
  bucket: string;
  /** '' or a key prefix ending in '/'. */
  prefix: string;
  endpoint?: string;
  region: string;
  forcePathStyle: boolean;
}

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

const DEFAULT_REGION = 'us-east-1';
const DELETE_BATCH_KEYS = 1000;
const BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

// ---------------------------------------------------------------------------------------------
// URL

/**
 * Parses `s3://bucket[/prefix][?endpoint=http(s)://host[:port]][&region=name]`. The prefix gets a
 * trailing '/'; a given endpoint implies path-style addressing. Region: the URL's, else
 * `AWS_REGION` / `AWS_DEFAULT_REGION`, else us-east-1. Throws `BadConfig` naming the problem.
 */
export function parseS3Url(url: string, env: NodeJS.ProcessEnv = process.env): S3Location {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new BadConfig(`not a valid URL: ${JSON.stringify(url)}; expected s3://bucket/prefix?endpoint=...&region=...`);
  }
  if (u.protocol !== 's3:') throw new BadConfig(`S3 URL must start with s3://, got ${JSON.stringify(url)}`);
  if (u.username || u.password || u.port || u.hash)
    throw new BadConfig(`S3 URL must not carry credentials, a port or a #fragment: ${JSON.stringify(url)}`);
  const bucket = u.hostname;
  if (!BUCKET_NAME.test(bucket) || bucket.includes('..'))
    throw new BadConfig(`invalid S3 bucket name ${JSON.stringify(bucket)} in ${JSON.stringify(url)}`);
  const location: S3Location = { bucket, prefix: parsePrefix(rawPath(url), url), region: DEFAULT_REGION, forcePathStyle: false };
  for (const [name, value] of u.searchParams) {
    if (name === 'endpoint') location.endpoint = parseEndpoint(value);
    else if (name === 'region') location.region = parseRegion(value);
    else throw new BadConfig(`unknown S3 URL parameter ${JSON.stringify(name)}; known: endpoint, region`);
  }
  if (!u.searchParams.has('region')) location.region = env.AWS_REGION || env.AWS_DEFAULT_REGION || DEFAULT_REGION;
  location.forcePathStyle = location.endpoint !== undefined;
  return location;
}

/** The path as written: `URL` would resolve `a/../b` to `/b` and silently change the prefix. */
function rawPath(url: string): string {
  const rest = url.slice(url.indexOf('//') + 2).split(/[?#]/, 1)[0]!;
  const slash = rest.indexOf('/');
  return slash < 0 ? '' : rest.slice(slash);
}

function parsePrefix(pathname: string, url: string): string {
  let path: string;
  try {
    path = decodeURIComponent(pathname);
  } catch {
    throw new BadConfig(`S3 URL has a malformed %-escape in its path: ${JSON.stringify(url)}`);
  }
  path = path.replace(/^\/+/, '').replace(/\/+$/, '');
  if (path === '') return '';
  try {
    validateKey(path);
  } catch (e) {
    throw new BadConfig(`invalid prefix in S3 URL ${JSON.stringify(url)}: ${(e as Error).message}`, { cause: e });
  }
  return path + '/';
}

function parseEndpoint(value: string): string {
  let e: URL;
  try {
    e = new URL(value);
  } catch {
    throw new BadConfig(`S3 endpoint must be an http(s) URL, got ${JSON.stringify(value)}`);
  }
  if (e.protocol !== 'http:' && e.protocol !== 'https:')
    throw new BadConfig(`S3 endpoint must be an http(s) URL, got ${JSON.stringify(value)}`);
  if ((e.pathname !== '/' && e.pathname !== '') || e.search || e.hash || e.username) {
    throw new BadConfig(`S3 endpoint must be scheme://host[:port] only, got ${JSON.stringify(value)}`);
  }
  return e.origin;
}

function parseRegion(value: string): string {
  if (!/^[a-z0-9-]{1,64}$/.test(value)) throw new BadConfig(`invalid S3 region ${JSON.stringify(value)}`);
  return value;
}

// ---------------------------------------------------------------------------------------------
// Error classification (pure)

/**
 * - precondition: 412, or 404 on a write (AWS's If-Match on a missing key)
 * - notFound:     404 on a read
 * - conflict:     409 (AWS ConditionalRequestConflict, OperationAborted): not applied, retry
 * - unknown:      5xx, 429, timeouts, network errors: may or may not have been applied, retry
 * - fatal:        any other answer (403, 400, NoSuchBucket, ...): not applied, do not retry
 */
export type S3Failure = 'precondition' | 'notFound' | 'conflict' | 'unknown' | 'fatal';

/** Per-key codes of a DeleteObjects answer worth retrying (the rest are refusals). */
const TRANSIENT_DELETE_CODES = new Set(['InternalError', 'ServiceUnavailable', 'SlowDown', 'RequestTimeout', 'OperationAborted', '']);

export function classifyS3Error(e: unknown): S3Failure {
  const err = e as { name?: string; $metadata?: { httpStatusCode?: number } } | null;
  const status = err?.$metadata?.httpStatusCode;
  const name = err?.name ?? '';
  if (name === 'NoSuchBucket') return 'fatal';
  if (status === 412 || name === 'PreconditionFailed') return 'precondition';
  if (status === 404 || name === 'NoSuchKey' || name === 'NotFound') return 'notFound';
  if (status === 409) return 'conflict';
  if (status === undefined || status >= 500 || status === 429 || status === 408) return 'unknown';
  return 'fatal';
}

function describe(e: unknown): string {
  const err = e as { name?: string; code?: string; message?: string; $metadata?: { httpStatusCode?: number } } | null;
  const status = err?.$metadata?.httpStatusCode;
  return [err?.name, err?.code, status === undefined ? 'no HTTP status' : `HTTP ${status}`, err?.message].filter(Boolean).join(' ');
}

// ---------------------------------------------------------------------------------------------
// Client

/** Strips the quotes around the etag in `If-Match` (RGW answers 412 to the quoted form). */
function unquoteIfMatch(client: S3Client): void {
  client.middlewareStack.add(
    (next) => async (args) => {
      const headers = (args.request as { headers?: Record<string, string> } | undefined)?.headers;
      if (headers) {
        for (const name of Object.keys(headers)) {
          if (name.toLowerCase() === 'if-match') headers[name] = unquoteEtag(headers[name]!);
        }
      }
      return next(args);
    },
    { step: 'build', name: 'keepworkUnquoteIfMatch', override: true },
  );
}

function makeClient(options: S3StoreOptions): S3Client {
  const agent = { keepAlive: true, maxSockets: options.config.storeSocketsMax };
  const client = new S3Client({
    region: options.region,
    endpoint: options.endpoint,
    forcePathStyle: options.forcePathStyle ?? options.endpoint !== undefined,
    maxAttempts: 1,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestHandler: new NodeHttpHandler({
      httpAgent: new HttpAgent(agent),
      httpsAgent: new HttpsAgent(agent),
      requestTimeout: options.config.storeRequestTimeoutMs,
      connectionTimeout: options.config.storeRequestTimeoutMs,
    }),
  });
  unquoteIfMatch(client);
  return client;
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
  private readonly client: S3Client;
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
    this.client = makeClient(options);
  }

  async get(key: string): Promise<StoredObject | null> {
    const Key = this.fullKey(key);
    return this.attempt(`GET ${key}`, async () => {
      try {
        const res = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key }));
        const body = res.Body ? await res.Body.transformToByteArray() : new Uint8Array(0);
        return { body, etag: etagFrom(res.ETag, `GET ${key}`) };
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
        const res = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key }));
        return { etag: etagFrom(res.ETag, `HEAD ${key}`), size: res.ContentLength ?? 0 };
      } catch (e) {
        if (classifyS3Error(e) === 'notFound') return null;
        throw e;
      }
    });
  }

  async put(key: string, body: Uint8Array, condition: PutCondition = {}): Promise<{ etag: string }> {
    const input: PutObjectCommandInput = {
      Bucket: this.bucket,
      Key: this.fullKey(key),
      Body: toBuffer(body),
      ContentLength: body.byteLength,
    };
    if ('ifNoneMatch' in condition) {
      if (condition.ifNoneMatch !== '*') throw new BadRequest(`ifNoneMatch must be '*', got ${JSON.stringify(condition.ifNoneMatch)}`);
      input.IfNoneMatch = '*';
    } else if ('ifMatch' in condition) {
      if (typeof condition.ifMatch !== 'string' || condition.ifMatch === '') throw new BadRequest(`ifMatch must be a non-empty etag`);
      input.IfMatch = condition.ifMatch; // sent unquoted by unquoteIfMatch()
    }
    if (input.IfNoneMatch === undefined && input.IfMatch === undefined) {
      return this.attempt(`PUT ${key}`, () => this.sendPut(input, key));
    }
    return this.conditionalPut(key, body, input);
  }

  async delete(key: string): Promise<void> {
    const Key = this.fullKey(key);
    await this.attempt(`DELETE ${key}`, async () => {
      try {
        await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key }));
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
    const res = await this.attempt(`LIST ${prefix}`, () =>
      this.client.send(
        new ListObjectsV2Command({
          Bucket: this.bucket,
          Prefix: this.root + prefix,
          StartAfter: startAfter,
          MaxKeys: Math.min(maxKeys, LIST_MAX_KEYS),
          ContinuationToken: continuation,
        }),
      ),
    );
    const keys = (res.Contents ?? [])
      .map((o) => o.Key ?? '')
      .filter((k) => k.startsWith(this.root) && k.length > this.root.length)
      .map((k) => k.slice(this.root.length));
    return res.IsTruncated && res.NextContinuationToken ? { keys, continuation: res.NextContinuationToken } : { keys };
  }

  async close(): Promise<void> {
    this.client.destroy();
  }

  // -- internals -------------------------------------------------------------------------------

  private fullKey(key: string): string {
    const full = this.root + validateKey(key);
    const bytes = Buffer.byteLength(full, 'utf8');
    if (bytes > KEY_MAX_BYTES) throw new BadKey(`object key with the store's prefix is ${bytes} bytes; the limit is ${KEY_MAX_BYTES}`);
    return full;
  }

  private async sendPut(input: PutObjectCommandInput, key: string): Promise<{ etag: string }> {
    const res = await this.client.send(new PutObjectCommand(input));
    return { etag: etagFrom(res.ETag, `PUT ${key}`) };
  }

  /** Delay before attempt `attempt + 1`: doubling from storeRetryBaseMs, jittered, bounded. */
  private backoff(attempt: number): Promise<void> {
    const baseMs = Math.min(this.config.storeRetryBaseMs * 2 ** (attempt - 1), this.config.storeRequestTimeoutMs);
    return this.clock.sleep(jitter(this.random, baseMs));
  }

  /** Runs a request that is safe to repeat; retries unknown outcomes and conflicts. */
  private async attempt<T>(what: string, fn: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (e) {
        const failure = classifyS3Error(e);
        const retryable = failure === 'unknown' || failure === 'conflict';
        if (!retryable) throw new StoreUnavailable(`S3 ${this.description} refused ${what}: ${describe(e)}`, { cause: e });
        if (attempt >= this.config.storeAttemptsMax) {
          throw new StoreUnavailable(`S3 ${this.description} failed ${what} ${attempt} times; last: ${describe(e)}`, { cause: e });
        }
        await this.backoff(attempt);
      }
    }
  }

  /** A PUT with If-None-Match or If-Match; see the diagram at the top of the file. */
  private async conditionalPut(key: string, body: Uint8Array, input: PutObjectCommandInput): Promise<{ etag: string }> {
    let unknown = false;
    let last: unknown;
    for (let attempt = 1; attempt <= this.config.storeAttemptsMax; attempt++) {
      if (attempt > 1) await this.backoff(attempt - 1);
      try {
        return await this.sendPut(input, key);
      } catch (e) {
        last = e;
        const failure = classifyS3Error(e);
        if (failure === 'precondition' || failure === 'notFound') {
          if (!unknown)
            throw new PreconditionFailed(`precondition failed for PUT ${key} on ${this.description}`, { cause: e, details: { key } });
          break;
        }
        if (failure === 'fatal') {
          if (!unknown) throw new StoreUnavailable(`S3 ${this.description} refused PUT ${key}: ${describe(e)}`, { cause: e });
          break;
        }
        if (failure === 'unknown') unknown = true;
      }
    }
    return this.readBack(key, body, last);
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
    for (let attempt = 1; ; attempt++) {
      const res = await this.attempt(`DELETE ${pending.length} keys`, () =>
        this.client.send(
          new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: pending.map((Key) => ({ Key })), Quiet: true } }),
        ),
      );
      const failed = (res.Errors ?? []).filter((x) => x.Code !== 'NoSuchKey');
      if (failed.length === 0) return;
      const refused = failed.filter((x) => !TRANSIENT_DELETE_CODES.has(x.Code ?? ''));
      if (refused.length > 0) {
        const sample = refused
          .slice(0, 3)
          .map((x) => `${x.Key}: ${x.Code}`)
          .join(', ');
        throw new StoreUnavailable(`S3 ${this.description} refused to delete ${refused.length} keys (${sample})`);
      }
      if (attempt >= this.config.storeAttemptsMax) {
        const sample = failed
          .slice(0, 3)
          .map((x) => `${x.Key}: ${x.Code}`)
          .join(', ');
        throw new StoreUnavailable(`S3 ${this.description} failed to delete ${failed.length} keys after ${attempt} attempts (${sample})`);
      }
      pending = failed.map((x) => x.Key ?? '').filter((k) => k !== '');
      await this.backoff(attempt);
    }
  }
}
