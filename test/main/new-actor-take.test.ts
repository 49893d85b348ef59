/**
 * A new actor's first call takes it without listing its chain (holds.ts `claimCreated`): the
 * node created its hold, no hold existed, and only an actor's holder writes its chain. An actor
 * whose hold existed is listed and restored as before.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { startNode } from '../../src/index.js';
import { silentLogger } from '../../src/core/logger.js';
import type { RoutingNode, StartNodeOptions } from '../../src/main/node-api.js';
import { tempDirs } from '../helpers/temp.js';

const PROBE = new URL('../fixtures/classes/probe.ts', import.meta.url).href;
const tempDir = tempDirs('kw-new-take-');

function options(dir: string, nodeId: string): StartNodeOptions {
  return {
    dataDir: join(dir, nodeId),
    bucket: join(dir, 'bucket'),
    nodeId,
    classes: { Probe: PROBE },
    workerThreads: 1,
    logger: silentLogger(),
  };
}

/** The node's LISTs of actors' chains (`state/`) so far, over its threads. */
async function chainLists(node: RoutingNode): Promise<number> {
  let n = 0;
  for (const [, count] of (await node.metricsText()).matchAll(/^keepwork_store_requests_total\{op="list",area="state",[^}]*\} (\d+)/gm))
    n += Number(count);
  return n;
}

describe('a new actor is taken without a LIST of its chain', () => {
  it('first calls to new actors list no chain; after a handover the next node lists and restores each', async () => {
    const dir = tempDir();
    const first = (await startNode(options(dir, 'n1'))) as RoutingNode;
    const names = ['t/Probe/a', 't/Probe/b', 't/Probe/c'];
    try {
      for (const name of names) assert.equal(await first.actor(name).call('slowIncrement', 0), 1);
      assert.equal(await chainLists(first), 0, 'no chain listed for actors whose holds this node created');
      assert.equal(await first.actor('t/Probe/a').call('slowIncrement', 0), 2, 'the open actor goes on');
    } finally {
      await first.stop(); // uploads every actor and releases its hold
    }
    const second = (await startNode(options(dir, 'n2'))) as RoutingNode;
    try {
      assert.equal(await second.actor('t/Probe/a').call('slowIncrement', 0), 3, 'restored from the chain');
      for (const name of names.slice(1)) assert.equal(await second.actor(name).call('slowIncrement', 0), 2);
      assert.equal(await chainLists(second), names.length, 'each hold existed (released by n1): its chain is listed');
    } finally {
      await second.stop();
    }
  });
});
