/**
 * The HTTP API (docs/architecture.md), on node:http, or node:https when the node has a certificate
 * (then a TLS handshake must also finish within httpHeadersTimeoutMs):
 *
 *   POST /v1/actors/:tenant/:class/:name/:method[?durable=1]   body: JSON array of arguments
 *        → 200 {"result": …}        [Idempotency-Key: k] with durable=1: a repeat returns the
 *                                    recorded outcome without running; other arguments → 409
 *   GET  /v1/actors/:tenant/:class/:name/alarm                 → 200 {"alarm": ms | null}
 *   GET  /healthz                                               → 200 {"ok": true, nodeId, epoch}; 503 {"ok":
 *                                                                 false, …, problems} while it cannot open actors
 *   GET  /                                                      → the status page (status-page.ts)
 *   GET  /v1/status                                             → what it shows, as JSON (status-view.ts)
 *
 * Every route but /healthz needs a bearer token when the node has a token file, or a cluster
 * signature on a forward (access.ts): 401 UNAUTHENTICATED (with WWW-Authenticate: Bearer), 403
 * FORBIDDEN. A verified forward's reply, error or not, is signed for the forwarding node.
 *
 * Path segments are percent-decoded (a name containing "/" is sent as %2F). Errors are
 * `{error: CODE, message}` with CODE from core/errors.ts' ErrorCode: 400 bad input, 404 unknown
 * route/class/method, 405, 409 an idempotency key reused with other arguments, 413 body too
 * large, 408 a body that did not arrive in httpBodyTimeoutMs, 503 overloaded, stopping, unreachable
 * or lease lost (retry), 504 handler time limit or an outcome unknown (its worker was restarted
 * while the handler ran: retry with the same idempotency key), 500 a handler failure, a result over
 * httpResultMaxBytes, a corrupt chain or state, or a bug (INTERNAL) — retrying does not help those.
 * Input is validated before any event is submitted, so bad input never writes. A refused body is
 * read to its end (up to DISCARD_MAX_BYTES) before the answer, so the client, still sending, hears it.
 */
import { createServer, type IncomingMessage, type ServerOptions, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { parseAddress, type ActorAddress } from '../core/address.js';
import {
  BadRequest,
  ErrorCode,
  Internal,
  MethodNotAllowed,
  NodeStopped,
  NotFound,
  PayloadTooLarge,
  MisdirectedRequest,
  PortUnavailable,
  RequestTimeout,
  ResultTooLarge,
  UnsupportedMediaType,
  isKeepworkError,
} from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { REPLY_SIGNATURE_HEADER, signReply } from '../core/cluster-signature.js';
import { authorize, callerOf, isForward, tenantFilter, type Caller } from './access.js';
import { isLoopback } from '../main/access-policy.js';
import { IDEMPOTENCY_HEADER, checkIdempotencyKey } from '../core/idempotency-key.js';
import type { BoundHttp, FrontDoorSettings, HttpServer, RoutingNode } from '../main/node-api.js';

export type { HttpServer };
import { STATUS_PAGE_HTML } from './status-page.js';
import { StatusView } from './status-view.js';
import { selfProblems } from './status-health.js';

/** What `startHttp` binds and serves with: the front door's settings (node-api.ts). */
export type HttpSettings = FrontDoorSettings;

const STATUS: Partial<Record<ErrorCode, number>> = {
  [ErrorCode.BadRequest]: 400,
  [ErrorCode.NotFound]: 404,
  [ErrorCode.IdempotencyMismatch]: 409,
  [ErrorCode.Overloaded]: 503,
  [ErrorCode.NodeStopped]: 503,
  [ErrorCode.HandlerTimeout]: 504,
  [ErrorCode.OutcomeUnknown]: 504,
  [ErrorCode.OwnerUnreachable]: 503,
  [ErrorCode.LeaseLost]: 503,
  [ErrorCode.ActorGivenUp]: 503,
  [ErrorCode.PayloadTooLarge]: 413,
  [ErrorCode.RequestTimeout]: 408,
  [ErrorCode.MethodNotAllowed]: 405,
  [ErrorCode.UnsupportedMediaType]: 415,
  [ErrorCode.MisdirectedRequest]: 421,
  [ErrorCode.Unauthenticated]: 401,
  [ErrorCode.Forbidden]: 403,
  // CORRUPT_LINK, CORRUPT_STATE, INTERNAL, HANDLER_FAILED, RESULT_TOO_LARGE: 500 (retrying will not help; see the logs)
};

const METHOD_RE = /^[A-Za-z_$][A-Za-z0-9_$]{0,127}$/;

/** A refused body is read and dropped up to this many bytes before the answer; past it the connection is closed. */
export const DISCARD_MAX_BYTES = 16_777_216;
/** A 503 (a retry helps) is logged at most once per code per this interval, with how many were not. */
export const RETRY_LOG_EVERY_MS = 10_000;

/**
 * Binds the port (PORT_UNAVAILABLE when it is taken or not allowed) and answers 503 NODE_STOPPED
 * until `serve` hands it the node: the node binds before it joins the cluster (start-node.ts).
 */
export async function startHttp(s: HttpSettings): Promise<BoundHttp> {
  let serving: { node: RoutingNode; settings: HttpSettings; view: StatusView; failures: FailureLog } | undefined;
  const { httpHeadersTimeoutMs: headersMs, httpBodyTimeoutMs: bodyMs } = s.limits;
  const options: ServerOptions = {
    headersTimeout: headersMs,
    // node:http's own limit for a whole request, past ours for the body (which answers with a code)
    requestTimeout: headersMs + bodyMs + 1_000,
    connectionsCheckingInterval: Math.max(50, Math.min(30_000, Math.floor(Math.min(headersMs, bodyMs) / 2))),
  };
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    if (!serving) return reply(res, undefined, new NodeStopped('this node is starting; retry'));
    const { node, settings, view, failures } = serving;
    handle(node, settings, req, res, view).catch((e: unknown) => reply(res, failures, e, req.url === '/'));
  };
  const tls = s.tls;
  const server = tls
    ? createTlsServer(
        { ...options, cert: tls.cert, key: tls.key, ca: tls.ca, requestCert: tls.requestCert, handshakeTimeout: headersMs },
        onRequest,
      )
    : createServer(options, onRequest);
  server.keepAliveTimeout = 5_000;
  server.maxConnections = s.limits.httpConnectionsMax;
  await new Promise<void>((ok, fail) => server.once('error', fail).listen(s.port, s.host, ok)).catch((e: unknown) => {
    throw portUnavailable(s, e);
  });
  const { port } = server.address() as AddressInfo;
  const host = s.host.includes(':') ? `[${s.host}]` : s.host;
  return {
    url: `${tls ? 'https' : 'http'}://${host}:${port}`,
    serve(node, log) {
      if (serving) throw new Internal('this HTTP server already serves a node');
      serving = { node, settings: { ...s, log }, view: new StatusView(node, node.metrics.feed), failures: new FailureLog(log) };
      serving.view.start();
    },
    close: () =>
      new Promise<void>((ok) => {
        serving?.view.stop();
        server.close(() => ok());
        server.closeAllConnections();
      }),
  };
}

