/**
 * One HTTP attempt of keepwork/client: a request to the node, its answer read as keepwork's JSON.
 *
 *   200 {"result": …} / {"alarm": …}      ─▶ { ok: true, body }
 *   4xx/5xx {"error": CODE, "message"}    ─▶ the code's class (errors.ts errorOf), e.g. Forbidden
 *   an answer that is not keepwork's      ─▶ INTERNAL naming the status (a proxy's error page)
 *   refused, reset, or no answer within
 *   requestTimeoutMs                      ─▶ NODE_UNREACHABLE (the call may or may not have run)
 *
 * A 503 and no answer are transient (retry-plan.ts decides whether to go again); a redirect is
 * not followed (it would carry the token elsewhere).
 */
import { ErrorCode, Internal, NodeUnreachable, errorOf, isKeepworkError, type KeepworkError } from '../core/errors.js';
import type { ClientSettings } from './options.js';
import { parseRetryAfter, type Failure } from './retry-plan.js';

export type Outcome = { ok: true; body: Record<string, unknown> } | { ok: false; failure: Failure };

export interface Request {
  method: 'GET' | 'POST';
  path: string;
  body?: string;
  headers?: Record<string, string>;
}

export async function attempt(
  s: Pick<ClientSettings, 'url' | 'token' | 'requestTimeoutMs'>,
  fetchFn: typeof fetch,
  req: Request,
  nowMs: () => number,
): Promise<Outcome> {
  const url = s.url + req.path;
  let res: Response;
  let text: string;
  try {
    res = await fetchFn(url, {
      method: req.method,
      body: req.body,
      headers: {
        ...req.headers,
        ...(req.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(s.token === undefined ? {} : { authorization: `Bearer ${s.token}` }),
      },
      redirect: 'manual',
      signal: AbortSignal.timeout(s.requestTimeoutMs),
    });
    text = await res.text();
  } catch (e) {
    return { ok: false, failure: { error: unreachable(s, url, e), transient: true } };
  }
  const json = parseJson(text);
  if (res.status === 200 && json) return { ok: true, body: json };
  const retryAfterMs = parseRetryAfter(res.headers.get('retry-after'), nowMs());
  const failure: Failure = { error: answerError(res.status, url, json, text), transient: res.status === 503 };
  return { ok: false, failure: retryAfterMs === undefined ? failure : { ...failure, retryAfterMs } };
}

function unreachable(s: Pick<ClientSettings, 'requestTimeoutMs'>, url: string, e: unknown): KeepworkError {
  const name = (e as Error | undefined)?.name;
  if (name === 'TimeoutError')
    return new NodeUnreachable(`${url} did not answer within ${s.requestTimeoutMs} ms (requestTimeoutMs); the call may have run`, {
      cause: e,
    });
  const cause = (e as { cause?: { code?: string; message?: string } } | undefined)?.cause;
  const why = cause?.code ?? cause?.message ?? (e as Error | undefined)?.message ?? String(e);
  return new NodeUnreachable(`could not reach ${url} (${why}); the call may have run if the connection broke after it was sent`, {
    cause: e,
  });
}

function answerError(status: number, url: string, json: Record<string, unknown> | undefined, text: string): KeepworkError {
  const code = json?.error;
  const message = typeof json?.message === 'string' ? json.message : `HTTP ${status}`;
  if (typeof code === 'string' && isKeepworkError({ code }) && code !== ErrorCode.NodeUnreachable)
    return errorOf(code as ErrorCode, message, { details: { status } });
  const what = status === 200 ? 'an answer that is not JSON' : `HTTP ${status} without a keepwork error`;
  return new Internal(`${url} answered ${what}: ${JSON.stringify(text.slice(0, 200))}`, { details: { status } });
}

function parseJson(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
