/**
 * The kill -9 takeover of cluster-takeover.test.ts against a real S3 server (RGW on loopback, see
 * scripts/s3-test-server.sh), in a prefix of its own (`s3://keepwork-test/cluster-<random>`) that
 * is emptied afterwards. Skipped, with the reason, when KEEPWORK_TEST_S3_URL is not set.
 *
 *   a holds x; durable calls through a and b ─▶ kill -9 a ─▶ b takes over after lease + grace
 *   with every acknowledged call; a `fenced` in `keepwork status`; SIGTERM b ─▶ `released`;
 *   every chain sound, no link written twice
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { decodeHold, decodeNode, holdKey, nodeKey, type HoldRecord } from '../../src/leases/records.js';
import { parseAddress } from '../../src/core/address.js';
import { checkBucket, describeChain, LinkLedger } from './chains.js';
import { mustCall } from '../../support/cluster/calls.js';
import { FAST, withCluster } from '../../support/cluster/cluster.js';
import { checkNoLeftovers } from './leftovers.js';
import { killUnderDurableLoad, valueAfterTakeover } from './takeover.js';
import { withS3Bucket } from './s3-bucket.js';

const S3_URL = process.env.KEEPWORK_TEST_S3_URL;
const SKIP = S3_URL ? false : 'set KEEPWORK_TEST_S3_URL (bash scripts/s3-test-server.sh up; eval "$(bash scripts/s3-test-server.sh env)")';

checkNoLeftovers();

describe('cluster of real node processes (S3 bucket)', () => {
  it(
    'kill -9 of the holder: the other node takes over with every acknowledged durable call; a clean stop releases',
    { skip: SKIP, timeout: 90_000 },
    (t) =>
      withS3Bucket(t, S3_URL!, 'cluster', (bucket) =>
        withCluster(
          t,
          's3',
          async (c) => {
            const ledger = new LinkLedger();
            const [a, b] = await c.startAll(['a', 'b']);
            const X = 's3/Probe/x';
            assert.equal(await mustCall(a!.url, X, 'slowIncrement', [], { durable: true }), 1);
            let holdBefore: HoldRecord | undefined;
            const { lastAck, killedAt } = await killUnderDurableLoad(a!, [a!, b!], X, 20, 30_000, async () => {
              await ledger.observe(c.store());
              holdBefore = decodeHold((await c.store().get(holdKey(parseAddress(X))))!.body);
              assert.equal(holdBefore.nodeId, 'a');
            });
            const value = await valueAfterTakeover(b!, X, FAST.leasePeriodMs! + FAST.graceMs! + 15_000, 5_000);
            t.diagnostic(`takeover ${Date.now() - killedAt} ms after the kill; last acknowledged ${lastAck}, value ${value}`);
            assert.ok(
              value >= lastAck && value <= lastAck + 2,
              `value ${value} after the takeover; last acknowledged ${lastAck}, 2 calls in flight at most`,
            );
            for (let k = 1; k <= 3; k++) assert.equal(await mustCall(b!.url, X, 'slowIncrement', [], { durable: k === 1 }), value + k);

            assert.equal(decodeNode((await c.store().get(nodeKey('a')))!.body).state, 'fenced');
            let status = new Map((await c.status()).map((s) => [s.nodeId, s]));
            assert.equal(status.get('a')?.status, 'fenced', 'keepwork status shows a fenced');
            assert.equal(status.get('b')?.holds, 1);

            const exit = await b!.killAndWait('SIGTERM');
            assert.deepEqual(exit, { code: 0, signal: null });
            status = new Map((await c.status()).map((s) => [s.nodeId, s]));
            assert.equal(status.get('b')?.status, 'released', 'keepwork status shows b released');

            const chains = await checkBucket(c.store(), ledger, join(c.root, 'restore'));
            const links = chains.get(X)!.links;
            const last = links.at(-1)!.header;
            assert.equal(last.nodeId, 'b', describeChain(links));
            assert.ok(last.generation > holdBefore!.generation, describeChain(links));
          },
          bucket,
        ),
      ),
  );
});
