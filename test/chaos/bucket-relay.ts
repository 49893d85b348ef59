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
 *
 * and can make one address's requests fail as a bucket's do on the wire (`wire(ip, faults)`, a
 * node run's wire profile; none while the address is held, nor while `calm`):
 *
 *   latency    each request waits 20–200 ms before its first byte goes on (a 503 answer too)
 *   slowDown   in bursts, a fraction of the writes (PUT, POST, DELETE) and of the reads is answered
 *              `503 SlowDown` by the relay with S3's XML error body and a Content-Length: the
 *              request's body (its Content-Length known) is read and dropped, never forwarded,
 *              and the connection stays usable for the next request
 *   reset      a fraction of the writes goes on whole; when the endpoint's answer starts to come
 *              back (the write applied), the relay resets the node's connection and closes the
 *              endpoint's, passing none of it: an ambiguous write the node must read back
 *
 * The answers of one connection come back in the order of its requests only because the S3
 * clients send one request at a time on a connection (undici's pipelining 1, node:http's Agent).
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { SeededRandom } from '../../src/core/random.js';

/** One HTTP request a node sent, as the relay read it. */
export interface RelayedRequest {
  /** The sender's IPv4 address. */
  from: string;
  method: string;
  /** The path, percent-decoded (`/bucket/prefix/alarms/…`). */
  path: string;
  query: URLSearchParams;
}

/** The wire faults of one node run (plan.ts draws them from the seed). */
export interface WireFaults {
  /** Seeds the per-request draws. */
  seed: number;
  /** Each request waits a time drawn in [min, max] ms before it goes on. */
  latencyMs?: { min: number; max: number };
  /**
   * In bursts of `burstMs` at the end of every `burstEveryMs` from the run's start, this fraction
   * of the writes and of the reads is answered 503 SlowDown by the relay.
   */
  slowDown?: { writes: number; reads: number; burstEveryMs: number; burstMs: number };
  /** This fraction of the writes is applied and its answer replaced by a reset. */
  reset?: number;
  /**
   * This fraction of the writes has its connection reset as soon as the relay has read it, before
   * it is applied, and lands at the endpoint a time drawn in `ms` later, on a connection of its
   * own (its answer dropped): the node hears of a failure, retries, and may meet its first
   * attempt landing after the retry.
   */
  late?: { p: number; ms: { min: number; max: number } };
}

/** What the relay made of the wire faults, by kind. */
export interface WireCounts {
  wire503: number;
  wireReset: number;
  wireLatency: number;
  wireLate: number;
}

/** What happens to one request. */
interface Fate {
  delayMs: number;
  answer: 'forward' | 'slowDown' | 'reset' | 'late';
  /** For `late`: how long after the reset it lands. */
  lateMs?: number;
}

const FORWARD: Fate = { delayMs: 0, answer: 'forward' };
const WRITES = new Set(['PUT', 'POST', 'DELETE']);

/** S3's answer to a request it throttles. */
function slowDownAnswer(method: string): Buffer {
  const body =
    method === 'HEAD'
      ? ''
      : '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message><RequestId>kw-relay</RequestId></Error>';
  const head = [
    'HTTP/1.1 503 Slow Down',
    'Content-Type: application/xml',
    `Content-Length: ${Buffer.byteLength(body)}`,
    `Date: ${new Date().toUTCString()}`,
    'Connection: keep-alive',
  ].join('\r\n');
  return Buffer.from(`${head}\r\n\r\n${body}`, 'latin1');
}

/** Requests whose head (request line and headers) is larger than this are not read: the connection is passed through. */
const HEAD_MAX = 64 * 1024;

/** One relayed connection: the node's end, the endpoint's, and what the node sent that waits. */
/** Bytes, the node's end of the stream (`null`), or the mark that the request before it was a write to reset at its answer. */
type Piece = Buffer | null | 'armReset';

class Relayed {
  /** Pieces waiting while the sender is held. */
  readonly waiting: Piece[] = [];
  /** Pieces waiting for their request's latency, with the time they go on. */
  private readonly delayed: { piece: Piece; at: number }[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** When the current request's pieces go on. */
  private sendAt = 0;
  /** The current request: its body is dropped (answered 503 by the relay), and what comes after its body. */
  private dropping: { method: string; delayMs: number } | undefined;
  private resetAfterBody = false;
  /** The current request, kept back whole to land late (its head and body so far). */
  private lateRequest: { pieces: Buffer[]; lateMs: number } | undefined;
  /** The last request forwarded is a write whose answer is replaced by a reset. */
  resetArmed = false;
  /** Bytes of a request head not complete yet. */
  private head = Buffer.alloc(0);
  /** Body bytes of the current request still to pass. */
  private bodyLeft = 0;
  /** Not HTTP as the relay reads it (a chunked body, an oversized head): bytes pass unread. */
  private unread = false;

  constructor(
    readonly from: string,
    readonly up: Socket,
    private readonly down: Socket,
    private readonly relay: BucketRelay,
  ) {}

  /** Bytes from the node: split at request starts, each request shown to the watchers before it goes on. */
  received(chunk: Buffer): void {
    while (chunk.length > 0) {
      if (this.unread) return this.emit(chunk);
      if (this.bodyLeft > 0) {
        const n = Math.min(this.bodyLeft, chunk.length);
        if (this.lateRequest) this.lateRequest.pieces.push(chunk.subarray(0, n));
        else if (!this.dropping) this.emit(chunk.subarray(0, n));
        this.bodyLeft -= n;
        chunk = chunk.subarray(n);
        if (this.bodyLeft === 0) this.requestEnded();
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
        this.emit(head);
        this.passUnread(chunk);
        return;
      }
      this.bodyLeft = parsed.contentLength;
      const fate = this.relay.fateOf(this.from, parsed.method);
      this.sendAt = Math.max(this.sendAt, Date.now() + fate.delayMs);
      this.dropping = fate.answer === 'slowDown' ? { method: parsed.method, delayMs: fate.delayMs } : undefined;
      this.resetAfterBody = fate.answer === 'reset';
      this.lateRequest = fate.answer === 'late' ? { pieces: [Buffer.from(head)], lateMs: fate.lateMs! } : undefined;
      if (!this.dropping) this.relay.seen({ from: this.from, method: parsed.method, path: parsed.path, query: parsed.query });
      if (!this.dropping && !this.lateRequest) this.emit(head);
      if (this.bodyLeft === 0) this.requestEnded();
    }
  }

  /**
   * The current request's last byte was read: a dropped one is answered 503, a write to reset is
   * marked, one kept back to land late goes to the relay and both ends of this connection are reset.
   */
  private requestEnded(): void {
    if (this.lateRequest) {
      const { pieces, lateMs } = this.lateRequest;
      this.lateRequest = undefined;
      this.relay.landLate(Buffer.concat(pieces), lateMs);
      this.down.resetAndDestroy();
      this.up.destroy();
    } else if (this.dropping) {
      const { method, delayMs } = this.dropping;
      this.dropping = undefined;
      const answer = () => {
        if (this.down.destroyed) return;
        this.relay.wireCounts.wire503++;
        this.down.write(slowDownAnswer(method));
      };
      if (delayMs > 0) this.later(answer, delayMs);
      else answer();
    } else if (this.resetAfterBody) {
      this.resetAfterBody = false;
      this.emit('armReset');
    }
  }

  private readonly timers = new Set<NodeJS.Timeout>();

  private later(fn: () => void, ms: number): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    this.timers.add(t);
  }

  /** A piece of the current request: on at once, or after its request's latency (behind what waits already). */
  private emit(piece: Piece): void {
    if (this.delayed.length === 0 && Date.now() >= this.sendAt) return this.pass(piece);
    this.delayed.push({ piece, at: this.sendAt });
    this.schedule();
  }

  private schedule(): void {
    if (this.timer || this.delayed.length === 0) return;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        while (this.delayed.length > 0 && this.delayed[0]!.at <= Date.now()) this.pass(this.delayed.shift()!.piece);
        this.schedule();
      },
      Math.max(0, this.delayed[0]!.at - Date.now()),
    );
  }

  /** The endpoint's answer starts: passed on, or, after a write marked to reset, both connections reset. */
  answered(): boolean {
    if (!this.resetArmed) return true;
    this.resetArmed = false;
    this.relay.wireCounts.wireReset++;
    this.down.resetAndDestroy();
    this.up.destroy();
    return false;
  }

  /** Timers stopped (the relay closes). */
  dispose(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  private over = false;

  /** The node ended its side of the connection (or it broke). */
  ended(): void {
    if (this.over) return;
    this.over = true;
    this.emit(null);
  }

  flush(): void {
    for (const b of this.waiting.splice(0)) this.write(b);
  }

  private passUnread(rest: Buffer = Buffer.alloc(0)): void {
    this.unread = true;
    const bytes = Buffer.concat([this.head, rest]);
    this.head = Buffer.alloc(0);
    if (bytes.length > 0) this.emit(bytes);
  }

  private pass(b: Piece): void {
    if (this.relay.isHeld(this.from) || this.waiting.length > 0) this.waiting.push(b);
    else this.write(b);
  }

  private write(b: Piece): void {
    if (this.up.destroyed) return;
    if (b === 'armReset') this.resetArmed = true;
    else if (b === null) this.up.end();
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
  /** Each address's wire faults, their draws and when they began. */
  private readonly wires = new Map<string, { faults: WireFaults; random: SeededRandom; since: number }>();
  private isCalm = false;
  readonly wireCounts: WireCounts = { wire503: 0, wireReset: 0, wireLatency: 0, wireLate: 0 };
  /** Requests waiting to land late. */
  private readonly lateTimers = new Set<NodeJS.Timeout>();

  private constructor(
    private readonly server: Server,
    /** Both ends of every connection relayed now. */
    private readonly sockets: Set<Socket>,
    /** The S3 URL the nodes open: the harness's, its endpoint moved to the relay. */
    readonly nodeUrl: string,
    private readonly endpoint: { host: string; port: number },
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
    const relay = new BucketRelay(server, sockets, nodeUrl, { host: endpoint.hostname, port: Number(endpoint.port || 80) });
    server.on('connection', (down) => relay.accept(down));
    return relay;
  }

  private accept(down: Socket): void {
    const up = connect(this.endpoint.port, this.endpoint.host);
    const c = new Relayed(ipv4(down.remoteAddress), up, down, this);
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
    up.on('data', (chunk: Buffer) => {
      if (c.answered() && !down.write(chunk)) up.pause();
    });
    down.on('drain', () => up.resume());
    up.once('end', () => down.end());
  }

  /** From now, `ip`'s requests meet these wire faults (a node run's; undefined: none). */
  wire(ip: string, faults: WireFaults | undefined): void {
    if (faults) this.wires.set(ip, { faults, random: new SeededRandom(faults.seed), since: Date.now() });
    else this.wires.delete(ip);
  }

  /** No wire faults while on (a race's calm span, relay-faults.ts). */
  calm(on: boolean): void {
    this.isCalm = on;
  }

  /** @internal What happens to a request `ip` sends now. */
  fateOf(ip: string, method: string): Fate {
    const w = this.wires.get(ip);
    if (!w || this.isCalm || this.held.has(ip)) return FORWARD;
    const { faults, random } = w;
    const delayMs = faults.latencyMs ? faults.latencyMs.min + random.int(faults.latencyMs.max - faults.latencyMs.min + 1) : 0;
    if (delayMs > 0) this.wireCounts.wireLatency++;
    const write = WRITES.has(method);
    const s = faults.slowDown;
    if (s) {
      const inBurst = (Date.now() - w.since) % s.burstEveryMs >= s.burstEveryMs - s.burstMs;
      if (inBurst && random.float() < (write ? s.writes : s.reads)) return { delayMs, answer: 'slowDown' };
    }
    if (write && faults.reset !== undefined && random.float() < faults.reset) return { delayMs, answer: 'reset' };
    const late = faults.late;
    if (write && late && random.float() < late.p)
      return { delayMs, answer: 'late', lateMs: late.ms.min + random.int(late.ms.max - late.ms.min + 1) };
    return { delayMs, answer: 'forward' };
  }

  /** @internal A request read whole whose node connection was reset: it lands at the endpoint `ms` from now, its answer dropped. */
  landLate(request: Buffer, ms: number): void {
    const t = setTimeout(() => {
      this.lateTimers.delete(t);
      this.wireCounts.wireLate++;
      const s = connect(this.endpoint.port, this.endpoint.host);
      this.sockets.add(s);
      s.once('close', () => this.sockets.delete(s));
      s.on('error', () => undefined);
      // The endpoint answers once it applied the request: that answer is the end of it.
      s.once('data', () => s.destroy());
      s.write(request);
    }, ms);
    this.lateTimers.add(t);
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
    for (const t of this.lateTimers) clearTimeout(t);
    this.lateTimers.clear();
    for (const c of this.connections) c.dispose();
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
