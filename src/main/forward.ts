/**
 * Forwarding a call to the node that holds the actor, over its HTTP API (docs/architecture.md). The hop
 * count travels in `x-keepwork-hops`; past `forwardHopsMax` a call is refused rather than loop.
 * The holder's typed errors come back as typed errors; a holder that cannot be reached in
 * `forwardTimeoutMs` is OWNER_UNREACHABLE (HTTP 503 with Retry-After): it is live by its lease,
 * so this node must not take the actor over — it may be serving it right now. A durable call's
 * idempotency key travels in `Idempotency-Key`, so a client's retry after OWNER_UNREACHABLE is
 * answered from the holder's record instead of running again.
 *
 * With a cluster secret (core/cluster-signature.ts) the request is signed — method, path, body
 * digest, timestamp, hops and the caller's verified token name — and the holder's reply must carry
 * its signature over the request's signature and the reply body: an unsigned or wrongly signed
 * reply is OWNER_UNREACHABLE and its body never reaches the client.
 *
 * A forward goes only where a node can be: the holder's address was checked when its record was
 * read (records.ts), a redirect is never followed (a 3xx is OWNER_UNREACHABLE), and with
 * `--peers-allow` an address outside the allowed networks is refused before anything is sent.
 * An https holder must present a certificate that chains to the node's CA and names its address
 * (peer-client.ts); one that does not is OWNER_UNREACHABLE, nothing sent past the handshake.
 */
import type { ActorAddress } from '../core/address.js';
import { alarmPath, callPath } from '../core/actor-routes.js';
import { IDEMPOTENCY_HEADER } from '../core/idempotency-key.js';
import {
  CALLER_HEADER,
  REPLY_SIGNATURE_HEADER,
  SIGNATURE_HEADER,
  TIMESTAMP_HEADER,
  signRequest,
  verifyReply,
  type ClusterKey,
} from '../core/cluster-signature.js';
import { KeepworkError, OwnerUnreachable, ResultTooLarge, isKeepworkError, type ErrorCode } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { ReplyTooLarge, type PeerClient, type PeerReply } from './peer-client.js';
import type { PeersAllow } from './peers-allow.js';

export const HOPS_HEADER = 'x-keepwork-hops';

export interface ForwardSettings {
  /** The connections to peers, http and https (with the node's CA and client certificate). */
  client: PeerClient;
  timeoutMs: number;
  hopsMax: number;
  /** The cluster secret: forwards are signed and replies checked; absent, neither (a loopback cluster). */
  cluster?: ClusterKey;
  /** The time a signature carries. */
  nowMs: () => number;
  /** The networks forwards may go to (peers-allow.ts); absent: any node address. */
  peersAllow?: PeersAllow;
  /** Where a refused peer is logged (once per address). */
  log?: Logger;
}

/** How a call reached this node: the hops it took, and the verified caller's token name ('' if none). */
export interface Via {
  hops: number;
  caller: string;
}

export async function forwardCall(
  addr: string,
  a: ActorAddress,
  method: string,
  args: unknown[],
  durable: boolean,
  via: Via,
  s: ForwardSettings,
  idempotencyKey?: string,
): Promise<unknown> {
  const body = (await send(
    addr,
    callPath(a, method, durable),
    'POST',
    JSON.stringify(args),
    via,
    s,
    a,
    idempotencyKey === undefined ? {} : { [IDEMPOTENCY_HEADER]: idempotencyKey },
  )) as { result: unknown };
  return body.result;
}

export async function forwardGetAlarm(addr: string, a: ActorAddress, via: Via, s: ForwardSettings): Promise<number | null> {
  const body = (await send(addr, alarmPath(a), 'GET', undefined, via, s, a)) as { alarm: number | null };
  return body.alarm;
}

