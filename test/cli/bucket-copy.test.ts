/**
 * `keepwork bucket copy` (src/cli/bucket-copy-command.ts): a data dir's folder bucket copied into
 * the SQLite file that is the default; a node on a fresh data dir restores every actor from the
 * copy, and, the folder moved away, a node on the first data dir with no bucket named goes on from it. Refused, writing nothing: a source whose node is
 * live, a destination that holds anything.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { startNode } from '../../src/index.js';
import { silentLogger } from '../../src/core/logger.js';
import { tempDirs } from '../helpers/temp.js';

const CLI = ['--import', 'tsx', 'src/cli/cli.ts'];
const COUNTER = new URL('../../examples/counter.ts', import.meta.url).href;
const tempDir = tempDirs('kw-bucket-copy-');

function keepwork(...args: string[]) {
  return spawnSync(process.execPath, [...CLI, ...args], { encoding: 'utf8' });
}

describe('keepwork bucket copy', () => {
  it('copies a folder bucket into the SQLite default: a fresh node restores from it, the first data dir goes on from it', async () => {
    const data = join(tempDir(), 'data');
    const folder = join(data, 'bucket');
    const db = join(data, 'bucket.db');
    const options = { dataDir: data, classes: { Counter: COUNTER }, workerThreads: 1, logger: silentLogger() };
    const first = await startNode({ ...options, bucket: folder });
    try {
      for (const name of ['a', 'b', 'c']) assert.equal(await first.actor(`demo/Counter/${name}`).callDurable('add', 5), 5);
      const live = keepwork('bucket', 'copy', '--data', data, '--to', `sqlite:${db}`);
      assert.equal(live.status, 1, live.stderr);
      assert.match(live.stderr, /is live in .*stop every node that uses the bucket before copying it/);
      assert.equal(existsSync(db), false, 'nothing written while a node is live');
    } finally {
      await first.stop();
    }

    const copied = keepwork('bucket', 'copy', '--data', data, '--to', `sqlite:${db}`);
    assert.equal(copied.status, 0, copied.stderr);
    assert.match(copied.stdout, new RegExp(`^copied \\d+ objects \\(.* MB\\) from fs:${folder} to sqlite:${db}$`, 'm'));
    const twice = keepwork('bucket', 'copy', '--data', data, '--to', `sqlite:${db}`);
    assert.equal(twice.status, 1);
    assert.match(twice.stderr, /holds objects \(.+ …\): copy into an empty bucket/);

    // a fresh data dir on the copy: the state comes from the bucket alone
    const fresh = await startNode({ ...options, dataDir: join(tempDir(), 'fresh'), bucket: `sqlite:${db}` });
    try {
      for (const name of ['a', 'b', 'c']) assert.equal(await fresh.actor(`demo/Counter/${name}`).callDurable('add', 1), 6);
    } finally {
      await fresh.stop();
    }
    // the first data dir, its folder moved away: the default is the copy, with what the fresh node wrote
    renameSync(folder, join(data, 'bucket.old'));
    const again = await startNode(options);
    try {
      for (const name of ['a', 'b', 'c']) assert.equal(await again.actor(`demo/Counter/${name}`).callDurable('add', 1), 7);
    } finally {
      await again.stop();
    }
  });
});
