/**
 * A node with a certificate serves HTTPS (src/http/server.ts) and verifies https holders it
 * forwards to (src/main/forward.ts, peer-client.ts), certificates made with openssl at test time:
 *
 *   serving      a client trusting the cluster's CA is answered; plain HTTP and a client without
 *                the CA get nothing; a handshake never started is cut off, and headers that never
 *                end are answered 408, at httpHeadersTimeoutMs; past httpConnectionsMax a
 *                connection is closed
 *   bad config   a missing or mismatched file, the wrong scheme advertised, or a certificate not
 *                naming the address: BAD_CONFIG naming the option, nothing written
 *   forwards     to a holder whose certificate chains to --tls-ca: served; to one whose does not:
 *                OWNER_UNREACHABLE, nothing sent
 *   mutual TLS   a client without a certificate gets no handshake; nodes forward with theirs; a
 *                node whose client certificate another CA signed cannot forward
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { connect as connectTcp } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connect as connectTls } from 'node:tls';
import { call, mustCall } from '../../support/cluster/calls.js';
import { ErrorCode, isKeepworkError } from '../../src/core/errors.js';
import { silentLogger } from '../../src/core/logger.js';
import { startNode } from '../../src/index.js';
import type { KeepworkNode, StartNodeOptions } from '../../src/main/node-api.js';
import { issue, makeCa, type CertFiles } from '../helpers/tls-certs.js';
import { tempDirs } from '../helpers/temp.js';

const PROBE = new URL('../fixtures/classes/probe.ts', import.meta.url).href;
const tempDir = tempDirs('kw-tls-');

let ca: CertFiles;
let node1: CertFiles;
let rogue1: CertFiles;
/** PEM text, for clients. */
let caPem: Buffer;
let clientPem: { cert: Buffer; key: Buffer };
before(() => {
  const pki = tempDir();
  ca = makeCa(pki, 'ca');
  node1 = issue(pki, ca, 'node-1', 'IP:127.0.0.1');
  rogue1 = issue(pki, makeCa(pki, 'rogue-ca'), 'rogue-1', 'IP:127.0.0.1');
  const client = issue(pki, ca, 'client', 'DNS:app.internal');
  caPem = readFileSync(ca.cert);
  clientPem = { cert: readFileSync(client.cert), key: readFileSync(client.key) };
});

/** Nodes of one folder bucket, stopped after the test. */
function cluster(): { start(name: string, o: Partial<StartNodeOptions>): Promise<KeepworkNode>; stopAll(): Promise<void> } {
  const dir = tempDir();
  const started: KeepworkNode[] = [];
  const base = { bucket: `file://${join(dir, 'bucket')}`, classes: { Probe: PROBE }, port: 0, workerThreads: 1, logger: silentLogger() };
  return {
    async start(name, o) {
      const node = await startNode({ ...base, dataDir: join(dir, name), ...o });
      started.push(node);
      return node;
    },
    stopAll: () => Promise.all(started.map((n) => n.stop())).then(() => undefined),
  };
}

/** Resolves once the socket is closed. */
function closed(socket: { once(e: 'close', f: () => void): unknown }): Promise<void> {
  return new Promise((ok) => socket.once('close', () => ok()));
}

describe('a node with a certificate serves HTTPS', () => {
  const nodes = cluster();
  let node: KeepworkNode;
  before(async () => {
    node = await nodes.start('a', { tls: node1, httpHeadersTimeoutMs: 300 });
  });
  after(() => nodes.stopAll());

  it('answers a client that trusts the CA, at an https URL', async () => {
    assert.match(node.url!, /^https:\/\/127\.0\.0\.1:\d+$/);
    assert.deepEqual(await mustCall(node.url!, 'acme/Probe/p', 'echo', [1, 'two'], { tls: { ca: caPem } }), [1, 'two']);
  });

  it('gives plain HTTP and a client without the CA no answer', async () => {
    const plain = await call(node.url!.replace('https:', 'http:'), 'acme/Probe/p', 'echo', [1]);
    assert.equal(plain.status, 0, JSON.stringify(plain));
    const untrusting = await call(node.url!, 'acme/Probe/p', 'echo', [1], { tls: {} });
    assert.equal(untrusting.status, 0);
    assert.match(untrusting.message ?? '', /certificate/);
  });

  it('closes a connection whose handshake never starts, and answers headers that never end 408, at httpHeadersTimeoutMs', async () => {
    const port = Number(new URL(node.url!).port);
    const silentTcp = connectTcp(port, '127.0.0.1');
    await closed(silentTcp);
    let answer = '';
    const trickle = connectTls({ port, host: '127.0.0.1', ca: caPem }, () => trickle.write('GET /healthz HTTP/1.1\r\n'));
    trickle.on('data', (d: Buffer) => (answer += d.toString())).on('error', () => {});
    await closed(trickle);
    assert.match(answer, /^HTTP\/1\.1 408 /);
  });
});

