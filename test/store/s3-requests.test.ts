/**
 * S3Store's requests against a scripted fake server on 127.0.0.1 (fake-s3.ts): the retry,
 * ambiguity and If-Match rules of a conditional PUT, what unconditional requests retry, the
 * headers and prefix sent, get/list/deleteMany and their failures — with each client
 * (`s3SdkClient` off: the lean client; on: the AWS SDK's).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ErrorCode } from '../../src/core/errors.js';
import { SeededRandom } from '../../src/core/random.js';
import { resolveOptions } from '../../src/core/config.js';
import { S3Store } from '../../src/store/s3/store.js';
import { BUCKET, FakeS3, RecordingClock, ok, xmlError, type Reply } from './fake-s3.js';
import { text } from '../helpers/bytes.js';

for (const s3SdkClient of [false, true])
  describe(`S3Store against a scripted fake server (${s3SdkClient ? 'SDK' : 'lean'} client)`, () => {
    const fake = new FakeS3();
    let store: S3Store;
    let clock: RecordingClock;
    const config = resolveOptions({ storeAttemptsMax: 3, storeRetryBaseMs: 40, storeRequestTimeoutMs: 5_000, s3SdkClient });
    const ours = text('our body');

    before(async () => {
      process.env.AWS_ACCESS_KEY_ID ??= 'fake-access-key';
      process.env.AWS_SECRET_ACCESS_KEY ??= 'fake-secret-key';
      process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
      const endpoint = await fake.start();
      clock = new RecordingClock();
      store = new S3Store({ bucket: BUCKET, prefix: 'root/', endpoint, region: 'us-east-1', config, random: new SeededRandom(7), clock });
    });

    after(async () => {
      await store.close();
      await fake.stop();
    });

    it('500 then 412 with our body read back: success, with the etag read back', async () => {
      fake.script([xmlError(500, 'UnknownError'), xmlError(412, 'PreconditionFailed')], () => ok('etag-ours', ours));
      clock.sleeps.length = 0;
      assert.deepEqual(await store.put('k', ours, { ifNoneMatch: '*' }), { etag: 'etag-ours' });
      assert.deepEqual(fake.methods(), ['PUT', 'PUT', 'GET']);
      assert.equal(clock.sleeps.length, 1, 'one backoff, slept on the injected clock');
      assert.ok(clock.sleeps[0]! >= 20 && clock.sleeps[0]! <= 40, `jittered delay ${clock.sleeps[0]}`);
    });

    it('500 then 412 with another body read back: AmbiguousWrite', async () => {
      fake.script([xmlError(500, 'UnknownError'), xmlError(412, 'PreconditionFailed')], () => ok('etag-theirs', text('their body')));
      await assert.rejects(store.put('k', ours, { ifMatch: 'e0' }), { code: ErrorCode.AmbiguousWrite });
      assert.deepEqual(fake.methods(), ['PUT', 'PUT', 'GET']);
    });

    it('500 then 412 and nothing there any more: AmbiguousWrite', async () => {
      fake.script([xmlError(500, 'UnknownError'), xmlError(412, 'PreconditionFailed')]);
      await assert.rejects(store.put('k', ours, { ifNoneMatch: '*' }), { code: ErrorCode.AmbiguousWrite });
    });

    it('412 on the first attempt: a clean PreconditionFailed, no retry, no read-back', async () => {
      fake.script([xmlError(412, 'PreconditionFailed')], () => ok('etag-ours', ours));
      await assert.rejects(store.put('k', ours, { ifNoneMatch: '*' }), { code: ErrorCode.PreconditionFailed });
      assert.deepEqual(fake.methods(), ['PUT']);
    });

    it('If-Match on a missing key answered 404 NoSuchKey (AWS): PreconditionFailed', async () => {
      fake.script([xmlError(404, 'NoSuchKey')]);
      await assert.rejects(store.put('k', ours, { ifMatch: 'e0' }), { code: ErrorCode.PreconditionFailed });
    });

    it('409 ConditionalRequestConflict (not applied) then 412: PreconditionFailed after one retry', async () => {
      fake.script([xmlError(409, 'ConditionalRequestConflict'), xmlError(412, 'PreconditionFailed')]);
      await assert.rejects(store.put('k', ours, { ifNoneMatch: '*' }), { code: ErrorCode.PreconditionFailed });
      assert.deepEqual(fake.methods(), ['PUT', 'PUT']);
    });

    it('a dropped connection then success: the retry succeeds', async () => {
      fake.script(['drop', ok('etag-new')]);
      assert.deepEqual(await store.put('k', ours, { ifNoneMatch: '*' }), { etag: 'etag-new' });
      assert.deepEqual(fake.methods(), ['PUT', 'PUT']);
    });

    it('5xx on every attempt: storeAttemptsMax PUTs, then a read-back decides', async () => {
      fake.script([xmlError(500, 'InternalError'), xmlError(503, 'SlowDown'), 'drop'], () => ok('etag-ours', ours));
      assert.deepEqual(await store.put('k', ours, { ifMatch: 'e0' }), { etag: 'etag-ours' });
      assert.deepEqual(fake.methods(), ['PUT', 'PUT', 'PUT', 'GET']);
      fake.script([xmlError(500, 'InternalError'), xmlError(500, 'InternalError'), xmlError(500, 'InternalError')]);
      await assert.rejects(store.put('k', ours, { ifMatch: 'e0' }), { code: ErrorCode.AmbiguousWrite });
    });

    it('503 SlowDown before any unknown outcome: a throttled StoreUnavailable at once, with the Retry-After', async () => {
      const slowDown = xmlError(503, 'SlowDown') as Exclude<Reply, string>;
      fake.script([{ ...slowDown, headers: { ...slowDown.headers, 'retry-after': '3' } }]);
      await assert.rejects(store.put('k', ours, { ifNoneMatch: '*' }), {
        code: ErrorCode.StoreUnavailable,
        details: { throttled: true, retryAfterMs: 3_000 },
      });
      assert.deepEqual(fake.methods(), ['PUT'], 'not retried here, not read back: the governor sends it again');
      fake.script([], () => ({ status: 429 }));
      await assert.rejects(store.get('k'), { code: ErrorCode.StoreUnavailable, details: { throttled: true } });
      assert.deepEqual(fake.methods(), ['GET']);
    });

    it('a 403 before any unknown outcome is StoreUnavailable, not ambiguous', async () => {
      fake.script([xmlError(403, 'AccessDenied')]);
      await assert.rejects(store.put('k', ours, { ifNoneMatch: '*' }), { code: ErrorCode.StoreUnavailable });
      assert.deepEqual(fake.methods(), ['PUT']);
    });

    it('sends If-Match without quotes and If-None-Match as *, under the prefix', async () => {
      fake.script([ok('e1'), ok('e2'), ok('e3')]);
      await store.put('a/b', ours, { ifMatch: 'abc123' });
      await store.put('a/b', ours, { ifMatch: '"def456"' });
      await store.put('a/c', ours, { ifNoneMatch: '*' });
      assert.deepEqual(
        fake.seen.map((s) => [s.key, s.headers['if-match'], s.headers['if-none-match']]),
        [
          ['root/a/b', 'abc123', undefined],
          ['root/a/b', 'def456', undefined],
          ['root/a/c', undefined, '*'],
        ],
      );
      assert.deepEqual(fake.seen[0]!.body, Buffer.from(ours));
      assert.equal(fake.seen[0]!.headers['content-length'], String(ours.byteLength));
    });

    it('unconditional requests retry 5xx and network errors, then StoreUnavailable', async () => {
      fake.script([xmlError(500, 'InternalError'), 'drop', ok('e')]);
      assert.deepEqual(await store.put('k', ours), { etag: 'e' });
      fake.script([xmlError(500, 'InternalError'), xmlError(502, 'BadGateway'), xmlError(503, 'SlowDown')]);
      await assert.rejects(store.put('k', ours), { code: ErrorCode.StoreUnavailable });
      assert.deepEqual(fake.methods(), ['PUT', 'PUT', 'PUT'], 'never a read-back for unconditional writes');
    });

    it('get reads the whole body and unquotes the etag; 404 is null', async () => {
      fake.script([], () => ok('etag-x', 'hello'));
      const got = await store.get('k');
      assert.equal(new TextDecoder().decode(got!.body), 'hello');
      assert.ok(got!.body instanceof Uint8Array);
      assert.equal(got!.etag, 'etag-x');
      fake.script([]);
      assert.equal(await store.get('k'), null);
    });

    it('bad keys are refused before any request', async () => {
      fake.script([]);
      await assert.rejects(store.put('a//b', ours), { code: ErrorCode.BadKey });
      await assert.rejects(store.get('../x'), { code: ErrorCode.BadKey });
      await assert.rejects(store.deleteMany(['ok', '']), { code: ErrorCode.BadKey });
      await assert.rejects(store.put('x'.repeat(1020), ours), { code: ErrorCode.BadKey }, 'the prefix counts toward 1024 bytes');
      assert.deepEqual(fake.seen, []);
    });

    it('list adds the prefix to prefix and startAfter, passes continuation through, strips the prefix', async () => {
      fake.seen.length = 0;
      fake.reply = () => ({
        status: 200,
        headers: { 'content-type': 'application/xml' },
        body:
          '<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">' +
          '<Name>fake-bucket</Name><Prefix>root/a/</Prefix><KeyCount>2</KeyCount><MaxKeys>2</MaxKeys><IsTruncated>true</IsTruncated>' +
          '<NextContinuationToken>opaque-2</NextContinuationToken>' +
          '<Contents><Key>root/a/c</Key><ETag>"1"</ETag><Size>1</Size></Contents>' +
          '<Contents><Key>root/a/d</Key><ETag>"2"</ETag><Size>1</Size></Contents></ListBucketResult>',
      });
      const page = await store.list({ prefix: 'a/', startAfter: 'a/b', maxKeys: 2, continuation: 'opaque-1' });
      assert.deepEqual(page, { keys: ['a/c', 'a/d'], continuation: 'opaque-2' });
      const q = fake.seen[0]!.query;
      assert.equal(q.get('list-type'), '2');
      assert.equal(q.get('prefix'), 'root/a/');
      assert.equal(q.get('start-after'), 'root/a/b');
      assert.equal(q.get('max-keys'), '2');
      assert.equal(q.get('continuation-token'), 'opaque-1');
      await assert.rejects(store.list({ maxKeys: 10_001 }), { code: ErrorCode.BadRequest });
    });

    it('deleteMany sends batches of 1000 and retries the keys reported as failed', async () => {
      fake.seen.length = 0;
      let first = true;
      fake.reply = (req) => {
        const keys = [...req.body.toString().matchAll(/<Key>([^<]*)<\/Key>/g)].map((m) => m[1]!);
        const errors = first
          ? `<Error><Key>${keys[0]}</Key><Code>InternalError</Code></Error><Error><Key>${keys[1]}</Key><Code>NoSuchKey</Code></Error>`
          : '';
        first = false;
        return {
          status: 200,
          headers: { 'content-type': 'application/xml' },
          body: `<?xml version="1.0" encoding="UTF-8"?><DeleteResult>${errors}</DeleteResult>`,
        };
      };
      const keys = Array.from({ length: 2500 }, (_, i) => `d/${i}`);
      await store.deleteMany(keys);
      const counts = fake.seen.map((s) => (s.body.toString().match(/<Key>/g) ?? []).length);
      assert.deepEqual(counts, [1000, 1, 1000, 500]);
      assert.ok(fake.seen.every((s) => s.method === 'POST' && s.query.has('delete')));
      assert.match(fake.seen[1]!.body.toString(), /<Key>root\/d\/0<\/Key>/);
    });

    it('deleteMany gives up with StoreUnavailable when a key keeps failing', async () => {
      fake.seen.length = 0;
      fake.reply = () => ({
        status: 200,
        headers: { 'content-type': 'application/xml' },
        body: '<?xml version="1.0" encoding="UTF-8"?><DeleteResult><Error><Key>root/x</Key><Code>InternalError</Code></Error></DeleteResult>',
      });
      await assert.rejects(store.deleteMany(['x']), { code: ErrorCode.StoreUnavailable });
      assert.equal(fake.seen.length, config.storeAttemptsMax);
    });

    it('deleteMany whose answer reports SlowDown for a key: a throttled StoreUnavailable after one request', async () => {
      fake.seen.length = 0;
      fake.reply = () => ({
        status: 200,
        headers: { 'content-type': 'application/xml' },
        body: '<?xml version="1.0" encoding="UTF-8"?><DeleteResult><Error><Key>root/x</Key><Code>SlowDown</Code></Error></DeleteResult>',
      });
      await assert.rejects(store.deleteMany(['x']), { code: ErrorCode.StoreUnavailable, details: { throttled: true } });
      assert.equal(fake.seen.length, 1);
    });

    it('deleteMany fails at once with StoreUnavailable when a key is refused (AccessDenied is not retried)', async () => {
      fake.seen.length = 0;
      fake.reply = () => ({
        status: 200,
        headers: { 'content-type': 'application/xml' },
        body: '<?xml version="1.0" encoding="UTF-8"?><DeleteResult><Error><Key>root/x</Key><Code>AccessDenied</Code></Error></DeleteResult>',
      });
      await assert.rejects(store.deleteMany(['x', 'y']), { code: ErrorCode.StoreUnavailable, message: /refused.*root\/x: AccessDenied/ });
      assert.equal(fake.seen.length, 1);
    });
  });
