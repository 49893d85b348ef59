/**
 * S3Store runs the shared ObjectStore conformance suite (conformance.ts) against a real S3 server
 * when KEEPWORK_TEST_S3_URL is set (`eval "$(bash scripts/s3-test-server.sh env)"`), each case
 * in a fresh prefix emptied afterwards, once with each client (the lean one and, with
 * `s3SdkClient`, the AWS SDK's); skipped, and named as skipped, without it.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { SystemClock } from '../../src/core/clock.js';
import { SystemRandom } from '../../src/core/random.js';
import { resolveOptions } from '../../src/core/config.js';
import { listAll } from '../../src/store/keys.js';
import { S3Store } from '../../src/store/s3/store.js';
import { parseS3Url } from '../../src/store/s3/url.js';
import { runConformance } from './conformance.js';

const S3_URL = process.env.KEEPWORK_TEST_S3_URL;

if (S3_URL) {
  const location = parseS3Url(S3_URL);
  for (const s3SdkClient of [false, true]) {
    const config = resolveOptions({ s3SdkClient });
    runConformance(`s3, ${s3SdkClient ? 'SDK' : 'lean'} client (${S3_URL})`, async () => {
      const prefix = `${location.prefix}conformance-${randomBytes(8).toString('hex')}/`;
      const open = () => new S3Store({ ...location, prefix, config, random: new SystemRandom(), clock: new SystemClock() });
      const store = open();
      return {
        store,
        reopen: async () => open(),
        ambiguousLosers: true,
        cleanup: async () => {
          const sweeper = open();
          try {
            const keys: string[] = [];
            for await (const k of listAll(sweeper)) keys.push(k);
            await sweeper.deleteMany(keys);
            assert.deepEqual((await sweeper.list()).keys, [], 'cleanup left keys behind');
          } finally {
            await sweeper.close();
            await store.close();
          }
        },
      };
    });
  }
} else {
  describe('ObjectStore conformance: s3', () => {
    it(
      'runs against a real S3 server',
      { skip: 'set KEEPWORK_TEST_S3_URL (eval "$(bash scripts/s3-test-server.sh env)" after `bash scripts/s3-test-server.sh up`)' },
      () => {},
    );
  });
}
