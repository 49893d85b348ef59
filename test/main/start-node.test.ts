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
import { localBucket, openStore } from '../../src/store/open.js';
import { listAll } from '../../src/store/keys.js';
import { NODES_PREFIX, decodeNode, nodeKey } from '../../src/leases/records.js';
import { tempDirs } from '../helpers/temp.js';

const PROBE = new URL('../fixtures/classes/probe.ts', import.meta.url).href;
const tempDir = tempDirs('kw-start-');

function options(dataDir: string, extra: Partial<StartNodeOptions> = {}): StartNodeOptions {
  return { dataDir, bucket: join(dataDir, 'bucket'), classes: { Probe: PROBE }, workerThreads: 1, logger: silentLogger(), ...extra };
}

/** The node records in a folder or SQLite bucket (none when it was never created). */
async function leases(bucket: string): Promise<string[]> {
  if (!existsSync(localBucket(bucket)!.path)) return [];
  const store = openStore(bucket);
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

  it('the bucket defaults to the SQLite file bucket.db inside the data dir', async () => {
    const dataDir = tempDir();
    const { bucket: _none, ...rest } = options(dataDir, { nodeId: 'n-default' });
    const node = await startNode(rest);
    try {
      assert.deepEqual(await leases(`sqlite:${join(dataDir, 'bucket.db')}`), [nodeKey('n-default')]);
    } finally {
      await node.stop();
    }
    assert.equal(existsSync(join(dataDir, 'bucket')), false, 'no folder bucket is made');
  });

  it('a data dir that has a folder bucket keeps it: the default is that folder, no bucket.db is made', async () => {
    const dataDir = tempDir();
    const folder = join(dataDir, 'bucket');
    await (await startNode(options(dataDir, { nodeId: 'n-folder' }))).stop();
    const { bucket: _none, ...rest } = options(dataDir, { nodeId: 'n-folder', port: 0 });
    const node = await startNode(rest);
    try {
      const store = new FsStore(folder);
      const record = decodeNode((await store.get(nodeKey('n-folder')))!.body);
      await store.close();
      assert.equal(record.addr, node.url, 'the second start renewed its lease in the folder');
    } finally {
      await node.stop();
    }
    assert.equal(existsSync(join(dataDir, 'bucket.db')), false);
  });
});
