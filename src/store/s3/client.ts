/**
 * The AWS SDK side of `S3Store`: one `S3Client` set up for keepwork's servers, and the six
 * requests the store sends. `connect` loads the SDK (`import('@aws-sdk/client-s3')`), so a
 * thread loads it only at its first request to an S3 bucket: it costs megabytes of resident memory
 * in each thread that loads it (docs/benchmarks.md), and a node on the folder bucket loads it in
 * none of its threads.
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
 *   request (sorting and chaining its middleware costs more than signing the request; the CPU per
 *   request with and without it is in docs/benchmarks.md, "s3-overhead"). So every middleware is
 *   added here, before the first request.
 * - Sockets are kept alive, at most `storeSocketsMax` of them; the request timeout bounds both
 *   connecting and waiting for an answer.
 */
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type {
  DeleteObjectCommandInput,
  DeleteObjectsCommandInput,
  GetObjectCommandInput,
  HeadObjectCommandInput,
  ListObjectsV2CommandInput,
  PutObjectCommandInput,
  S3Client,
} from '@aws-sdk/client-s3';
import { unquoteEtag } from '../etag.js';

export interface S3ClientOptions {
  endpoint?: string;
  region: string;
  forcePathStyle: boolean;
  socketsMax: number;
  requestTimeoutMs: number;
}

type Sdk = typeof import('@aws-sdk/client-s3');

/** Loads the SDK and makes the client (once per store: `S3Store` keeps the promise). */
export async function connect(options: S3ClientOptions): Promise<S3Requests> {
  const [sdk, { NodeHttpHandler }] = await Promise.all([import('@aws-sdk/client-s3'), import('@smithy/node-http-handler')]);
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
  return new S3Requests(sdk, client);
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
export class S3Requests {
  constructor(
    private readonly sdk: Sdk,
    private readonly client: S3Client,
  ) {}

  get(input: GetObjectCommandInput) {
    return this.client.send(new this.sdk.GetObjectCommand(input));
  }

  head(input: HeadObjectCommandInput) {
    return this.client.send(new this.sdk.HeadObjectCommand(input));
  }

  put(input: PutObjectCommandInput) {
    return this.client.send(new this.sdk.PutObjectCommand(input));
  }

  delete(input: DeleteObjectCommandInput) {
    return this.client.send(new this.sdk.DeleteObjectCommand(input));
  }

  deleteMany(input: DeleteObjectsCommandInput) {
    return this.client.send(new this.sdk.DeleteObjectsCommand(input));
  }

  list(input: ListObjectsV2CommandInput) {
    return this.client.send(new this.sdk.ListObjectsV2Command(input));
  }

  destroy(): void {
    this.client.destroy();
  }
}
