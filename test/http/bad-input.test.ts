/**
 * Bad input changes nothing and gets a clear answer (src/http/server.ts, src/main/node.ts): each
 * request below is refused with its status and code — or, for the alarm of an actor never
 * created, answered null — and afterwards the bucket and the data dir are byte-for-byte as they
 * were. A body nested 100k deep is refused before it reaches a worker, so a valid call sent with
 * it succeeds; an oversized body's 413 reaches the client still sending it; a trickled body is
 * 408; a result over httpResultMaxBytes is 500 RESULT_TOO_LARGE; connections past
 * httpConnectionsMax are closed unanswered.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { silentLogger } from '../../src/core/logger.js';
import { startNode } from '../../src/index.js';
import type { KeepworkNode } from '../../src/main/node-api.js';
import { tempDirs } from '../helpers/temp.js';

const PROBE = new URL('../fixtures/classes/probe.ts', import.meta.url).href;
const tempDir = tempDirs('kw-bad-input-');
const BODY_MAX = 262_144;

/** Every file under `root` (relative path → SHA-256 of its bytes). */
function snapshot(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (!existsSync(root)) return out;
  for (const rel of readdirSync(root, { recursive: true }).map(String).sort()) {
    const path = join(root, rel);
    if (statSync(path).isFile()) out[rel] = createHash('sha256').update(readFileSync(path)).digest('hex');
  }
  return out;
}

interface Answer {
  status: number;
  body: { error?: string; message?: string; alarm?: unknown; result?: unknown };
  headers: Record<string, string | string[] | undefined>;
}

/** One request on its own connection; the body is written in chunks, each after the socket drained. */
function send(url: string, method: string, path: string, headers: Record<string, string>, body?: Buffer): Promise<Answer> {
  const { hostname, port } = new URL(url);
  return new Promise((ok, fail) => {
    const req = request({ host: hostname, port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        ok({ status: res.statusCode ?? 0, body: text ? (JSON.parse(text) as Answer['body']) : {}, headers: res.headers });
      });
    });
    req.on('error', fail);
    const write = async () => {
      for (let at = 0; body && at < body.length; at += 65_536)
        if (!req.write(body.subarray(at, at + 65_536))) await new Promise((r) => req.once('drain', r));
      req.end();
    };
    write().catch(fail);
  });
}

/** Headers and the first bytes of a body whose rest never comes; resolves with all the node sends before it closes. */
function trickle(url: string, path: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((ok, fail) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(`POST ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n[`);
    });
    let text = '';
    socket.setEncoding('utf8').on('data', (c: string) => (text += c));
    socket.on('close', () => ok(text)).on('error', fail);
  });
}

