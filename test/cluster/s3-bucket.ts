/** A prefix of its own on the S3 test server (scripts/s3-test-server.sh), and emptying it afterwards. */
import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import { listAll } from '../../src/store/keys.js';
import { openStore } from '../../src/store/open.js';

/** The test server's URL with a fresh prefix of its own. */
export function uniqueBucket(base: string, name = 'cluster'): string {
  const q = base.indexOf('?');
  const [path, query] = q < 0 ? [base, ''] : [base.slice(0, q), base.slice(q)];
  return `${path.replace(/\/+$/, '')}/${name}-${randomBytes(6).toString('hex')}${query}`;
}

export async function emptyBucket(url: string): Promise<void> {
  const store = openStore(url);
  try {
    const keys: string[] = [];
    for await (const k of listAll(store)) keys.push(k);
    for (let i = 0; i < keys.length; i += 1000) await store.deleteMany(keys.slice(i, i + 1000));
  } finally {
    await store.close();
  }
}

/** Runs `body` on a fresh prefix of the S3 test server (named in the test's diagnostics), emptied afterwards whatever happens. */
export async function withS3Bucket(t: TestContext, base: string, name: string, body: (bucket: string) => Promise<void>): Promise<void> {
  const bucket = uniqueBucket(base, name);
  t.diagnostic(`bucket ${bucket}`);
  try {
    await body(bucket);
  } finally {
    await emptyBucket(bucket);
  }
}
