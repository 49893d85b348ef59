/**
 * A forward's reply must prove the cluster secret (src/main/forward.ts): a holder at the node
 * record's address answers; an unsigned or wrongly signed reply is OWNER_UNREACHABLE and its body
 * never reaches the caller, a correctly signed one is the result. A redirect is never followed; a
 * reply over the limit is RESULT_TOO_LARGE.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import {
  CALLER_HEADER,
  REPLY_SIGNATURE_HEADER,
  SIGNATURE_HEADER,
  TIMESTAMP_HEADER,
  clusterKey,
  signReply,
  verifyRequest,
} from '../../src/core/cluster-signature.js';
import { ErrorCode, KeepworkError, isKeepworkError } from '../../src/core/errors.js';
import { forwardCall, type ForwardSettings } from '../../src/main/forward.js';
import { PeerClient } from '../../src/main/peer-client.js';

const key = clusterKey('the-cluster-secret-of-this-test-0123456789', 1_000);
const forged = clusterKey('a-secret-the-cluster-does-not-share-0123', 1_000);
const actor = parseAddress('acme/Probe/a');

type Answer = 'unsigned' | 'forged' | 'signed' | 'signed-then-tampered' | 'overloaded';

describe('forwardCall with a cluster secret', () => {
  let server: Server;
  let addr: string;
  let answer: Answer = 'signed';
  const seen: IncomingMessage['headers'][] = [];
  before(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        seen.push(req.headers);
        const sig = String(req.headers[SIGNATURE_HEADER]);
        const request = {
          method: req.method ?? '',
          path: req.url ?? '',
          body: Buffer.concat(chunks).toString(),
          timestampMs: Number(req.headers[TIMESTAMP_HEADER]),
          hops: Number(req.headers['x-keepwork-hops']),
          caller: String(req.headers[CALLER_HEADER]),
        };
        const valid = verifyRequest(key, request, sig, Date.now()).ok;
        if (answer === 'overloaded') {
          const busy = JSON.stringify({ error: 'OVERLOADED', message: 'out of files' });
          res.writeHead(503, {
            'content-type': 'application/json',
            'retry-after': '7',
            [REPLY_SIGNATURE_HEADER]: signReply(key, sig, 503, busy),
          });
          return void res.end(busy);
        }
        const body = JSON.stringify({ result: valid ? 'from the holder' : 'request not signed' });
        if (answer === 'forged') res.setHeader(REPLY_SIGNATURE_HEADER, signReply(forged, sig, 200, body));
        if (answer === 'signed') res.setHeader(REPLY_SIGNATURE_HEADER, signReply(key, sig, 200, body));
        if (answer === 'signed-then-tampered') res.setHeader(REPLY_SIGNATURE_HEADER, signReply(key, sig, 200, body));
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(answer === 'signed-then-tampered' ? JSON.stringify({ result: 'changed on the way' }) : body);
      });
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    addr = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((ok) => server.close(() => ok())));

  const settings: ForwardSettings = {
    client: new PeerClient({}, 1_000_000),
    timeoutMs: 5_000,
    hopsMax: 2,
    cluster: key,
    nowMs: () => Date.now(),
  };
  const forward = () => forwardCall(addr, actor, 'echo', [1], false, { hops: 0, caller: 'app' }, settings);

  it('signs the request (with the caller) and returns a correctly signed answer', async () => {
    answer = 'signed';
    assert.equal(await forward(), 'from the holder');
    assert.equal(seen.at(-1)![CALLER_HEADER], 'app');
    assert.equal(seen.at(-1)!['x-keepwork-hops'], '1');
  });

  it('a holder’s 503 keeps its Retry-After, which this node’s answer passes on', async () => {
    answer = 'overloaded';
    const e = await forward().catch((x: unknown) => x);
    assert.ok(isKeepworkError(e, ErrorCode.Overloaded) && e instanceof KeepworkError, String(e));
    assert.equal(e.details.retryAfterMs, 7_000);
  });

  for (const a of ['unsigned', 'forged', 'signed-then-tampered'] as const)
    it(`refuses a reply that is ${a}: OWNER_UNREACHABLE, its body not passed on`, async () => {
      answer = a;
      await assert.rejects(
        forward(),
        (e: unknown) =>
          isKeepworkError(e, ErrorCode.OwnerUnreachable) && /cluster's signature/.test(e.message) && !/holder|changed/.test(e.message),
      );
    });
});

describe('forwardCall never follows a redirect', () => {
  let server: Server;
  let addr: string;
  const paths: string[] = [];
  before(async () => {
    server = createServer((req, res) => {
      paths.push(req.url ?? '');
      req.resume();
      req.on('end', () => {
        res.writeHead(307, { location: '/internal-admin/delete-everything' });
        res.end();
      });
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    addr = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((ok) => server.close(() => ok())));

  it('a 307 from the address is OWNER_UNREACHABLE, and its target is never asked', async () => {
    const settings: ForwardSettings = { client: new PeerClient({}, 1_000_000), timeoutMs: 5_000, hopsMax: 2, nowMs: () => Date.now() };
    await assert.rejects(
      forwardCall(addr, actor, 'echo', [1], false, { hops: 0, caller: '' }, settings),
      (e: unknown) => isKeepworkError(e, ErrorCode.OwnerUnreachable) && /redirect \(HTTP 307\)/.test(e.message),
    );
    assert.deepEqual(paths, ['/v1/actors/acme/Probe/a/echo']);
  });
});

describe('forwardCall reads a reply up to the result limit', () => {
  let server: Server;
  let addr: string;
  before(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ result: 'x'.repeat(10_000) }));
      });
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    addr = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((ok) => server.close(() => ok())));

  it('a longer reply is cut off: RESULT_TOO_LARGE (the call ran), not a retryable 503', async () => {
    const forward = (replyMaxBytes: number) =>
      forwardCall(
        addr,
        actor,
        'echo',
        [1],
        false,
        { hops: 0, caller: '' },
        {
          client: new PeerClient({}, replyMaxBytes),
          timeoutMs: 5_000,
          hopsMax: 2,
          nowMs: () => Date.now(),
        },
      );
    assert.equal(((await forward(20_000)) as string).length, 10_000);
    await assert.rejects(
      forward(1_000),
      (e: unknown) => isKeepworkError(e, ErrorCode.ResultTooLarge) && /reply exceeds 1000 bytes \(httpResultMaxBytes\)/.test(e.message),
    );
  });
});
