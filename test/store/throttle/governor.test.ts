/**
 * The governor (src/store/throttle/governor.ts) around the fault wrapper's slowdown mode, on
 * virtual time: a 10 s burst of throttle answers slows the class down, nothing is lost, and the
 * requests sent stay within 1.5× those needed (counted in the wrapper), fewer than when each
 * request retries on its own schedule. Also: lease requests go around a full window,
 * Retry-After holds the class back, and a request throttled too often fails as StoreUnavailable.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SimClock, SystemClock } from '../../../src/core/clock.js';
import { resolveOptions } from '../../../src/core/config.js';
import { ErrorCode } from '../../../src/core/errors.js';
import { SeededRandom } from '../../../src/core/random.js';
import { retry } from '../../../src/core/retry.js';
import { MemoryStore } from '../../../src/store/memory.js';
import { GovernedStore } from '../../../src/store/throttle/governed-store.js';
import { Governor } from '../../../src/store/throttle/governor.js';
import { throttleOf } from '../../../src/store/throttle/signal.js';
import { ThrottleStats } from '../../../src/store/throttle/stats.js';
import { FaultStore, NO_FAULTS, type FaultPlan } from '../../../src/store/testing/faults.js';
import { LatencyStore } from '../../../src/store/testing/latency.js';
import type { ObjectStore } from '../../../src/store/types.js';
import { text } from '../../helpers/bytes.js';
import { runConformance } from '../conformance.js';

const config = resolveOptions({ storeWindowMax: 64 });

runConformance('governed memory (openStore wraps every store so)', async () => {
  const store = new GovernedStore(new MemoryStore(), new Governor(resolveOptions(), new SystemClock(), new SeededRandom(1)));
  return { store, reopen: async () => store, cleanup: () => store.close() };
});
const BURST: Partial<FaultPlan> = { slowdown: 0.3, slowdownInFlightMax: 8, slowdownMs: 10_000 };

function faultyBucket(plan: Partial<FaultPlan>, seed = 1) {
  const clock = new SimClock(0);
  const inner = new MemoryStore({ clock });
  const faults = new FaultStore(new LatencyStore(inner, clock, 30), clock, new SeededRandom(seed), { ...NO_FAULTS, ...plan });
  return { clock, inner, faults };
}

/** Runs virtual time until `p` settles (at most `limitMs` of it). */
async function settle<T>(clock: SimClock, p: Promise<T>, limitMs = 120_000): Promise<T> {
  let done = false;
  const watched = p.finally(() => (done = true));
  const end = clock.now() + limitMs;
  while (!done && clock.now() < end) await clock.advance(10);
  return watched;
}

/** `items` index entries, each written then deleted (two writes, as a delivery's entry is), from `lanes` callers at once; runs virtual time until all are done. */
async function drain(clock: SimClock, store: ObjectStore, items: number, lanes = 128): Promise<{ failed: number; written: Set<string> }> {
  const written = new Set<string>();
  let next = 0;
  let failed = 0;
  let running = lanes;
  const lane = async () => {
    while (next < items) {
      const key = `alarms/t/${String(next++).padStart(5, '0')}`;
      try {
        await store.put(key, text('entry'));
        written.add(key);
        await store.delete(key);
      } catch {
        failed++;
      }
    }
    running--;
  };
  for (let i = 0; i < lanes; i++) void lane();
  while (running > 0) await clock.advance(10);
  return { failed, written };
}

/** Each request retrying throttles on its own schedule (jittered doubling backoff), as the stores did. */
function perRequestRetries(inner: ObjectStore, clock: SimClock): ObjectStore {
  const again = <T>(fn: () => Promise<T>) =>
    retry(
      { clock, random: new SeededRandom(2) },
      { attemptsMax: 10, baseMs: 50, maxDelayMs: 5_000, retryable: (e) => throttleOf(e) !== null },
      fn,
    );
  return {
    description: inner.description,
    get: (k) => again(() => inner.get(k)),
    head: (k) => again(() => inner.head(k)),
    put: (k, b, c) => again(() => inner.put(k, b, c)),
    delete: (k) => again(() => inner.delete(k)),
    deleteMany: (ks) => again(() => inner.deleteMany(ks)),
    list: (o) => again(() => inner.list(o)),
    close: () => inner.close(),
  };
}

