/**
 * The networks forwards may go to (src/main/peers-allow.ts): CIDRs parsed or refused by name, IP
 * literals checked against them, and a host name allowed only when every address it resolves to
 * is inside (the resolver is injected: no DNS).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ErrorCode, isKeepworkError } from '../../src/core/errors.js';
import { parsePeersAllow, type Resolve } from '../../src/main/peers-allow.js';

const dns: Record<string, string[]> = {
  'node-2.internal': ['10.0.0.8'],
  'split.example': ['10.0.0.9', '93.184.216.34'],
  'v6.internal': ['fd00::7'],
  'nothing.example': [],
};
const resolve: Resolve = async (host) => {
  const ips = dns[host];
  if (!ips) throw new Error(`getaddrinfo ENOTFOUND ${host}`);
  return ips;
};

describe('peersAllow', () => {
  const peers = parsePeersAllow('10.0.0.0/8, fd00::/8,192.168.1.7', resolve);

  it('takes IPv4 and IPv6 networks and bare addresses', () => {
    assert.deepEqual(peers.cidrs, ['10.0.0.0/8', 'fd00::/8', '192.168.1.7']);
    for (const ip of ['10.0.0.1', '10.255.255.255', 'fd00::1', 'fdff:ffff::1', '192.168.1.7', '::ffff:10.1.2.3'])
      assert.equal(peers.allows(ip), true, ip);
    for (const ip of ['127.0.0.1', '11.0.0.1', '192.168.1.8', '::1', 'fe80::1', '169.254.169.254', 'not-an-ip'])
      assert.equal(peers.allows(ip), false, ip);
  });

  for (const bad of ['', 'localhost', '10.0.0.0/33', 'fd00::/129', '10.0.0.0/8/1', '10.0.0/8', '10.0.0.0/x', 'http://10.0.0.1'])
    it(`refuses ${JSON.stringify(bad)} with BAD_CONFIG`, () => {
      assert.throws(
        () => parsePeersAllow(bad === '' ? [] : [bad]),
        (e: unknown) => isKeepworkError(e, ErrorCode.BadConfig) && /peersAllow/.test(e.message),
      );
    });

  it('allows an address inside, refuses one outside naming it', async () => {
    assert.equal(await peers.refusal('http://10.0.0.7:8080'), undefined);
    assert.equal(await peers.refusal('https://[fd00::1]:8443'), undefined);
    assert.match((await peers.refusal('http://127.0.0.1:9000'))!, /127\.0\.0\.1 is outside --peers-allow/);
    assert.match((await peers.refusal('http://[::1]:9000'))!, /::1 is outside/);
  });

  it('a host name must resolve, and only to addresses inside', async () => {
    assert.equal(await peers.refusal('http://node-2.internal:8080'), undefined);
    assert.equal(await peers.refusal('http://v6.internal:8080'), undefined);
    assert.match((await peers.refusal('http://split.example:8080'))!, /93\.184\.216\.34 is outside/);
    assert.match((await peers.refusal('http://nothing.example:8080'))!, /resolves to no address/);
    assert.match((await peers.refusal('http://unknown.example:8080'))!, /does not resolve/);
  });

  it('tells the first refusal of an address apart (logged once)', () => {
    const p = parsePeersAllow(['10.0.0.0/8'], resolve);
    assert.equal(p.firstRefusal('http://127.0.0.1:1'), true);
    assert.equal(p.firstRefusal('http://127.0.0.1:1'), false);
    assert.equal(p.firstRefusal('http://127.0.0.1:2'), true);
  });
});
