import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import { ErrorCode, isKeepworkError } from '../../src/core/errors.js';
import { openStore } from '../../src/store/open.js';
import { SharedMemoryClient } from '../../src/store/testing/shared-memory.js';
import { tsWorkerEntry } from '../helpers/ts-worker.js';
import { runConformance } from './conformance.js';
import { text } from '../helpers/bytes.js';

let fixtures = 0;

// A client in the main thread talks to the host over the same channel a worker's would.
runConformance('memory:<name>, through a client', async () => {
  const name = `conformance-${fixtures++}`;
  const host = openStore(`memory:${name}`);
  const clients: SharedMemoryClient[] = [];
  const client = () => {
    const c = new SharedMemoryClient(name);
    clients.push(c);
    return c;
  };
  return {
    store: client(),
    reopen: async () => client(),
    cleanup: async () => {
      for (const c of clients) await c.close();
      await host.close();
    },
  };
});

/** Runs test/fixtures/shared-memory-worker.ts in a worker thread on `memory:<name>`; resolves with what it saw. */
function inWorker(name: string): Promise<unknown> {
  const worker = new Worker(tsWorkerEntry(new URL('../fixtures/shared-memory-worker.ts', import.meta.url)), {
    eval: true,
    workerData: { name },
  });
  return new Promise((resolve, reject) => {
    worker.once('message', (m: { error?: string }) => {
      void worker.terminate();
      if (m.error !== undefined) reject(new Error(m.error));
      else resolve(m);
    });
    worker.once('error', reject);
  });
}

describe('memory:<name> shared by the threads of a process', () => {
  it('a worker thread reads and writes the main thread’s store, and its 412 keeps its code', async () => {
    const host = openStore('memory:threads');
    try {
      const { etag } = await host.put('from/main', text('m'));
      const seen = await inWorker('threads');
      assert.deepEqual(seen, { body: 'm', etag, code: ErrorCode.PreconditionFailed, keys: ['from/main', 'from/worker'] });
      const fromWorker = await host.get('from/worker');
      assert.equal(new TextDecoder().decode(fromWorker!.body), 'w');
    } finally {
      await host.close();
    }
  });

  it('lasts while any opener in the main thread keeps it open', async () => {
    const first = openStore('memory:shared-life');
    const second = openStore('memory:shared-life');
    await first.put('k', text('v'));
    await first.close();
    assert.ok(await second.get('k'), 'the second opener still sees the object');
    await second.close();
    const fresh = openStore('memory:shared-life');
    assert.equal(await fresh.get('k'), null, 'after the last close the name starts empty');
    await fresh.close();
  });

  it('refuses a name it cannot use, and keeps `memory:` a store of its own', async () => {
    assert.throws(
      () => openStore('memory:no/slashes'),
      (e: unknown) => isKeepworkError(e, ErrorCode.BadConfig),
    );
    const a = openStore('memory:');
    const b = openStore('memory:');
    await a.put('k', text('v'));
    assert.equal(await b.get('k'), null);
    await a.close();
    await b.close();
  });
});
