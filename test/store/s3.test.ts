/**
 * S3Store: the conformance suite against a real S3 server when KEEPWORK_TEST_S3_URL is set
 * (`eval "$(bash scripts/s3-test-server.sh env)"`), and, always, unit tests of the URL parser and
 * of the retry / ambiguity / If-Match rules against a scripted fake server on 127.0.0.1.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Piscina } from 'piscina';
import { WORKER_EXEC_ARGV } from '../../src/main/worker-group.js';
import { SystemClock, type Clock } from '../../src/core/clock.js';
import { ErrorCode } from '../../src/core/errors.js';
import { SeededRandom, SystemRandom } from '../../src/core/random.js';
import { resolveOptions } from '../../src/core/config.js';
import { listAll } from '../../src/store/keys.js';
import { S3Store } from '../../src/store/s3/store.js';
import { classifyS3Error } from '../../src/store/s3/errors.js';
import { parseS3Url } from '../../src/store/s3/url.js';
import { runConformance } from './conformance.js';
import { text } from '../helpers/bytes.js';

// ---------------------------------------------------------------------------------------------
// Conformance against a real server

const S3_URL = process.env.KEEPWORK_TEST_S3_URL;

if (S3_URL) {
  const location = parseS3Url(S3_URL);
  const config = resolveOptions();
  runConformance(`s3 (${S3_URL})`, async () => {
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
} else {
  describe('ObjectStore conformance: s3', () => {
    it(
      'runs against a real S3 server',
      { skip: 'set KEEPWORK_TEST_S3_URL (eval "$(bash scripts/s3-test-server.sh env)" after `bash scripts/s3-test-server.sh up`)' },
      () => {},
    );
  });
}

// ---------------------------------------------------------------------------------------------
// parseS3Url

describe('parseS3Url', () => {
  const env = {};

  it('reads bucket, prefix, endpoint and region; an endpoint implies path style', () => {
    assert.deepEqual(parseS3Url('s3://keepwork-test/a/b?endpoint=http://127.0.0.1:7480&region=eu-west-1', env), {
      bucket: 'keepwork-test',
      prefix: 'a/b/',
      endpoint: 'http://127.0.0.1:7480',
      region: 'eu-west-1',
      forcePathStyle: true,
    });
  });

  it('without a path the prefix is empty; a trailing slash is not doubled', () => {
    assert.equal(parseS3Url('s3://bucket', env).prefix, '');
    assert.equal(parseS3Url('s3://bucket/', env).prefix, '');
    assert.equal(parseS3Url('s3://bucket/p/', env).prefix, 'p/');
  });

  it('without an endpoint: virtual-host style; region from the environment, else us-east-1', () => {
    assert.deepEqual(parseS3Url('s3://bucket/p', env), { bucket: 'bucket', prefix: 'p/', region: 'us-east-1', forcePathStyle: false });
    assert.equal(parseS3Url('s3://bucket', { AWS_REGION: 'ap-south-1' }).region, 'ap-south-1');
    assert.equal(parseS3Url('s3://bucket', { AWS_DEFAULT_REGION: 'sa-east-1' }).region, 'sa-east-1');
    assert.equal(parseS3Url('s3://bucket?region=us-west-2', { AWS_REGION: 'ap-south-1' }).region, 'us-west-2');
  });

  it('decodes %-escapes in the prefix and keeps the endpoint origin only', () => {
    const loc = parseS3Url('s3://bucket/caf%C3%A9?endpoint=https://s3.example.com/', env);
    assert.equal(loc.prefix, 'café/');
    assert.equal(loc.endpoint, 'https://s3.example.com');
  });

  for (const [url, why] of [
    ['http://bucket/p', 'another scheme'],
    ['s3:/bucket', 'no host'],
    ['s3://', 'no bucket'],
    ['not a url', 'not a URL'],
    ['s3://Bucket_Name', 'invalid bucket name'],
    ['s3://ab', 'bucket name too short'],
    ['s3://user:pw@bucket', 'credentials in the URL'],
    ['s3://bucket:9000', 'a port on the bucket'],
    ['s3://bucket/a//b', 'an empty prefix segment'],
    ['s3://bucket/a/../b', 'a .. segment'],
    ['s3://bucket/%E0%A4%A', 'a malformed escape'],
    ['s3://bucket?endpoint=ftp://host', 'a non-http endpoint'],
    ['s3://bucket?endpoint=localhost:7480', 'an endpoint without a scheme'],
    ['s3://bucket?endpoint=http://host/path', 'an endpoint with a path'],
    ['s3://bucket?region=US%20East', 'an invalid region'],
    ['s3://bucket?regoin=us-east-1', 'an unknown parameter'],
    ['s3://bucket#frag', 'a fragment'],
  ] as const) {
    it(`refuses ${why}: ${url}`, () => {
      assert.throws(() => parseS3Url(url, env), { code: ErrorCode.BadConfig });
    });
  }
});

describe('classifyS3Error', () => {
  const err = (name: string, status?: number) => Object.assign(new Error(name), { name, $metadata: { httpStatusCode: status } });
  it('maps statuses and names to what the store does with them', () => {
    assert.equal(classifyS3Error(err('PreconditionFailed', 412)), 'precondition');
    assert.equal(classifyS3Error(err('NoSuchKey', 404)), 'notFound');
    assert.equal(classifyS3Error(err('NoSuchBucket', 404)), 'fatal');
    assert.equal(classifyS3Error(err('ConditionalRequestConflict', 409)), 'conflict');
    assert.equal(classifyS3Error(err('UnknownError', 500)), 'unknown');
    assert.equal(classifyS3Error(err('SlowDown', 503)), 'unknown');
    assert.equal(classifyS3Error(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })), 'unknown');
    assert.equal(classifyS3Error(err('AccessDenied', 403)), 'fatal');
  });
});

// ---------------------------------------------------------------------------------------------
// A scripted fake S3 server

interface Seen {
  method: string;
  key: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** 'drop' closes the connection without an answer (a network error). */
