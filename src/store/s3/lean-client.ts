/**
 * keepwork's own S3 client for the store's six requests: Signature V4 with node:crypto
 * (s3/sigv4.ts), one keep-alive undici Pool for the bucket's origin, the XML read by s3/xml.ts. It
 * costs a fraction of the SDK's CPU per request, and undici's pool less than a node:http Agent
 * (docs/benchmarks.md, "s3-overhead"); it loads no SDK module unless the credentials need the
 * SDK's chain (s3/credentials.ts).
 *
 *   request ─ sign (credentials cached; clock + skew offset) ─ pool.request ────┬─ 2xx → result
 *                                                                              ├─ 403 RequestTimeTooSkewed (first time)
 *                                                                              │    → offset from the Date header, sign again, once
 *                                                                              └─ else → S3ServiceError(code, status)
 *
 * What it does as the SDK client does (s3/sdk-client.ts): path-style addressing with an endpoint
 * (virtual-hosted otherwise, except for bucket names with dots), `If-Match` sent unquoted, bodies
 * sent whole with a Content-Length, Content-MD5 on DeleteObjects, no retries of its own (s3/store.ts
 * retries), no redirects followed, at most `socketsMax` sockets, and `requestTimeoutMs` bounding
 * each request from its start to the body's last byte. A request that fails without an answer
 * (reset, refused, timed out) rejects with undici's error, which has no HTTP status: the store
 * takes it as a request that may have been applied.
 */
import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { createRequire } from 'node:module';
import type { Dispatcher, Pool } from 'undici';
import type { Clock } from '../../core/clock.js';
import { CachedCredentials, defaultCredentialSource, type CredentialSource } from './credentials.js';
import { S3ServiceError, codeOfStatus } from './errors.js';
import type { ListRequest, PutConditions, S3ClientOptions, S3Requests } from './requests.js';
import { EMPTY_SHA256, SigningKeys, amzDate, authorization, canonicalQuery, encodePath, sha256Hex } from './sigv4.js';
import { deleteErrors, deleteRequest, errorCode, listPage, unescapeXml } from './xml.js';
import { unquoteEtag } from '../etag.js';

/**
 * undici (about 110 modules) loads with the first client, not with this module: every thread of a
 * node imports the store kinds, and one on a folder bucket never makes an S3 request.
 */
const requireCjs = createRequire(import.meta.url);

export interface LeanClientDeps {
  clock: Clock;
  credentials?: CredentialSource;
}

/** Where requests go: the origin to connect to, the Host header, and the bucket's path. */
export interface Addressing {
  protocol: 'http:' | 'https:';
  hostname: string;
  port: number;
  /** The Host header, as signed (no port when it is the scheme's default). */
  host: string;
  /** '/bucket' (path-style) or '' (virtual-hosted); an object's path is this + '/' + encoded key. */
  bucketPath: string;
}

/** Path-style with an endpoint or a bucket name that is not one DNS label; virtual-hosted otherwise. */
export function addressing(o: Pick<S3ClientOptions, 'bucket' | 'endpoint' | 'region' | 'forcePathStyle'>): Addressing {
  const base = new URL(o.endpoint ?? `https://s3.${o.region}.amazonaws.com`);
  const protocol = base.protocol === 'http:' ? 'http:' : 'https:';
  const port = base.port ? Number(base.port) : protocol === 'http:' ? 80 : 443;
  const pathStyle = o.forcePathStyle || !/^[a-z0-9][a-z0-9-]*$/.test(o.bucket);
  const hostname = pathStyle ? base.hostname : `${o.bucket}.${base.hostname}`;
  const host = base.port ? `${hostname}:${base.port}` : hostname;
  return { protocol, hostname, port, host, bucketPath: pathStyle ? `/${o.bucket}` : '' };
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  /** The body as received: `bytes()` copies it into a buffer of its own, `text()` decodes it. */
  chunks: Buffer[];
  size: number;
}

/** Request headers by lower-case name (not the fetch API's global `Headers`). */
type HeaderFields = Record<string, string>;

interface Outgoing {
  method: 'GET' | 'HEAD' | 'PUT' | 'DELETE' | 'POST';
  path: string;
  query?: [string, string][];
  /** Headers sent but not signed (If-Match, Content-Type, …). */
  headers?: Record<string, string>;
  /** Headers sent and signed besides host and x-amz-*. */
  signed?: Record<string, string>;
  body?: Buffer;
}

export class LeanS3Client implements S3Requests {
  private readonly at: Addressing;
  private readonly pool: Pool;
  private readonly credentials: CachedCredentials;
  private readonly keys = new SigningKeys();
  private readonly clock: Clock;
  /** Server time minus ours, learnt from a RequestTimeTooSkewed answer. */
  private skewMs = 0;

  constructor(
    private readonly options: S3ClientOptions,
    deps: LeanClientDeps,
  ) {
    this.at = addressing(options);
    const origin = `${this.at.protocol}//${this.at.hostname}:${this.at.port}`;
    const { Pool: UndiciPool } = requireCjs('undici') as typeof import('undici');
    this.pool = new UndiciPool(origin, { connections: options.socketsMax, connectTimeout: options.requestTimeoutMs });
    this.clock = deps.clock;
    this.credentials = new CachedCredentials(deps.credentials ?? defaultCredentialSource(), deps.clock);
  }

  async get(key: string) {
    const res = await this.send({ method: 'GET', path: this.objectPath(key) });
    return { body: bytes(res), etag: header(res.headers.etag) };
  }

  async head(key: string) {
    const res = await this.send({ method: 'HEAD', path: this.objectPath(key) });
    return { etag: header(res.headers.etag), size: Number(res.headers['content-length'] ?? 0) };
  }

