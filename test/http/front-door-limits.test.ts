/**
 * The front door's limits on a node without tokens (src/http/server.ts; every probe of bad input,
 * with the snapshot that shows it changed nothing, is in hostile.test.ts): a body nested 100k deep
 * is refused before it reaches a worker, so a valid call sent with it succeeds; a result over
 * httpResultMaxBytes is 500 RESULT_TOO_LARGE; connections past httpConnectionsMax are closed
 * unanswered.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { silentLogger } from '../../src/core/logger.js';
import { startNode } from '../../src/index.js';
import type { KeepworkNode } from '../../src/main/node-api.js';
import { send } from '../helpers/raw-http.js';
import { tempDirs } from '../helpers/temp.js';

const PROBE = new URL('../fixtures/classes/probe.ts', import.meta.url).href;
const tempDir = tempDirs('kw-limits-');

describe('the front door’s limits', () => {
  let node: KeepworkNode;
  let dir: string;
  before(async () => {
    dir = tempDir();
    node = await startNode({
      bucket: `file://${join(dir, 'bucket')}`,
      dataDir: join(dir, 'data'),
      classes: { Probe: PROBE },
      port: 0,
      logger: silentLogger(),
      workerThreads: 1,
      httpResultMaxBytes: 4_096,
    });
  });
  after(() => node.stop());

  const json = { 'content-type': 'application/json' };
  const deep = Buffer.from('['.repeat(100_000) + ']'.repeat(100_000));

  it('a 100k-deep body fails alone: a valid call sent with it to the same actor succeeds', async () => {
    const path = '/v1/actors/acme/Probe/batched/echo';
    const [bad, good] = await Promise.all([
      send(node.url!, 'POST', path, json, deep),
      send(node.url!, 'POST', path, json, Buffer.from('[1,"two"]')),
    ]);
    assert.deepEqual([bad.status, bad.body.error], [400, 'BAD_REQUEST']);
    assert.deepEqual([good.status, good.body], [200, { result: [1, 'two'] }]);
  });

  it('a result over httpResultMaxBytes is 500 RESULT_TOO_LARGE; a smaller one is sent', async () => {
    const path = '/v1/actors/acme/Probe/large/echo';
    const big = await send(node.url!, 'POST', path, json, Buffer.from(JSON.stringify(['x'.repeat(5_000)])));
    assert.deepEqual([big.status, big.body.error], [500, 'RESULT_TOO_LARGE']);
    assert.match(big.body.message!, /httpResultMaxBytes/);
    const small = await send(node.url!, 'POST', path, json, Buffer.from(JSON.stringify(['x'.repeat(100)])));
    assert.deepEqual(small.body, { result: ['x'.repeat(100)] });
  });
});

describe('httpConnectionsMax', () => {
  it('closes a connection past the limit without an answer', async () => {
    const dir = tempDir();
    const node = await startNode({
      bucket: 'memory:',
      dataDir: join(dir, 'data'),
      classes: { Probe: PROBE },
      port: 0,
      logger: silentLogger(),
      workerThreads: 1,
      httpConnectionsMax: 2,
    });
    const { port } = new URL(node.url!);
    const open: Socket[] = [];
    /** A keep-alive connection that has been answered once: the node has accepted it. */
    const answered = () =>
      new Promise<Socket>((ok, fail) => {
        const socket = connect(Number(port), '127.0.0.1', () => socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`));
        open.push(socket);
        socket.once('data', () => ok(socket)).once('error', fail);
      });
    try {
      await answered();
      await answered();
      const third = await new Promise<string>((ok) => {
        const socket = connect(Number(port), '127.0.0.1', () => socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`));
        open.push(socket);
        let text = '';
        socket.setEncoding('utf8').on('data', (c: string) => (text += c));
        socket.on('close', () => ok(text)).on('error', () => undefined);
      });
      assert.equal(third, '', 'a third connection was answered');
    } finally {
      for (const s of open) s.destroy();
      await node.stop();
    }
  });
});
