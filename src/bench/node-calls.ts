/**
 * Calls of the bench's actors over a node's HTTP API, and running many of them a few at a time.
 *
 *   callActor(node, 'bench/BenchAlarmed/a7', 'arm', [at], { durable }) → result (throws on non-2xx)
 */
const CALL_TIMEOUT_MS = 60_000;

/** Where a node answers, and the bearer token it wants (nodes the bench started want none). */
export interface Endpoint {
  readonly url: string;
  readonly token?: string;
}

/** The headers of a request to `at`: its token, when it has one. */
export const authHeaders = (at: Endpoint): Record<string, string> => (at.token ? { authorization: `Bearer ${at.token}` } : {});

export async function callActor(
  at: Endpoint,
  address: string,
  method: string,
  args: unknown[],
  o: { durable?: boolean; signal?: AbortSignal } = {},
): Promise<unknown> {
  const url = `${at.url}/v1/actors/${address.split('/').map(encodeURIComponent).join('/')}/${method}${o.durable ? '?durable=1' : ''}`;
  const res = await fetch(url, {
    method: 'POST',
    body: JSON.stringify(args),
    headers: { 'content-type': 'application/json', ...authHeaders(at) },
    signal: o.signal ? AbortSignal.any([o.signal, AbortSignal.timeout(CALL_TIMEOUT_MS)]) : AbortSignal.timeout(CALL_TIMEOUT_MS),
  });
  const body = (await res.json().catch(() => ({}))) as { result?: unknown; error?: string; message?: string };
  if (!res.ok) throw new Error(`${method} on ${address} via ${at.url}: HTTP ${res.status} ${body.error ?? ''}: ${body.message ?? ''}`);
  return body.result;
}

/** Runs `op(i)` for i in [0, n) with at most `inFlight` at once; stops starting new ones once `signal` aborts. */
export async function inLanes(n: number, inFlight: number, signal: AbortSignal, op: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < n && !signal.aborted) await op(next++);
  };
  await Promise.all(Array.from({ length: Math.min(n, inFlight) }, lane));
}
