/**
 * Who is asking, and may they (docs/security.md). Every request but GET /healthz passes here:
 *
 *   x-keepwork-signature present and a cluster secret set ─▶ a forward from another node: the
 *        signature over method, path, body digest, timestamp, hops and caller must verify within
 *        the window; the caller's name is looked up in this node's own token file (no name: the
 *        forwarding node's own call, served as the node's)
 *   otherwise ─▶ Authorization: Bearer <token>, matched against the token file (core/tokens.ts)
 *
 * The hop count is taken from `x-keepwork-hops` only on a verified forward; from anyone else it
 * is ignored (0). A node without a cluster secret cannot tell a node from a client, so it reads
 * the header as it comes: that is the loopback test cluster, where routing loops must still stop.
 * Rights per route: actor calls and GET …/alarm need `call` on the actor's tenant; `/` and
 * `/v1/status` need `read` (rows filtered to the token's tenants); `/metrics`, whose series name
 * every tenant, needs `read` on every tenant ("*"); `admin` passes everywhere.
 */
import type { IncomingMessage } from 'node:http';
import { CALLER_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, verifyRequest, type ClusterKey } from '../core/cluster-signature.js';
import { BadRequest, Forbidden, Unauthenticated } from '../core/errors.js';
import { allows, authenticate, identityByName, seesAllTenants, seesTenant, type Identity, type TokenSet } from '../core/tokens.js';
import { HOPS_HEADER } from '../main/forward.js';

export interface AccessSettings {
  tokens?: TokenSet;
  clusterKey?: ClusterKey;
}

export interface Caller {
  /** The verified identity; undefined on a node without a token file (nothing is checked). */
  identity: Identity | undefined;
  /** The token name a forward from here carries ('' when nobody was authenticated). */
  name: string;
  hops: number;
  /** A verified forward's signature: the reply is signed over it. */
  forwardSignature?: string;
}

export type Need = { kind: 'call'; tenant: string } | { kind: 'read' } | { kind: 'metrics' };

/** Whether the request claims to be a forward from a node (and this node can check that). */
export function isForward(s: AccessSettings, req: IncomingMessage): boolean {
  return s.clusterKey !== undefined && req.headers[SIGNATURE_HEADER] !== undefined;
}

/** The caller of `req`; `body`: the request body, read before (a forward's signature covers it). */
export function callerOf(s: AccessSettings, req: IncomingMessage, body: string | undefined, nowMs: number): Caller {
  if (s.clusterKey && body !== undefined && req.headers[SIGNATURE_HEADER] !== undefined)
    return forwarded(s, s.clusterKey, req, body, nowMs);
  const hops = s.clusterKey ? 0 : hopsOf(req);
  if (!s.tokens) return { identity: undefined, name: '', hops };
  const identity = authenticate(s.tokens, bearerOf(req));
  if (!identity) throw new Unauthenticated('the bearer token matches no entry of this node’s token file');
  return { identity, name: identity.name, hops };
}

function forwarded(s: AccessSettings, key: ClusterKey, req: IncomingMessage, body: string, nowMs: number): Caller {
  const signature = one(req, SIGNATURE_HEADER);
  const caller = one(req, CALLER_HEADER) ?? '';
  const timestampMs = Number(one(req, TIMESTAMP_HEADER));
  const hops = Number(one(req, HOPS_HEADER));
  if (signature === undefined || !Number.isSafeInteger(hops) || hops < 0 || hops > 100)
    throw new Unauthenticated('a forwarded request needs its signature, timestamp and hop count');
  const check = verifyRequest(key, { method: req.method ?? '', path: req.url ?? '', body, timestampMs, hops, caller }, signature, nowMs);
  if (!check.ok) throw new Unauthenticated(`forwarded request refused: ${check.why}`);
  // No caller: the forwarding node's own call (an embedded app's handle, or a node without tokens);
  // whoever holds the secret is a node and could name any caller, so this grants nothing more.
  if (!s.tokens || caller === '') return { identity: undefined, name: caller, hops, forwardSignature: signature };
  const identity = identityByName(s.tokens, caller);
  if (!identity) throw new Forbidden(`the caller ${JSON.stringify(caller)} has no entry in this node’s token file`);
  return { identity, name: caller, hops, forwardSignature: signature };
}

/** Throws FORBIDDEN unless the caller may do what `need` says (nothing is checked without a token file). */
export function authorize(s: AccessSettings, caller: Caller, need: Need): void {
  const who = caller.identity;
  if (!s.tokens || !who) return;
  if (need.kind === 'call' && !allows(who, 'call', need.tenant))
    throw new Forbidden(`the token ${JSON.stringify(who.name)} may not call actors of tenant ${JSON.stringify(need.tenant)}`);
  if (need.kind === 'read' && !allows(who, 'read')) throw new Forbidden(`the token ${JSON.stringify(who.name)} lacks the read right`);
  if (need.kind === 'metrics' && !(allows(who, 'read') && seesAllTenants(who)))
    throw new Forbidden(`/metrics names every tenant: the token ${JSON.stringify(who.name)} needs read on "*" (or admin)`);
}

/** Which tenants' rows the caller's status shows. */
export function tenantFilter(caller: Caller): (tenant: string) => boolean {
  const who = caller.identity;
  if (!who || seesAllTenants(who)) return () => true;
  return (tenant) => seesTenant(who, tenant);
}

/**
 * The token of `Authorization: Bearer <token>`, or of `Basic` with the token as the password (the
 * user name is not read): a browser sends Basic itself, on the status page and on its script's
 * fetches, once asked for it (server.ts challenges `GET /` with Basic).
 */
function bearerOf(req: IncomingMessage): string {
  const raw = req.headers.authorization;
  if (raw === undefined) throw new Unauthenticated('send Authorization: Bearer <token> (docs/security.md)');
  const bearer = /^Bearer +([\x21-\x7e]{1,512})$/i.exec(raw);
  if (bearer) return bearer[1]!;
  const basic = /^Basic +([A-Za-z0-9+/]{1,1024}={0,2})$/i.exec(raw);
  const password = basic ? /^[^:]*:([\x21-\x7e]{1,512})$/.exec(Buffer.from(basic[1]!, 'base64').toString('utf8')) : null;
  if (password) return password[1]!;
  throw new Unauthenticated('the Authorization header must be "Bearer <token>" (or Basic with the token as the password)');
}

function one(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? undefined : v;
}

/** The hop count as a client sent it (nodes without a cluster secret only). */
function hopsOf(req: IncomingMessage): number {
  const raw = req.headers[HOPS_HEADER];
  if (raw === undefined) return 0;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 100) throw new BadRequest(`${HOPS_HEADER} must be a small non-negative integer`);
  return n;
}
