/**
 * Restore through each bucket kind (docs/architecture.md), with real nodes and worker threads:
 *
 *   node A (data dir A)  N durable puts + plain notes ─▶ clean stop
 *   node B (new dir)     restores, sees everything ─▶ M more durable puts ─▶ clean stop
 *   node A again         its stale copy (sidecar at A's head) applies only B's deltas ─▶ sees all
 *
 * Runs on the folder bucket and the SQLite bucket always, and on S3 when KEEPWORK_TEST_S3_URL is
 * set (a unique prefix per run, deleted afterwards).
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { silentLogger } from '../../src/core/logger.js';
import { startNode } from '../../src/index.js';
import type { KeepworkNode } from '../../src/main/node-api.js';
import { listChain } from '../../src/replication/chain.js';
import { decodeLink } from '../../src/replication/link.js';
import { readSidecar } from '../../src/replication/sidecar.js';
import { linkKey } from '../../src/replication/state-keys.js';
import { listAll } from '../../src/store/keys.js';
import { openStore } from '../../src/store/open.js';
import { actorDbPath } from '../../src/workers/actor-db.js';
import { tempDirs } from '../helpers/temp.js';

const LEDGER = new URL('../fixtures/classes/ledger.ts', import.meta.url).href;
const ADDRESS = 'rs/Ledger/one';
const N = 12;
const M = 4;
const S3_URL = process.env.KEEPWORK_TEST_S3_URL;

const tempDir = tempDirs('kw-restore-');

/** A bucket URL of each kind, unique to this run. */
function bucketUrl(kind: 'fs' | 'sqlite' | 's3'): string {
  if (kind === 'fs') return join(tempDir(), 'bucket');
  if (kind === 'sqlite') return `sqlite:${join(tempDir(), 'bucket.db')}`;
  return S3_URL!.replace(/^(s3:\/\/[^/?]+)\/?/, `$1/test-restore-stores-${process.pid}-${Date.now().toString(36)}/`);
}

function start(bucket: string, dataDir: string): Promise<KeepworkNode> {
  return startNode({ bucket, dataDir, classes: { Ledger: LEDGER }, workerThreads: 2, logger: silentLogger() });
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

async function scenario(bucket: string): Promise<void> {
  const store = openStore(bucket);
  const address = parseAddress(ADDRESS);
  const dataA = tempDir();
  try {
    const a = await start(bucket, dataA);
    try {
      const actor = a.actor(ADDRESS);
      for (const v of range(1, N)) {
        assert.equal(await actor.callDurable('put', v), v);
        if (v % 4 === 0) await actor.call('note', `from A ${v}`);
      }
    } finally {
      await a.stop();
    }
    const headA = (await listChain(store, address)).at(-1)!;
    assert.equal(readSidecar(actorDbPath(dataA, address))?.seq, headA, 'A’s clean stop left its sidecar at the head');

    const dataB = tempDir();
    const b = await start(bucket, dataB);
    try {
      const actor = b.actor(ADDRESS);
      assert.deepEqual(await actor.call('values'), range(1, N), 'B restored every durable value');
      assert.deepEqual(await actor.call('notes'), ['from A 4', 'from A 8', 'from A 12'], 'and the plain calls A flushed at its stop');
      assert.equal(await actor.call('check'), 'ok');
      for (const v of range(N + 1, N + M)) assert.equal(await actor.callDurable('put', v), v);
    } finally {
      await b.stop();
    }
    const seqs = await listChain(store, address);
    assert.deepEqual(seqs, range(1, seqs.length), 'the chain has no gap');
    assert.ok(seqs.length > headA, 'B extended the chain');
    const kinds = await Promise.all(seqs.map(async (s) => decodeLink((await store.get(linkKey(address, s)))!.body, s).header.kind));
    assert.deepEqual(
      kinds.slice(headA),
      kinds.slice(headA).map(() => 'delta'),
      'B wrote deltas only (so A can catch up)',
    );

    const again = await start(bucket, dataA);
    try {
      const actor = again.actor(ADDRESS);
      assert.deepEqual(await actor.call('values'), range(1, N + M), 'A’s stale copy caught up with B’s writes');
      assert.equal(await actor.call('check'), 'ok');
      assert.equal(existsSync(actorDbPath(dataA, address) + '.replaced'), false, 'caught up by applying deltas, not set aside');
      assert.equal(readSidecar(actorDbPath(dataA, address))?.seq, seqs.at(-1), 'its sidecar is at the head');
      assert.equal(await actor.callDurable('put', N + M + 1), N + M + 1, 'and it extends the chain');
    } finally {
      await again.stop();
    }
    assert.equal((await listChain(store, address)).at(-1), seqs.at(-1)! + 1);
  } finally {
    const keys: string[] = [];
    for await (const k of listAll(store, { prefix: '' })) keys.push(k);
    for (let i = 0; i < keys.length; i += 1000) await store.deleteMany(keys.slice(i, i + 1000));
    await store.close();
  }
}

describe('replication: restore on each bucket kind', () => {
  it('fs: a fresh node restores, and the stale copy catches up', { timeout: 30_000 }, async () => {
    await scenario(bucketUrl('fs'));
  });

  it('sqlite: a fresh node restores, and the stale copy catches up', { timeout: 30_000 }, async () => {
    await scenario(bucketUrl('sqlite'));
  });

  it(
    's3: a fresh node restores, and the stale copy catches up',
    {
      timeout: 45_000,
      skip: S3_URL
        ? false
        : 'KEEPWORK_TEST_S3_URL is not set (bash scripts/s3-test-server.sh up; eval "$(bash scripts/s3-test-server.sh env)")',
    },
    async () => {
      await scenario(bucketUrl('s3'));
    },
  );
});
