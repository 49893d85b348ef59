/**
 * bench/s3-overhead: what a request costs the client's CPU through keepwork's S3 store (the AWS
 * SDK) against the same request signed by hand and sent with node:http — the floor of a signed
 * GET or PUT, and so how much of a node's CPU on S3 is the SDK's own. 32 requests in flight,
 * 1,500-byte objects, alternating rounds.
 *
 *   eval "$(bash scripts/s3-test-server.sh env)"; npm run bench -- s3-overhead [--quick]
 *
 * The hand-signed requests are a measuring stick only (Signature V4 with static keys from
 * AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, path-style, no retries, no error parsing), not
 * something keepwork uses.
 */
import { createHash, createHmac } from 'node:crypto';
import { Agent, request } from 'node:http';
import { openStore } from '../src/store/open.js';
import { measure, quick, table, writeResult } from './lib.js';

const S3_URL = process.env.KEEPWORK_TEST_S3_URL;
const accessKey = process.env.AWS_ACCESS_KEY_ID;
const secretKey = process.env.AWS_SECRET_ACCESS_KEY;
if (!S3_URL || !accessKey || !secretKey)
  throw new Error('needs KEEPWORK_TEST_S3_URL and AWS keys: eval "$(bash scripts/s3-test-server.sh env)"');
const url = new URL(S3_URL.replace(/^s3:/, 'http:'));
const endpoint = new URL(url.searchParams.get('endpoint') ?? 'http://127.0.0.1:7480');
if (endpoint.protocol !== 'http:') throw new Error(`endpoint ${endpoint.href}: this bench signs plain-HTTP requests only`);
const region = url.searchParams.get('region') ?? 'us-east-1';
const bucket = url.hostname;
const prefix = `bench-s3-overhead-${process.pid}/`;
const N = quick ? 500 : 2_000;
const ROUNDS = 3;
const body = Buffer.alloc(1_500, 7);
const agent = new Agent({ keepAlive: true, maxSockets: 64 });

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const signingKeys = new Map<string, Buffer>();

/** Signature V4 headers for a path-style request with no query string. */
function signed(method: string, path: string, payloadHash: string): Record<string, string> {
  const amzDate = new Date().toISOString().replace(/[:-]|\.\d{3}/g, '');
  const day = amzDate.slice(0, 8);
  const headers = `host:${endpoint.host}\nx-amz-content-sha256:${payloadHash}\nx-amz-date:${amzDate}\n`;
  const names = 'host;x-amz-content-sha256;x-amz-date';
  const scope = `${day}/${region}/s3/aws4_request`;
  const toSign = `AWS4-HMAC-SHA256\n${amzDate}\n${scope}\n${sha256(`${method}\n${path}\n\n${headers}\n${names}\n${payloadHash}`)}`;
  let key = signingKeys.get(day);
  if (!key) {
    key = [region, 's3', 'aws4_request'].reduce(
      (k, part) => createHmac('sha256', k).update(part).digest(),
      createHmac('sha256', `AWS4${secretKey}`).update(day).digest(),
    );
    signingKeys.set(day, key);
  }
  const signature = createHmac('sha256', key).update(toSign).digest('hex');
  return {
    'x-amz-date': amzDate,
    'x-amz-content-sha256': payloadHash,
    authorization: `AWS4-HMAC-SHA256 Credential=${accessKey}/${scope}, SignedHeaders=${names}, Signature=${signature}`,
  };
}

function send(method: 'GET' | 'PUT', key: string, payload?: Buffer): Promise<Buffer> {
  const path = `/${bucket}/${prefix}${key}`;
  const headers = signed(method, path, sha256(payload ?? ''));
  return new Promise((resolve, reject) => {
    const req = request({ agent, host: endpoint.hostname, port: endpoint.port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        res.statusCode === 200 ? resolve(Buffer.concat(chunks)) : reject(new Error(`${method} ${path}: ${res.statusCode}`)),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

const store = openStore(S3_URL.replace(/^(s3:\/\/[^/?]+)\/?/, `$1/${prefix}`));
const rows = [];
try {
  await store.put('warm', body); // loads the SDK outside the measurements
  await send('GET', 'warm');
  for (let round = 1; round <= ROUNDS; round++) {
    const cells = {
      'SDK put': () => measure(N, 32, (i) => store.put(`sdk/${i}`, body)),
      'hand put': () => measure(N, 32, (i) => send('PUT', `hand/${i}`, body)),
      'SDK get': () => measure(N, 32, (i) => store.get(`sdk/${i}`)),
      'hand get': () => measure(N, 32, (i) => send('GET', `hand/${i}`)),
    };
    for (const [what, run] of Object.entries(cells)) {
      const m = await run();
      rows.push({ round, request: what, 'req/s': m.opsPerSec, 'p50 ms': m.p50Ms, 'CPU ms per request': m.cpuMsPerOp });
    }
  }
} finally {
  const keys = [];
  for (const side of ['sdk', 'hand']) for (let i = 0; i < N; i++) keys.push(`${side}/${i}`);
  keys.push('warm');
  for (let i = 0; i < keys.length; i += 1000) await store.deleteMany(keys.slice(i, i + 1000));
  await store.close();
  agent.destroy();
}
console.log(`\nbench/s3-overhead (${N} requests per cell, 32 in flight, ${body.length}-byte objects)\n`);
console.log(table(rows));
console.log(`\nwrote ${writeResult('s3-overhead', { n: N, rows })}`);
