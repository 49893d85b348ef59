/**
 * PeerClient's TEST-ONLY drop (UnsafeTestSeams `forwardDropped`, the chaos run's peer cut): a
 * request to a dropped URL is never sent and fails as a timeout, after its timeoutMs; another URL
 * is sent as usual.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { PeerClient } from '../../src/main/peer-client.js';

describe('PeerClient with dropped URLs', () => {
  it('a dropped URL gets no answer (a timeout, nothing sent); another is answered', async () => {
    let received = 0;
    const server = createServer((_, res) => {
      received++;
      res.end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const client = new PeerClient({}, 1_000, (u) => u.includes('/dropped'));
    try {
      const answered = await client.request(url, { method: 'GET', headers: {}, timeoutMs: 5_000 });
      assert.equal(answered.text, 'ok');
      await assert.rejects(client.request(`${url}dropped`, { method: 'GET', headers: {}, timeoutMs: 50 }), /no whole reply within 50 ms/);
      assert.equal(received, 1, 'the dropped request was never sent');
    } finally {
      client.close();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
