/**
 * The bucket relay's wire faults as the S3 store meets them (the lean client, through the relay,
 * to a scripted fake S3 server: test/store/fake-s3.ts): a 503 SlowDown the relay answers is a
 * throttled StoreUnavailable and nothing reached the server; a write whose answer the relay
 * replaced by a reset was applied, and the store reads it back as its own.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { resolveOptions } from '../../src/core/config.js';
import { ErrorCode } from '../../src/core/errors.js';
import { SeededRandom } from '../../src/core/random.js';
import { S3Store } from '../../src/store/s3/store.js';
import { BUCKET, FakeS3, RecordingClock, ok, xmlError } from '../store/fake-s3.js';
import { text } from '../helpers/bytes.js';
import { BucketRelay } from './bucket-relay.js';

describe('S3Store through the bucket relay (lean client)', () => {
  const fake = new FakeS3();
  let relay: BucketRelay;
  let store: S3Store;
  const ours = text('our body');

  before(async () => {
    process.env.AWS_ACCESS_KEY_ID ??= 'fake-access-key';
    process.env.AWS_SECRET_ACCESS_KEY ??= 'fake-secret-key';
    const endpoint = await fake.start();
    relay = await BucketRelay.start(`s3://${BUCKET}?endpoint=${encodeURIComponent(endpoint)}&region=us-east-1`, '127.0.0.1');
    const relayed = decodeURIComponent(/endpoint=([^&]+)/.exec(relay.nodeUrl)![1]!);
    const config = resolveOptions({ storeAttemptsMax: 3, storeRetryBaseMs: 40, storeRequestTimeoutMs: 5_000, s3SdkClient: false });
    store = new S3Store({
      bucket: BUCKET,
      prefix: 'root/',
      endpoint: relayed,
      region: 'us-east-1',
      config,
      random: new SeededRandom(7),
      clock: new RecordingClock(),
    });
  });

  after(async () => {
    await store.close();
    await relay.close();
    await fake.stop();
  });

  it('a 503 SlowDown answered at the relay: a throttled StoreUnavailable, the write never sent on; the next one goes', async () => {
    fake.script([ok('etag-ours')]);
    relay.wire('127.0.0.1', { seed: 1, slowDown: { writes: 1, reads: 0, burstEveryMs: 1_000, burstMs: 1_000 } });
    await assert.rejects(store.put('k', ours, { ifNoneMatch: '*' }), (e: Error & { code?: string; details?: { throttled?: boolean } }) => {
      assert.equal(e.code, ErrorCode.StoreUnavailable);
      assert.equal(e.details?.throttled, true);
      return true;
    });
    assert.deepEqual(fake.methods(), []);
    assert.equal(relay.wireCounts.wire503, 1);
    relay.wire('127.0.0.1', undefined);
    assert.deepEqual(await store.put('k', ours, { ifNoneMatch: '*' }), { etag: 'etag-ours' });
    assert.deepEqual(fake.methods(), ['PUT']);
  });

  it('every answer to a write reset after it was applied: retried, then read back as ours', async () => {
    let applied = false;
    fake.reply = (req) => {
      if (req.method === 'PUT') {
        if (applied) return xmlError(412, 'PreconditionFailed');
        applied = true;
        return ok('etag-ours');
      }
      return applied ? ok('etag-ours', ours) : xmlError(404, 'NoSuchKey');
    };
    fake.seen.length = 0;
    relay.wire('127.0.0.1', { seed: 1, reset: 1 });
    const resets = relay.wireCounts.wireReset;
    assert.deepEqual(await store.put('k2', ours, { ifNoneMatch: '*' }), { etag: 'etag-ours' });
    assert.deepEqual(fake.methods(), ['PUT', 'PUT', 'PUT', 'GET']);
    assert.equal(relay.wireCounts.wireReset - resets, 3);
    relay.wire('127.0.0.1', undefined);
  });
});
