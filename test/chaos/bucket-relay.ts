/**
 * The S3 bucket as the nodes in network namespaces reach it: a TCP relay in the harness, listening
 * on a second address of the root namespace (`lab.rootAlias()`), passing each connection through to
 * the S3 endpoint on loopback. Packets between a node and that address are what a bucket cut drops
 * (faults.ts), apart from those between the node and the harness (the clients, at `lab.rootIp`).
 *
 *   node (namespace n1) ──TCP── <net>.2:<port> relay ──TCP── 127.0.0.1:7480 (RGW)
 *
 * The cuts are nftables rules in the node's namespace, so a cut request times out (or lands with
 * its answer lost) as on a network. The relay itself never drops a byte, but it reads the request
 * line of each HTTP request a node sends (plain HTTP/1.1, bodies sent whole with a Content-Length,
 * as the S3 client sends them) and can hold what one address sends:
 *
 *   watch(fn)      fn sees each request (its sender's address, method, path and query) before
 *                  any byte of it goes on, and may hold its sender from that request on
 *   hold(ip)       every byte that address sends, on its open connections and on new ones, waits
 *                  in the relay; its answers still come back
 *   release(ip)    what waited goes on, in order, connection by connection, and the rest flows —
 *                  also on connections the node closed meanwhile (its client timed out): a request
 *                  delivered late, applied after its caller gave up on it
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

/** One HTTP request a node sent, as the relay read it. */
export interface RelayedRequest {
  /** The sender's IPv4 address. */
  from: string;
  method: string;
  /** The path, percent-decoded (`/bucket/prefix/alarms/…`). */
  path: string;
  query: URLSearchParams;
}

/** Requests whose head (request line and headers) is larger than this are not read: the connection is passed through. */
const HEAD_MAX = 64 * 1024;

/** One relayed connection: the node's end, the endpoint's, and what the node sent that waits. */
class Relayed {
  /** Bytes (and the node's end of the stream, `null`) waiting while the sender is held. */
  readonly waiting: (Buffer | null)[] = [];
  /** Bytes of a request head not complete yet. */
  private head = Buffer.alloc(0);
  /** Body bytes of the current request still to pass. */
  private bodyLeft = 0;
  /** Not HTTP as the relay reads it (a chunked body, an oversized head): bytes pass unread. */
  private unread = false;

  constructor(
    readonly from: string,
    readonly up: Socket,
    private readonly relay: BucketRelay,
  ) {}

  /** Bytes from the node: split at request starts, each request shown to the watchers before it goes on. */
  received(chunk: Buffer): void {
    while (chunk.length > 0) {
      if (this.unread) return this.pass(chunk);
      if (this.bodyLeft > 0) {
        const n = Math.min(this.bodyLeft, chunk.length);
        this.pass(chunk.subarray(0, n));
        this.bodyLeft -= n;
        chunk = chunk.subarray(n);
        continue;
      }
      this.head = Buffer.concat([this.head, chunk]);
      chunk = Buffer.alloc(0);
      const end = this.head.indexOf('\r\n\r\n');
      if (end < 0) {
        if (this.head.length > HEAD_MAX) this.passUnread();
        return;
      }
      const head = this.head.subarray(0, end + 4);
      chunk = this.head.subarray(end + 4);
      this.head = Buffer.alloc(0);
      const parsed = parseHead(head.toString('latin1'));
      if (!parsed) {
        this.pass(head);
        this.passUnread(chunk);
        return;
      }
      this.bodyLeft = parsed.contentLength;
      this.relay.seen({ from: this.from, method: parsed.method, path: parsed.path, query: parsed.query });
      this.pass(head);
    }
  }

  private over = false;

  /** The node ended its side of the connection (or it broke). */
  ended(): void {
    if (this.over) return;
    this.over = true;
    this.pass(null);
  }

  flush(): void {
    for (const b of this.waiting.splice(0)) this.write(b);
  }

  private passUnread(rest: Buffer = Buffer.alloc(0)): void {
    this.unread = true;
    const bytes = Buffer.concat([this.head, rest]);
    this.head = Buffer.alloc(0);
    if (bytes.length > 0) this.pass(bytes);
  }

  private pass(b: Buffer | null): void {
    if (this.relay.isHeld(this.from) || this.waiting.length > 0) this.waiting.push(b);
    else this.write(b);
  }

  private write(b: Buffer | null): void {
    if (this.up.destroyed) return;
    if (b === null) this.up.end();
    else this.up.write(b);
  }
}