function portUnavailable(s: HttpSettings, e: unknown): Error {
  const reason = (e as NodeJS.ErrnoException).code ?? 'unknown';
  const why = reason === 'EADDRINUSE' ? 'it is in use' : reason === 'EACCES' ? 'this process may not bind it' : (e as Error).message;
  const hint = s.port === 0 ? '' : '; pick another port (--port), or 0 for any free one';
  return new PortUnavailable(`cannot listen on ${s.host}:${s.port}: ${why} (${reason})${hint}`, {
    cause: e,
    details: { port: s.port, host: s.host, reason },
  });
}

/** A verified forward's replies are signed over its signature (forward.ts checks them). */
const replySigners = new WeakMap<ServerResponse, (status: number, body: string) => string>();

/**
 * The request target as a URL. It must be a path (origin form); one starting `//` is a path here,
 * where `new URL(target, base)` would take what follows for a host and throw.
 */
function targetUrl(target = '/'): URL {
  if (!target.startsWith('/')) throw new BadRequest(`the request target must be a path, got ${JSON.stringify(target.slice(0, 100))}`);
  return new URL(`http://x${target}`);
}

async function handle(node: RoutingNode, s: HttpSettings, req: IncomingMessage, res: ServerResponse, view: StatusView): Promise<void> {
  const url = targetUrl(req.url);
  const parts = url.pathname.split('/').slice(1);
  checkHost(s, req);
  if (url.pathname === '/healthz') {
    onlyMethod(req, 'GET');
    const { filesExhausted, actorFilesHeld } = node.metrics.feed;
    const problems = selfProblems({ nowMs: Date.now(), filesExhausted, actorFilesHeld });
    if (problems.length) return send(res, 503, { ok: false, nodeId: node.nodeId, epoch: node.epoch, problems });
    return send(res, 200, { ok: true, nodeId: node.nodeId, epoch: node.epoch });
  }
  const signedBody = isForward(s, req) ? await readBody(req, s) : undefined;
  const caller = callerOf(s, req, signedBody, Date.now());
  const key = s.clusterKey;
  const forwardSignature = caller.forwardSignature;
  if (key && forwardSignature) replySigners.set(res, (status, body) => signReply(key, forwardSignature, status, body));
  if (url.pathname === '/' || url.pathname === '/v1/status') {
    authorize(s, caller, { kind: 'read' });
    return serveStatus(url.pathname, req, res, view, caller);
  }
  if (url.pathname === '/metrics') {
    authorize(s, caller, { kind: 'metrics' });
    onlyMethod(req, 'GET');
    const text = await node.metricsText();
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
    return void res.end(text);
  }
  if (parts[0] !== 'v1' || parts[1] !== 'actors' || parts.length !== 6) throw new NotFound(`no route ${req.method} ${url.pathname}`);
  const address = addressOf(parts.slice(2, 5));
  authorize(s, caller, { kind: 'call', tenant: address.tenant });
  const last = decode(parts[5]!);
  const { hops, name } = caller;
  if (req.method === 'GET' && last === 'alarm') return send(res, 200, { alarm: await node.readAlarm(address, hops, name) });
  onlyMethod(req, 'POST');
  onlyJson(req);
  if (!METHOD_RE.test(last)) throw new BadRequest(`method name ${JSON.stringify(last)} must match ${METHOD_RE.source}`);
  const args = parseArgs(signedBody ?? (await readBody(req, s)));
  const durable = url.searchParams.get('durable');
  if (durable !== null && durable !== '0' && durable !== '1') throw new BadRequest('durable must be 0 or 1');
  const idempotencyKey = idempotencyKeyOf(req, durable === '1');
  const result = await node.request(address, last, args, durable === '1', hops, idempotencyKey, name);
  const text = JSON.stringify({ result: result === undefined ? null : result });
  const max = s.limits.httpResultMaxBytes;
  const size = Buffer.byteLength(text);
  if (size > max)
    throw new ResultTooLarge(
      `${address.key}.${last} ran, and its result is ${size} bytes as JSON; the limit is ${max} (httpResultMaxBytes)`,
    );
  sendText(res, 200, text);
}

