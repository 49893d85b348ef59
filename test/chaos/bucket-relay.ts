/**
 * The S3 bucket as the nodes in network namespaces reach it: a TCP relay in the harness, listening
 * on a second address of the root namespace (`lab.rootAlias()`), passing each connection through to
 * the S3 endpoint on loopback. Packets between a node and that address are what a bucket cut drops
 * (faults.ts), apart from those between the node and the harness (the clients, at `lab.rootIp`).
 *
 *   node (namespace n1) ──TCP── <net>.2:<port> relay ──TCP── 127.0.0.1:7480 (RGW)
 *
 * The relay never drops, delays or reads what it passes: the cuts are nftables rules in the
 * node's namespace, so a cut request times out (or lands with its answer lost) as on a network.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

export class BucketRelay {
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
    const server = createServer((down) => {
      const up = connect(Number(endpoint.port || 80), endpoint.hostname);
      for (const s of [down, up]) {
        sockets.add(s);
        s.once('close', () => sockets.delete(s));
        s.on('error', () => {
          down.destroy();
          up.destroy();
        });
      }
      down.pipe(up);
      up.pipe(down);
    });
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, listenIp, resolve));
    const port = (server.address() as { port: number }).port;
    const nodeUrl = s3Url.replace(/endpoint=[^&]+/, `endpoint=${encodeURIComponent(`http://${listenIp}:${port}`)}`);
    return new BucketRelay(server, sockets, nodeUrl);
  }

  /** Stops listening and ends every connection. */
  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
