/**
 * For bench/s3-overhead: the memory one thread's first S3 requests cost with a client. Run in a
 * fresh process with --expose-gc: imports the store, measures, makes a GET and a PUT (the client is
 * made, and with the SDK client the SDK loaded, then), collects garbage, measures again, and prints
 * one JSON line. With AWS_PROFILE set, the credentials come through the SDK's chain.
 *
 *   node --import tsx --expose-gc bench/support/s3-memory.ts lean|sdk <s3 url>
 */
import { resolveOptions } from '../../src/core/config.js';
import { openStore } from '../../src/store/open.js';

const [client, url] = process.argv.slice(2);
if ((client !== 'lean' && client !== 'sdk') || !url) throw new Error('usage: s3-memory.ts lean|sdk <s3 url>');
const gc = globalThis.gc;
if (!gc) throw new Error('run with --expose-gc');

const mb = (bytes: number) => Math.round((bytes / 1_048_576) * 10) / 10;
function sample() {
  gc!();
  const m = process.memoryUsage();
  return { rss: m.rss, heap: m.heapUsed };
}

const store = openStore(url, { config: resolveOptions({ s3SdkClient: client === 'sdk' }) });
const before = sample();
await store.get('memory-probe');
await store.put('memory-probe', new Uint8Array(100));
await store.delete('memory-probe');
const after = sample();
await store.close();
console.log(
  JSON.stringify({
    client,
    credentials: process.env.AWS_PROFILE ? 'profile (the SDK chain)' : 'environment',
    'RSS before MB': mb(before.rss),
    'RSS after MB': mb(after.rss),
    'RSS added MB': mb(after.rss - before.rss),
    'heap added MB': mb(after.heap - before.heap),
  }),
);
