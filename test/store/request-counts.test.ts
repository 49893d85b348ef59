import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import { MemoryStore } from '../../src/store/memory.js';
import { areaOf, countedStore, RequestCounts } from '../../src/store/request-counts.js';

const table = (c: RequestCounts) => Object.fromEntries([...c.entries()].map((e) => [`${e.op} ${e.area}`, e.count]));

describe('request counts', () => {
  it('counts each request by operation and key area before sending it', async () => {
    const counts = new RequestCounts();
    const store = countedStore(new MemoryStore(), counts);
    await store.put('state/t/C/ab/0000000001', new Uint8Array([1]));
    await store.put('alarms/t/x', new Uint8Array(0), { ifNoneMatch: '*' });
    await store.get('holds/t/C/ab');
    await store.head('nodes/n1');
    await store.list({ prefix: 'alarms/t/' });
    await store.delete('alarms/t/x');
    await store.deleteMany(['state/t/C/ab/0000000001']);
    await assert.rejects(store.put('alarms/t/y', new Uint8Array(0), { ifMatch: 'nope' }));
    await store.get('elsewhere');
    assert.deepEqual(table(counts), {
      'get holds': 1,
      'get other': 1,
      'head nodes': 1,
      'put_conditional alarms': 2,
      'put state': 1,
      'delete alarms': 1,
      'delete_many state': 1,
      'list alarms': 1,
    });
  });

  it('is one table across threads: a worker counting into the shared buffer shows here', async () => {
    const counts = new RequestCounts();
    const src = `
      const { workerData } = require('node:worker_threads');
      const a = new BigInt64Array(workerData);
      for (let i = 0; i < 1000; i++) Atomics.add(a, 0, 1n);`;
    await Promise.all(
      [1, 2, 3].map(
        () =>
          new Promise<void>((resolve, reject) => {
            const w = new Worker(src, { eval: true, workerData: counts.buffer });
            w.on('error', reject).on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`exit ${code}`))));
          }),
      ),
    );
    counts.add('get', 'alarms/x');
    assert.deepEqual(table(counts), { 'get alarms': 3001 });
  });

  it('names areas by the first key segment only', () => {
    assert.equal(areaOf('alarms'), 'alarms');
    assert.equal(areaOf('alarmsx/y'), 'other');
    assert.equal(areaOf('state/'), 'state');
    assert.equal(areaOf(''), 'other');
    assert.equal(areaOf(undefined), 'other');
  });
});