describe('bad input changes nothing', () => {
  let node: KeepworkNode;
  let dir: string;
  before(async () => {
    dir = tempDir();
    node = await startNode({
      bucket: `file://${join(dir, 'bucket')}`,
      dataDir: join(dir, 'data'),
      classes: { Probe: PROBE },
      port: 0,
      logger: silentLogger(),
      workerThreads: 1,
      // Nothing of the node's own writes while the snapshots are compared: no renewal, sweep, release or spare file.
      leasePeriodMs: 600_000,
      alarmSweepMs: 600_000,
      idleTimeoutMs: 600_000,
      spareActorFiles: 0,
      httpBodyMaxBytes: BODY_MAX,
      httpBodyTimeoutMs: 300,
      httpResultMaxBytes: 4_096,
    });
  });
  after(() => node.stop());

  const json = { 'content-type': 'application/json' };
  const deep = Buffer.from('['.repeat(100_000) + ']'.repeat(100_000));
  const probes: [string, () => Promise<Answer>, number, string | undefined][] = [
    [
      'an unknown method on a new name',
      () => send(node.url!, 'POST', '/v1/actors/acme/Probe/new-1/nothing', json, Buffer.from('[]')),
      404,
      'NOT_FOUND',
    ],
    ['an unknown class', () => send(node.url!, 'POST', '/v1/actors/acme/Nope/new-1/echo', json, Buffer.from('[]')), 404, 'NOT_FOUND'],
    ['the alarm of an actor never created', () => send(node.url!, 'GET', '/v1/actors/acme/Probe/new-2/alarm', {}), 200, undefined],
    [
      'a body that is not JSON',
      () => send(node.url!, 'POST', '/v1/actors/acme/Probe/new-3/echo', json, Buffer.from('{nope')),
      400,
      'BAD_REQUEST',
    ],
    [
      'a body that is not an array',
      () => send(node.url!, 'POST', '/v1/actors/acme/Probe/new-3/echo', json, Buffer.from('{}')),
      400,
      'BAD_REQUEST',
    ],
    ['JSON nested 100k deep', () => send(node.url!, 'POST', '/v1/actors/acme/Probe/new-4/echo', json, deep), 400, 'BAD_REQUEST'],
    [
      'a text/plain call',
      () => send(node.url!, 'POST', '/v1/actors/acme/Probe/new-5/echo', { 'content-type': 'text/plain' }, Buffer.from('[]')),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    ],
    [
      'a foreign Host on a loopback node',
      () => send(node.url!, 'POST', '/v1/actors/acme/Probe/new-6/echo', { ...json, host: 'evil.example' }, Buffer.from('[]')),
      421,
      'MISDIRECTED_REQUEST',
    ],
    ['a GET on a method', () => send(node.url!, 'GET', '/v1/actors/acme/Probe/new-7/echo', {}), 405, 'METHOD_NOT_ALLOWED'],
    [
      'a bad idempotency key',
      () => send(node.url!, 'POST', '/v1/actors/acme/Probe/new-8/echo?durable=1', { ...json, 'idempotency-key': 'a b' }, Buffer.from('[]')),
      400,
      'BAD_REQUEST',
    ],
    ['a bad tenant', () => send(node.url!, 'POST', '/v1/actors/Ac!me/Probe/x/echo', json, Buffer.from('[]')), 400, 'BAD_REQUEST'],
    [
      'an 8 MB body (the client still sending hears the 413)',
      () => send(node.url!, 'POST', '/v1/actors/acme/Probe/new-9/echo', json, Buffer.alloc(8_000_000, 0x20)),
      413,
      'PAYLOAD_TOO_LARGE',
    ],
  ];

  it('answers every probe with its status and code; the bucket and the data dir are unchanged', async () => {
    const before = { bucket: snapshot(join(dir, 'bucket')), data: snapshot(join(dir, 'data')) };
    assert.ok(Object.keys(before.bucket).length > 0, 'the node wrote its lease');
    for (const [what, probe, status, code] of probes) {
      const r = await probe();
      assert.equal(r.status, status, `${what}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error, code, what);
      if (code) assert.equal(typeof r.body.message, 'string', what);
      else assert.deepEqual(r.body, { alarm: null }, what);
    }
    const trickled = await trickle(node.url!, '/v1/actors/acme/Probe/new-10/echo');
    assert.match(trickled, /^HTTP\/1\.1 408 /);
    assert.match(trickled, /"error":"REQUEST_TIMEOUT"/);
    assert.deepEqual({ bucket: snapshot(join(dir, 'bucket')), data: snapshot(join(dir, 'data')) }, before);
    assert.equal((await fetch(`${node.url}/healthz`)).status, 200);
  });

  it('a 100k-deep body fails alone: a valid call sent with it to the same actor succeeds', async () => {
    const path = '/v1/actors/acme/Probe/batched/echo';
    const [bad, good] = await Promise.all([
      send(node.url!, 'POST', path, json, deep),
      send(node.url!, 'POST', path, json, Buffer.from('[1,"two"]')),
    ]);
    assert.deepEqual([bad.status, bad.body.error], [400, 'BAD_REQUEST']);
    assert.deepEqual([good.status, good.body], [200, { result: [1, 'two'] }]);
  });

  it('a result over httpResultMaxBytes is 500 RESULT_TOO_LARGE; a smaller one is sent', async () => {
    const path = '/v1/actors/acme/Probe/large/echo';
    const big = await send(node.url!, 'POST', path, json, Buffer.from(JSON.stringify(['x'.repeat(5_000)])));
    assert.deepEqual([big.status, big.body.error], [500, 'RESULT_TOO_LARGE']);
    assert.match(big.body.message!, /httpResultMaxBytes/);
    const small = await send(node.url!, 'POST', path, json, Buffer.from(JSON.stringify(['x'.repeat(100)])));
    assert.deepEqual(small.body, { result: ['x'.repeat(100)] });
  });
});

describe('httpConnectionsMax', () => {
  it('closes a connection past the limit without an answer', async () => {
    const dir = tempDir();
    const node = await startNode({
      bucket: 'memory:',
      dataDir: join(dir, 'data'),
      classes: { Probe: PROBE },
      port: 0,
      logger: silentLogger(),
      workerThreads: 1,
      httpConnectionsMax: 2,
    });
    const { port } = new URL(node.url!);
    const open: Socket[] = [];
    /** A keep-alive connection that has been answered once: the node has accepted it. */
    const answered = () =>
      new Promise<Socket>((ok, fail) => {
        const socket = connect(Number(port), '127.0.0.1', () => socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`));
        open.push(socket);
        socket.once('data', () => ok(socket)).once('error', fail);
      });
    try {
      await answered();
      await answered();
      const third = await new Promise<string>((ok) => {
        const socket = connect(Number(port), '127.0.0.1', () => socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`));
        open.push(socket);
        let text = '';
        socket.setEncoding('utf8').on('data', (c: string) => (text += c));
        socket.on('close', () => ok(text)).on('error', () => undefined);
      });
      assert.equal(third, '', 'a third connection was answered');
    } finally {
      for (const s of open) s.destroy();
      await node.stop();
    }
  });
});
