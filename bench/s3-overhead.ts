/**
 * bench/s3-overhead: what a request costs the client's CPU through keepwork's S3 store with each
 * client — the lean one (s3/lean-client.ts) and the AWS SDK's (`s3SdkClient`) — side by side in
 * one run, against the same GET and PUT signed by hand and sent with undici's pool (the lean
 * client's transport: the floor of a signed request) and with node:http. Requests: PUT, conditional PUT (If-None-Match: * on a new key, If-Match on its
 * etag), GET at 32 in flight, 1,500-byte objects; LIST of 1,000 keys at 4 in flight. Alternating
 * rounds. Then the memory a thread's first S3 requests cost with each client
 * (bench/support/s3-memory.ts, a fresh process each).
 *
 *   eval "$(bash scripts/s3-test-server.sh env)"; npm run bench -- s3-overhead [--quick]
 *
 * The hand-signed requests are a measuring stick only (Signature V4 with static keys from
 * AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, path-style, no retries, no error parsing).
 */
import { createHash, createHmac } from 'node:crypto';
import { Agent, request } from 'node:http';
import { Pool } from 'undici';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { resolveOptions } from '../src/core/config.js';
import { openStore } from '../src/store/open.js';
import type { ObjectStore } from '../src/store/types.js';
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
const LISTS = quick ? 10 : 40;
const ROUNDS = 3;
const body = Buffer.alloc(1_500, 7);
const agent = new Agent({ keepAlive: true, maxSockets: 64 });
const pool = new Pool(endpoint.origin, { connections: 64 });

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

type Transport = 'undici' | 'node:http';

function send(transport: Transport, method: 'GET' | 'PUT', key: string, payload?: Buffer): Promise<Buffer> {
  const path = `/${bucket}/${prefix}${key}`;
  const headers = signed(method, path, sha256(payload ?? ''));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const end = (status: number) => (status === 200 ? resolve(Buffer.concat(chunks)) : reject(new Error(`${method} ${path}: ${status}`)));
    if (transport === 'undici') {
      let status = 0;
      pool.dispatch(
        { method, path, headers, body: payload },
        {
          onRequestStart: () => {}, // marks the handler as undici 7's (it asks older ones for onConnect)
          onResponseStart: (_c, code) => void (status = code),
          onResponseData: (_c, c) => void chunks.push(c),
          onResponseEnd: () => end(status),
          onResponseError: (_c, e) => reject(e),
        },
      );
      return;
    }
    const req = request({ agent, host: endpoint.hostname, port: endpoint.port, method, path, headers }, (res) => {
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => end(res.statusCode ?? 0));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

const storeUrl = S3_URL.replace(/^(s3:\/\/[^/?]+)\/?/, `$1/${prefix}`);
const stores: Record<string, ObjectStore> = {
  lean: openStore(storeUrl, { config: resolveOptions({ s3SdkClient: false }) }),
  SDK: openStore(storeUrl, { config: resolveOptions({ s3SdkClient: true }) }),
};
const listed = 'listed/'; // 1,000 keys, put once, listed by every client
const rows = [];
try {
  await measure(1_000, 32, (i) => stores.lean!.put(`${listed}${String(i).padStart(4, '0')}`, body));
  for (const store of Object.values(stores)) await store.get(`${listed}0000`); // makes the client (loads the SDK) outside the measurements
  await send('undici', 'GET', `${listed}0000`);
  await send('node:http', 'GET', `${listed}0000`);
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [client, store] of Object.entries(stores)) {
      const etags: string[] = [];
      const cells = {
        put: () => measure(N, 32, (i) => store.put(`${client}/${round}/put/${i}`, body)),
        'create (If-None-Match)': () =>
          measure(N, 32, async (i) => void (etags[i] = (await store.put(`${client}/${round}/c/${i}`, body, { ifNoneMatch: '*' })).etag)),
        'replace (If-Match)': () => measure(N, 32, (i) => store.put(`${client}/${round}/c/${i}`, body, { ifMatch: etags[i]! })),
        get: () => measure(N, 32, (i) => store.get(`${client}/${round}/put/${i}`)),
        'list 1,000': () => measure(LISTS, 4, () => store.list({ prefix: listed, maxKeys: 1000 })),
      };
      for (const [request, run] of Object.entries(cells)) {
        const m = await run();
        rows.push({ round, client, request, 'req/s': m.opsPerSec, 'p50 ms': m.p50Ms, 'CPU ms per request': m.cpuMsPerOp });
      }
    }
    for (const transport of ['undici', 'node:http'] as const) {
      for (const [request, run] of Object.entries({
        put: () => measure(N, 32, (i) => send(transport, 'PUT', `hand/${transport.replace(':', '')}/${round}/${i}`, body)),
        get: () => measure(N, 32, (i) => send(transport, 'GET', `hand/${transport.replace(':', '')}/${round}/${i}`)),
      })) {
        const m = await run();
        const client = `by hand, ${transport}`;
        rows.push({ round, client, request, 'req/s': m.opsPerSec, 'p50 ms': m.p50Ms, 'CPU ms per request': m.cpuMsPerOp });
      }
    }
  }
} finally {
  const store = stores.lean!;
  const keys: string[] = [];
  for (let continuation: string | undefined, first = true; first || continuation; first = false) {
    const page = await store.list({ continuation });
    keys.push(...page.keys);
    continuation = page.continuation;
  }
  for (let i = 0; i < keys.length; i += 1000) await store.deleteMany(keys.slice(i, i + 1000));
  for (const s of Object.values(stores)) await s.close();
  agent.destroy();
  await pool.close();
}

/**
 * A fresh process per client: heap and RSS before and after a thread's first S3 requests; the lean
 * client also with its keys from a profile file (AWS_PROFILE), which loads the SDK's credential chain.
 */
const profileDir = mkdtempSync(join(tmpdir(), 'kw-s3-profile-'));
const profileFile = join(profileDir, 'credentials');
writeFileSync(profileFile, `[keepwork-bench]\naws_access_key_id = ${accessKey}\naws_secret_access_key = ${secretKey}\n`);
const viaProfile = { AWS_PROFILE: 'keepwork-bench', AWS_SHARED_CREDENTIALS_FILE: profileFile, AWS_CONFIG_FILE: join(profileDir, 'none') };
const memory = (
  [
    ['lean', {}],
    ['lean', viaProfile],
    ['sdk', {}],
  ] as const
).map(([client, env]) => {
  const script = fileURLToPath(new URL('./support/s3-memory.ts', import.meta.url));
  const args = ['--import', 'tsx', '--expose-gc', script, client, storeUrl];
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  if ('AWS_PROFILE' in env) delete childEnv.AWS_ACCESS_KEY_ID; // the profile alone, as the chain wants it
  return JSON.parse(execFileSync(process.execPath, args, { encoding: 'utf8', env: childEnv })) as Record<string, unknown>;
});
rmSync(profileDir, { recursive: true, force: true });

console.log(
  `\nbench/s3-overhead (${N} requests per cell, 32 in flight, ${body.length}-byte objects; ${LISTS} lists of 1,000 keys, 4 in flight)\n`,
);
console.log(table(rows));
console.log(`\nmemory of a thread's first S3 requests (a GET and a PUT), fresh process each\n`);
console.log(table(memory));
console.log(`\nwrote ${writeResult('s3-overhead', { n: N, lists: LISTS, rows, memory })}`);
