/**
 * A node record's `addr` is where other nodes send calls, so it is checked when the record is read
 * (src/leases/records.ts): a record planted in the bucket cannot aim forwards at a path, a query,
 * another scheme or a URL with credentials.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeNode, nodeAddrProblem } from '../../src/leases/records.js';

const record = (addr: string) =>
  new TextEncoder().encode(JSON.stringify({ nodeId: 'evil', epoch: 1, addr, tenants: null, classes: [], expiresAtMs: 1, state: 'live' }));

describe('node record addresses', () => {
  const good = [
    'http://127.0.0.1:8080',
    'https://node-1.internal',
    'http://n1',
    'https://node-1.internal:443',
    'http://[::1]:8081',
    'http://10.0.0.7:8080/',
  ];
  const bad = [
    'http://127.0.0.1:8080/internal-admin/delete-everything',
    'http://127.0.0.1:8080?x=1',
    'http://127.0.0.1:8080#frag',
    'http://user:pass@127.0.0.1:8080',
    'file:///etc/passwd',
    'javascript:alert(1)',
    'ftp://127.0.0.1:21',
    'not a url',
  ];
  for (const a of good) it(`takes ${a}`, () => assert.equal(nodeAddrProblem(a), undefined));
  for (const a of bad)
    it(`refuses ${a}, and a record carrying it reads as a node without an address`, () => {
      assert.equal(typeof nodeAddrProblem(a), 'string');
      assert.equal(decodeNode(record(a)).addr, '');
    });
  it('keeps a good address and a node without one as they are', () => {
    assert.equal(decodeNode(record('http://127.0.0.1:8080')).addr, 'http://127.0.0.1:8080');
    assert.equal(decodeNode(record('')).addr, '');
  });
});
