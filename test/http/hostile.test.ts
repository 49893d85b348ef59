/**
 * The hostile-input suite (docs/security.md): a node with tokens and a cluster secret, on a folder
 * bucket in which a writer planted a live `nodes/evil` record and holds naming it. Every probe
 * below — missing, wrong and cross-tenant credentials on each endpoint, forged forwards, browser
 * requests, foreign hosts, bad names and paths, bad bodies, smuggling, oversized and trickled
 * requests, calls aimed through the planted record — gets its status and code, and afterwards the
 * node is healthy and the bucket and data dir are byte-for-byte as they were. The catcher behind
 * the planted record hears at most the signed forwards and never the target of its own redirect;
 * nothing it answers reaches a client. Then a valid call writes, and each tenant sees only itself.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { CALLER_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, clusterKey, signRequest } from '../../src/core/cluster-signature.js';
import { silentLogger } from '../../src/core/logger.js';
import { sha256Hex, type TokenFile } from '../../src/core/tokens.js';
import { startNode } from '../../src/index.js';
import { encodeHold, encodeNode, holdKey, nodeKey } from '../../src/leases/records.js';
import type { KeepworkNode } from '../../src/main/node-api.js';
import { openStore } from '../../src/store/open.js';
import { raw, rawAnswer, send, snapshot, type Answer } from '../helpers/raw-http.js';
import { tempDirs } from '../helpers/temp.js';
import { waitFor } from '../helpers/wait.js';

const PROBE = new URL('../fixtures/classes/probe.ts', import.meta.url).href;
const tempDir = tempDirs('kw-hostile-');
const SECRET = 'cluster-secret-for-the-hostile-suite-0123456789';
const TOKEN = { app: 'kw_app-token', globex: 'kw_globex-token', reader: 'kw_reader-token', ops: 'kw_ops-token' } as const;
const AUTH: TokenFile = {
  version: 1,
  tokens: [
    { name: 'app', sha256: sha256Hex(TOKEN.app), tenants: ['acme'], rights: ['call'] },
    { name: 'globex', sha256: sha256Hex(TOKEN.globex), tenants: ['globex'], rights: ['call', 'read'] },
    { name: 'reader', sha256: sha256Hex(TOKEN.reader), tenants: ['acme'], rights: ['read'] },
    { name: 'ops', sha256: sha256Hex(TOKEN.ops), tenants: ['*'], rights: ['read'] },
  ],
};
const BODY_MAX = 262_144;
const FAR = Date.UTC(2100, 0, 1);

/** An expected answer: the status and, for a JSON error, its code (`null`: the body is not checked). */
type Expect = [status: number, code: string | null];
type Probe = [what: string, send: () => Promise<Answer>, expect: Expect];

