import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { silentLogger } from '../../src/core/logger.js';
import { startNode } from '../../src/index.js';
import type { KeepworkNode } from '../../src/main/node-api.js';

const PROBE = new URL('../fixtures/classes/probe.ts', import.meta.url).href;

function actorFiles(dataDir: string): string[] {
  const root = join(dataDir, 'actors');
  if (!existsSync(root)) return [];
  // Sidecars (`.chain`) appear when an earlier call's group-commit upload lands, at any moment:
  // they are bookkeeping of earlier writes, not writes of the request under test.
  return readdirSync(root, { recursive: true })
    .map(String)
    .filter((f) => !/\.chain(\.tmp)?$/.test(f))
    .sort();
}

describe('HTTP API', () => {
  let node: KeepworkNode;
  let dataDir: string;
  let base: string;
  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'kw-http-'));
    node = await startNode({
      dataDir,
      bucket: 'memory:',
      classes: { Probe: PROBE },
      port: 0,
      workerThreads: 1,
      httpBodyMaxBytes: 4096,
      logger: silentLogger(),
    });
    base = node.url!;
  });
  after(async () => {
    await node.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const post = (path: string, body?: string) =>
    fetch(base + path, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
  const postKey = (key: string, path: string, body?: string) =>
    fetch(base + path, { method: 'POST', body, headers: { 'content-type': 'application/json', 'idempotency-key': key } });
  const postAs = (type: string | undefined, path: string, body: string | undefined) =>
    fetch(base + path, {
      method: 'POST',
      body: body === undefined ? body : new TextEncoder().encode(body),
      headers: type ? { 'content-type': type } : {},
    });
  const json = async (r: Response) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> });

  it('calls a method with a JSON array of arguments', async () => {
    assert.deepEqual(await json(await post('/v1/actors/t1/Probe/a/echo', '[1,"two",{"x":3}]')), {
      status: 200,
      body: { result: [1, 'two', { x: 3 }] },
    });
    assert.deepEqual(await json(await post('/v1/actors/t1/Probe/a/slowIncrement?durable=1', '[0]')), { status: 200, body: { result: 1 } });
    assert.deepEqual(await json(await post('/v1/actors/t1/Probe/a/value')), { status: 200, body: { result: 1 } });
  });

  it('decodes a name holding "/" and non-ASCII from percent-encoding', async () => {
    const name = encodeURIComponent('a/b é');
    assert.equal((await post(`/v1/actors/t1/Probe/${name}/echo`, '[]')).status, 200);
    assert.equal(await node.actor('t1/Probe/a/b é').call('value'), 0);
  });

  it('reads the committed alarm, and answers /healthz', async () => {
    await post('/v1/actors/t1/Probe/al/setAlarm', JSON.stringify([Date.now() + 3_600_000]));
    const r = await json(await fetch(`${base}/v1/actors/t1/Probe/al/alarm`));
    assert.equal(r.status, 200);
    assert.equal(typeof r.body.alarm, 'number');
    assert.deepEqual(await json(await fetch(`${base}/v1/actors/t1/Probe/none/alarm`)), { status: 200, body: { alarm: null } });
    const h = await json(await fetch(`${base}/healthz`));
    assert.deepEqual(h, { status: 200, body: { ok: true, nodeId: node.nodeId, epoch: node.epoch } });
  });

  const bad: [string, () => Promise<Response>, number, string][] = [
    ['a body that is not JSON', () => post('/v1/actors/t1/Probe/b/echo', '{nope'), 400, 'BAD_REQUEST'],
    ['a body that is not an array', () => post('/v1/actors/t1/Probe/b/echo', '{"a":1}'), 400, 'BAD_REQUEST'],
    ['a bad tenant', () => post('/v1/actors/T!/Probe/b/echo', '[]'), 400, 'BAD_REQUEST'],
    ['a bad class name', () => post('/v1/actors/t1/Pro.be/b/echo', '[]'), 400, 'BAD_REQUEST'],
    ['a bad method name', () => post('/v1/actors/t1/Probe/b/no-such', '[]'), 400, 'BAD_REQUEST'],
    ['broken percent-encoding', () => post('/v1/actors/t1/Probe/%E0%A4%A/echo', '[]'), 400, 'BAD_REQUEST'],
    ['durable=2', () => post('/v1/actors/t1/Probe/b/echo?durable=2', '[]'), 400, 'BAD_REQUEST'],
    ['an Idempotency-Key without durable=1', () => postKey('k1', '/v1/actors/t1/Probe/b/slowIncrement', '[]'), 400, 'BAD_REQUEST'],
    ['an Idempotency-Key with a space', () => postKey('k 1', '/v1/actors/t1/Probe/b/slowIncrement?durable=1', '[]'), 400, 'BAD_REQUEST'],
    [
      'an Idempotency-Key over 200 characters',
      () => postKey('k'.repeat(201), '/v1/actors/t1/Probe/b/slowIncrement?durable=1', '[]'),
      400,
      'BAD_REQUEST',
    ],
    ['an unknown class', () => post('/v1/actors/t1/Nope/b/echo', '[]'), 404, 'NOT_FOUND'],
    ['an unknown method', () => post('/v1/actors/t1/Probe/b/nothing', '[]'), 404, 'NOT_FOUND'],
    ['an unknown route', () => fetch(`${base}/v2/whatever`), 404, 'NOT_FOUND'],
    [
      'arguments nested 2,000 deep (under the body limit)',
      () => post('/v1/actors/t1/Probe/b/echo', '['.repeat(2_000) + ']'.repeat(2_000)),
      400,
      'BAD_REQUEST',
    ],
    ['arguments nested 65 deep', () => post('/v1/actors/t1/Probe/b/echo', '['.repeat(65) + ']'.repeat(65)), 400, 'BAD_REQUEST'],
    ['GET on a method', () => fetch(`${base}/v1/actors/t1/Probe/b/echo`), 405, 'METHOD_NOT_ALLOWED'],
    // What a foreign page can send without a preflight: text/plain, a form's type, or no type at all.
    ['a text/plain body', () => postAs('text/plain;charset=UTF-8', '/v1/actors/t1/Probe/b/echo', '[]'), 415, 'UNSUPPORTED_MEDIA_TYPE'],
    ['a form body', () => postAs('application/x-www-form-urlencoded', '/v1/actors/t1/Probe/b/echo', '[]'), 415, 'UNSUPPORTED_MEDIA_TYPE'],
    ['a call with no content-type', () => postAs(undefined, '/v1/actors/t1/Probe/b/echo', undefined), 415, 'UNSUPPORTED_MEDIA_TYPE'],
    [
      'a body over httpBodyMaxBytes',
      () => post('/v1/actors/t1/Probe/b/echo', JSON.stringify(['x'.repeat(5000)])),
      413,
      'PAYLOAD_TOO_LARGE',
    ],
  ];
  for (const [what, send, status, code] of bad) {
    it(`answers ${status} ${code} to ${what}, writing nothing`, async () => {
      const before = actorFiles(dataDir);
      const r = await json(await send());
      assert.equal(r.status, status);
      assert.equal(r.body.error, code);
      assert.equal(typeof r.body.message, 'string');
      assert.deepEqual(actorFiles(dataDir), before);
    });
  }

  it('answers 421 MISDIRECTED_REQUEST to a Host that is not a loopback name (DNS rebinding), and serves loopback names', async () => {
    const port = Number(new URL(base).port);
    const get = (host: string) =>
      new Promise<{ status: number; body: string }>((ok, fail) => {
        const req = request({ host: '127.0.0.1', port, path: '/v1/status', headers: { host } }, (res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (c: string) => (body += c));
          res.on('end', () => ok({ status: res.statusCode ?? 0, body }));
        });
        req.on('error', fail).end();
      });
    for (const host of ['evil.example', `evil.example:${port}`, '10.0.0.7']) {
      const r = await get(host);
      assert.equal(r.status, 421, host);
      assert.equal((JSON.parse(r.body) as { error: string }).error, 'MISDIRECTED_REQUEST');
    }
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, 'localhost'])
      assert.equal((await get(host)).status, 200, host);
  });

  it('takes arguments nested 64 deep, and brackets inside strings do not count', async () => {
    const deep = '['.repeat(64) + ']'.repeat(64);
    assert.deepEqual((await json(await post('/v1/actors/t1/Probe/d/echo', deep))).status, 200);
    assert.deepEqual(await json(await post('/v1/actors/t1/Probe/d/echo', JSON.stringify(['[[[[\\"{{{{'.repeat(40)]))), {
      status: 200,
      body: { result: ['[[[[\\"{{{{'.repeat(40)] },
    });
  });

  it('sends no CORS headers, to a preflight or to a call from another origin', async () => {
    const headers = { origin: 'https://evil.example', 'access-control-request-method': 'POST' };
    const preflight = await fetch(`${base}/v1/actors/t1/Probe/b/echo`, { method: 'OPTIONS', headers });
    const call = await fetch(`${base}/v1/actors/t1/Probe/b/echo`, {
      method: 'POST',
      body: '[]',
      headers: { origin: 'https://evil.example', 'content-type': 'application/json' },
    });
    for (const r of [preflight, call])
      assert.deepEqual(
        [...r.headers.keys()].filter((k) => k.startsWith('access-control-')),
        [],
      );
    assert.equal(preflight.status, 405);
  });

  it('Idempotency-Key: a repeat returns the first result without running; other arguments → 409 IDEMPOTENCY_MISMATCH', async () => {
    const path = '/v1/actors/t1/Probe/idem/slowIncrement?durable=1';
    assert.deepEqual(await json(await postKey('order-17', path, '[1]')), { status: 200, body: { result: 1 } });
    assert.deepEqual(await json(await postKey('order-17', path, '[1]')), { status: 200, body: { result: 1 } });
    const other = await json(await postKey('order-17', path, '[2]'));
    assert.equal(other.status, 409);
    assert.equal(other.body.error, 'IDEMPOTENCY_MISMATCH');
    assert.deepEqual(await json(await postKey('order-18', path, '[1]')), { status: 200, body: { result: 2 } });
    assert.equal(await node.actor('t1/Probe/idem').call('value'), 2, 'applied once per key');
  });

  it('the library: withIdempotencyKey(key).callDurable shares the record with HTTP; a bad key is refused at once', async () => {
    const a = node.actor('t1/Probe/idem-lib');
    const once = a.withIdempotencyKey('pay-1');
    assert.equal(once.idempotencyKey, 'pay-1');
    assert.equal(await once.callDurable('slowIncrement', 1), 1);
    assert.equal(await a.withIdempotencyKey('pay-1').callDurable('slowIncrement', 1), 1);
    assert.deepEqual(await json(await postKey('pay-1', '/v1/actors/t1/Probe/idem-lib/slowIncrement?durable=1', '[1]')), {
      status: 200,
      body: { result: 1 },
    });
    await assert.rejects(a.withIdempotencyKey('pay-1').callDurable('slowIncrement', 5), { code: 'IDEMPOTENCY_MISMATCH' });
    assert.throws(() => a.withIdempotencyKey('pay 1'), { code: 'BAD_REQUEST' });
    assert.equal(await a.call('value'), 1);
  });

  it('fuzz: arbitrary addresses, methods and bodies never get a 5xx, and only a 200 writes', async () => {
    const segment = fc.oneof(
      fc.constantFrom('t1', 'Probe', 'echo', 'value', '', '..', '%2F', '%ZZ'),
      fc.string({ maxLength: 12 }),
      fc.stringMatching(/^[a-z0-9_-]{1,8}$/),
    );
    const body = fc.oneof(
      fc.json(),
      fc.string({ maxLength: 40 }),
      fc.constant(''),
      fc.array(fc.jsonValue(), { maxLength: 3 }).map((a) => JSON.stringify(a)),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(segment, { minLength: 3, maxLength: 4 }), segment, body, async (addr, method, text) => {
        const path = '/v1/actors/' + [...addr, method].map((s) => (/%/.test(s) ? s : encodeURIComponent(s))).join('/');
        const before = actorFiles(dataDir);
        const r = await post(path, text);
        const payload = (await r.json()) as Record<string, unknown>;
        assert.ok(r.status < 500, `${r.status} for POST ${path} ${text}: ${JSON.stringify(payload)}`);
        if (r.status !== 200) {
          assert.deepEqual(actorFiles(dataDir), before, `a ${r.status} wrote files`);
          assert.equal(typeof payload.error, 'string');
        }
      }),
      // `/v1/actors/../..//`, which fetch sends as `//`: once a 500 (the target read as a host)
      { numRuns: 150, examples: [[['..', '..', ''], '', '{}']] },
    );
  });

  it('answers a request target that is not a path with 400, and a path starting // with 404', async () => {
    const port = Number(new URL(base).port);
    const raw = (method: string, path: string) =>
      new Promise<{ status: number; error: string }>((ok, fail) => {
        const req = request({ host: '127.0.0.1', port, method, path }, (res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (c: string) => (body += c));
          res.on('end', () => ok({ status: res.statusCode ?? 0, error: (JSON.parse(body) as { error: string }).error }));
        });
        req.on('error', fail).end();
      });
    assert.deepEqual(await raw('POST', '//'), { status: 404, error: 'NOT_FOUND' });
    assert.deepEqual(await raw('POST', '//evil.example/v1/status'), { status: 404, error: 'NOT_FOUND' });
    assert.deepEqual(await raw('OPTIONS', '*'), { status: 400, error: 'BAD_REQUEST' });
  });
});