describe('the TLS limits on connections', () => {
  const nodes = cluster();
  after(() => nodes.stopAll());

  it('closes a connection past httpConnectionsMax', async () => {
    const node = await nodes.start('a', { tls: node1, httpConnectionsMax: 1 });
    const port = Number(new URL(node.url!).port);
    const first = connectTls({ port, host: '127.0.0.1', ca: caPem });
    await new Promise<void>((ok, fail) => first.once('secureConnect', ok).once('error', fail));
    let secondHandshaken = false;
    const second = connectTls({ port, host: '127.0.0.1', ca: caPem }, () => (secondHandshaken = true));
    second.on('error', () => {});
    await closed(second);
    assert.equal(secondHandshaken, false);
    first.destroy();
  });
});

describe('bad TLS settings fail the start, naming the option, with nothing written', () => {
  const refusals: Array<[string, () => Partial<StartNodeOptions>, RegExp]> = [
    ['a missing key file', () => ({ tls: { cert: node1.cert, key: '/nonexistent/node.key' } }), /cannot read tls\.key \(--tls-key\)/],
    ['a key of another certificate', () => ({ tls: { cert: node1.cert, key: rogue1.key } }), /tls\.key \(--tls-key\) does not belong/],
    ['an http advertise with TLS on', () => ({ tls: node1, host: '0.0.0.0', advertise: 'http://127.0.0.1:8443' }), /must be an https URL/],
    ['an https advertise with TLS off', () => ({ host: '0.0.0.0', advertise: 'https://127.0.0.1:8443' }), /serves plain HTTP/],
    [
      'an advertised host the certificate does not name',
      () => ({ tls: node1, host: '0.0.0.0', advertise: 'https://127.0.0.9:8443' }),
      /does not name 127\.0\.0\.9/,
    ],
    ['a listen host the certificate does not name', () => ({ tls: node1, host: 'localhost' }), /does not name the listen host localhost/],
  ];
  for (const [what, options, pattern] of refusals)
    it(what, async () => {
      const dataDir = join(tempDir(), 'data');
      const base = { bucket: 'memory:', classes: { Probe: PROBE }, port: 0, logger: silentLogger(), insecureNoAuth: true };
      await assert.rejects(
        startNode({ ...base, dataDir, ...options() }),
        (e: unknown) => isKeepworkError(e, ErrorCode.BadConfig) && pattern.test(e.message),
      );
      assert.equal(existsSync(dataDir), false);
    });
});

describe('forwards to an https holder verify its certificate', () => {
  const nodes = cluster();
  after(() => nodes.stopAll());

  it('serves through a holder the CA signed; refuses one it did not (OWNER_UNREACHABLE)', async () => {
    const trusted = { tls: { ca: caPem } };
    const entry = await nodes.start('entry', { tls: { ...node1, ca: ca.cert } });
    const holder = await nodes.start('holder', { tls: { ...node1, ca: ca.cert } });
    const impostor = await nodes.start('impostor', { tls: rogue1 });
    assert.equal(await holder.actor('acme/Probe/kept').call('slowIncrement', 0), 1);
    assert.equal(await impostor.actor('acme/Probe/taken').call('slowIncrement', 0), 1);

    assert.equal(await mustCall(entry.url!, 'acme/Probe/kept', 'slowIncrement', [0], trusted), 2, 'forwarded to the holder');
    const refused = await call(entry.url!, 'acme/Probe/taken', 'slowIncrement', [0], trusted);
    assert.equal(refused.status, 503, JSON.stringify(refused));
    assert.equal(refused.error, 'OWNER_UNREACHABLE');
    assert.match(refused.message ?? '', /TLS certificate this node does not accept/);
    assert.equal(await impostor.actor('acme/Probe/taken').call('value'), 1, 'nothing reached the impostor');
  });
});

describe('mutual TLS', () => {
  const nodes = cluster();
  after(() => nodes.stopAll());

  it('refuses a client without a certificate; nodes forward with theirs; a foreign client certificate cannot', async () => {
    const mutual = { ...node1, ca: ca.cert, requireClientCert: true };
    const entry = await nodes.start('entry', { tls: mutual });
    const holder = await nodes.start('holder', { tls: mutual });
    const stranger = await nodes.start('stranger', { tls: { ...mutual, clientCert: rogue1.cert, clientKey: rogue1.key } });
    const withCert = { tls: { ca: caPem, ...clientPem } };
    assert.equal(await holder.actor('acme/Probe/m').call('slowIncrement', 0), 1);

    const anonymous = await call(entry.url!, 'acme/Probe/m', 'value', [], { tls: { ca: caPem } });
    assert.equal(anonymous.status, 0, JSON.stringify(anonymous));
    assert.equal(await mustCall(entry.url!, 'acme/Probe/m', 'slowIncrement', [0], withCert), 2, 'forwarded with the node certificate');
    const foreign = await call(stranger.url!, 'acme/Probe/m', 'slowIncrement', [0], withCert);
    assert.equal(foreign.status, 503, JSON.stringify(foreign));
    assert.equal(foreign.error, 'OWNER_UNREACHABLE');
    assert.equal(await holder.actor('acme/Probe/m').call('value'), 2, 'nothing ran for the refused forward');
  });
});