type Reply = { status: number; body?: string | Uint8Array; headers?: Record<string, string> } | 'drop';

const BUCKET = 'fake-bucket';
const xmlError = (status: number, code: string): Reply => ({
  status,
  headers: { 'content-type': 'application/xml' },
  body: `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message></Message></Error>`,
});
const ok = (etag: string, body: string | Uint8Array = ''): Reply => ({ status: 200, headers: { etag: `"${etag}"` }, body });

class FakeS3 {
  readonly seen: Seen[] = [];
  private server?: Server;
  reply: (req: Seen) => Reply = () => xmlError(500, 'NotScripted');

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const url = new URL(req.url ?? '/', 'http://x');
        const path = decodeURIComponent(url.pathname);
        const key = path.startsWith(`/${BUCKET}/`) ? path.slice(BUCKET.length + 2) : '';
        const seen: Seen = { method: req.method ?? '', key, query: url.searchParams, headers: req.headers, body: Buffer.concat(chunks) };
        this.seen.push(seen);
        const reply = this.reply(seen);
        if (reply === 'drop') return void req.socket.destroy();
        res.writeHead(reply.status, reply.headers ?? {});
        res.end(reply.body ?? '');
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }

  /** Replies to PUTs from a script, one entry per request; GETs from `object`. */
  script(puts: Reply[], object: () => Reply = () => xmlError(404, 'NoSuchKey')): void {
    let i = 0;
    this.seen.length = 0;
    this.reply = (req) => {
      if (req.method === 'PUT') return puts[i++] ?? xmlError(500, 'ScriptExhausted');
      if (req.method === 'GET') return object();
      return xmlError(500, 'NotScripted');
    };
  }

  methods(): string[] {
    return this.seen.map((s) => s.method);
  }
}

/** A clock that records the delays asked of it and returns at once. */
class RecordingClock implements Clock {
  readonly sleeps: number[] = [];
  now(): number {
    return 0;
  }
  async sleep(ms: number): Promise<void> {
    this.sleeps.push(ms);
  }
  setTimer(_ms: number, fn: () => void) {
    queueMicrotask(fn);
    return { cancel: () => {} };
  }
}

describe('S3Store against a scripted fake server', () => {
  const fake = new FakeS3();
  let store: S3Store;
  let clock: RecordingClock;
  const config = resolveOptions({ storeAttemptsMax: 3, storeRetryBaseMs: 40, storeRequestTimeoutMs: 5_000 });
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
    fake.script([xmlError(503, 'SlowDown'), 'drop', xmlError(500, 'InternalError')], () => ok('etag-ours', ours));
    assert.deepEqual(await store.put('k', ours, { ifMatch: 'e0' }), { etag: 'etag-ours' });
    assert.deepEqual(fake.methods(), ['PUT', 'PUT', 'PUT', 'GET']);
    fake.script([xmlError(500, 'InternalError'), xmlError(500, 'InternalError'), xmlError(500, 'InternalError')]);
    await assert.rejects(store.put('k', ours, { ifMatch: 'e0' }), { code: ErrorCode.AmbiguousWrite });
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
      body: '<?xml version="1.0" encoding="UTF-8"?><DeleteResult><Error><Key>root/x</Key><Code>SlowDown</Code></Error></DeleteResult>',
    });
    await assert.rejects(store.deleteMany(['x']), { code: ErrorCode.StoreUnavailable });
    assert.equal(fake.seen.length, config.storeAttemptsMax);
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

describe('S3Store in a worker thread', () => {
  it('loads the AWS SDK at its first request there (a GET of an absent key answers null)', async () => {
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
      assert.equal(await pool.run(url), 'absent');
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
