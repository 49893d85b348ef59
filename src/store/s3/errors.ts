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
 * - unknown:      5xx, 429, timeouts, network errors: may or may not have been applied, retry
 * - fatal:        any other answer (403, 400, NoSuchBucket, ...): not applied, do not retry
 */
/**
 * An S3 error answer as the lean client reports it, in the shape of the SDK's errors (the code as
 * `name`, the status in `$metadata`), so that one classifier serves both clients.
 */
export class S3ServiceError extends Error {
  readonly $metadata: { httpStatusCode: number };

  constructor(code: string, status: number, message: string) {
    super(message || `S3 answered ${status} ${code}`);
    this.name = code;
    this.$metadata = { httpStatusCode: status };
  }
}

/** The error code of an answer without an XML body (HEAD, or a proxy's page): the SDK's names. */
export function codeOfStatus(status: number): string {
  if (status === 404) return 'NotFound';
  if (status === 412) return 'PreconditionFailed';
  if (status === 403) return 'Forbidden';
  if (status === 400) return 'BadRequest';
  return 'UnknownError';
}

export type S3Failure = 'precondition' | 'notFound' | 'conflict' | 'unknown' | 'fatal';

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
  if (status === undefined || status >= 500 || status === 429 || status === 408) return 'unknown';
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