  async put(key: string, body: Buffer, conditions: PutConditions) {
    const headers: Record<string, string> = {};
    if (conditions.ifNoneMatch) headers['if-none-match'] = conditions.ifNoneMatch;
    if (conditions.ifMatch !== undefined) headers['if-match'] = unquoteEtag(conditions.ifMatch);
    const res = await this.send({ method: 'PUT', path: this.objectPath(key), headers, body });
    return { etag: header(res.headers.etag) };
  }

  async delete(key: string): Promise<void> {
    await this.send({ method: 'DELETE', path: this.objectPath(key) });
  }

  async deleteMany(keys: readonly string[]) {
    const body = Buffer.from(deleteRequest(keys));
    const signed = { 'content-md5': createHash('md5').update(body).digest('base64') };
    const headers = { 'content-type': 'application/xml' };
    const res = await this.send({ method: 'POST', path: this.bucketPath(), query: [['delete', '']], signed, headers, body });
    return deleteErrors(text(res));
  }

  async list(request: ListRequest) {
    const query: [string, string][] = [
      ['list-type', '2'],
      ['prefix', request.prefix],
      ['max-keys', String(request.maxKeys)],
    ];
    if (request.startAfter !== undefined) query.push(['start-after', request.startAfter]);
    if (request.continuation !== undefined) query.push(['continuation-token', request.continuation]);
    const res = await this.send({ method: 'GET', path: this.bucketPath(), query });
    return listPage(text(res));
  }

  destroy(): void {
    void this.pool.destroy().catch(() => {});
  }

  // -- internals -------------------------------------------------------------------------------

  private objectPath(key: string): string {
    return `${this.at.bucketPath}/${encodePath(key)}`;
  }

  private bucketPath(): string {
    return this.at.bucketPath || '/';
  }

  /** Signs and sends; a first RequestTimeTooSkewed corrects the clock offset and sends again. */
  private async send(out: Outgoing): Promise<Answer> {
    let res = await this.exchange(out);
    if (res.status === 403 && errorCode(text(res)) === 'RequestTimeTooSkewed') {
      const server = Date.parse(header(res.headers.date) ?? '');
      if (Number.isFinite(server)) {
        this.skewMs = server - this.clock.now();
        res = await this.exchange(out);
      }
    }
    if (res.status >= 200 && res.status < 300) return res;
    const body = text(res);
    throw new S3ServiceError(errorCode(body) ?? codeOfStatus(res.status), res.status, messageOf(body), header(res.headers['retry-after']));
  }

  private async exchange(out: Outgoing): Promise<Answer> {
    const credentials = await this.credentials.get();
    const payloadHash = out.body ? sha256Hex(out.body) : EMPTY_SHA256;
    const date = amzDate(this.clock.now() + this.skewMs);
    const signed: Record<string, string> = { ...out.signed, host: this.at.host, 'x-amz-content-sha256': payloadHash, 'x-amz-date': date };
    if (credentials.sessionToken) signed['x-amz-security-token'] = credentials.sessionToken;
    const request = { method: out.method, path: out.path, query: out.query, headers: signed, payloadHash };
    const scope = { region: this.options.region, service: 's3', amzDate: date };
    const headers: HeaderFields = {
      ...out.headers,
      ...signed,
      authorization: authorization(request, scope, credentials, this.keys),
    };
    if (out.body) headers['content-length'] = String(out.body.byteLength);
    const query = canonicalQuery(out.query);
    return this.http(out.method, query ? `${out.path}?${query}` : out.path, headers, out.body);
  }

  /**
   * One HTTP exchange on the pool's lowest level (a dispatch handler: no stream per answer),
   * bounded by requestTimeoutMs from the start to the body's last byte. A request that times out
   * while it waits for a socket is answered at once and aborted when its turn comes.
   */
  private http(method: Outgoing['method'], path: string, headers: HeaderFields, body: Buffer | undefined): Promise<Answer> {
    const timeoutMs = this.options.requestTimeoutMs;
    return new Promise((resolve, reject) => {
      let controller: Dispatcher.DispatchController | undefined;
      let status = 0;
      let answerHeaders: IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      let size = 0;
      let done = false;
      const finish = (e: Error | null) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        if (e) reject(e);
        else resolve({ status, headers: answerHeaders, chunks, size });
      };
      const timer = setTimeout(() => {
        const e = timeoutError(method, path, timeoutMs);
        controller?.abort(e);
        finish(e);
      }, timeoutMs);
      this.pool.dispatch(
        { method, path, headers, body },
        {
          onRequestStart(c) {
            controller = c;
            if (done) c.abort(timeoutError(method, path, timeoutMs));
          },
          onResponseStart(_c, statusCode, h) {
            status = statusCode;
            answerHeaders = h;
          },
          onResponseData(_c, chunk) {
            chunks.push(chunk);
            size += chunk.length;
          },
          onResponseEnd: () => finish(null),
          onResponseError: (_c, e) => finish(e),
        },
      );
    });
  }
}

/**
 * The body in memory of its own: a received chunk is a slice of a larger read buffer, which a
 * kept object would otherwise hold on to whole.
 */
function bytes({ chunks, size }: Answer): Uint8Array {
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

function text({ chunks, size }: Answer): string {
  return chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks, size).toString('utf8');
}

function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function messageOf(xml: string): string {
  const m = /<Message>([^<]*)<\/Message>/.exec(xml);
  return m ? unescapeXml(m[1]!) : '';
}

function timeoutError(method: string, path: string, ms: number): Error {
  return Object.assign(new Error(`S3 ${method} ${path} timed out after ${ms} ms`), { name: 'TimeoutError', code: 'ETIMEDOUT' });
}
