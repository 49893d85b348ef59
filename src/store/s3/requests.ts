/**
 * The six requests `S3Store` sends to its bucket, as one interface with two implementations:
 *
 *   lean-client.ts  Signature V4 by node:crypto, undici keep-alive pool, a minimal XML
 *                   reader (the default: a fraction of the SDK's CPU per request)
 *   sdk-client.ts   the AWS SDK's S3Client (`s3SdkClient: true`), loaded on demand
 *
 * Keys are full object keys (the store's prefix included). Both fail the same way: an error with
 * the S3 error code as `name` and the HTTP status in `$metadata.httpStatusCode` (the SDK's shape,
 * which s3/errors.ts classifies), or a network or timeout error without a status.
 */

export interface S3ClientOptions {
  bucket: string;
  endpoint?: string;
  region: string;
  forcePathStyle: boolean;
  socketsMax: number;
  requestTimeoutMs: number;
}

export interface PutConditions {
  ifNoneMatch?: '*';
  /** Sent unquoted (RGW refuses the quoted form). */
  ifMatch?: string;
}

export interface ListRequest {
  prefix: string;
  startAfter?: string;
  maxKeys: number;
  continuation?: string;
}

export interface S3Requests {
  /** The etag as S3 sent it (quoted). */
  get(key: string): Promise<{ body: Uint8Array; etag: string | undefined }>;
  head(key: string): Promise<{ etag: string | undefined; size: number }>;
  put(key: string, body: Buffer, conditions: PutConditions): Promise<{ etag: string | undefined }>;
  delete(key: string): Promise<void>;
  /** DeleteObjects (quiet): the keys S3 reports as not deleted, each with its error code. */
  deleteMany(keys: readonly string[]): Promise<{ key: string; code: string }[]>;
  /** ListObjectsV2; `continuation` only when the listing is truncated. */
  list(request: ListRequest): Promise<{ keys: string[]; continuation?: string }>;
  destroy(): void;
}
