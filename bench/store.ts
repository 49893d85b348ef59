/**
 * bench/store: put, get and list operations per second of each bucket kind at 1 and 32 requests
 * in flight (100-byte bodies; lists of 1000-key pages over the keys put), and the CPU of this
 * process per request (for S3, the client's own cost: signing, HTTP, XML). The S3 legs, one with the
 * lean client and one with the SDK's (`s3SdkClient`), run when KEEPWORK_TEST_S3_URL is set
 * (scripts/s3-test-server.sh up; eval "$(… env)").
 *
 *   npm run bench -- store [--quick]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveOptions } from '../src/core/config.js';
import { openStore } from '../src/store/open.js';
import type { ObjectStore } from '../src/store/types.js';
import { listAll } from '../src/store/keys.js';
import { measure, quick, table, writeResult } from './lib.js';

const OPS = quick ? 200 : 1000;
const LISTS = quick ? 10 : 30;
const body = new Uint8Array(100).fill(7);

async function benchStore(kind: string, store: ObjectStore) {
  const rows = [];
  for (const inFlight of [1, 32]) {
    const prefix = `bench/${inFlight}/`;
    const key = (i: number) => `${prefix}${String(i).padStart(6, '0')}`;
    const put = await measure(OPS, inFlight, (i) => store.put(key(i), body));
    const get = await measure(OPS, inFlight, (i) => store.get(key(i % OPS)));
    const list = await measure(LISTS, Math.min(inFlight, LISTS), () => store.list({ prefix, maxKeys: 1000 }));
    const create = await measure(OPS, inFlight, (i) => store.put(`${prefix}c/${i}`, body, { ifNoneMatch: '*' }));
    rows.push({
      store: kind,
      inFlight,
      'put/s': put.opsPerSec,
      'put p50 ms': put.p50Ms,
      'put CPU ms': put.cpuMsPerOp,
      'create/s': create.opsPerSec,
      'get/s': get.opsPerSec,
      'get p50 ms': get.p50Ms,
      'get CPU ms': get.cpuMsPerOp,
      'list/s': list.opsPerSec,
      'list p50 ms': list.p50Ms,
      'list CPU ms': list.cpuMsPerOp,
    });
  }
  const keys: string[] = [];
  for await (const k of listAll(store, { prefix: 'bench/' })) keys.push(k);
  for (let i = 0; i < keys.length; i += 1000) await store.deleteMany(keys.slice(i, i + 1000));
  return rows;
}

async function main() {
  const rows = [];
  const dir = mkdtempSync(join(tmpdir(), 'kw-bench-store-'));
  try {
    const targets: [string, string, boolean?][] = [
      ['memory', 'memory:'],
      ['fs', dir],
    ];
    const s3 = process.env.KEEPWORK_TEST_S3_URL;
    if (s3) {
      const url = s3.replace(/^(s3:\/\/[^/?]+)\/?/, `$1/bench-${process.pid}/`);
      targets.push(['s3 lean', url, false], ['s3 SDK', url, true]);
    } else console.log('(S3 legs skipped: KEEPWORK_TEST_S3_URL is not set)');
    for (const [kind, url, s3SdkClient = false] of targets) {
      const store = openStore(url, { config: resolveOptions({ s3SdkClient }) });
      try {
        rows.push(...(await benchStore(kind, store)));
      } finally {
        await store.close();
      }
      console.log(`${kind} done`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(`\nbench/store (${OPS} ops per cell, 100-byte bodies${quick ? ', --quick' : ''})\n`);
  console.log(table(rows));
  const path = writeResult('store', { ops: OPS, rows });
  console.log(`\nwrote ${path}`);
}

await main();