async function serveStatus(path: string, req: IncomingMessage, res: ServerResponse, view: StatusView, caller: Caller): Promise<void> {
  onlyMethod(req, 'GET');
  if (path === '/v1/status') return send(res, 200, await view.json(tenantFilter(caller)));
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  res.end(STATUS_PAGE_HTML);
}

/**
 * A call's body must be declared JSON: a browser sends text/plain, a form's types or no type
 * across sites without a preflight, so this refuses every call a foreign page could make.
 */
function onlyJson(req: IncomingMessage): void {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json')
    throw new UnsupportedMediaType(`send the arguments with content-type: application/json, not ${JSON.stringify(type || 'none')}`);
}

/**
 * A node bound to loopback answers only requests addressed to a loopback name: a page whose domain
 * name was rebound to 127.0.0.1 sends its own name as Host, and must not read or call this node.
 */
function checkHost(s: HttpSettings, req: IncomingMessage): void {
  if (!isLoopback(s.host)) return;
  const host = req.headers.host ?? '';
  const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.split(':')[0]!;
  if (!isLoopback(name))
    throw new MisdirectedRequest(`this node listens on loopback and answers only loopback names, not Host ${JSON.stringify(host)}`);
}

function idempotencyKeyOf(req: IncomingMessage, durable: boolean): string | undefined {
  const raw = req.headers[IDEMPOTENCY_HEADER];
  if (raw === undefined) return undefined;
  if (Array.isArray(raw)) throw new BadRequest(`send one ${IDEMPOTENCY_HEADER} header, not ${raw.length}`);
  if (!durable) throw new BadRequest(`${IDEMPOTENCY_HEADER} needs a durable call: add ?durable=1`);
  return checkIdempotencyKey(raw);
}

function onlyMethod(req: IncomingMessage, method: string): void {
  if (req.method !== method) throw new MethodNotAllowed(`use ${method} here, not ${req.method}`);
}

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new BadRequest(`malformed percent-encoding in ${JSON.stringify(segment)}`);
  }
}

function addressOf(segments: string[]): ActorAddress {
  const [tenant, className, name] = segments.map(decode);
  return parseAddress({ tenant, className, name });
}

/**
 * The request body, within httpBodyMaxBytes and httpBodyTimeoutMs. A body over the limit is read on
 * and dropped to its end before PAYLOAD_TOO_LARGE, so the answer reaches a client still sending (a
 * socket closed under it is a reset, not a 413); one past DISCARD_MAX_BYTES is answered at once.
 */
