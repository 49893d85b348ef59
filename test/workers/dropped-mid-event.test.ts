/**
 * An actor dropped while its event awaits the bucket (the lease was lost: a fenced node stops every
 * actor at once, `ActorSlots.dropAll`): the event committed nothing, and its caller hears a
 * retryable LEASE_LOST, not HANDLER_FAILED from a write to the closed database. The chaos run met
 * it as `500 HANDLER_FAILED: The database connection is not open` (an arm whose index PUT was
 * retried across the node's fence).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SimClock } from '../../src/core/clock.js';
import { MemoryStore } from '../../src/store/memory.js';
import { inlineEnvs, okResult, Timer } from '../helpers/inline-actors.js';

const env = inlineEnvs({ Timer }, { replicationDelayMs: 20 });
const A = 't/Timer/a';

describe('an actor dropped while its event awaits the bucket', () => {
  it('the event answers LEASE_LOST and commits nothing', async () => {
    const clock = new SimClock(1_800_000_000_000);
    const store = new MemoryStore({ clock });
    const e = env(store, 0, { clock });
    assert.equal(okResult(await e.callDurable(A, 'count')), 0);
    store.setFaults((r) => (r.op === 'put' && r.key.startsWith('alarms/') ? { delayMs: 1_000 } : undefined)); // the index PUT hangs
    const arming = e.call(A, 'arm', 60_000);
    await clock.advance(100);
    e.deps.slots.dropAll(); // fenced: every actor stops at once
    await clock.advance(2_000);
    const r = await arming;
    assert.equal(r.type, 'error');
    assert.equal(r.type === 'error' && r.error.code, 'LEASE_LOST', r.type === 'error' ? r.error.message : '');
    store.setFaults(undefined);
    assert.equal(okResult(await e.call(A, 'count')), 0, 'nothing committed');
  });

  it('a call with an idempotency key on an actor given up and dropped after it was acquired answers the give-up', async () => {
    // The chaos run (seed 5) met `500 HANDLER_FAILED: The database connection is not open`: a
    // link that landed after the lease ran out gave the actor up, and the event that ended then
    // dropped its slot while a durable call with a key had just acquired it.
    const clock = new SimClock(1_800_000_000_000);
    const store = new MemoryStore({ clock });
    const e = env(store, 0, { clock });
    assert.equal(okResult(await e.callDurable(A, 'count')), 0);
    const slots = e.deps.slots;
    const acquire = slots.acquire.bind(slots);
    slots.acquire = async (...args: Parameters<typeof slots.acquire>) => {
      const slot = await acquire(...args);
      if (slot) {
        slot.replica.giveUpNow(new Error('link 5 landed after the lease ran out'));
        slots.drop(slot.replica.address);
      }
      return slot;
    };
    const r = await e.callOnce('k1', A, 'arm', 60_000);
    slots.acquire = acquire;
    assert.equal(r.type, 'error');
    assert.notEqual(r.type === 'error' && r.error.code, 'HANDLER_FAILED', r.type === 'error' ? r.error.message : '');
    assert.equal(okResult(await e.callOnce('k1', A, 'arm', 60_000)), 1, 'the retry runs it, once');
  });
});
