import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { startNode } from '../../src/index.js';
import type { StartNodeOptions } from '../../src/main/node-api.js';
import { silentLogger } from '../../src/core/logger.js';
import { FsStore } from '../../src/store/fs/store.js';
import { listAll } from '../../src/store/keys.js';
import { NODES_PREFIX, decodeNode, nodeKey } from '../../src/leases/records.js';
import { tempDirs } from '../helpers/temp.js';

const PROBE = new URL('../fixtures/classes/probe.ts', import.meta.url).href;
const tempDir = tempDirs('kw-start-');

function options(dataDir: string, extra: Partial<StartNodeOptions> = {}): StartNodeOptions {
  return { dataDir, bucket: join(dataDir, 'bucket'), classes: { Probe: PROBE }, workerThreads: 1, logger: silentLogger(), ...extra };
}

/** The node records in a folder bucket (none when the folder was never created). */
async function leases(bucket: string): Promise<string[]> {
  if (!existsSync(bucket)) return [];
  const store = new FsStore(bucket);
  try {
    const keys: string[] = [];
    for await (const key of listAll(store, { prefix: NODES_PREFIX })) keys.push(key);
    return keys;
  } finally {
    await store.close();
  }
}

function occupy(): Promise<Server> {
  const server = createServer();
  return new Promise((ok, fail) => server.once('error', fail).listen(0, '127.0.0.1', () => ok(server)));
}

describe('startNode: classes', () => {
  it('every worker thread has loaded the classes when the start returns (the first calls do not wait for it)', async () => {
    const dir = tempDir();
    const loads = join(dir, 'loads.txt');
    const cls = join(dir, 'counted.mjs');
    writeFileSync(
      cls,
      `import { appendFileSync } from 'node:fs';
import { threadId } from 'node:worker_threads';
appendFileSync(${JSON.stringify(loads)}, threadId + '\\n');
export default { methods: { ping: () => 'pong' } };
`,
    );
    const node = await startNode(options(join(dir, 'node'), { classes: { Counted: cls }, workerThreads: 2 }));
    try {
      const threads = readFileSync(loads, 'utf8').trim().split('\n').map(Number);
      assert.equal(threads.filter((t) => t === 0).length, 1, 'the main thread checked it once');
      assert.equal(new Set(threads.filter((t) => t !== 0)).size, 2, `each of the 2 workers loaded it: ${threads.join(',')}`);
    } finally {
      await node.stop();
    }
  });
});

describe('startNode: what fails the start before the node joins', () => {
  it('a bad class module fails with BAD_CLASS naming the class, its path and the problem; nothing is written', async () => {
    const dir = tempDir();
    const bad = join(dir, 'not-an-actor.mjs');
    writeFileSync(bad, 'export default { methods: "none" }');
    await assert.rejects(startNode(options(join(dir, 'node'), { classes: { Probe: PROBE, Bad: bad } })), (e: Error & { code: string }) => {
      assert.equal(e.code, 'BAD_CLASS');
      assert.equal(
        e.message,
        `actor class Bad (${bad}): its default export is not a defineActor definition: methods must be an object of functions`,
      );
      return true;
    });
    await assert.rejects(startNode(options(join(dir, 'node'), { classes: { Gone: join(dir, 'gone.js') } })), {
      code: 'BAD_CLASS',
      message: `actor class Gone (${join(dir, 'gone.js')}): no such module file`,
    });
    assert.equal(existsSync(join(dir, 'node')), false, 'not even the data dir is created');
  });

  it('a busy port fails with PORT_UNAVAILABLE before the lease is written; the data dir is free again', async () => {
    const dataDir = tempDir();
    const bucket = join(dataDir, 'bucket');
    const taken = await occupy();
    const { port } = taken.address() as AddressInfo;
    try {
      await assert.rejects(startNode(options(dataDir, { port, nodeId: 'n-busy' })), (e: Error & { code: string; details: object }) => {
        assert.equal(e.code, 'PORT_UNAVAILABLE');
        assert.match(
          e.message,
          new RegExp(`^cannot listen on 127\\.0\\.0\\.1:${port}: it is in use \\(EADDRINUSE\\); pick another port \\(--port\\)`),
        );
        assert.deepEqual(e.details, { port, host: '127.0.0.1', reason: 'EADDRINUSE' });
        return true;
      });
      assert.deepEqual(await leases(bucket), [], 'the bucket has no lease of the node');
    } finally {
      await new Promise((ok) => taken.close(ok));
    }
    const node = await startNode(options(dataDir, { port: 0, nodeId: 'n-busy' }));
    try {
      assert.deepEqual(await leases(bucket), [nodeKey('n-busy')]);
      const store = new FsStore(bucket);
      const record = decodeNode((await store.get(nodeKey('n-busy')))!.body);
      await store.close();
      assert.equal(record.addr, node.url, 'the first lease already carries the address');
      const health = await fetch(`${node.url}/healthz`);
      assert.equal(health.status, 200);
    } finally {
      await node.stop();
    }
  });

  it('the bucket defaults to the folder bucket inside the data dir', async () => {
    const dataDir = tempDir();
    const { bucket: _none, ...rest } = options(dataDir, { nodeId: 'n-default' });
    const node = await startNode(rest);
    try {
      assert.deepEqual(await leases(join(dataDir, 'bucket')), [nodeKey('n-default')]);
    } finally {
      await node.stop();
    }
    assert.ok(readdirSync(dataDir).includes('bucket'));
  });
});