async function send(
  addr: string,
  path: string,
  method: string,
  body: string | undefined,
  via: Via,
  s: ForwardSettings,
  a: ActorAddress,
  headers: Record<string, string> = {},
): Promise<unknown> {
  if (!addr) throw new OwnerUnreachable(`${a.key} is held by a node without an HTTP address; retry later`);
  const { hops } = via;
  if (hops >= s.hopsMax) throw new OwnerUnreachable(`${a.key}: the call was forwarded ${hops} times (forwardHopsMax); retry later`);
  if (s.peersAllow) await checkPeer(s.peersAllow, addr, a, s.log);
  const signed = s.cluster ? signedHeaders(s.cluster, method, path, body ?? '', { hops: hops + 1, caller: via.caller }, s.nowMs()) : {};
  let res: PeerReply;
  try {
    res = await s.client.request(addr + path, {
      method,
      ...(body === undefined ? {} : { body }),
      headers: { ...headers, ...signed, [HOPS_HEADER]: String(hops + 1), 'content-type': 'application/json' },
      timeoutMs: s.timeoutMs,
    });
  } catch (e) {
    throw unreachable(e, addr, a);
  }
  if (res.status >= 300 && res.status < 400)
    throw new OwnerUnreachable(`${a.key} is held by ${addr}, which answered a redirect (HTTP ${res.status}); it was not followed`);
  const { text } = res;
  if (s.cluster) checkReply(s.cluster, signed[SIGNATURE_HEADER]!, res, addr, a);
  const json = parseReply(text);
  if (res.status >= 200 && res.status < 300) return json;
  const code = (json.error ?? 'HANDLER_FAILED') as ErrorCode;
  const err = new KeepworkError(code, json.message ?? `HTTP ${res.status} from ${addr}`, retryAfterOf(res));
  if (!isKeepworkError(err)) throw new OwnerUnreachable(`${addr} answered ${res.status}: ${json.message ?? ''}`);
  throw err;
}

/** A holder's 503 Retry-After (whole seconds), kept so this node's 503 passes it on (server.ts). */
function retryAfterOf(res: PeerReply): { details: { retryAfterMs: number } } | undefined {
  const seconds = Number(res.header('retry-after'));
  return res.status === 503 && Number.isInteger(seconds) && seconds > 0 ? { details: { retryAfterMs: seconds * 1000 } } : undefined;
}

/** Why a forward got no answer: a reply over the limit ran (RESULT_TOO_LARGE); anything else may be retried. */
function unreachable(e: unknown, addr: string, a: ActorAddress): Error {
  const why = (e as Error).message;
  if (e instanceof ReplyTooLarge) return new ResultTooLarge(`${a.key} ran on ${addr}, and ${why} (httpResultMaxBytes)`, { cause: e });
  const code = (e as NodeJS.ErrnoException).code ?? '';
  if (CERT_PROBLEM.test(code))
    return new OwnerUnreachable(
      `${a.key} is held by ${addr}, whose TLS certificate this node does not accept (${why}); check --tls-ca and the holder's --tls-cert`,
      { cause: e },
    );
  return new OwnerUnreachable(`${a.key} is held by ${addr}, which did not answer (${why}); retry in a few seconds`, { cause: e });
}

/** OpenSSL's verification codes (self-signed, unknown issuer, expired, wrong name, …) as Node reports them. */
const CERT_PROBLEM = /CERT|ISSUER|SELF_SIGNED|UNABLE_TO_VERIFY|ALTNAME/;

async function checkPeer(peers: PeersAllow, addr: string, a: ActorAddress, log: Logger | undefined): Promise<void> {
  const why = await peers.refusal(addr);
  if (why === undefined) return;
  if (peers.firstRefusal(addr))
    log?.warn({ actor: a.key, addr, why }, 'a holder address outside --peers-allow: calls held there are refused');
  throw new OwnerUnreachable(`${a.key} is held at ${addr}, where this node does not forward (${why})`);
}

function signedHeaders(key: ClusterKey, method: string, path: string, body: string, via: Via, nowMs: number): Record<string, string> {
  const signature = signRequest(key, { method, path, body, timestampMs: nowMs, hops: via.hops, caller: via.caller });
  return { [SIGNATURE_HEADER]: signature, [TIMESTAMP_HEADER]: String(nowMs), [CALLER_HEADER]: via.caller };
}

/** The holder must prove the cluster secret: a reply without its signature over this request is not an answer. */
function checkReply(key: ClusterKey, requestSignature: string, res: PeerReply, addr: string, a: ActorAddress): void {
  const signature = res.header(REPLY_SIGNATURE_HEADER) ?? '';
  if (!verifyReply(key, requestSignature, res.status, res.text, signature))
    throw new OwnerUnreachable(
      `${a.key} is held by ${addr}, whose reply (HTTP ${res.status}) does not carry the cluster's signature; it was not passed on`,
    );
}

function parseReply(text: string): { error?: string; message?: string } {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null ? (v as { error?: string; message?: string }) : {};
  } catch {
    return {};
  }
}
