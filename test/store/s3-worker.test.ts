/**
 * S3Store in a Piscina worker thread started as a node starts its event workers: the client is
 * made there at the first request, and with `s3SdkClient` the AWS SDK is loaded on demand then
 * (test/fixtures/workers/s3-first-request.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Piscina } from 'piscina';
import { WORKER_EXEC_ARGV } from '../../src/main/worker-group.js';
import { BUCKET, FakeS3 } from './fake-s3.js';

describe('S3Store in a worker thread', () => {
  for (const s3SdkClient of [false, true])
    it(`makes its ${s3SdkClient ? 'SDK' : 'lean'} client at its first request there (a GET of an absent key answers null)`, async () => {
      process.env.AWS_ACCESS_KEY_ID ??= 'fake-access-key';
      process.env.AWS_SECRET_ACCESS_KEY ??= 'fake-secret-key';
      const fake = new FakeS3();
      const endpoint = await fake.start();
      fake.script([]);
      const pool = new Piscina({
        filename: new URL('../fixtures/workers/s3-first-request.ts', import.meta.url).href,
        execArgv: WORKER_EXEC_ARGV, // as the node starts its event workers
        minThreads: 1,
        maxThreads: 1,
      });
      try {
        const url = `s3://${BUCKET}/root?endpoint=${encodeURIComponent(endpoint)}&region=us-east-1`;
        assert.equal(await pool.run({ url, s3SdkClient }), 'absent');
        assert.deepEqual(
          fake.seen.map((x) => `${x.method} ${x.key}`),
          ['GET root/some/key'],
        );
      } finally {
        await pool.destroy();
        await fake.stop();
      }
    });
});
