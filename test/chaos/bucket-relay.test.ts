/**
 * The bucket relay (bucket-relay.ts): the nodes' S3 URL points at it, and it passes each
 * connection's bytes both ways to the endpoint, unchanged; closing it ends every connection. It
 * shows each HTTP request to its watchers before passing it on (bodies are not read as requests),
 * and holds what one address sends until it is released — then delivers it in order, even when
 * the sender closed its connection meanwhile. Its wire faults, per address: a 503 SlowDown it
 * answers itself (the request's body dropped, the connection still usable), a write applied whose
 * answer becomes a reset, a write reset before it is applied that lands later, and latency.
 */
import assert from 'node:assert/strict';
import { createServer as createHttpServer } from 'node:http';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { after, describe, it } from 'node:test';
import { BucketRelay, type RelayedRequest } from './bucket-relay.js';

/** An upstream that answers every chunk with `echo:<chunk>` and records what it received. */
async function echoServer(): Promise<{ server: Server; port: number; received: () => string; sockets: Socket[] }> {
  const sockets: Socket[] = [];
  let received = '';
  const server = createServer((s) => {
    sockets.push(s);
    s.on('data', (d) => {
      received += d.toString('latin1');
      s.write(Buffer.concat([Buffer.from('echo:'), d]));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as { port: number }).port, received: () => received, sockets };
}

const relayPort = (relay: BucketRelay) => Number(new URL(decodeURIComponent(/endpoint=([^&]+)/.exec(relay.nodeUrl)![1]!)).port);

/** A client connection from `localAddress` (any 127.x address is this machine's). */
function client(relay: BucketRelay, localAddress = '127.0.0.1'): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect({ port: relayPort(relay), host: '127.0.0.1', localAddress });
    s.once('error', reject);
    s.once('connect', () => resolve(s));
  });
}

/** Reads from `s` until `text` has come. */
function until(s: Socket, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let got = '';
    const onData = (d: Buffer) => {
      got += d.toString('latin1');
      if (got.includes(text)) {
        s.off('data', onData);
        resolve(got);
      }
    };
    s.on('data', onData);
    s.once('error', reject);
  });
}

/** Sends `request` on `s` and waits for the connection to end: its error (none: closed cleanly) and what came back. */
function sendUntilClosed(s: Socket, request: string): Promise<{ error: NodeJS.ErrnoException | undefined; got: string }> {
  let got = '';
  s.on('data', (d: Buffer) => (got += d.toString('latin1')));
  const ended = new Promise<{ error: NodeJS.ErrnoException | undefined; got: string }>((r) => {
    s.once('error', (error) => r({ error, got }));
    s.once('close', () => r({ error: undefined, got }));
  });
  s.write(request);
  return ended;
}

async function waitFor(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setImmediate(r));
}

