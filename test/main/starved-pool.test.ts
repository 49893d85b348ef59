/**
 * A node embedded without UV_THREADPOOL_SIZE (libuv's pool at Node's default of 4 threads) keeps
 * its lease, and serves durable calls to new actors, while every thread of that pool is held by
 * slow file work of the app or its actors: the node makes its fsyncs where that pool cannot hold
 * them up (the lease's on a thread of its own, the rest on the node's fsync pool: store/fs/io.ts).
 *
 * The fixture (test/fixtures/starved-pool-node.ts) holds the pool with opens of a FIFO that no
 * one writes to, which return only when the test releases them: the node's renewals must go on
 * meanwhile, more than a whole lease period of them.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { decodeNode, nodeKey } from '../../src/leases/records.js';
import { openStore } from '../../src/store/open.js';
import { childLines } from '../helpers/child-lines.js';
import { tempDirs } from '../helpers/temp.js';
import { waitFor } from '../helpers/wait.js';

const FIXTURE = new URL('../fixtures/starved-pool-node.ts', import.meta.url).pathname;
const LEASE = { leasePeriodMs: 2_000, graceMs: 500, skewBoundMs: 200 };
const children = new Set<ChildProcessWithoutNullStreams>();
// Before the temp dirs go (hooks run in order): every child still running is killed and waited for.
after(() => Promise.all([...children].map((c) => (c.kill('SIGKILL'), once(c, 'close')))));
const tempDir = tempDirs('kw-starved-pool-');
const linux = process.platform === 'linux' && spawnSync('mkfifo', ['--version']).status === 0;

/** The fixture node, started as an app would be: no UV_THREADPOOL_SIZE in its environment. */
async function spawnNode(bucket: string, data: string, fifo: string) {
  const env = { ...process.env };
  delete env.UV_THREADPOOL_SIZE;
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, bucket, data, fifo, JSON.stringify(LEASE)], { env });
  children.add(child);
  const { line } = childLines(child);
  const command = (text: string, answer: string) => {
    child.stdin.write(text + '\n');
    return line(answer);
  };
  await line('serving');
  return { command };
}

/** The two buckets on this host's disk: a folder, and the SQLite file (the embedded default). */
const BUCKETS = { folder: (dir: string) => join(dir, 'bucket'), sqlite: (dir: string) => `sqlite:${join(dir, 'bucket.db')}` };

describe('a node whose libuv pool is held by slow file work', { skip: !linux && 'needs Linux and mkfifo', timeout: 120_000 }, () => {
  for (const [kind, bucketIn] of Object.entries(BUCKETS))
    it(`renews its lease for more than a lease period, and serves, while every pool thread waits (${kind} bucket)`, async () => {
      const dir = tempDir();
      const bucket = bucketIn(dir);
      const fifo = join(dir, 'fifo');
      assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
      const node = await spawnNode(bucket, join(dir, 'data'), fifo);
      const records = openStore(bucket, { readOnly: true });
      const record = async () => decodeNode((await records.get(nodeKey('p1')))!.body);

      await node.command('block', 'blocked');
      const before = await record();
      // Renewals sent a whole lease period after the pool was taken: none of them waited for it.
      const renewed = await waitFor('renewals past a lease period with the pool held', 60_000, async () => {
        const now = await record();
        return now.expiresAtMs > before.expiresAtMs + LEASE.leasePeriodMs && now;
      });
      assert.equal(renewed.state, 'live');
      assert.equal(renewed.epoch, before.epoch);
      // Each a new hold, a new actor file and a link, all fsynced: none of them waits for the pool.
      assert.equal(await node.command('call 20', 'called'), 'called 20');
      assert.equal(await node.command('pending', 'pending'), 'pending 64', 'the pool was held all along');

      await node.command('release', 'released');
      await node.command('stop', 'done');
      await records.close();
    });
});
