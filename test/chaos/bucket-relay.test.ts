/**
 * The bucket relay (bucket-relay.ts): the nodes' S3 URL points at it, and it passes each
 * connection's bytes both ways to the endpoint, unchanged; closing it ends every connection.
 */
import assert from 'node:assert/strict';
import { connect, createServer, type Socket } from 'node:net';
import { after, describe, it } from 'node:test';
import { BucketRelay } from './bucket-relay.js';

describe('BucketRelay', () => {
  const upstream: Socket[] = [];
  const echo = createServer((s) => {
    upstream.push(s);
    s.on('data', (d) => s.write(Buffer.concat([Buffer.from('echo:'), d])));
  });
  after(() => echo.close());

  it('moves the endpoint to itself and relays bytes both ways until closed', async () => {
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
    const port = (echo.address() as { port: number }).port;
    const relay = await BucketRelay.start(`s3://b/p?endpoint=http://127.0.0.1:${port}&region=us-east-1`, '127.0.0.1');
    const at = new URL(decodeURIComponent(/endpoint=([^&]+)/.exec(relay.nodeUrl)![1]!));
    assert.equal(at.hostname, '127.0.0.1');
    assert.notEqual(Number(at.port), port);
    assert.match(relay.nodeUrl, /^s3:\/\/b\/p\?endpoint=.*&region=us-east-1$/);

    const client = connect(Number(at.port), '127.0.0.1');
    const answer = await new Promise<string>((resolve, reject) => {
      client.once('error', reject);
      client.once('data', (d) => resolve(d.toString()));
      client.write('GET / HTTP/1.1\r\n\r\n');
    });
    assert.equal(answer, 'echo:GET / HTTP/1.1\r\n\r\n');

    const closed = new Promise<void>((r) => client.once('close', () => r()));
    await relay.close();
    await closed;
    assert.equal(upstream.length, 1);
  });

  it('refuses an endpoint that is not plain http', async () => {
    await assert.rejects(BucketRelay.start('s3://b?endpoint=https://s3.example.com&region=x', '127.0.0.1'), /plain http/);
  });
});
