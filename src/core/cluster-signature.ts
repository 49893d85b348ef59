/**
 * Node-to-node authentication with the cluster secret (docs/security.md): HMAC-SHA256 over a
 * forwarded request, and over the holder's reply to it.
 *
 *   request:  HMAC(secret, "keepwork-forward-v1\n" METHOD \n PATH?QUERY \n sha256(body) \n ts \n hops \n caller)
 *             sent as x-keepwork-signature (hex), x-keepwork-timestamp (ms), x-keepwork-hops, x-keepwork-caller
 *   reply:    HMAC(secret, "keepwork-reply-v1\n" request signature \n status \n sha256(reply body))
 *             sent as x-keepwork-reply-signature
 *
 * A request is accepted within `REPLAY_WINDOW_MS + skewBoundMs` of its timestamp, either way; a
 * replay inside that window is not detected here (it re-runs the same call as the same caller —
 * a durable call's idempotency key makes that harmless). Comparisons are constant-time. Pure:
 * the time is the caller's.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { BadConfig } from './errors.js';

export const SIGNATURE_HEADER = 'x-keepwork-signature';
export const TIMESTAMP_HEADER = 'x-keepwork-timestamp';
export const CALLER_HEADER = 'x-keepwork-caller';
export const REPLY_SIGNATURE_HEADER = 'x-keepwork-reply-signature';
export const REPLAY_WINDOW_MS = 30_000;
/** The shortest cluster secret accepted, in bytes. */
export const CLUSTER_SECRET_MIN_BYTES = 32;

/** The cluster secret, checked once. */
export interface ClusterKey {
  readonly secret: Buffer;
  /** How far a request's timestamp may be from this node's clock: REPLAY_WINDOW_MS + skewBoundMs. */
  readonly windowMs: number;
}

/** What a forwarded request's signature covers. */
export interface SignedRequest {
  method: string;
  /** The path with its query, as sent. */
  path: string;
  body: string | Uint8Array;
  timestampMs: number;
  hops: number;
  /** The verified caller's token name; '' when the forwarding node authenticates nobody. */
  caller: string;
}

/** `--cluster-secret-file`: the file's bytes, a trailing newline dropped. */
export function readClusterSecret(path: string): Buffer {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (e) {
    throw new BadConfig(`cannot read the cluster secret file ${path}: ${(e as Error).message}`, { cause: e });
  }
  const end = bytes.length > 0 && bytes[bytes.length - 1] === 0x0a ? bytes.length - 1 : bytes.length;
  return bytes.subarray(0, end > 0 && bytes[end - 1] === 0x0d ? end - 1 : end);
}

export function clusterKey(secret: string | Uint8Array, skewBoundMs: number): ClusterKey {
  const bytes = typeof secret === 'string' ? Buffer.from(secret, 'utf8') : Buffer.from(secret);
  if (bytes.length < CLUSTER_SECRET_MIN_BYTES)
    throw new BadConfig(
      `the cluster secret must be at least ${CLUSTER_SECRET_MIN_BYTES} bytes (e.g. openssl rand -base64 48), got ${bytes.length}`,
    );
  return Object.freeze({ secret: bytes, windowMs: REPLAY_WINDOW_MS + skewBoundMs });
}

const digest = (body: string | Uint8Array) => createHash('sha256').update(body).digest('hex');

export function signRequest(key: ClusterKey, r: SignedRequest): string {
  const text = ['keepwork-forward-v1', r.method, r.path, digest(r.body), String(r.timestampMs), String(r.hops), r.caller].join('\n');
  return createHmac('sha256', key.secret).update(text, 'utf8').digest('hex');
}

export type RequestCheck = { ok: true } | { ok: false; why: string };

/** Whether `signature` is `r`'s under `key`, and `r`'s timestamp within the window of `nowMs`. */
export function verifyRequest(key: ClusterKey, r: SignedRequest, signature: string, nowMs: number): RequestCheck {
  const expected = Buffer.from(signRequest(key, r), 'hex');
  if (!sameHex(expected, signature)) return { ok: false, why: 'the cluster signature does not match' };
  if (!Number.isSafeInteger(r.timestampMs) || Math.abs(nowMs - r.timestampMs) > key.windowMs)
    return { ok: false, why: `the signed request is more than ${key.windowMs} ms from this node's clock (a replay, or a clock off)` };
  return { ok: true };
}

export function signReply(key: ClusterKey, requestSignature: string, status: number, body: string | Uint8Array): string {
  const text = ['keepwork-reply-v1', requestSignature, String(status), digest(body)].join('\n');
  return createHmac('sha256', key.secret).update(text, 'utf8').digest('hex');
}

export function verifyReply(
  key: ClusterKey,
  requestSignature: string,
  status: number,
  body: string | Uint8Array,
  signature: string,
): boolean {
  return sameHex(Buffer.from(signReply(key, requestSignature, status, body), 'hex'), signature);
}

function sameHex(expected: Buffer, given: string): boolean {
  if (!/^[0-9a-f]{64}$/.test(given)) return false;
  return timingSafeEqual(expected, Buffer.from(given, 'hex'));
}
