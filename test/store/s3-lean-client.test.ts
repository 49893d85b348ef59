/**
 * The lean S3 client (src/store/s3/lean-client.ts) against a local node:http stub (fake-s3.ts)
 * answering AWS's documented error bodies (test/fixtures/s3-errors): the error shapes the store
 * classifies, the clock-skew correction, timeouts, DeleteObjects' Content-MD5, key encoding,
 * session tokens; and where each addressing style sends a request.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { Clock } from '../../src/core/clock.js';
import { classifyS3Error } from '../../src/store/s3/errors.js';
import { LeanS3Client, addressing } from '../../src/store/s3/lean-client.js';
import type { Credentials } from '../../src/store/s3/credentials.js';
import { BUCKET, FakeS3, ok, type Reply } from './fake-s3.js';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/s3-errors/${name}.xml`, import.meta.url), 'utf8');
const answer = (status: number, name: string, headers: Record<string, string> = {}): Reply => ({
  status,
  headers: { 'content-type': 'application/xml', ...headers },
  body: fixture(name),
});
const NOW = Date.UTC(2026, 11, 5, 13, 0, 0);

class FixedClock implements Clock {
  constructor(public ms: number) {}
  now() {
    return this.ms;
  }
  sleep(): Promise<void> {
    throw new Error('the client never sleeps');
  }
  setTimer(): never {
    throw new Error('the client sets no timers on the clock');
  }
}

describe('LeanS3Client against a local stub', () => {
  const fake = new FakeS3();
  let endpoint: string;
  let clock: FixedClock;
  let credentials: Credentials;
  let client: LeanS3Client;
  const make = (requestTimeoutMs = 5_000) =>
    new LeanS3Client(
      { bucket: BUCKET, endpoint, region: 'eu-west-1', forcePathStyle: true, socketsMax: 4, requestTimeoutMs },
      { clock, credentials: async () => credentials },
    );

  before(async () => {
    endpoint = await fake.start();
  });
  beforeEach(() => {
    clock = new FixedClock(NOW);
    credentials = { accessKeyId: 'AKID', secretAccessKey: 'secret' };
    client?.destroy();
    client = make();
    fake.seen.length = 0;
  });
  after(async () => {
    client.destroy();
    await fake.stop();
  });

  it('each documented error body becomes an error with its code, status and the class the store gives it', async () => {
    const cases: [number, string, string, string][] = [
      [404, 'no-such-key', 'NoSuchKey', 'notFound'],
      [412, 'precondition-failed', 'PreconditionFailed', 'precondition'],
      [409, 'conditional-request-conflict', 'ConditionalRequestConflict', 'conflict'],
      [503, 'slow-down', 'SlowDown', 'throttled'],
      [500, 'internal-error', 'InternalError', 'unknown'],
      [500, 'rgw-unknown-error', 'UnknownError', 'unknown'],
      [403, 'access-denied', 'AccessDenied', 'fatal'],
      [404, 'no-such-bucket', 'NoSuchBucket', 'fatal'],
    ];
    for (const [status, file, code, failure] of cases) {
      fake.reply = () => answer(status, file);
      const e = await client.put('k', Buffer.from('x'), { ifNoneMatch: '*' }).then(
        () => assert.fail(`${file}: no error`),
        (err: unknown) => err as { name: string; message: string; $metadata: { httpStatusCode: number } },
      );
      assert.equal(e.name, code, file);
      assert.equal(e.$metadata.httpStatusCode, status, file);
      assert.equal(classifyS3Error(e), failure, file);
      assert.ok(e.message.length > 0, `${file}: a message`);
    }
  });

  it('an answer without an S3 error body is named by its status (HEAD 404 → NotFound, a proxy 502 → UnknownError)', async () => {
    fake.reply = () => ({ status: 404 });
    await assert.rejects(client.head('k'), (e: Error) => e.name === 'NotFound' && classifyS3Error(e) === 'notFound');
    fake.reply = () => ({ status: 502, headers: { 'content-type': 'text/html' }, body: '<html>Bad Gateway</html>' });
    await assert.rejects(client.get('k'), (e: Error) => e.name === 'UnknownError' && classifyS3Error(e) === 'unknown');
  });

  it('RequestTimeTooSkewed: signs again once with the offset from the Date header, and keeps the offset', async () => {
    const serverMs = NOW + 3_600_000;
    const serverDate = new Date(serverMs).toUTCString();
    let n = 0;
    fake.reply = () => (n++ === 0 ? answer(403, 'request-time-too-skewed', { date: serverDate }) : ok('e1', 'body'));
    const got = await client.get('k');
    assert.equal(Buffer.from(got.body).toString(), 'body');
    await client.get('k');
    const dates = fake.seen.map((s) => s.headers['x-amz-date']);
    assert.deepEqual(dates, ['20261205T130000Z', '20261205T140000Z', '20261205T140000Z']);
  });

  it('RequestTimeTooSkewed twice: the second answer is the error (one retry only)', async () => {
    fake.reply = () => answer(403, 'request-time-too-skewed', { date: new Date(NOW + 3_600_000).toUTCString() });
    await assert.rejects(client.get('k'), (e: Error) => e.name === 'RequestTimeTooSkewed' && classifyS3Error(e) === 'fatal');
    assert.equal(fake.seen.length, 2);
  });

  it('a request with no answer fails after requestTimeoutMs with a timeout the store retries', async () => {
    const quick = make(200);
    fake.reply = () => 'stall';
    try {
      await assert.rejects(quick.get('k'), (e: Error) => e.name === 'TimeoutError' && classifyS3Error(e) === 'unknown');
    } finally {
      quick.destroy();
    }
  });

  it('DeleteObjects sends a quiet Delete with its Content-MD5, signed, and returns the failed keys', async () => {
    fake.reply = () => ({
      status: 200,
      body: '<?xml version="1.0" encoding="UTF-8"?><DeleteResult><Error><Key>a&amp;b</Key><Code>SlowDown</Code></Error></DeleteResult>',
    });
    assert.deepEqual(await client.deleteMany(['a&b', 'c']), [{ key: 'a&b', code: 'SlowDown' }]);
    const seen = fake.seen[0]!;
    assert.equal(seen.method, 'POST');
    assert.equal(seen.url, `/${BUCKET}?delete=`);
    assert.equal(seen.headers['content-md5'], createHash('md5').update(seen.body).digest('base64'));
    assert.match(String(seen.headers.authorization), /SignedHeaders=content-md5;host;x-amz-content-sha256;x-amz-date,/);
    assert.match(seen.body.toString(), /<Key>a&amp;b<\/Key>.*<Key>c<\/Key>/);
  });

  it('keys reach the server as written: each segment encoded once, slashes kept', async () => {
    fake.reply = () => ok('e');
    const key = 'alarms/t 1/Counter.t/x=1:2~+%/é😀';
    await client.put(key, Buffer.from('x'), {});
    assert.equal(fake.seen[0]!.key, key);
    assert.equal(fake.seen[0]!.url, `/${BUCKET}/alarms/t%201/Counter.t/x%3D1%3A2~%2B%25/%C3%A9%F0%9F%98%80`);
  });

  it('ListObjectsV2 sends its parameters encoded and sorted', async () => {
    fake.reply = () => ({ status: 200, body: '<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>' });
    await client.list({ prefix: 'root/a b/', startAfter: 'root/a b/c', maxKeys: 5, continuation: 't/1=' });
    assert.equal(
      fake.seen[0]!.url,
      `/${BUCKET}?continuation-token=t%2F1%3D&list-type=2&max-keys=5&prefix=root%2Fa%20b%2F&start-after=root%2Fa%20b%2Fc`,
    );
  });

  it('If-Match goes out unquoted, If-None-Match as *; a session token is sent and signed', async () => {
    credentials = { accessKeyId: 'AKID', secretAccessKey: 'secret', sessionToken: 'tok/1' };
    client.destroy();
    client = make();
    fake.reply = () => ok('e');
    await client.put('k', Buffer.from('x'), { ifMatch: '"abc"' });
    await client.put('k', Buffer.from('x'), { ifNoneMatch: '*' });
    assert.deepEqual(
      fake.seen.map((s) => [s.headers['if-match'], s.headers['if-none-match']]),
      [
        ['abc', undefined],
        [undefined, '*'],
      ],
    );
    assert.equal(fake.seen[0]!.headers['x-amz-security-token'], 'tok/1');
    assert.match(String(fake.seen[0]!.headers.authorization), /SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,/);
    assert.equal(fake.seen[0]!.headers['x-amz-content-sha256'], createHash('sha256').update('x').digest('hex'));
  });
});

describe('addressing', () => {
  it('an endpoint with path-style: the endpoint, /bucket', () => {
    assert.deepEqual(addressing({ bucket: 'b', endpoint: 'http://127.0.0.1:7480', region: 'us-east-1', forcePathStyle: true }), {
      protocol: 'http:',
      hostname: '127.0.0.1',
      port: 7480,
      host: '127.0.0.1:7480',
      bucketPath: '/b',
    });
  });

  it("AWS: virtual-hosted in the region's endpoint, over https", () => {
    assert.deepEqual(addressing({ bucket: 'my-bucket', region: 'eu-west-1', forcePathStyle: false }), {
      protocol: 'https:',
      hostname: 'my-bucket.s3.eu-west-1.amazonaws.com',
      port: 443,
      host: 'my-bucket.s3.eu-west-1.amazonaws.com',
      bucketPath: '',
    });
  });

  it('a bucket name with dots stays path-style (it would not match the TLS certificate as a host)', () => {
    const a = addressing({ bucket: 'my.bucket', region: 'eu-west-1', forcePathStyle: false });
    assert.equal(a.host, 's3.eu-west-1.amazonaws.com');
    assert.equal(a.bucketPath, '/my.bucket');
  });

  it('an endpoint without forcePathStyle: the bucket as a subdomain of it (R2-style)', () => {
    const a = addressing({ bucket: 'b', endpoint: 'https://acct.r2.cloudflarestorage.com', region: 'auto', forcePathStyle: false });
    assert.equal(a.host, 'b.acct.r2.cloudflarestorage.com');
    assert.equal(a.port, 443);
    assert.equal(a.bucketPath, '');
  });
});
