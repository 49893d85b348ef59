/**
 * keepwork/client against a real node (HTTP, tokens): typed calls, the bearer token, errors as
 * their ErrorCode classes, and retries — a durable call whose answer was lost to a 503 is sent
 * again with the same idempotency key after the Retry-After and runs once; a plain call is never
 * sent twice; retries are bounded. A small proxy in front of the node answers what the test
 * needs; retries wait on a recording clock (no real sleeps).
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { connect, type ClientOptions, type ClientSeams } from '../../src/client/index.js';
import {
  BadRequest,
  ErrorCode,
  Forbidden,
  IdempotencyMismatch,
  KeepworkError,
  NodeUnreachable,
  NotFound,
  OwnerUnreachable,
  Unauthenticated,
} from '../../src/core/errors.js';
import { silentLogger } from '../../src/core/logger.js';
import { sha256Hex } from '../../src/core/tokens.js';
import { startNode } from '../../src/index.js';
import type { KeepworkNode } from '../../src/main/node-api.js';
import type Counter from '../../examples/counter.js';
import { tempDirs } from '../helpers/temp.js';

const COUNTER = new URL('../../examples/counter.ts', import.meta.url).href;
const tempDir = tempDirs('kw-client-');
const TOKEN = 'kw_client-test-token';
const OTHER_TENANT = 'kw_other-tenant-token';

/** Time that moves only when a retry sleeps, and the sleeps it was asked for. */
function recordingClock(): { sleeps: number[]; clock: NonNullable<ClientSeams['clock']> } {
  const sleeps: number[] = [];
  let now = 1_000_000;
  return { sleeps, clock: { now: () => now, sleep: async (ms: number) => void (sleeps.push(ms), (now += ms)) } };
}

/** What the proxy saw of each request: method, path and idempotency key. */
interface Seen {
  method: string;
  path: string;
  key: string | undefined;
}

/** A proxy in front of `target`; `answer` decides per request (n from 1): pass it on, or reply itself. */
async function proxy(
  target: string,
  answer: (n: number, req: IncomingMessage, forward: () => Promise<Response>, res: ServerResponse) => Promise<void>,
): Promise<{ url: string; seen: Seen[]; close: () => Promise<void> }> {
  const seen: Seen[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const key = req.headers['idempotency-key'] as string | undefined;
      seen.push({ method: req.method!, path: req.url!, key });
      const headers = Object.fromEntries(
        ['authorization', 'content-type', 'idempotency-key'].flatMap((h) => (req.headers[h] ? [[h, String(req.headers[h])]] : [])),
      );
      const body = req.method === 'POST' ? Buffer.concat(chunks).toString() : undefined;
      const forward = () => fetch(target + req.url, { method: req.method, headers, body });
      answer(seen.length, req, forward, res).catch((e: unknown) => res.destroy(e as Error));
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    seen,
    close: () => new Promise<void>((ok) => (server.closeAllConnections(), server.close(() => ok()))),
  };
}

async function relay(res: ServerResponse, r: Response): Promise<void> {
  res.writeHead(r.status, { 'content-type': 'application/json' });
  res.end(await r.text());
}

function busy(res: ServerResponse, retryAfter = '1'): void {
  res.writeHead(503, { 'content-type': 'application/json', 'retry-after': retryAfter });
  res.end(JSON.stringify({ error: 'OWNER_UNREACHABLE', message: 'the holder did not answer; retry' }));
}