describe('BucketRelay', () => {
  const closers: (() => unknown)[] = [];
  after(async () => {
    for (const c of closers.reverse()) await c();
  });
  /** An echo server behind a relay, both closed after the suite. */
  const relayToEcho = async () => {
    const echo = await echoServer();
    closers.push(() => echo.server.close());
    const relay = await BucketRelay.start(`s3://b?endpoint=http://127.0.0.1:${echo.port}&region=x`, '127.0.0.1');
    closers.push(() => relay.close());
    return { echo, relay };
  };

  it('moves the endpoint to itself and relays bytes both ways until closed', async () => {
    const echo = await echoServer();
    closers.push(() => echo.server.close());
    const relay = await BucketRelay.start(`s3://b/p?endpoint=http://127.0.0.1:${echo.port}&region=us-east-1`, '127.0.0.1');
    const at = new URL(decodeURIComponent(/endpoint=([^&]+)/.exec(relay.nodeUrl)![1]!));
    assert.equal(at.hostname, '127.0.0.1');
    assert.notEqual(Number(at.port), echo.port);
    assert.match(relay.nodeUrl, /^s3:\/\/b\/p\?endpoint=.*&region=us-east-1$/);

    const c = await client(relay);
    const answer = until(c, 'echo:');
    c.write('GET / HTTP/1.1\r\n\r\n');
    assert.equal(await answer, 'echo:GET / HTTP/1.1\r\n\r\n');

    const closed = new Promise<void>((r) => c.once('close', () => r()));
    await relay.close();
    await closed;
    assert.equal(echo.sockets.length, 1);
  });

  it('refuses an endpoint that is not plain http', async () => {
    await assert.rejects(BucketRelay.start('s3://b?endpoint=https://s3.example.com&region=x', '127.0.0.1'), /plain http/);
  });

  it('shows each request of a keep-alive connection once, split across chunks, its body not read as a request', async () => {
    const { echo, relay } = await relayToEcho();
    const seen: RelayedRequest[] = [];
    relay.watch((r) => seen.push(r));
    const c = await client(relay);
    const body = 'GET /not-a-request HTTP/1.1\r\n\r\n';
    const first = `PUT /b/state/chaos/a%20b/00000000000000000001 HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    const second = 'GET /b?list-type=2&prefix=p%2Falarms%2F HTTP/1.1\r\nhost: x\r\n\r\n';
    const all = first + second;
    // In pieces that cut the heads and the body anywhere.
    for (const [from, to] of [
      [0, 7],
      [7, 60],
      [60, first.length + 3],
      [first.length + 3, all.length],
    ])
      c.write(all.slice(from, to));
    await waitFor(() => echo.received().length === all.length);
    assert.equal(echo.received(), all);
    assert.deepEqual(
      seen.map((r) => [r.from, r.method, r.path, r.query.get('prefix')]),
      [
        ['127.0.0.1', 'PUT', '/b/state/chaos/a b/00000000000000000001', null],
        ['127.0.0.1', 'GET', '/b', 'p/alarms/'],
      ],
    );
    c.destroy();
  });

  it('holds what one address sends, new connections too, and delivers it in order at the release', async () => {
    const { echo, relay } = await relayToEcho();
    const seen: string[] = [];
    // The watcher holds the sender of a request to /held from that request on.
    relay.watch((r) => {
      seen.push(`${r.from} ${r.path}`);
      if (r.path === '/held') relay.hold(r.from);
    });
    const held = await client(relay, '127.0.0.2');
    const other = await client(relay, '127.0.0.1');
    held.write('GET /held HTTP/1.1\r\n\r\n');
    await waitFor(() => seen.length === 1);
    const later = await client(relay, '127.0.0.2');
    later.write('GET /later HTTP/1.1\r\n\r\n');
    held.write('GET /after HTTP/1.1\r\n\r\n');
    await waitFor(() => seen.length === 3);
    // Another address flows meanwhile; by the time its answer is back, nothing held went on.
    const otherAnswer = until(other, 'echo:');
    other.write('GET /free HTTP/1.1\r\n\r\n');
    await otherAnswer;
    assert.equal(relay.isHeld('127.0.0.2'), true);
    assert.equal(echo.received(), 'GET /free HTTP/1.1\r\n\r\n');

    // The held sender gives up on one connection: what it sent still lands at the release.
    const laterClosed = new Promise<void>((r) => later.once('close', () => r()));
    later.destroy();
    await laterClosed;
    const heldAnswer = until(held, 'GET /after');
    relay.release('127.0.0.2');
    await heldAnswer;
    await waitFor(() => echo.received().includes('/later'));
    const got = echo.received();
    assert.ok(got.indexOf('/held') < got.indexOf('/after'), got);
    assert.equal(relay.isHeld('127.0.0.2'), false);
    held.destroy();
    other.destroy();
  });

  /** An HTTP server that applies every request (records its method, path and body) and answers 200 `ok <path>`. */
  const relayToHttp = async () => {
    const applied: { method: string; path: string; body: string; at: number }[] = [];
    const server = createHttpServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString('latin1')));
      req.on('end', () => {
        applied.push({ method: req.method!, path: req.url!, body, at: Date.now() });
        res.end(`ok ${req.url}`);
      });
    });
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    closers.push(() => {
      server.closeAllConnections();
      server.close();
    });
    const port = (server.address() as { port: number }).port;
    const relay = await BucketRelay.start(`s3://b?endpoint=http://127.0.0.1:${port}&region=x`, '127.0.0.1');
    closers.push(() => relay.close());
    return { applied, relay };
  };
  const put = (path: string, body: string) => `PUT ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
  const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`;
  /** In a burst all the time: a burst as long as its period. */
  const always = { burstEveryMs: 1_000, burstMs: 1_000 };

  it('answers a write 503 SlowDown itself, drops its body, and serves the next request on that connection', async () => {
    const { applied, relay } = await relayToHttp();
    relay.wire('127.0.0.2', { seed: 1, slowDown: { writes: 1, reads: 0, ...always } });
    const c = await client(relay, '127.0.0.2');
    // The body looks like a request: it is dropped, not read as one.
    const refused = until(c, '</Error>');
    c.write(put('/b/k1', get('/b/inside-the-body')));
    const answer = await refused;
    assert.match(answer, /^HTTP\/1\.1 503 Slow Down\r\n/);
    assert.match(answer, /<Code>SlowDown<\/Code>/);
    const length = Number(/Content-Length: (\d+)/.exec(answer)![1]);
    assert.equal(Buffer.byteLength(answer.slice(answer.indexOf('\r\n\r\n') + 4)), length);
    // A read is not refused (reads: 0), on the same connection.
    const served = until(c, 'ok /b/k2');
    c.write(get('/b/k2'));
    await served;
    assert.deepEqual(
      applied.map((a) => `${a.method} ${a.path}`),
      ['GET /b/k2'],
    );
    assert.equal(relay.wireCounts.wire503, 1);
    c.destroy();
  });

  it('applies a write and resets the connection instead of passing its answer', async () => {
    const { applied, relay } = await relayToHttp();
    relay.wire('127.0.0.3', { seed: 1, reset: 1 });
    const { error, got } = await sendUntilClosed(await client(relay, '127.0.0.3'), put('/b/k3', 'the body'));
    assert.equal(error?.code, 'ECONNRESET');
    assert.equal(got, '');
    assert.deepEqual(applied, [{ ...applied[0]!, method: 'PUT', path: '/b/k3', body: 'the body' }]);
    assert.equal(relay.wireCounts.wireReset, 1);
    // Reads are not reset; other addresses meet no fault.
    for (const from of ['127.0.0.3', '127.0.0.1']) {
      const d = await client(relay, from);
      const served = until(d, 'ok /b/k3');
      d.write(get('/b/k3'));
      await served;
      d.destroy();
    }
    assert.equal(relay.wireCounts.wireReset, 1);
  });

  it('resets a write before applying it, and applies it later on a connection of its own', async () => {
    const { applied, relay } = await relayToHttp();
    relay.wire('127.0.0.5', { seed: 1, late: { p: 1, ms: { min: 1_000, max: 1_000 } } });
    const { error, got } = await sendUntilClosed(await client(relay, '127.0.0.5'), put('/b/late', 'late body'));
    assert.equal(error?.code, 'ECONNRESET');
    assert.equal(got, '');
    assert.equal(applied.length, 0, 'not applied when the node hears of the failure');
    assert.equal(relay.wireCounts.wireLate, 0);
    await waitFor(() => applied.length > 0);
    assert.deepEqual(
      applied.map((a) => `${a.method} ${a.path} ${a.body}`),
      ['PUT /b/late late body'],
    );
    assert.equal(relay.wireCounts.wireLate, 1);
    // Reads are never late.
    const d = await client(relay, '127.0.0.5');
    const served = until(d, 'ok /b/late');
    d.write(get('/b/late'));
    await served;
    d.destroy();
    assert.equal(relay.wireCounts.wireLate, 1);
  });

  it('delays each request of the address, in order, and none while calm', async () => {
    const { applied, relay } = await relayToHttp();
    relay.wire('127.0.0.4', { seed: 1, latencyMs: { min: 150, max: 150 } });
    const c = await client(relay, '127.0.0.4');
    const sentAt = Date.now();
    const served = until(c, 'ok /b/second');
    c.write(get('/b/first') + get('/b/second'));
    await served;
    assert.deepEqual(
      applied.map((a) => a.path),
      ['/b/first', '/b/second'],
    );
    // Timers fire no earlier than asked (give or take a ms of rounding); no upper bound asserted.
    assert.ok(applied[0]!.at - sentAt >= 149, `${applied[0]!.at - sentAt} ms`);
    assert.equal(relay.wireCounts.wireLatency, 2);
    relay.calm(true);
    const calm = until(c, 'ok /b/calm');
    c.write(get('/b/calm'));
    await calm;
    assert.equal(relay.wireCounts.wireLatency, 2);
    relay.calm(false);
    relay.wire('127.0.0.4', undefined);
    const off = until(c, 'ok /b/off');
    c.write(get('/b/off'));
    await off;
    assert.equal(relay.wireCounts.wireLatency, 2);
    c.destroy();
  });
});
