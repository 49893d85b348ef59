/**
 * How many deliveries run at once: more than deliveryConcurrency only while a delivery takes no
 * longer with more in flight, i.e. while the bucket's round trips, not the node's threads, are the
 * limit, so that a slow bucket does not cap a drain's throughput at the configured concurrency.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { SimClock } from '../../src/core/clock.js';
import { resolveOptions } from '../../src/core/config.js';
import { BadConfig } from '../../src/core/errors.js';
import { AlarmDelivery } from '../../src/main/alarm-delivery.js';
import { DeliveryLimit } from '../../src/main/delivery-limit.js';
import { NodeMetrics } from '../../src/main/metrics.js';
import { silentLogger } from '../../src/core/logger.js';

/** Round trips with a lognormal spread, from a seeded generator: `rtt(p50, p99)` in ms. */
function roundTrips(seed: number): (p50: number, p99: number) => number {
  let state = seed;
  const uniform = () => ((state = (state * 1_103_515_245 + 12_345) % 2_147_483_648) + 1) / 2_147_483_649;
  return (p50, p99) => {
    const normal = Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform());
    return p50 * Math.exp((Math.log(p99 / p50) / 2.326) * normal);
  };
}

/** Feeds `n` deliveries whose durations `ms(limit, i)` gives, all with others waiting. */
function feed(l: DeliveryLimit, n: number, ms: (limit: number, i: number) => number, waiting = true): number[] {
  const seen: number[] = [];
  for (let i = 0; i < n; i++) seen.push(l.ended(ms(l.limit, i), waiting));
  return seen;
}

describe('delivery limit', () => {
  it('grows from min to max while deliveries take as long as ever and others wait', () => {
    const l = new DeliveryLimit(32, 256);
    assert.equal(l.limit, 32);
    const seen = feed(l, 5_000, () => 80);
    assert.equal(l.limit, 256);
    assert.ok(
      seen.every((x, i) => i === 0 || x >= seen[i - 1]!),
      'it only grows',
    );
    assert.ok(
      seen.some((x) => x > 32 && x < 256),
      'by steps, not at once',
    );
  });

  it('does not grow while nothing waits for a slot (the limit is not what holds the node back)', () => {
    const l = new DeliveryLimit(32, 256);
    feed(l, 5_000, () => 80, false);
    assert.equal(l.limit, 32);
  });

  it('stays within a step of min where deliveries wait for each other (a bucket without latency: the threads are the limit)', () => {
    const l = new DeliveryLimit(32, 256);
    // Each window: one delivery started on an idle node, the rest queued behind it for the threads,
    // so the typical delivery takes as long as the limit is large.
    const seen = feed(l, 5_000, (limit, i) => 1 + (i % limit) * 2);
    assert.ok(Math.max(...seen) <= 40, `reached ${Math.max(...seen)}`);
  });

  it('grows to max on a bucket whose round trips vary as S3’s do, while the threads keep up', () => {
    const l = new DeliveryLimit(32, 256);
    const rtt = roundTrips(7);
    // Four requests in a row, each with a median of 25–50 ms and a 99th percentile 3–4× that.
    const seen = feed(l, 20_000, () => rtt(25, 90) + rtt(35, 120) + rtt(50, 150) + rtt(35, 120));
    assert.equal(Math.max(...seen.slice(-5_000)), 256);
  });

  it('settles near the knee on such a bucket once the threads are full', () => {
    const l = new DeliveryLimit(32, 256);
    const rtt = roundTrips(11);
    // Past 100 in flight every delivery waits 2 ms a delivery for a thread, on top of its round trips.
    const knee = Math.max(...feed(l, 40_000, (limit) => 4 * rtt(40, 130) + Math.max(0, (limit - 100) * 2)).slice(-5_000));
    assert.ok(knee > 100 && knee <= 200, `settled at ${knee}`);
  });

  it('settles near the knee where the threads become the limit, and follows a bucket that slows down', () => {
    const l = new DeliveryLimit(32, 256);
    // 80 ms of round trips; past 40 in flight the threads are full and each delivery takes longer.
    // (The most of the last deliveries' limits: a probe window runs at min now and then.)
    const knee = Math.max(...feed(l, 20_000, (limit) => Math.max(80, limit * 2)).slice(-3_000));
    assert.ok(knee > 40 && knee <= 70, `settled at ${knee}`);
    // Round trips of 200 ms: the threads are full only past 100 in flight.
    const later = Math.max(...feed(l, 40_000, (limit) => Math.max(200, limit * 2)).slice(-3_000));
    assert.ok(later > 100 && later <= 170, `settled at ${later}`);
  });

  it('refuses bounds that are not whole numbers with 1 ≤ min ≤ max', () => {
    assert.throws(() => new DeliveryLimit(0, 10), RangeError);
    assert.throws(() => new DeliveryLimit(10, 5), RangeError);
    assert.throws(() => new DeliveryLimit(1.5, 5), RangeError);
  });
});

describe('deliveryConcurrencyMax', () => {
  it('defaults to 256, follows a larger deliveryConcurrency, and may not be set below it', () => {
    assert.equal(resolveOptions({}).deliveryConcurrencyMax, 256);
    assert.equal(resolveOptions({ deliveryConcurrency: 500 }).deliveryConcurrencyMax, 500);
    assert.equal(resolveOptions({ deliveryConcurrency: 8, deliveryConcurrencyMax: 8 }).deliveryConcurrencyMax, 8);
    assert.throws(() => resolveOptions({ deliveryConcurrency: 64, deliveryConcurrencyMax: 32 }), BadConfig);
  });

  it('a node whose deliveries wait 80 ms on the bucket runs more than deliveryConcurrency at once', async () => {
    const clock = new SimClock(1_000_000);
    let running = 0;
    let most = 0;
    const d = new AlarmDelivery({
      clock,
      config: resolveOptions({ deliveriesPerSweep: 2_048 }),
      log: silentLogger(),
      metrics: new NodeMetrics(),
      deliver: async () => {
        most = Math.max(most, ++running);
        await clock.sleep(80);
        running--;
        return { type: 'ok', ran: true, result: null } as never;
      },
      giveBack: async () => undefined,
    });
    for (let i = 0; i < 2_000; i++) assert.equal(d.offer(parseAddress(`t/C/a${i}`), 999_000), true);
    await clock.advance(30_000);
    await d.drained();
    assert.ok(most > 32, `at most ${most} ran at once`);
    assert.ok(d.concurrency > 32 && d.concurrency <= 256, `limit ${d.concurrency}`);
  });
});