describe('the hostile-input suite', () => {
  let node: KeepworkNode;
  let dir: string;
  let catcher: Server;
  const heard: string[] = [];

  before(async () => {
    catcher = createServer((req, res) => {
      heard.push(`${req.method} ${req.url}`);
      req.resume().on('end', () => {
        if (req.url?.includes('/redirected/')) {
          res.writeHead(307, { location: '/internal-admin/delete-everything' });
          return void res.end();
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ result: 'the catcher answered' }));
      });
    });
    await new Promise<void>((ok) => catcher.listen(0, '127.0.0.1', ok));
    const catcherUrl = `http://127.0.0.1:${(catcher.address() as AddressInfo).port}`;

    dir = tempDir();
    const bucket = `file://${join(dir, 'bucket')}`;
    const store = openStore(bucket);
    const evil = { nodeId: 'evil', epoch: 1, addr: catcherUrl, tenants: null, classes: ['Probe'], expiresAtMs: Date.now() + 3_600_000 };
    await store.put(nodeKey('evil'), encodeNode({ ...evil, state: 'live' }));
    for (const victim of ['acme/Probe/redirected', 'acme/Probe/answered'])
      await store.put(holdKey(parseAddress(victim)), encodeHold({ nodeId: 'evil', epoch: 1, generation: 1, state: 'held' }));
    await store.close();

    node = await startNode({
      bucket,
      dataDir: join(dir, 'data'),
      classes: { Probe: PROBE },
      port: 0,
      logger: silentLogger(),
      workerThreads: 1,
      auth: AUTH,
      clusterSecret: SECRET,
      // Nothing of the node's own writes while the snapshots are compared: no renewal, sweep, release or spare file.
      leasePeriodMs: 600_000,
      alarmSweepMs: 600_000,
      idleTimeoutMs: 600_000,
      spareActorFiles: 0,
      httpBodyMaxBytes: BODY_MAX,
      httpBodyTimeoutMs: 300,
    });
  });
  after(async () => {
    await node.stop();
    await new Promise<void>((ok) => catcher.close(() => ok()));
  });

  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const app = { ...bearer(TOKEN.app), 'content-type': 'application/json' };
  const body = (text: string) => Buffer.from(text);
  const post = (path: string, headers: Record<string, string>, b = body('[]')) => send(node.url!, 'POST', path, headers, b);
  const get = (path: string, headers: Record<string, string> = {}) => send(node.url!, 'GET', path, headers);
  const call = (name: string, method = 'echo') => `/v1/actors/acme/Probe/${name}/${method}`;
  const key = clusterKey(SECRET, 0);
  /** A forward as a node would send it, `tamper` applied after signing. */
  const forward = (o: { ts?: number; hops?: number; secret?: string; tamper?: (h: Record<string, string>) => void }) => {
    const path = call('fwd-1');
    const ts = o.ts ?? Date.now();
    const k = o.secret ? clusterKey(o.secret, 0) : key;
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      [SIGNATURE_HEADER]: signRequest(k, { method: 'POST', path, body: '[]', timestampMs: ts, hops: o.hops ?? 1, caller: 'app' }),
      [TIMESTAMP_HEADER]: String(ts),
      [CALLER_HEADER]: 'app',
      'x-keepwork-hops': String(o.hops ?? 1),
    };
    o.tamper?.(headers);
    return post(path, headers);
  };
  const rawProbe = async (bytes: string, opts?: { end?: boolean }) => rawAnswer(await raw(node.url!, bytes, opts));
  const deep = body('['.repeat(100_000) + ']'.repeat(100_000));
  const U: Expect = [401, 'UNAUTHENTICATED'];
  const F: Expect = [403, 'FORBIDDEN'];

  const probes: Probe[] = [
    // Credentials, on every endpoint.
    ['a call without a token', () => post(call('n-1'), { 'content-type': 'application/json' }), U],
    ['an alarm read without a token', () => get(`${call('n-1', '')}alarm`), U],
    ['the status page without a token', () => get('/'), U],
    ['/v1/status without a token', () => get('/v1/status'), U],
    ['/metrics without a token', () => get('/metrics'), U],
    ['an unknown route without a token', () => get('/v1/nothing'), U],
    ['a wrong token', () => post(call('n-1'), { ...app, ...bearer('kw_guessed') }), U],
    ['a wrong token as a Basic password', () => post(call('n-1'), { ...app, authorization: `Basic ${btoa(`app:kw_guessed`)}` }), U],
    ['a Basic login without a password', () => get('/v1/status', { authorization: `Basic ${btoa(TOKEN.ops)}` }), U],
    ['a token in the query string', () => post(`${call('n-1')}?access_token=${TOKEN.app}`, { 'content-type': 'application/json' }), U],
    ['an empty bearer', () => post(call('n-1'), { ...app, authorization: 'Bearer ' }), U],
    ['a token of 600 bytes', () => post(call('n-1'), { ...app, ...bearer('k'.repeat(600)) }), U],
    ['another tenant’s token calling', () => post(call('n-1'), { ...app, ...bearer(TOKEN.globex) }), F],
    ['another tenant’s token reading an alarm', () => get(`${call('n-1', '')}alarm`, bearer(TOKEN.globex)), F],
    ['a read-only token calling', () => post(call('n-1'), { ...app, ...bearer(TOKEN.reader) }), F],
    ['a call token on the status page', () => get('/', bearer(TOKEN.app)), F],
    ['a call token on /v1/status', () => get('/v1/status', bearer(TOKEN.app)), F],
    ['a call token on /metrics', () => get('/metrics', bearer(TOKEN.app)), F],
    ['a one-tenant reader on /metrics', () => get('/metrics', bearer(TOKEN.reader)), F],
    // Forged forwards.
    ['a forward with a made-up signature', () => forward({ tamper: (h) => (h[SIGNATURE_HEADER] = 'ab'.repeat(32)) }), U],
    ['a forward replayed ten minutes late', () => forward({ ts: Date.now() - 600_000 }), U],
    ['a forward signed with another secret', () => forward({ secret: 'another-secret-of-at-least-32-bytes!!' }), U],
    ['a forward whose caller was changed', () => forward({ tamper: (h) => (h[CALLER_HEADER] = 'ops') }), U],
    ['a forward whose hop count was changed', () => forward({ tamper: (h) => (h['x-keepwork-hops'] = '2') }), U],
    ['a forward claiming 999 hops', () => forward({ hops: 999 }), U],
    ['a forward without its timestamp', () => forward({ tamper: (h) => delete h[TIMESTAMP_HEADER] }), U],
    // Browsers and hosts.
    ['a text/plain call', () => post(call('n-2'), { ...app, 'content-type': 'text/plain' }), [415, 'UNSUPPORTED_MEDIA_TYPE']],
    [
      'a form-encoded call',
      () => post(call('n-2'), { ...app, 'content-type': 'application/x-www-form-urlencoded' }),
      [415, 'UNSUPPORTED_MEDIA_TYPE'],
    ],
    [
      'a multipart call',
      () => post(call('n-2'), { ...app, 'content-type': 'multipart/form-data; boundary=x' }),
      [415, 'UNSUPPORTED_MEDIA_TYPE'],
    ],
    ['a call without a content type', () => post(call('n-2'), bearer(TOKEN.app)), [415, 'UNSUPPORTED_MEDIA_TYPE']],
    [
      'a CORS preflight',
      () => send(node.url!, 'OPTIONS', call('n-2'), { origin: 'https://evil.example', 'access-control-request-method': 'POST' }),
      U,
    ],
    ['a foreign Host on a loopback node', () => post(call('n-3'), { ...app, host: 'evil.example' }), [421, 'MISDIRECTED_REQUEST']],
    [
      'a DNS-rebinding Host',
      () => get('/v1/status', { ...bearer(TOKEN.ops), host: `rebind.evil.example:${new URL(node.url!).port}` }),
      [421, 'MISDIRECTED_REQUEST'],
    ],
    // Names, routes and methods.
    ['an unknown method on a new name', () => post(call('n-4', 'nothing'), app), [404, 'NOT_FOUND']],
    ['a method named __proto__', () => post(call('n-4', '__proto__'), app), [404, 'NOT_FOUND']],
    ['a method named constructor', () => post(call('n-4', 'constructor'), app), [404, 'NOT_FOUND']],
    ['a method named init', () => post(call('n-4', 'init'), app), [404, 'NOT_FOUND']],
    ['an unknown class', () => post('/v1/actors/acme/Nope/n-4/echo', app), [404, 'NOT_FOUND']],
    ['a name of 500 bytes', () => post(call('x'.repeat(500)), app), [400, 'BAD_REQUEST']],
    ['a bad percent escape', () => post(call('n%zz'), app), [400, 'BAD_REQUEST']],
    ['a bad tenant', () => post('/v1/actors/Ac!me/Probe/x/echo', app), [400, 'BAD_REQUEST']],
    ['a path with an extra segment', () => post(`${call('n-5')}/more`, app), [404, 'NOT_FOUND']],
    ['a GET on a method', () => get(call('n-5'), bearer(TOKEN.app)), [405, 'METHOD_NOT_ALLOWED']],
    ['a PUT on a method', () => send(node.url!, 'PUT', call('n-5'), app, body('[]')), [405, 'METHOD_NOT_ALLOWED']],
    ['a DELETE on an actor', () => send(node.url!, 'DELETE', call('n-5', ''), bearer(TOKEN.app)), [405, 'METHOD_NOT_ALLOWED']],
    ['the alarm of an actor never created', () => get(`${call('n-6', '')}alarm`, bearer(TOKEN.app)), [200, null]],
    // Bodies and keys.
    ['a body that is not JSON', () => post(call('n-7'), app, body('{nope')), [400, 'BAD_REQUEST']],
    ['a body that is not an array', () => post(call('n-7'), app, body('{}')), [400, 'BAD_REQUEST']],
    ['a null body', () => post(call('n-7'), app, body('null')), [400, 'BAD_REQUEST']],
    ['JSON nested 100k deep', () => post(call('n-7'), app, deep), [400, 'BAD_REQUEST']],
    [
      'an 8 MB body (the client still sending hears the 413)',
      () => post(call('n-7'), app, Buffer.alloc(8_000_000, 0x20)),
      [413, 'PAYLOAD_TOO_LARGE'],
    ],
    ['an idempotency key with a space', () => post(`${call('n-8')}?durable=1`, { ...app, 'idempotency-key': 'a b' }), [400, 'BAD_REQUEST']],
    [
      'an idempotency key of 10,000 bytes',
      () => post(`${call('n-8')}?durable=1`, { ...app, 'idempotency-key': 'k'.repeat(10_000) }),
      [400, 'BAD_REQUEST'],
    ],
    [
      'an idempotency key on a call that is not durable',
      () => post(call('n-8'), { ...app, 'idempotency-key': 'order-1' }),
      [400, 'BAD_REQUEST'],
    ],
    [
      'a client’s hop count on a node with a secret (ignored)',
      () => post(call('n-8', 'nothing'), { ...app, 'x-keepwork-hops': '99' }),
      [404, 'NOT_FOUND'],
    ],
    // The HTTP parser's own refusals.
    ['headers over 16 KiB', () => post(call('n-9'), { ...app, 'x-pad': 'p'.repeat(20_000) }), [431, null]],
    [
      'Content-Length beside Transfer-Encoding (smuggling)',
      () =>
        rawProbe(
          `POST ${call('n-9')} HTTP/1.1\r\nHost: {host}:{port}\r\nauthorization: Bearer ${TOKEN.app}\r\ncontent-type: application/json\r\ncontent-length: 2\r\ntransfer-encoding: chunked\r\n\r\n2\r\n[]\r\n0\r\n\r\n`,
        ),
      [400, null],
    ],
    ['a request line that is not HTTP', () => rawProbe('HELLO\r\n\r\n', { end: true }), [400, null]],
    [
      'a body trickled past httpBodyTimeoutMs',
      () =>
        rawProbe(
          `POST ${call('n-10')} HTTP/1.1\r\nHost: {host}:{port}\r\nauthorization: Bearer ${TOKEN.app}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n[`,
        ),
      [408, 'REQUEST_TIMEOUT'],
    ],
    // Calls aimed through the planted node record.
    ['a call to an actor whose planted holder redirects', () => post(call('redirected'), app), [503, 'OWNER_UNREACHABLE']],
    ['a call to an actor whose planted holder answers unsigned', () => post(call('answered'), app), [503, 'OWNER_UNREACHABLE']],
  ];

  it('answers each of more than 40 probes with its status and code, and changes nothing', async () => {
    assert.ok(probes.length >= 60, `${probes.length} probes`);
    const before = { bucket: snapshot(join(dir, 'bucket')), data: snapshot(join(dir, 'data')) };
    assert.ok(Object.keys(before.bucket).length > 0, 'the node wrote its lease');
    const wrong: string[] = [];
    for (const [what, probe, [status, code]] of probes) {
      const r = await probe();
      const got = `${r.status} ${r.body.error ?? ''}`.trim();
      if (r.status !== status || (code !== null && r.body.error !== code)) wrong.push(`${what}: ${got} ${JSON.stringify(r.body)}`);
      else if (code !== null && typeof r.body.message !== 'string') wrong.push(`${what}: no message`);
      if (JSON.stringify(r.body).includes('the catcher answered')) wrong.push(`${what}: the catcher's answer reached the client`);
      if (r.headers['access-control-allow-origin'] !== undefined) wrong.push(`${what}: a CORS header`);
    }
    assert.deepEqual(wrong, []);
    assert.deepEqual({ bucket: snapshot(join(dir, 'bucket')), data: snapshot(join(dir, 'data')) }, before);
    assert.equal((await get('/healthz')).status, 200);
    assert.ok(heard.length > 0, 'the planted record was forwarded to');
    assert.deepEqual(
      heard.filter((h) => !/^POST \/v1\/actors\/acme\/Probe\/(redirected|answered)\/echo$/.test(h)),
      [],
      'the catcher heard only the forwards, never its redirect’s target',
    );
  });

  it('then serves valid calls: a name like a path stays a hex file name; each tenant sees only itself', async () => {
    const r = await post(call('valid', 'setAlarm'), { ...app, origin: 'https://evil.example' }, body(JSON.stringify([FAR])));
    assert.deepEqual([r.status, r.body], [200, { result: FAR }]);
    assert.equal(r.headers['access-control-allow-origin'], undefined);
    for (const name of ['..%2F..%2F..%2Fetc', 'n%00x']) {
      const named = await post(call(name), app);
      assert.deepEqual([named.status, named.body], [200, { result: [] }], name);
    }
    const files = Object.keys(snapshot(join(dir, 'data', 'actors'))).map((f) => f.replace(/\.db.*$/, ''));
    const hex = (name: string) => `acme/Probe/${Buffer.from(name).toString('hex')}`;
    assert.deepEqual(new Set(files), new Set(['valid', '../../../etc', 'n\0x'].map(hex)));

    const statusOf = async (token: string) => (await get('/v1/status', bearer(token))).body as { tenants: { tenant: string }[] };
    await waitFor('the alarm in the index', 30_000, async () => (await statusOf(TOKEN.ops)).tenants.length > 0);
    assert.deepEqual(
      (await statusOf(TOKEN.reader)).tenants.map((t) => t.tenant),
      ['acme'],
    );
    assert.deepEqual((await statusOf(TOKEN.globex)).tenants, []);
  });
});
