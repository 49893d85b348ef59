/**
 * The idempotency key of a durable call (docs/guide.md "Idempotent durable calls"): 1–200 visible
 * ASCII characters, sent over HTTP in the `Idempotency-Key` header. Checked where a key enters —
 * a handle, the HTTP API, the event pipeline — with the same rule; keepwork/client loads it too.
 */
import { BadRequest } from './errors.js';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
export const IDEMPOTENCY_KEY_MAX_CHARS = 200;
/** Visible ASCII (no spaces, no control characters): UUIDs, ULIDs, base64, `order-17/retry`… */
const KEY_RE = /^[\x21-\x7e]+$/;

/** The key a caller sent, checked (BAD_REQUEST names the rule). */
export function checkIdempotencyKey(key: unknown): string {
  if (typeof key !== 'string') throw new BadRequest(`an idempotency key must be a string, got ${typeof key}`);
  if (key.length === 0 || key.length > IDEMPOTENCY_KEY_MAX_CHARS)
    throw new BadRequest(`an idempotency key must be 1 to ${IDEMPOTENCY_KEY_MAX_CHARS} characters, got ${key.length}`);
  if (!KEY_RE.test(key)) throw new BadRequest('an idempotency key may hold only visible ASCII characters (0x21–0x7E: no spaces)');
  return key;
}
