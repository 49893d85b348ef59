/**
 * What a node's lease tells other nodes to call (src/main/start-node.ts): the listen address, or
 * `advertise`. A node bound to an unspecified address (0.0.0.0, ::) has no address of its own to
 * offer and refuses to start without `advertise`; an `advertise` that is not a node address is
 * refused before anything is written.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ErrorCode, isKeepworkError } from '../../src/core/errors.js';
import { silentLogger } from '../../src/core/logger.js';
import { startNode } from '../../src/index.js';
import { decodeNode } from '../../src/leases/records.js';
import { openStore } from '../../src/store/open.js';
import { tempDirs } from '../helpers/temp.js';

const PROBE = new URL('../fixtures/classes/probe.ts', import.meta.url).href;
const tempDir = tempDirs('kw-advertise-');
const base = { bucket: 'memory:', classes: { Probe: PROBE }, port: 0, logger: silentLogger(), insecureNoAuth: true };

describe('the address a node advertises', () => {
  for (const host of ['0.0.0.0', '::'])
    it(`${host} without advertise is refused (BAD_CONFIG), writing nothing`, async () => {
      const dataDir = join(tempDir(), 'data');
      await assert.rejects(
        startNode({ ...base, dataDir, host }),
        (e: unknown) => isKeepworkError(e, ErrorCode.BadConfig) && /--advertise/.test(e.message),
      );
      assert.equal(existsSync(dataDir), false);
    });

  for (const advertise of ['http://10.0.0.7:8080/admin', 'http://10.0.0.7:8080?x', 'ftp://10.0.0.7:21', 'http://u:p@10.0.0.7:8080'])
    it(`refuses advertise ${advertise}`, async () => {
      const dataDir = join(tempDir(), 'data');
      await assert.rejects(
        startNode({ ...base, dataDir, host: '0.0.0.0', advertise }),
        (e: unknown) => isKeepworkError(e, ErrorCode.BadConfig) && /is not a node address/.test(e.message),
      );
      assert.equal(existsSync(dataDir), false);
    });

  it('the lease carries advertise, not the listen address', async () => {
    const dir = tempDir();
    const bucket = `file://${join(dir, 'bucket')}`;
    const node = await startNode({
      ...base,
      bucket,
      dataDir: join(dir, 'data'),
      host: '0.0.0.0',
      advertise: 'http://10.0.0.7:8080',
      workerThreads: 1,
    });
    try {
      const store = openStore(bucket);
      const record = decodeNode((await store.get(`nodes/${node.nodeId}`))!.body);
      await store.close();
      assert.equal(record.addr, 'http://10.0.0.7:8080');
      assert.match(node.url!, /^http:\/\/0\.0\.0\.0:\d+$/);
    } finally {
      await node.stop();
    }
  });
});