function parseHead(head: string): { method: string; path: string; query: URLSearchParams; contentLength: number } | undefined {
  const lines = head.split('\r\n');
  const m = /^([A-Z]+) (\S+) HTTP\/1\.[01]$/.exec(lines[0] ?? '');
  if (!m) return undefined;
  let contentLength = 0;
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === 'transfer-encoding') return undefined;
    if (name === 'content-length') contentLength = Number(value);
  }
  if (!Number.isSafeInteger(contentLength) || contentLength < 0) return undefined;
  const target = m[2]!;
  const q = target.indexOf('?');
  const rawPath = q < 0 ? target : target.slice(0, q);
  let path: string;
  try {
    path = decodeURIComponent(rawPath);
  } catch {
    path = rawPath;
  }
  return { method: m[1]!, path, query: new URLSearchParams(q < 0 ? '' : target.slice(q + 1)), contentLength };
}

const ipv4 = (address: string | undefined) => (address ?? '').replace(/^::ffff:/, '');

export class BucketRelay {
  /** Every connection relayed now, and those whose bytes wait for their sender's release. */
  private readonly connections = new Set<Relayed>();
  private readonly held = new Set<string>();
  private readonly watchers: ((r: RelayedRequest) => void)[] = [];

  private constructor(
    private readonly server: Server,
    /** Both ends of every connection relayed now. */
    private readonly sockets: Set<Socket>,
    /** The S3 URL the nodes open: the harness's, its endpoint moved to the relay. */
    readonly nodeUrl: string,
  ) {}

  /** Relays `listenIp`:(free port) to the endpoint of `s3Url` (an `s3://…?endpoint=http://host:port` URL). */
  static async start(s3Url: string, listenIp: string): Promise<BucketRelay> {
    const endpoint = new URL(new URLSearchParams(s3Url.slice(s3Url.indexOf('?') + 1)).get('endpoint') ?? '');
    if (endpoint.protocol !== 'http:') throw new Error(`the bucket relay passes plain http to an endpoint; got ${endpoint.href}`);
    const sockets = new Set<Socket>();
    const server = createServer();
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, listenIp, resolve));
    const port = (server.address() as { port: number }).port;
    const nodeUrl = s3Url.replace(/endpoint=[^&]+/, `endpoint=${encodeURIComponent(`http://${listenIp}:${port}`)}`);
    const relay = new BucketRelay(server, sockets, nodeUrl);
    server.on('connection', (down) => relay.accept(down, Number(endpoint.port || 80), endpoint.hostname));
    return relay;
  }

  private accept(down: Socket, port: number, host: string): void {
    const up = connect(port, host);
    const c = new Relayed(ipv4(down.remoteAddress), up, this);
    this.connections.add(c);
    for (const s of [down, up]) {
      this.sockets.add(s);
      s.once('close', () => this.sockets.delete(s));
    }
    // A broken node end ends the request stream (what waits still goes on at the release); a
    // broken endpoint end ends both.
    down.on('error', () => undefined);
    down.once('end', () => c.ended());
    down.once('close', () => {
      c.ended();
      if (c.waiting.length === 0) this.connections.delete(c);
    });
    up.on('error', () => down.destroy());
    up.once('close', () => {
      down.destroy();
      this.connections.delete(c);
    });
    down.on('data', (chunk: Buffer) => c.received(chunk));
    up.pipe(down);
  }

  /** `fn` sees every request before it goes on (and may `hold` its sender, this request included). */
  watch(fn: (r: RelayedRequest) => void): void {
    this.watchers.push(fn);
  }

  /** From now, what `ip` sends waits in the relay until `release(ip)`. */
  hold(ip: string): void {
    this.held.add(ip);
  }

  /** What `ip` sent while held goes on, in order per connection, and the rest flows again. */
  release(ip: string): void {
    this.held.delete(ip);
    for (const c of this.connections) {
      if (c.from !== ip) continue;
      c.flush();
      if (c.up.destroyed) this.connections.delete(c);
    }
  }

  isHeld(ip: string): boolean {
    return this.held.has(ip);
  }

  /** @internal Called by a connection for each request it read. */
  seen(r: RelayedRequest): void {
    for (const fn of this.watchers) fn(r);
  }

  /** Stops listening and ends every connection (what waits is dropped). */
  async close(): Promise<void> {
    this.held.clear();
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
