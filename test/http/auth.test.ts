/**
 * Bearer tokens and tenant rights on a real node's HTTP API (docs/security.md): 401 and 403 on
 * every endpoint for a missing, wrong or cross-tenant token, /healthz open, /v1/status filtered to
 * the token's tenants, signed forwards (a spoofed hop count from a client is ignored), and the
 * start refused on a non-loopback host without tokens.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  CALLER_HEADER,
  REPLY_SIGNATURE_HEADER,
  SIGNATURE_HEADER,
  TIMESTAMP_HEADER,
  clusterKey,
  signRequest,
  verifyReply,
} from '../../src/core/cluster-signature.js';
import { ErrorCode, isKeepworkError } from '../../src/core/errors.js';
import { silentLogger } from '../../src/core/logger.js';
import { sha256Hex, type TokenFile } from '../../src/core/tokens.js';
import { startNode } from '../../src/index.js';
import type { KeepworkNode } from '../../src/main/node-api.js';
import { capturedLogger } from '../helpers/log-lines.js';
import { tempDirs } from '../helpers/temp.js';
import { waitFor } from '../helpers/wait.js';

const PROBE = new URL('../fixtures/classes/probe.ts', import.meta.url).href;
const tempDir = tempDirs('kw-auth-');
const SECRET = 'cluster-secret-for-the-auth-test-0123456789';
const TOKENS = { app: 'kw_app-token', reader: 'kw_reader-token', ops: 'kw_ops-token', root: 'kw_root-token' } as const;
const AUTH: TokenFile = {
  version: 1,
  tokens: [
    { name: 'app', sha256: sha256Hex(TOKENS.app), tenants: ['acme'], rights: ['call'] },
    { name: 'reader', sha256: sha256Hex(TOKENS.reader), tenants: ['acme'], rights: ['read'] },
    { name: 'ops', sha256: sha256Hex(TOKENS.ops), tenants: ['*'], rights: ['read'] },
    { name: 'root', sha256: sha256Hex(TOKENS.root), tenants: ['acme'], rights: ['admin'] },
  ],
};
const FAR = Date.UTC(2100, 0, 1);

describe('HTTP API with tokens', () => {
  let node: KeepworkNode;
  let base: string;
  before(async () => {
    node = await startNode({
      dataDir: tempDir(),
      classes: { Probe: PROBE },
      port: 0,
      workerThreads: 1,
      logger: silentLogger(),
      auth: AUTH,
      clusterSecret: SECRET,
    });
    base = node.url!;
  });
  after(() => node.stop());

  const get = (path: string, token?: string, headers: Record<string, string> = {}) =>
    fetch(base + path, { headers: { ...headers, ...(token ? { authorization: `Bearer ${token}` } : {}) } });
  const post = (path: string, body: string, token?: string, headers: Record<string, string> = {}) =>
    fetch(base + path, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', ...headers, ...(token ? { authorization: `Bearer ${token}` } : {}) },
    });
  const errorOf = async (r: Response) => ((await r.json()) as { error: string }).error;

  const ENDPOINTS: Array<{ name: string; send: (token?: string) => Promise<Response> }> = [
    { name: 'POST call', send: (t) => post('/v1/actors/acme/Probe/a/echo', '[]', t) },
    { name: 'GET alarm', send: (t) => get('/v1/actors/acme/Probe/a/alarm', t) },
    { name: 'GET /', send: (t) => get('/', t) },
    { name: 'GET /v1/status', send: (t) => get('/v1/status', t) },
    { name: 'GET /metrics', send: (t) => get('/metrics', t) },
    { name: 'an unknown route', send: (t) => get('/v1/nothing', t) },
  ];

  it('answers 401 UNAUTHENTICATED with WWW-Authenticate on every endpoint without a valid token', async () => {
    for (const e of ENDPOINTS)
      for (const token of [undefined, 'kw_wrong', sha256Hex(TOKENS.app)]) {
        const r = await e.send(token);
        assert.equal(r.status, 401, `${e.name} with ${token ?? 'no token'}`);
        // The status page asks a browser for a Basic login; every other route asks for a bearer token.
        assert.match(r.headers.get('www-authenticate') ?? '', e.name === 'GET /' ? /^Basic realm="keepwork"/ : /^Bearer/);
        assert.equal(await errorOf(r), ErrorCode.Unauthenticated);
      }
    const basic = await get('/v1/status', undefined, { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` });
    assert.equal(basic.status, 401);
  });

  it('takes the token as the password of a Basic login (a browser on the status page), the user name unread', async () => {
    const login = (user: string, token: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${token}`).toString('base64')}` });
    for (const path of ['/', '/v1/status']) assert.equal((await get(path, undefined, login('anyone', TOKENS.reader))).status, 200, path);
    assert.equal((await get('/', undefined, login('reader', TOKENS.app))).status, 403, 'the token’s rights, whatever the user name');
    assert.equal((await get('/', undefined, login('reader', 'kw_wrong'))).status, 401);
  });

  it('keeps /healthz open', async () => {
    const r = await get('/healthz');
    assert.equal(r.status, 200);
    assert.equal(((await r.json()) as { ok: boolean }).ok, true);
  });

  it('answers 403 FORBIDDEN for another tenant or a missing right, on every endpoint', async () => {
    const cases: Array<[string, Promise<Response>]> = [
      ['app calls tenant other', post('/v1/actors/other/Probe/a/echo', '[]', TOKENS.app)],
      ['app reads an alarm of tenant other', get('/v1/actors/other/Probe/a/alarm', TOKENS.app)],
      ['reader calls', post('/v1/actors/acme/Probe/a/echo', '[]', TOKENS.reader)],
      ['reader reads an alarm', get('/v1/actors/acme/Probe/a/alarm', TOKENS.reader)],
      ['ops (read on *) calls', post('/v1/actors/acme/Probe/a/echo', '[]', TOKENS.ops)],
      ['app opens the status page', get('/', TOKENS.app)],
      ['app reads /v1/status', get('/v1/status', TOKENS.app)],
      ['app reads /metrics', get('/metrics', TOKENS.app)],
      ['reader (one tenant) reads /metrics', get('/metrics', TOKENS.reader)],
    ];
    for (const [what, pending] of cases) {
      const r = await pending;
      assert.equal(r.status, 403, what);
      assert.equal(await errorOf(r), ErrorCode.Forbidden, what);
    }
  });

  it('serves each right on its tenants', async () => {
    assert.equal((await post('/v1/actors/acme/Probe/a/echo', '[]', TOKENS.app)).status, 200);
    assert.equal((await get('/v1/actors/acme/Probe/a/alarm', TOKENS.app)).status, 200);
    assert.equal((await post('/v1/actors/other/Probe/a/echo', '[]', TOKENS.root)).status, 200, 'admin calls any tenant');
    assert.equal((await get('/', TOKENS.reader)).status, 200);
    assert.equal((await get('/metrics', TOKENS.ops)).status, 200);
    assert.equal((await get('/metrics', TOKENS.root)).status, 200);
  });

  it('shows in /v1/status only the tenants and deliveries of the token (admin and "*" see all)', async () => {
    assert.equal((await post('/v1/actors/acme/Probe/s/setAlarm', `[${FAR}]`, TOKENS.root)).status, 200);
    assert.equal((await post('/v1/actors/other/Probe/s/setAlarm', `[${FAR}]`, TOKENS.root)).status, 200);
    const tenantsFor = async (token: string) => {
      const body = (await (await get('/v1/status', token)).json()) as { tenants: Array<{ tenant: string }> };
      return body.tenants.map((t) => t.tenant).sort();
    };
    await waitFor('both tenants in the index listing', 20_000, async () => (await tenantsFor(TOKENS.root)).length === 2, 250);
    assert.deepEqual(await tenantsFor(TOKENS.root), ['acme', 'other']);
    assert.deepEqual(await tenantsFor(TOKENS.ops), ['acme', 'other']);
    assert.deepEqual(await tenantsFor(TOKENS.reader), ['acme']);

    // Alarms due now on both tenants: each delivery is listed under its actor.
    const now = Date.now();
    assert.equal((await post('/v1/actors/acme/Probe/d/setAlarm', `[${now}]`, TOKENS.root)).status, 200);
    assert.equal((await post('/v1/actors/other/Probe/d/setAlarm', `[${now}]`, TOKENS.root)).status, 200);
    const deliveriesFor = async (token: string) => {
      const body = (await (await get('/v1/status', token)).json()) as { deliveries: Array<{ actor: string }> };
      return [...new Set(body.deliveries.map((d) => d.actor))].sort();
    };
    await waitFor('both deliveries', 20_000, async () => (await deliveriesFor(TOKENS.root)).length === 2, 100);
    assert.deepEqual(await deliveriesFor(TOKENS.root), ['acme/Probe/d', 'other/Probe/d']);
    assert.deepEqual(await deliveriesFor(TOKENS.reader), ['acme/Probe/d']);
  });

  it('ignores a hop count from a client (it is not a node): even a malformed one is not read', async () => {
    for (const hops of ['99', 'abc']) {
      const r = await post('/v1/actors/acme/Probe/h/echo', '[]', TOKENS.app, { 'x-keepwork-hops': hops });
      assert.equal(r.status, 200, `hops ${hops}`);
    }
  });

  describe('a forward signed with the cluster secret', () => {
    // The node's window is its skewBoundMs (default) + 30 s; the key here only has to share the secret.
    const key = clusterKey(SECRET, 0);
    const signed = (o: { path: string; body: string; caller: string; hops?: number; ts?: number; sendBody?: string; secret?: string }) => {
      const ts = o.ts ?? Date.now();
      const k = o.secret ? clusterKey(o.secret, 0) : key;
      const sig = signRequest(k, { method: 'POST', path: o.path, body: o.body, timestampMs: ts, hops: o.hops ?? 1, caller: o.caller });
      const headers = {
        [SIGNATURE_HEADER]: sig,
        [TIMESTAMP_HEADER]: String(ts),
        [CALLER_HEADER]: o.caller,
        'x-keepwork-hops': String(o.hops ?? 1),
      };
      return { sig, send: () => post(o.path, o.sendBody ?? o.body, undefined, headers) };
    };

    it('runs as the caller it names, with that caller’s rights here, and signs the reply', async () => {
      const ok = signed({ path: '/v1/actors/acme/Probe/f/echo', body: '[]', caller: 'app' });
      const r = await ok.send();
      const text = await r.text();
      assert.equal(r.status, 200, text);
      assert.equal(verifyReply(key, ok.sig, 200, text, r.headers.get(REPLY_SIGNATURE_HEADER) ?? ''), true);

      const cross = signed({ path: '/v1/actors/other/Probe/f/echo', body: '[]', caller: 'app' });
      const refused = await cross.send();
      const refusedText = await refused.text();
      assert.equal(refused.status, 403);
      assert.equal(verifyReply(key, cross.sig, 403, refusedText, refused.headers.get(REPLY_SIGNATURE_HEADER) ?? ''), true);

      assert.equal((await signed({ path: '/v1/actors/acme/Probe/f/echo', body: '[]', caller: 'ghost' }).send()).status, 403);
      const own = await signed({ path: '/v1/actors/other/Probe/f/echo', body: '[]', caller: '' }).send();
      assert.equal(own.status, 200, 'a forward naming no caller is the forwarding node’s own call');
    });

    it('is refused (401, unsigned) when replayed outside the window, tampered with, or signed with another secret', async () => {
      const path = '/v1/actors/acme/Probe/f/echo';
      const cases = {
        replay: signed({ path, body: '[]', caller: 'app', ts: Date.now() - 10 * 60_000 }),
        tampered: signed({ path, body: '[1]', caller: 'app', sendBody: '[5]' }),
        foreign: signed({ path, body: '[]', caller: 'app', secret: 'another-secret-of-at-least-32-bytes!!' }),
      };
      for (const [what, c] of Object.entries(cases)) {
        const r = await c.send();
        assert.equal(r.status, 401, what);
        assert.equal(r.headers.get(REPLY_SIGNATURE_HEADER), null, what);
      }
    });
  });
});

describe('starting on a non-loopback host', () => {
  it('is refused without a token file (BAD_CONFIG), before anything is written', async () => {
    const dataDir = join(tempDir(), 'data');
    await assert.rejects(
      startNode({ dataDir, bucket: 'memory:', classes: { Probe: PROBE }, port: 0, host: '0.0.0.0', logger: silentLogger() }),
      (e: unknown) => isKeepworkError(e, ErrorCode.BadConfig) && /not loopback and no token file/.test(e.message),
    );
    await assert.rejects(
      startNode({ dataDir, bucket: 'memory:', classes: { Probe: PROBE }, port: 0, host: '0.0.0.0', logger: silentLogger(), auth: AUTH }),
      (e: unknown) => isKeepworkError(e, ErrorCode.BadConfig) && /no cluster secret/.test(e.message),
    );
    assert.equal(existsSync(dataDir), false);
  });

  it('starts with insecureNoAuth and says so in a warning', async () => {
    const { log, lines } = capturedLogger('info');
    const node = await startNode({
      dataDir: tempDir(),
      bucket: 'memory:',
      classes: { Probe: PROBE },
      port: 0,
      host: '0.0.0.0',
      advertise: 'http://10.0.0.7:8080',
      workerThreads: 1,
      logger: log,
      insecureNoAuth: true,
    });
    try {
      const warning = lines.find((l) => l.level === 40 && /insecure-no-auth/.test(l.msg));
      assert.ok(warning, 'a warning names --insecure-no-auth');
    } finally {
      await node.stop();
    }
  });

  it('refuses a token file with a bad entry (BAD_CONFIG) at start', async () => {
    const bad = { version: 1, tokens: [{ name: 'x', sha256: 'not-a-hash', tenants: ['*'], rights: ['call'] }] } as TokenFile;
    await assert.rejects(
      startNode({ dataDir: tempDir(), bucket: 'memory:', classes: { Probe: PROBE }, port: 0, logger: silentLogger(), auth: bad }),
      (e: unknown) => isKeepworkError(e, ErrorCode.BadConfig) && /sha256/.test(e.message),
    );
  });
});