describe('keepwork/client against a node', () => {
  let node: KeepworkNode;
  const closers: Array<() => Promise<void>> = [];
  before(async () => {
    node = await startNode({
      dataDir: tempDir(),
      bucket: 'memory:',
      classes: { Counter: COUNTER },
      port: 0,
      workerThreads: 1,
      logger: silentLogger(),
      auth: {
        version: 1,
        tokens: [
          { name: 'app', sha256: sha256Hex(TOKEN), tenants: ['acme'], rights: ['call'] },
          { name: 'other', sha256: sha256Hex(OTHER_TENANT), tenants: ['other'], rights: ['call'] },
        ],
      },
    });
  });
  after(async () => {
    await Promise.all(closers.map((c) => c()));
    await node.stop();
  });

  const client = (over: Partial<ClientOptions> = {}, seams: ClientSeams = {}) =>
    connect({ url: node.url!, token: TOKEN, ...over }, { random: () => 0, ...seams });

  it('calls the class’s methods, plain and durable, and reads the alarm', async () => {
    const hits = client().actor<typeof Counter>('acme/Counter/hits');
    assert.equal(await hits.plain.add(5), 5);
    assert.equal(await hits.durable.add(2), 7);
    assert.equal(await hits.call('get'), 7);
    assert.equal(await hits.withIdempotencyKey('k-1').durable.add(1), 8);
    assert.equal(await hits.withIdempotencyKey('k-1').durable.add(1), 8, 'the recorded outcome');
    assert.equal(await hits.getAlarm(), null);
    assert.equal(await client().actor<typeof Counter>('acme/Counter/a name/with slash').plain.add(), 1, 'the name is one segment');
  });

  it('sends the bearer token: none or a wrong one is Unauthenticated, another tenant’s Forbidden', async () => {
    const name = 'acme/Counter/guarded';
    await assert.rejects(client({ token: undefined }).actor(name).call('get'), Unauthenticated);
    await assert.rejects(client({ token: 'kw_wrong' }).actor(name).call('get'), Unauthenticated);
    await assert.rejects(client({ token: OTHER_TENANT }).actor(name).call('get'), Forbidden);
    const e = await client({ token: 'kw_wrong' })
      .actor(name)
      .getAlarm()
      .catch((x: unknown) => x);
    assert.ok(e instanceof KeepworkError && e.code === ErrorCode.Unauthenticated && e.details.status === 401, String(e));
  });

  it('raises each answer’s error as its ErrorCode class', async () => {
    const hits = client().actor<typeof Counter>('acme/Counter/errors');
    const bad = await hits.plain.add('five' as never).catch((e: unknown) => e);
    assert.ok(bad instanceof BadRequest, String(bad));
    assert.equal(bad.code, 'BAD_REQUEST');
    assert.match(bad.message, /by must be a number/);
    await assert.rejects(hits.call('nope'), NotFound);
    await hits.withIdempotencyKey('pay-1').durable.add(3);
    await assert.rejects(hits.withIdempotencyKey('pay-1').durable.add(4), IdempotencyMismatch);
    assert.throws(() => hits.withIdempotencyKey('has space'), BadRequest);
  });

  it('sends a durable call again after a 503, with the same key, after the Retry-After: it runs once', async () => {
    // the first attempt reaches the node and runs; its answer is lost to a 503
    const p = await proxy(node.url!, async (n, _req, forward, res) => {
      const r = await forward();
      if (n === 1) return busy(res, '1');
      await relay(res, r);
    });
    closers.push(p.close);
    const { sleeps, clock } = recordingClock();
    const hits = client({ url: p.url }, { clock }).actor<typeof Counter>('acme/Counter/retried');
    assert.equal(await hits.durable.add(5), 5, 'the first attempt’s recorded outcome');
    assert.equal(await hits.plain.get(), 5, 'ran once');
    const calls = p.seen.filter((s) => s.path.endsWith('/add?durable=1'));
    assert.equal(calls.length, 2);
    assert.match(calls[0]!.key!, /^kwc-[0-9a-f-]{36}$/);
    assert.equal(calls[1]!.key, calls[0]!.key, 'the same key on the retry');
    assert.deepEqual(sleeps, [1_000], 'waited the Retry-After');

    // another logical call gets another key
    await hits.durable.add(1);
    const keys = new Set(p.seen.filter((s) => s.key !== undefined).map((s) => s.key));
    assert.equal(keys.size, 2);
  });

  it('never sends a plain call twice; a durable one at most callAttemptsMax times', async () => {
    const p = await proxy(node.url!, async (_n, _req, _forward, res) => busy(res, '0'));
    closers.push(p.close);
    const { sleeps, clock } = recordingClock();
    const hits = client({ url: p.url, callAttemptsMax: 3 }, { clock }).actor<typeof Counter>('acme/Counter/busy');
    await assert.rejects(hits.plain.add(1), OwnerUnreachable);
    assert.equal(p.seen.length, 1);
    await assert.rejects(hits.durable.add(1), OwnerUnreachable);
    assert.equal(p.seen.length, 4);
    assert.deepEqual(sleeps, [100, 200], 'the backoff (Retry-After 0 is shorter)');
    await assert.rejects(hits.getAlarm(), OwnerUnreachable);
    assert.equal(p.seen.length, 5, 'an alarm read is one attempt');
  });

  it('retries a durable call the node did not answer, within callRetryTotalMs', async () => {
    const p = await proxy(node.url!, async () => undefined);
    await p.close(); // nothing listens on its port now
    const { sleeps, clock } = recordingClock();
    let sent = 0;
    const counting: typeof fetch = (input, init) => (sent++, fetch(input, init));
    const hits = client({ url: p.url, callRetryTotalMs: 1_000 }, { clock, fetch: counting }).actor<typeof Counter>('acme/Counter/gone');
    await assert.rejects(hits.plain.add(1), NodeUnreachable);
    assert.equal(sent, 1);
    const e = await hits.durable.add(1).catch((x: unknown) => x);
    assert.ok(e instanceof NodeUnreachable && /could not reach/.test(e.message), String(e));
    assert.deepEqual(sleeps, [100, 200, 400], 'the next (800 ms) would end past callRetryTotalMs');
    assert.equal(sent, 5);
  });
});
