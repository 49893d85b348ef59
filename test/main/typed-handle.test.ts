/**
 * Typed handles on a real node (core/actor-handle.ts): `node.actor<typeof Counter>(…)` calls the
 * example Counter through its stubs, plain and durable, and a durable call with an idempotency key
 * runs once however often it is repeated.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ErrorCode, isKeepworkError } from '../../src/core/errors.js';
import { silentLogger } from '../../src/core/logger.js';
import { startNode } from '../../src/index.js';
import type { KeepworkNode } from '../../src/main/node-api.js';
import type Counter from '../../examples/counter.js';
import { tempDirs } from '../helpers/temp.js';

const COUNTER = new URL('../../examples/counter.ts', import.meta.url).href;
const tempDir = tempDirs('kw-typed-');

describe('typed actor handles on a node', () => {
  let node: KeepworkNode;
  before(async () => {
    node = await startNode({
      dataDir: tempDir(),
      bucket: 'memory:',
      classes: { Counter: COUNTER },
      workerThreads: 1,
      logger: silentLogger(),
    });
  });
  after(() => node.stop());

  it('calls the class’s methods through plain and durable stubs', async () => {
    const hits = node.actor<typeof Counter>('t/Counter/hits');
    assert.equal(await hits.plain.add(5), 5);
    assert.equal(await hits.durable.add(2), 7);
    assert.equal(await hits.plain.add(), 8, 'the default argument');
    assert.equal(await hits.durable.get(), 8);
    assert.equal(await hits.call('get'), 8, 'calls by name still work');
  });

  it('applies a keyed durable call once, and refuses its key with other arguments', async () => {
    const hits = node.actor<typeof Counter>('t/Counter/keyed');
    const once = hits.withIdempotencyKey('order-17');
    assert.equal(await once.durable.add(10), 10);
    assert.equal(await once.durable.add(10), 10, 'the recorded outcome');
    assert.equal(await hits.withIdempotencyKey('order-17').durable.add(10), 10);
    assert.equal(await hits.plain.get(), 10, 'ran once');
    await assert.rejects(once.durable.add(11), (e: unknown) => isKeepworkError(e, ErrorCode.IdempotencyMismatch));
  });

  it('answers a method the class lacks with NOT_FOUND (the type is the caller’s word)', async () => {
    const wrong = node.actor<typeof Counter>('t/Counter/hits') as unknown as { plain: Record<string, () => Promise<unknown>> };
    await assert.rejects(wrong.plain.nope!(), (e: unknown) => isKeepworkError(e, ErrorCode.NotFound));
  });
});
