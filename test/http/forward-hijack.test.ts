/**
 * A bucket writer cannot aim a node's forwards (src/main/forward.ts, src/leases/records.ts,
 * src/main/peers-allow.ts): a planted `nodes/evil` record, live, and a hold of an actor naming it
 * point calls at a catcher server that answers 307 to an admin route. The client gets
 * OWNER_UNREACHABLE and nothing of the catcher's; the catcher sees the forward and nothing beyond
 * it, and with `peersAllow` excluding it, or an addr with a path, nothing at all. Such a 503 is
 * logged once, without a stack; a refused address is logged once.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { startNode } from '../../src/index.js';
import { encodeHold, encodeNode, holdKey, nodeKey } from '../../src/leases/records.js';
import type { KeepworkNode, StartNodeOptions } from '../../src/main/node-api.js';
import { openStore } from '../../src/store/open.js';
import { capturedLogger, type LogLine } from '../helpers/log-lines.js';
import { tempDirs } from '../helpers/temp.js';

const PROBE = new URL('../fixtures/classes/probe.ts', import.meta.url).href;
const tempDir = tempDirs('kw-hijack-');
const VICTIM = parseAddress('acme/Probe/victim');

interface Seen {
  method: string;
  url: string;
  body: string;
  idempotencyKey: string | undefined;
}

describe('a planted node record cannot aim forwards', () => {
  let catcher: Server;
  let catcherUrl: string;
  const seen: Seen[] = [];
  before(async () => {
    catcher = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const key = req.headers['idempotency-key'];
        seen.push({ method: req.method ?? '', url: req.url ?? '', body: Buffer.concat(chunks).toString(), idempotencyKey: key as string });
        if (req.url?.startsWith('/v1/actors/')) {
          res.writeHead(307, { location: '/internal-admin/delete-everything' });
          return void res.end();
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ result: 'the catcher answered' }));
      });
    });
    await new Promise<void>((ok) => catcher.listen(0, '127.0.0.1', ok));
    catcherUrl = `http://127.0.0.1:${(catcher.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((ok) => catcher.close(() => ok())));

  /** A node on a folder bucket holding a live `nodes/evil` record at `addr` and the victim's hold naming it. */
  async function plantedNode(addr: string, options: Partial<StartNodeOptions> = {}): Promise<{ node: KeepworkNode; lines: LogLine[] }> {
    const dir = tempDir();
    const bucket = `file://${join(dir, 'bucket')}`;
    const store = openStore(bucket);
    const evil = { nodeId: 'evil', epoch: 1, addr, tenants: null, classes: ['Probe'], expiresAtMs: Date.now() + 3_600_000 };
    await store.put(nodeKey('evil'), encodeNode({ ...evil, state: 'live' }));
    await store.put(holdKey(VICTIM), encodeHold({ nodeId: 'evil', epoch: 1, generation: 1, state: 'held' }));
    await store.close();
    const { log, lines } = capturedLogger('info');
    const node = await startNode({
      bucket,
      dataDir: join(dir, 'data'),
      classes: { Probe: PROBE },
      port: 0,
      workerThreads: 1,
      logger: log,
      ...options,
    });
    return { node, lines };
  }

  const call = async (node: KeepworkNode) => {
    const r = await fetch(`${node.url}/v1/actors/acme/Probe/victim/echo?durable=1`, {
      method: 'POST',
      body: JSON.stringify(['the client’s secret']),
      headers: { 'content-type': 'application/json', 'idempotency-key': 'order-17' },
    });
    return { status: r.status, text: await r.text() };
  };

  it('a 307 from the planted address: OWNER_UNREACHABLE, nothing of it reaches the client, its target is never asked', async () => {
    seen.length = 0;
    const { node, lines } = await plantedNode(catcherUrl);
    try {
      const calls = 5;
      for (let i = 0; i < calls; i++) {
        const r = await call(node);
        assert.equal(r.status, 503);
        const body = JSON.parse(r.text) as { error: string; message: string };
        assert.equal(body.error, 'OWNER_UNREACHABLE');
        assert.match(body.message, /redirect \(HTTP 307\)/);
        assert.doesNotMatch(r.text, /catcher answered|internal-admin/);
      }
      assert.equal(seen.length, calls, 'one forward per call');
      for (const s of seen) assert.equal(s.url, '/v1/actors/acme/Probe/victim/echo?durable=1');
      assert.deepEqual(
        seen.filter((s) => s.url.startsWith('/internal-admin')),
        [],
        'the redirect was followed',
      );
      const refusals = lines.filter((l) => /refused with 503/.test(l.msg));
      assert.ok(refusals.length >= 1 && refusals.length < calls, `503s logged ${refusals.length} times for ${calls} calls`);
      assert.ok(
        lines.every((l) => l.err?.stack === undefined || l.err.code !== 'OWNER_UNREACHABLE'),
        'a 503 was logged with its stack',
      );
    } finally {
      await node.stop();
    }
  });

  it('with peersAllow excluding the planted address, the catcher hears nothing; the refusal is logged once', async () => {
    seen.length = 0;
    const { node, lines } = await plantedNode(catcherUrl, { peersAllow: '10.0.0.0/8,fd00::/8' });
    try {
      for (let i = 0; i < 3; i++) {
        const r = await call(node);
        assert.equal(r.status, 503);
        const body = JSON.parse(r.text) as { error: string; message: string };
        assert.equal(body.error, 'OWNER_UNREACHABLE');
        assert.match(body.message, /127\.0\.0\.1 is outside --peers-allow/);
      }
      assert.deepEqual(seen, []);
      assert.equal(lines.filter((l) => /outside --peers-allow/.test(l.msg)).length, 1);
    } finally {
      await node.stop();
    }
  });

  it('a planted addr with a path reads as no address: the catcher hears nothing; the record is logged once', async () => {
    seen.length = 0;
    const { node, lines } = await plantedNode(`${catcherUrl}/internal-admin/delete-everything`);
    try {
      for (let i = 0; i < 3; i++) {
        const r = await call(node);
        assert.equal(r.status, 503);
        assert.equal((JSON.parse(r.text) as { error: string }).error, 'OWNER_UNREACHABLE');
      }
      assert.deepEqual(seen, []);
      assert.equal(lines.filter((l) => /is not a node address/.test(l.msg) && l.nodeId === 'evil').length, 1);
    } finally {
      await node.stop();
    }
  });

  it('a valid peer inside peersAllow is forwarded to as usual', async () => {
    const dir = tempDir();
    const bucket = `file://${join(dir, 'bucket')}`;
    const common = { bucket, classes: { Probe: PROBE }, port: 0, workerThreads: 1, logger: capturedLogger('info').log };
    const holder = await startNode({ ...common, dataDir: join(dir, 'a') });
    const other = await startNode({ ...common, dataDir: join(dir, 'b'), peersAllow: ['127.0.0.0/8'] });
    try {
      assert.equal(await holder.actor('acme/Probe/shared').call('slowIncrement', 0), 1);
      const r = await fetch(`${other.url}/v1/actors/acme/Probe/shared/value`, {
        method: 'POST',
        body: '[]',
        headers: { 'content-type': 'application/json' },
      });
      assert.deepEqual(await r.json(), { result: 1 });
    } finally {
      await other.stop();
      await holder.stop();
    }
  });
});
