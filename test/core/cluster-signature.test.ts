import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  REPLAY_WINDOW_MS,
  clusterKey,
  readClusterSecret,
  signReply,
  signRequest,
  verifyReply,
  verifyRequest,
  type SignedRequest,
} from '../../src/core/cluster-signature.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs('kw-secret-');
const SKEW = 1_000;
const key = clusterKey('s'.repeat(48), SKEW);
const other = clusterKey('t'.repeat(48), SKEW);
const NOW = 1_800_000_000_000;
const request: SignedRequest = {
  method: 'POST',
  path: '/v1/actors/acme/Probe/a/increment?durable=1',
  body: '[1]',
  timestampMs: NOW,
  hops: 1,
  caller: 'app',
};

describe('cluster signature', () => {
  it('verifies a request signed with the same secret, within the window either way', () => {
    const sig = signRequest(key, request);
    assert.deepEqual(verifyRequest(key, request, sig, NOW), { ok: true });
    const edge = REPLAY_WINDOW_MS + SKEW;
    assert.deepEqual(verifyRequest(key, request, sig, NOW + edge), { ok: true });
    assert.deepEqual(verifyRequest(key, request, sig, NOW - edge), { ok: true });
  });

  it('refuses a replay outside the window, another secret, and any change to what is covered', () => {
    const sig = signRequest(key, request);
    const late = verifyRequest(key, request, sig, NOW + REPLAY_WINDOW_MS + SKEW + 1);
    assert.equal(late.ok, false);
    assert.match((late as { why: string }).why, /replay/);
    assert.equal(verifyRequest(other, request, sig, NOW).ok, false);
    const changes: Partial<SignedRequest>[] = [
      { body: '[2]' },
      { path: '/v1/actors/other/Probe/a/increment?durable=1' },
      { method: 'GET' },
      { hops: 0 },
      { caller: 'admin' },
      { timestampMs: NOW + 1 },
    ];
    for (const c of changes) assert.equal(verifyRequest(key, { ...request, ...c }, sig, NOW).ok, false, JSON.stringify(c));
    assert.equal(verifyRequest(key, request, 'zz', NOW).ok, false);
    assert.equal(verifyRequest(key, request, sig.toUpperCase(), NOW).ok, false);
  });

  it('signs a reply over the request signature, the status and the body', () => {
    const reqSig = signRequest(key, request);
    const sig = signReply(key, reqSig, 200, '{"result":1}');
    assert.equal(verifyReply(key, reqSig, 200, '{"result":1}', sig), true);
    assert.equal(verifyReply(key, reqSig, 200, '{"result":2}', sig), false, 'tampered body');
    assert.equal(verifyReply(key, reqSig, 500, '{"result":1}', sig), false, 'other status');
    assert.equal(verifyReply(key, signRequest(key, { ...request, hops: 2 }), 200, '{"result":1}', sig), false, 'another request');
    assert.equal(verifyReply(other, reqSig, 200, '{"result":1}', sig), false, 'another secret');
    assert.equal(verifyReply(key, reqSig, 200, '{"result":1}', ''), false, 'unsigned');
  });

  it('refuses a short secret and reads a secret file without its trailing newline', () => {
    assert.throws(() => clusterKey('short', SKEW), /at least 32 bytes/);
    const path = join(tempDir(), 'secret');
    writeFileSync(path, `${'x'.repeat(40)}\n`);
    assert.equal(readClusterSecret(path).toString(), 'x'.repeat(40));
    assert.throws(() => readClusterSecret(join(tempDir(), 'missing')), /cannot read the cluster secret file/);
  });
});
