import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { doorDecision, isLoopback } from '../../src/main/access-policy.js';

const doors = (host: string, o: { tokens?: boolean; clusterSecret?: boolean; insecureNoAuth?: boolean } = {}) =>
  doorDecision({ host, tokens: false, clusterSecret: false, insecureNoAuth: false, ...o });

describe('access policy at start', () => {
  it('knows loopback hosts', () => {
    for (const h of ['127.0.0.1', '127.8.9.10', '::1', '[::1]', 'localhost']) assert.equal(isLoopback(h), true, h);
    for (const h of ['0.0.0.0', '::', '10.0.0.5', 'example.com', '128.0.0.1']) assert.equal(isLoopback(h), false, h);
  });

  it('starts a loopback node without any files, and warns about tokens without a secret', () => {
    assert.deepEqual(doors('127.0.0.1'), { start: true, warnings: [] });
    const d = doors('127.0.0.1', { tokens: true });
    assert.equal(d.start, true);
    assert.match((d as { warnings: string[] }).warnings[0]!, /without a cluster secret/);
  });

  it('refuses a non-loopback node without tokens, or with tokens but no secret', () => {
    const none = doors('0.0.0.0');
    assert.equal(none.start, false);
    assert.match((none as { why: string }).why, /no token file/);
    const noSecret = doors('10.0.0.5', { tokens: true });
    assert.equal(noSecret.start, false);
    assert.match((noSecret as { why: string }).why, /no cluster secret/);
    assert.deepEqual(doors('10.0.0.5', { tokens: true, clusterSecret: true }), { start: true, warnings: [] });
  });

  it('starts an open non-loopback node with insecureNoAuth, always with a warning', () => {
    const d = doors('0.0.0.0', { insecureNoAuth: true });
    assert.equal(d.start, true);
    assert.match((d as { warnings: string[] }).warnings[0]!, /insecure-no-auth.*no tokens, no cluster secret/);
  });
});