function readBody(req: IncomingMessage, s: HttpSettings): Promise<string> {
  const max = s.bodyMaxBytes;
  const declared = Number(req.headers['content-length'] ?? 0);
  const tooLarge = () => new PayloadTooLarge(`request body exceeds ${max} bytes (httpBodyMaxBytes)`);
  if (declared > DISCARD_MAX_BYTES) return Promise.reject(tooLarge());
  return new Promise((ok, fail) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const timeoutMs = s.limits.httpBodyTimeoutMs;
    const timer = setTimeout(
      () => done(new RequestTimeout(`the request body did not arrive within ${timeoutMs} ms (httpBodyTimeoutMs)`)),
      timeoutMs,
    );
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= max) chunks.push(chunk);
      else if (size > DISCARD_MAX_BYTES) done(tooLarge());
      else chunks.length = 0;
    };
    const onEnd = () => (size > max ? done(tooLarge()) : done(undefined, Buffer.concat(chunks).toString('utf8')));
    const onAborted = () => done(new BadRequest('the client closed the connection before its body arrived'));
    function done(e: Error | undefined, text = ''): void {
      clearTimeout(timer);
      req.off('data', onData).off('end', onEnd).off('aborted', onAborted);
      if (e) {
        req.pause();
        fail(e);
      } else ok(text);
    }
    req.on('data', onData).on('end', onEnd).on('aborted', onAborted);
  });
}

/** How deep a call's arguments may nest (the arguments array is level 1): deeper ones would overflow a stack on their way to the handler. */
export const ARGS_DEPTH_MAX = 64;

function parseArgs(body: string): unknown[] {
  if (body.trim() === '') return [];
  const depth = nestingDepth(body);
  if (depth > ARGS_DEPTH_MAX) throw new BadRequest(`the arguments nest ${depth} levels deep; at most ${ARGS_DEPTH_MAX} are taken`);
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (e) {
    throw new BadRequest(`body is not JSON: ${(e as Error).message}`);
  }
  if (!Array.isArray(value)) throw new BadRequest('body must be a JSON array of arguments, e.g. [1, "two"]');
  return value;
}

/** The deepest nesting of arrays and objects in JSON text (strings skipped), without parsing it. */
function nestingDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // a backslash escapes the next character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) max = Math.max(max, ++depth);
    else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}

/**
 * Failed requests in the node's log: a 500 each with its error (a bug, or a handler's failure); a
 * 503 — a retry helps, and under load there are many — once per code per RETRY_LOG_EVERY_MS,
 * without a stack, saying how many of that code were not logged since.
 */
class FailureLog {
  private readonly last = new Map<string, { atMs: number; unlogged: number }>();

  constructor(private readonly log: Logger) {}

  failed(status: number, code: ErrorCode, message: string, e: unknown): void {
    if (status !== 503) return void this.log.warn({ code, err: e }, 'request failed');
    const now = Date.now();
    const seen = this.last.get(code);
    if (seen && now - seen.atMs < RETRY_LOG_EVERY_MS) return void seen.unlogged++;
    this.last.set(code, { atMs: now, unlogged: 0 });
    this.log.warn(
      { code, message, unloggedSince: seen?.unlogged ?? 0 },
      `request refused with 503 (logged once per ${RETRY_LOG_EVERY_MS} ms)`,
    );
  }
}

/** `failures`: undefined for the 503s of a node that is not serving yet (nothing to log); `page`: the request was for `GET /`. */
function reply(res: ServerResponse, failures: FailureLog | undefined, e: unknown, page = false): void {
  // A handler's failure arrives coded (HANDLER_FAILED, from the worker); an uncoded error here is the node's own bug.
  const code = isKeepworkError(e) ? e.code : ErrorCode.Internal;
  const status = STATUS[code] ?? 500;
  const message = e instanceof Error ? e.message : String(e);
  if (status >= 500) failures?.failed(status, code, message, e);
  if (res.headersSent) return void res.destroy();
  if (status === 413 || status === 408) res.setHeader('connection', 'close');
  // The status page asks a browser for the token (the password of a Basic login); everything else, a client.
  if (status === 401) res.setHeader('www-authenticate', page ? 'Basic realm="keepwork", charset="UTF-8"' : 'Bearer realm="keepwork"');
  if (status === 503) res.setHeader('retry-after', String(retryAfterSeconds(e)));
  send(res, status, { error: code, message });
}

/** A 503's Retry-After in whole seconds: the error's `details.retryAfterMs` rounded up, else 1. */
function retryAfterSeconds(e: unknown): number {
  const ms = (e as { details?: { retryAfterMs?: unknown } }).details?.retryAfterMs;
  return typeof ms === 'number' && Number.isFinite(ms) && ms > 0 ? Math.ceil(ms / 1000) : 1;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  sendText(res, status, JSON.stringify(body));
}

function sendText(res: ServerResponse, status: number, text: string): void {
  const signer = replySigners.get(res);
  if (signer) res.setHeader(REPLY_SIGNATURE_HEADER, signer(status, text));
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
