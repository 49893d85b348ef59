/**
 * FsStore between worker threads: each thread's own client races compare-and-swap increments of
 * one counter (test/fixtures/fs-racer.ts), and no update is lost.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import { withStore } from './fs-fixture.js';
import { tsWorkerEntry } from '../helpers/ts-worker.js';
import { str, text } from '../helpers/bytes.js';

describe('fs store between worker threads', () => {
  it('4 threads race compare-and-swap increments through their own clients: no lost update', async () => {
    await withStore(async (store, root) => {
      await store.put('race/counter', text('0'));
      const each = 50;
      const racer = new URL('../fixtures/fs-racer.ts', import.meta.url);
      const results = await Promise.all(
        Array.from({ length: 4 }, (_, i) => {
          const worker = new Worker(tsWorkerEntry(racer), { eval: true, workerData: { mode: 'cas', root, id: String(i), count: each } });
          return new Promise<{ done: number }>((resolve, reject) => {
            worker.once('message', resolve);
            worker.once('error', reject);
            worker.once('exit', (code) => code === 0 || reject(new Error(`thread exited with ${code}`)));
          });
        }),
      );
      assert.equal(
        results.reduce((n, r) => n + r.done, 0),
        4 * each,
      );
      assert.equal(str((await store.get('race/counter'))!.body), String(4 * each));
    });
  });
});