describe('governor under a 10 s SlowDown burst', () => {
  const ITEMS = 3_000;
  const NEEDED = 2 * ITEMS;

  it('the drain goes on, nothing is lost, and at most 1.5× the requests needed are sent', async () => {
    const { clock, inner, faults } = faultyBucket(BURST);
    const stats = new ThrottleStats();
    const store = new GovernedStore(faults, new Governor(config, clock, new SeededRandom(3), stats.sink(0)));
    const { failed, written } = await drain(clock, store, ITEMS);
    assert.equal(failed, 0);
    assert.equal(written.size, ITEMS, 'every entry written');
    assert.deepEqual((await inner.list({ prefix: 'alarms/' })).keys, [], 'and every one deleted');
    assert.ok(faults.injected.slowdown > 0, 'the burst throttled some writes');
    assert.ok(clock.now() > 10_000, `the drain outlasted the burst (${clock.now()} ms)`);
    const ratio = faults.sent / NEEDED;
    assert.ok(ratio <= 1.5, `sent ${faults.sent} for ${NEEDED} needed: ${ratio.toFixed(2)}×`);
    const writes = [...stats.entries()].find((e) => e.cls === 'index_writes')!;
    assert.equal(writes.throttled, faults.injected.slowdown, 'every throttle answer counted');
  });

  it('without the governor the throttle answers reach the callers (the check above can fail)', async () => {
    const { clock, faults } = faultyBucket(BURST);
    const { failed } = await drain(clock, faults, ITEMS);
    assert.ok(failed > 0, `${failed} items failed`);
  });

  it('with each request retrying on its own schedule instead, more requests are sent for the same work', async () => {
    const governed = faultyBucket(BURST);
    const store = new GovernedStore(governed.faults, new Governor(config, governed.clock, new SeededRandom(3)));
    await drain(governed.clock, store, ITEMS);
    const alone = faultyBucket(BURST);
    const { failed } = await drain(alone.clock, perRequestRetries(alone.faults, alone.clock), ITEMS);
    assert.equal(failed, 0);
    assert.ok(governed.faults.sent < alone.faults.sent, `governed ${governed.faults.sent}, per request ${alone.faults.sent}`);
  });
});

describe('governor', () => {
  it('lease requests go around a class whose window is full or paused', async () => {
    const { clock, faults } = faultyBucket({ slowdown: 1, slowdownMs: 1_000, retryAfterMs: 60_000 });
    const governor = new Governor(resolveOptions({ storeWindowMax: 1, storeThrottleDelayMaxMs: 60_000 }), clock, new SeededRandom(1));
    const store = new GovernedStore(faults, governor);
    const stuck = store.put('alarms/x', text('e')).then(
      () => 'written',
      (e: unknown) => e,
    );
    await clock.advance(100);
    assert.ok(governor.window('index_writes').pausedUntilMs > clock.now(), 'index writes paused by the Retry-After');
    let leased = false;
    void store.put('nodes/n1', text('lease')).then(() => (leased = true));
    while (!leased && clock.now() < 30_000) await clock.advance(100);
    assert.equal(leased, true, 'the lease was written while index writes waited');
    assert.ok(governor.window('index_writes').pausedUntilMs > clock.now(), 'and they still wait');
    assert.equal(await settle(clock, stuck), 'written', 'the index write went through once the pause ended');
    assert.deepEqual(await settle(clock, store.get('alarms/x')).then((o) => o?.body), text('e'));
  });

  it('honours Retry-After: no request of the class is sent before it ends', async () => {
    const { clock, faults } = faultyBucket({ slowdown: 1, slowdownMs: 1, retryAfterMs: 2_000 });
    const store = new GovernedStore(faults, new Governor(config, clock, new SeededRandom(1)));
    const first = store.put('alarms/a', text('a'));
    await clock.advance(0);
    const sentAfterThrottle = faults.sent;
    const second = store.put('alarms/b', text('b'));
    await clock.advance(1_999);
    assert.equal(faults.sent, sentAfterThrottle, 'nothing sent during the pause');
    await settle(clock, Promise.all([first, second]));
    assert.equal(faults.sent, sentAfterThrottle + 2);
  });

  it('a request throttled storeThrottleAttemptsMax times fails with STORE_UNAVAILABLE, not throttled', async () => {
    const { clock, faults } = faultyBucket({ slowdown: 1 });
    const stats = new ThrottleStats();
    const governor = new Governor(resolveOptions({ storeThrottleAttemptsMax: 3 }), clock, new SeededRandom(1), stats.sink(0));
    const store = new GovernedStore(faults, governor);
    const e = (await settle(
      clock,
      store.put('state/t/a/1', text('x')).catch((err: unknown) => err),
    )) as { code: string };
    assert.equal(e.code, ErrorCode.StoreUnavailable);
    assert.equal(throttleOf(e), null, 'the caller meets an outage, not a throttle to handle');
    assert.equal(faults.sent, 3);
    const chain = [...stats.entries()].find((x) => x.cls === 'chain_uploads')!;
    assert.deepEqual([chain.throttled, chain.exhausted], [3, 1]);
  });
});
