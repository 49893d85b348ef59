/**
 * Method calls on a node's HTTP API (`POST /v1/actors/<tenant>/<Class>/<name>/<method>`, the
 * arguments as a JSON array, `?durable=1` for a durable call):
 *
 *   call(url, address, method, args, {durable, timeoutMs, idempotencyKey}) ─▶ { ok, status, result | error }
 *   mustCall(…)                                                            ─▶ the result, or throws
 *
 * `call` never throws: no answer at all (connection refused, timeout, a failed TLS handshake) is
 * `status: 0`, `NO_ANSWER`. An https node is called with `tls` (the CA to trust, a client
 * certificate) through the node's own peer client (src/main/peer-client.ts).
 */
import { PeerClient } from '../../src/main/peer-client.js';
import type { ClientTls } from '../../src/core/tls-material.js';

export interface CallResult {
  ok: boolean;
  /** HTTP status; 0 when no answer came (connection refused, timeout). */
  status: number;
  result?: unknown;
  error?: string;
  message?: string;
}

export function actorUrl(base: string, address: string): string {
  return `${base}/v1/actors/${address.split('/').map(encodeURIComponent).join('/')}`;
}

export interface CallOptions {
  durable?: boolean;
  timeoutMs?: number;
  /** Sent as `Idempotency-Key` (with `durable`). */
  idempotencyKey?: string;
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** For an https node: the CA its certificate chains to, and a client certificate to present. */
  tls?: ClientTls;
}

/** Replies read, at most (a test's results are small). */
const REPLY_MAX_BYTES = 64 * 1024 * 1024;

/** POST one method call; never throws (a failure comes back as `ok: false`). */
export async function call(base: string, address: string, method: string, args: unknown[] = [], o: CallOptions = {}): Promise<CallResult> {
  const url = `${actorUrl(base, address)}/${method}${o.durable ? '?durable=1' : ''}`;
  const headers = {
    'content-type': 'application/json',
    ...(o.idempotencyKey === undefined ? {} : { 'idempotency-key': o.idempotencyKey }),
    ...(o.token === undefined ? {} : { authorization: `Bearer ${o.token}` }),
  };
  if (o.tls) return callTls(url, JSON.stringify(args), headers, o.tls, o.timeoutMs ?? 10_000);
  try {
    const res = await fetch(url, {
      method: 'POST',
      body: JSON.stringify(args),
      headers,
      signal: AbortSignal.timeout(o.timeoutMs ?? 10_000),
    });
    const body = (await res.json().catch(() => ({}))) as { result?: unknown; error?: string; message?: string };
    return { ok: res.ok, status: res.status, ...body };
  } catch (e) {
    return { ok: false, status: 0, error: 'NO_ANSWER', message: (e as Error).message };
  }
}

async function callTls(url: string, body: string, headers: Record<string, string>, tls: ClientTls, timeoutMs: number): Promise<CallResult> {
  const client = new PeerClient(tls, REPLY_MAX_BYTES);
  try {
    const res = await client.request(url, { method: 'POST', body, headers, timeoutMs });
    const ok = res.status >= 200 && res.status < 300;
    return { ok, status: res.status, ...(parseBody(res.text) as { result?: unknown; error?: string; message?: string }) };
  } catch (e) {
    return { ok: false, status: 0, error: 'NO_ANSWER', message: (e as Error).message };
  } finally {
    client.close();
  }
}

function parseBody(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return {};
  }
}

/** A call that must succeed: its result, or an assertion-style error naming what came back. */
export async function mustCall<T = unknown>(
  base: string,
  address: string,
  method: string,
  args: unknown[] = [],
  o: CallOptions = {},
): Promise<T> {
  const r = await call(base, address, method, args, o);
  if (!r.ok)
    throw new Error(`${method}${o.durable ? ' (durable)' : ''} on ${address} via ${base} failed: ${r.status} ${r.error}: ${r.message}`);
  return r.result as T;
}
