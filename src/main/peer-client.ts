/**
 * Requests from this node to another node's HTTP API (forward.ts), over node:http or node:https
 * by the address's scheme, on keep-alive connections:
 *
 *   request(url, { method, headers, body, timeoutMs }) ─▶ { status, header(name), text }
 *
 * An https peer's certificate must chain to `tls.ca` (the system store when absent) and name the
 * address's host; when the peer asks for a client certificate, `tls.cert`/`tls.key` are presented.
 * A redirect is an answer like any other (never followed). Rejects with the transport's error — a
 * refused connection, a failed TLS verification, `timeoutMs` passed before the whole reply
 * arrived, or a reply over `replyMaxBytes` — and the caller decides what that means.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { ClientTls } from '../core/tls-material.js';

export interface PeerRequest {
  method: string;
  headers: Record<string, string>;
  body?: string;
  timeoutMs: number;
}

export interface PeerReply {
  status: number;
  header(name: string): string | undefined;
  text: string;
}

/** A reply longer than the client's `replyMaxBytes`: cut off, never buffered whole. */
export class ReplyTooLarge extends Error {}

/**
 * A peer closes a connection idle for 5 s (server.ts keepAliveTimeout); ours drop theirs earlier,
 * so a forward is never written to a socket the peer is closing.
 */
const IDLE_SOCKET_MS = 4_000;

export class PeerClient {
  private readonly http = new HttpAgent({ keepAlive: true, timeout: IDLE_SOCKET_MS });
  private readonly https: HttpsAgent;

  constructor(
    tls: ClientTls,
    private readonly replyMaxBytes: number,
    /** TEST-ONLY (UnsafeTestSeams `forwardDropped`): requests to these URLs are never answered. */
    private readonly dropped?: (url: string) => boolean,
  ) {
    this.https = new HttpsAgent({ keepAlive: true, timeout: IDLE_SOCKET_MS, ...tls });
  }

  request(url: string, r: PeerRequest): Promise<PeerReply> {
    if (this.dropped?.(url))
      return new Promise((_, fail) => setTimeout(() => fail(new Error(`no whole reply within ${r.timeoutMs} ms`)), r.timeoutMs));
    const secure = url.startsWith('https:');
    const send = secure ? httpsRequest : httpRequest;
    const headers = r.body === undefined ? r.headers : { ...r.headers, 'content-length': String(Buffer.byteLength(r.body)) };
    return new Promise<PeerReply>((ok, fail) => {
      const req = send(url, { method: r.method, headers, agent: secure ? this.https : this.http });
      // a promise settles once: whichever of these comes first is the outcome
      const done = (e: Error | undefined, reply?: PeerReply) => {
        clearTimeout(timer);
        if (e) fail(e);
        else ok(reply!);
      };
      // destroyed without the error: passed on, it would reach the socket after the reply's listeners are gone
      const abort = (e: Error) => {
        req.destroy();
        done(e);
      };
      const timer = setTimeout(() => abort(new Error(`no whole reply within ${r.timeoutMs} ms`)), r.timeoutMs);
      req.on('error', (e) => done(e));
      req.once('response', (res) => this.read(res, abort, done));
      req.end(r.body);
    });
  }

  /** Closes the idle connections (a stopping node). */
  close(): void {
    this.http.destroy();
    this.https.destroy();
  }

  private read(res: IncomingMessage, abort: (e: Error) => void, done: (e: Error | undefined, reply?: PeerReply) => void): void {
    const chunks: Buffer[] = [];
    let size = 0;
    res.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > this.replyMaxBytes) abort(new ReplyTooLarge(`the reply exceeds ${this.replyMaxBytes} bytes`));
      else chunks.push(chunk);
    });
    res.on('error', (e) => done(e));
    res.once('end', () =>
      done(undefined, {
        status: res.statusCode ?? 0,
        header: (name) => {
          const v = res.headers[name.toLowerCase()];
          return Array.isArray(v) ? v.join(', ') : v;
        },
        text: Buffer.concat(chunks).toString('utf8'),
      }),
    );
  }
}
