/**
 * core/actor-handle.ts on a recording transport: what each stub and call by name sends (method,
 * arguments, durable, key), that a stub is never taken for a promise, and that a bad key is
 * refused before anything is sent. The types are checked by test/fixtures/typed-handles.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { actorHandle, type ActorTransport } from '../../src/core/actor-handle.js';
import { parseAddress } from '../../src/core/address.js';
import { ErrorCode, isKeepworkError } from '../../src/core/errors.js';
import { checkIdempotencyKey } from '../../src/core/idempotency-key.js';
import type Counter from '../../examples/counter.js';

interface Sent {
  method: string;
  args: unknown[];
  durable: boolean;
  key: string | undefined;
}

function recording(): { sent: Sent[]; transport: ActorTransport } {
  const sent: Sent[] = [];
  return {
    sent,
    transport: {
      request: async (method, args, durable, key) => (sent.push({ method, args, durable, key }), `${method}:${args.join(',')}`),
      readAlarm: async () => 17,
      checkIdempotencyKey,
    },
  };
}

const ADDRESS = parseAddress('t/Counter/x');

describe('actor handles', () => {
  it('stubs send the method by name: plain, durable, durable with the handle’s key', async () => {
    const { sent, transport } = recording();
    const h = actorHandle<typeof Counter>(ADDRESS, transport);
    assert.equal(await h.plain.add(5), 'add:5' as never);
    await h.durable.add(6);
    await h.withIdempotencyKey('order-17').durable.get();
    await h.call('add', 7);
    await h.callDurable('get');
    await h.withIdempotencyKey('order-18').callDurable('add', 8);
    assert.deepEqual(sent, [
      { method: 'add', args: [5], durable: false, key: undefined },
      { method: 'add', args: [6], durable: true, key: undefined },
      { method: 'get', args: [], durable: true, key: 'order-17' },
      { method: 'add', args: [7], durable: false, key: undefined },
      { method: 'get', args: [], durable: true, key: undefined },
      { method: 'add', args: [8], durable: true, key: 'order-18' },
    ]);
    assert.equal(await h.getAlarm(), 17);
    assert.equal(h.address, ADDRESS);
    assert.equal(h.withIdempotencyKey('k').idempotencyKey, 'k');
  });

  it('a stub is not a thenable, so awaiting or returning one sends nothing', async () => {
    const { sent, transport } = recording();
    const h = actorHandle<typeof Counter>(ADDRESS, transport);
    assert.equal((h.plain as unknown as { then?: unknown }).then, undefined);
    assert.equal(await Promise.resolve(h.durable), h.durable);
    assert.equal((h.plain as unknown as Record<symbol, unknown>)[Symbol.toPrimitive], undefined);
    assert.deepEqual(sent, []);
  });

  it('refuses a bad idempotency key at once, before anything is sent', () => {
    const { sent, transport } = recording();
    const h = actorHandle(ADDRESS, transport);
    for (const bad of ['', 'has space', 'x'.repeat(201)])
      assert.throws(
        () => h.withIdempotencyKey(bad),
        (e: unknown) => isKeepworkError(e, ErrorCode.BadRequest),
      );
    assert.deepEqual(sent, []);
  });
});
