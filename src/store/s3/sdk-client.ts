/**
 * The AWS SDK's S3Client behind `S3Requests` (`s3SdkClient: true`; the default is s3/lean-client.ts).
 * `connectSdk` loads the SDK (`import('@aws-sdk/client-s3')`), so a thread loads it only at its
 * first request to an S3 bucket, and only with this client: it costs megabytes of resident memory
 * in each thread that loads it (docs/benchmarks.md).
 * The layer lint (scripts/lint-layers.ts, `LOADED_ON_DEMAND`) keeps every other import of the SDK
 * to types only.
 *
 * How the client is set up:
 * - RGW rejects the quoted etag the SDK sends in `If-Match` (412 even when current): a build-step
 *   middleware strips the quotes from that header.
 * - Bodies are sent as Buffers, with checksums only when required (streamed bodies with the SDK's
 *   default checksums get 411 from RGW).
 * - The SDK's own retries are off (`maxAttempts: 1`): s3/store.ts retries, within the config's budget.
 * - `cacheMiddleware`: the SDK resolves a command class's middleware stack once, not at every
 *   request (sorting and chaining its middleware costs more than signing the request). So every
 *   middleware is added here, before the first request.
 * - Sockets are kept alive, at most `storeSocketsMax` of them; the request timeout bounds both
 *   connecting and waiting for an answer.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { unquoteEtag } from '../etag.js';
import type { ListRequest, PutConditions, S3ClientOptions, S3Requests } from './requests.js';

type Sdk = typeof import('@aws-sdk/client-s3');

/**
 * Loads the SDK and makes the client (once per store: `S3Store` keeps the promise). node:https
 * loads here too, not with the module: every worker imports the store kinds, and its TLS and
 * X.509 modules cost a worker's start tens of ms.
 */
export async function connectSdk(options: S3ClientOptions): Promise<S3Requests> {
  const [sdk, { NodeHttpHandler }, { Agent: HttpAgent }, { Agent: HttpsAgent }] = await Promise.all([
    import('@aws-sdk/client-s3'),
    import('@smithy/node-http-handler'),
    import('node:http'),
    import('node:https'),
  ]);
  const agent = { keepAlive: true, maxSockets: options.socketsMax };
  const client = new sdk.S3Client({
    region: options.region,
    endpoint: options.endpoint,
    forcePathStyle: options.forcePathStyle,
    maxAttempts: 1,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    cacheMiddleware: true,
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestHandler: new NodeHttpHandler({
      httpAgent: new HttpAgent(agent),
      httpsAgent: new HttpsAgent(agent),
      requestTimeout: options.requestTimeoutMs,
      connectionTimeout: options.requestTimeoutMs,
    }),
  });
  unquoteIfMatch(client);
  return new SdkS3Client(sdk, client, options.bucket);
}

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

/** The requests `S3Store` sends, each one SDK command on one client. */
class SdkS3Client implements S3Requests {
  constructor(
    private readonly sdk: Sdk,
    private readonly client: S3Client,
    private readonly bucket: string,
  ) {}

  async get(key: string) {
    const res = await this.client.send(new this.sdk.GetObjectCommand({ Bucket: this.bucket, Key: key }));
    const body = res.Body ? await res.Body.transformToByteArray() : new Uint8Array(0);
    return { body, etag: res.ETag };
  }

  async head(key: string) {
    const res = await this.client.send(new this.sdk.HeadObjectCommand({ Bucket: this.bucket, Key: key }));
    return { etag: res.ETag, size: res.ContentLength ?? 0 };
  }

  async put(key: string, body: Buffer, conditions: PutConditions) {
    const input = { Bucket: this.bucket, Key: key, Body: body, ContentLength: body.byteLength, ...conditionsOf(conditions) };
    const res = await this.client.send(new this.sdk.PutObjectCommand(input));
    return { etag: res.ETag };
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new this.sdk.DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
  }

  async deleteMany(keys: readonly string[]) {
    const Delete = { Objects: keys.map((Key) => ({ Key })), Quiet: true };
    const res = await this.client.send(new this.sdk.DeleteObjectsCommand({ Bucket: this.bucket, Delete }));
    return (res.Errors ?? []).map((x) => ({ key: x.Key ?? '', code: x.Code ?? '' }));
  }

  async list(request: ListRequest) {
    const res = await this.client.send(
      new this.sdk.ListObjectsV2Command({
        Bucket: this.bucket,
        Prefix: request.prefix,
        StartAfter: request.startAfter,
        MaxKeys: request.maxKeys,
        ContinuationToken: request.continuation,
      }),
    );
    const keys = (res.Contents ?? []).map((o) => o.Key ?? '');
    return res.IsTruncated && res.NextContinuationToken ? { keys, continuation: res.NextContinuationToken } : { keys };
  }

  destroy(): void {
    this.client.destroy();
  }
}

function conditionsOf(c: PutConditions): { IfNoneMatch?: string; IfMatch?: string } {
  if (c.ifNoneMatch) return { IfNoneMatch: c.ifNoneMatch };
  if (c.ifMatch !== undefined) return { IfMatch: c.ifMatch }; // sent unquoted by unquoteIfMatch()
  return {};
}
