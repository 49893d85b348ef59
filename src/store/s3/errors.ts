/**
 * How the S3 store reads a failed request (pure): `classifyS3Error` sorts an SDK error into what
 * it means for the request's outcome (see s3/store.ts's diagram for how conditional writes use it),
 * `isRetryableS3Error` says whether to try again, `describe` makes it one line for a message.
 * Errors are classified by name and HTTP status only (RGW's error bodies carry no message).
 */

/**
 * - precondition: 412, or 404 on a write (AWS's If-Match on a missing key)
 * - notFound:     404 on a read
 * - conflict:     409 (AWS ConditionalRequestConflict, OperationAborted): not applied, retry
 * - throttled:    429, or a throttling code (SlowDown, Throttling, RequestLimitExceeded, …): the
 *                 bucket refused it before processing it (not applied); the governor sends it
 *                 again (store/throttle/), the S3 store does not
 * - unknown:      other 5xx, timeouts, network errors: may or may not have been applied, retry
 * - fatal:        any other answer (403, 400, NoSuchBucket, ...): not applied, do not retry
 */
/**
 * An S3 error answer as the lean client reports it, in the shape of the SDK's errors (the code as
 * `name`, the status in `$metadata`), so that one classifier serves both clients.
 */
export class S3ServiceError extends Error {
  readonly $metadata: { httpStatusCode: number };

  constructor(
    code: string,
    status: number,
    message: string,
    /** The answer's Retry-After header, as sent. */
    readonly retryAfter?: string,
  ) {
    super(message || `S3 answered ${status} ${code}`);
    this.name = code;
    this.$metadata = { httpStatusCode: status };
  }
}

/** Error codes with which S3 and S3-compatible servers ask for fewer requests (AWS, RGW, R2, MinIO, GCS's XML API). */
export const THROTTLE_CODES: ReadonlySet<string> = new Set([
  'SlowDown',
  'SlowDownRead',
  'SlowDownWrite',
  'Throttling',
  'ThrottlingException',
  'ThrottledException',
  'RequestThrottled',
  'RequestLimitExceeded',
  'TooManyRequests',
  'TooManyRequestsException',
]);

/** The Retry-After header of a throttle answer from either client, when it had one. */
export function retryAfterOf(e: unknown): string | undefined {
  const err = e as { retryAfter?: string; $response?: { headers?: Record<string, string | undefined> } } | null;
  return err?.retryAfter ?? err?.$response?.headers?.['retry-after'];
}

/** The error code of an answer without an XML body (HEAD, or a proxy's page): the SDK's names. */
export function codeOfStatus(status: number): string {
  if (status === 404) return 'NotFound';
  if (status === 412) return 'PreconditionFailed';
  if (status === 403) return 'Forbidden';
  if (status === 400) return 'BadRequest';
  return 'UnknownError';
}

export type S3Failure = 'precondition' | 'notFound' | 'conflict' | 'throttled' | 'unknown' | 'fatal';

/** Per-key codes of a DeleteObjects answer worth retrying (the rest are refusals). */
export const TRANSIENT_DELETE_CODES = new Set([
  'InternalError',
  'ServiceUnavailable',
  'SlowDown',
  'RequestTimeout',
  'OperationAborted',
  '',
]);

export function classifyS3Error(e: unknown): S3Failure {
  const err = e as { name?: string; $metadata?: { httpStatusCode?: number } } | null;
  const status = err?.$metadata?.httpStatusCode;
  const name = err?.name ?? '';
  if (name === 'NoSuchBucket') return 'fatal';
  if (status === 412 || name === 'PreconditionFailed') return 'precondition';
  if (status === 404 || name === 'NoSuchKey' || name === 'NotFound') return 'notFound';
  if (status === 409) return 'conflict';
  if (status === 429 || THROTTLE_CODES.has(name)) return 'throttled';
  if (status === undefined || status >= 500 || status === 408) return 'unknown';
  return 'fatal';
}

export function describe(e: unknown): string {
  const err = e as { name?: string; code?: string; message?: string; $metadata?: { httpStatusCode?: number } } | null;
  const status = err?.$metadata?.httpStatusCode;
  return [err?.name, err?.code, status === undefined ? 'no HTTP status' : `HTTP ${status}`, err?.message].filter(Boolean).join(' ');
}

export function isRetryableS3Error(e: unknown): boolean {
  const failure = classifyS3Error(e);
  return failure === 'unknown' || failure === 'conflict';
}
