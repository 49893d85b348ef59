/**
 * Forwarding a call to the node that holds the actor, over its HTTP API (docs/architecture.md). The hop
 * count travels in `x-keepwork-hops`; past `forwardHopsMax` a call is refused rather than loop.
 * The holder's typed errors come back as typed errors; a holder that cannot be reached in
 * `forwardTimeoutMs` is OWNER_UNREACHABLE (HTTP 503 with Retry-After): it is live by its lease,
 * so this node must not take the actor over — it may be serving it right now. A durable call's
 * idempotency key travels in `Idempotency-Key`, so a client's retry after OWNER_UNREACHABLE is
 * answered from the holder's record instead of running again.
 */
import type { ActorAddress } from '../core/address.js';
import { KeepworkError, OwnerUnreachable, isKeepworkError, type ErrorCode } from '../core/errors.js';

export const HOPS_HEADER = 'x-keepwork-hops';
/** A durable call's idempotency key (docs/guide.md "Idempotent durable calls"); forwarded as it came. */
export const IDEMPOTENCY_HEADER = 'idempotency-key';

export interface ForwardSettings {
  timeoutMs: number;
  hopsMax: number;
}

const seg = (s: string) => encodeURIComponent(s);

function actorPath(a: ActorAddress): string {
  return `/v1/actors/${seg(a.tenant)}/${seg(a.className)}/${seg(a.name)}`;
}

export async function forwardCall(
  addr: string,
  a: ActorAddress,
  method: string,
  args: unknown[],
  durable: boolean,
  hops: number,
  s: ForwardSettings,
  idempotencyKey?: string,
): Promise<unknown> {
  const body = (await send(
    addr,
    `${actorPath(a)}/${seg(method)}${durable ? '?durable=1' : ''}`,
    'POST',
    JSON.stringify(args),
    hops,
    s,
    a,
    idempotencyKey === undefined ? {} : { [IDEMPOTENCY_HEADER]: idempotencyKey },
  )) as { result: unknown };
  return body.result;
}

export async function forwardGetAlarm(addr: string, a: ActorAddress, hops: number, s: ForwardSettings): Promise<number | null> {
  const body = (await send(addr, `${actorPath(a)}/alarm`, 'GET', undefined, hops, s, a)) as { alarm: number | null };
  return body.alarm;
}

async function send(
  addr: string,
  path: string,
  method: string,
  body: string | undefined,
  hops: number,
  s: ForwardSettings,
  a: ActorAddress,
  headers: Record<string, string> = {},
): Promise<unknown> {
  if (!addr) throw new OwnerUnreachable(`${a.key} is held by a node without an HTTP address; retry later`);
  if (hops >= s.hopsMax) throw new OwnerUnreachable(`${a.key}: the call was forwarded ${hops} times (forwardHopsMax); retry later`);
  let res: Response;
  try {
    res = await fetch(addr + path, {
      method,
      body,
      headers: { ...headers, [HOPS_HEADER]: String(hops + 1), 'content-type': 'application/json' },
      signal: AbortSignal.timeout(s.timeoutMs),
    });
  } catch (e) {
    throw new OwnerUnreachable(`${a.key} is held by ${addr}, which did not answer (${(e as Error).message}); retry in a few seconds`, {
      cause: e,
    });
  }
  const json = (await res.json().catch(() => ({}))) as { error?: string; message?: string };
  if (res.ok) return json;
  const code = (json.error ?? 'HANDLER_FAILED') as ErrorCode;
  const err = new KeepworkError(code, json.message ?? `HTTP ${res.status} from ${addr}`);
  if (!isKeepworkError(err)) throw new OwnerUnreachable(`${addr} answered ${res.status}: ${json.message ?? ''}`);
  throw err;
}
