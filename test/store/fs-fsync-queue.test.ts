/**
 * The fsync pool's growth rule (store/fs/fsync-queue.ts `wantsThread`): a thread is wanted when
 * none runs and fsyncs are queued, or when the fsyncs queued beyond the idle threads would wait,
 * at the running threads' recent pace, longer than QUEUE_DELAY_MAX_MS.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { QUEUE_DELAY_MAX_MS, wantsThread } from '../../src/store/fs/fsync-queue.js';

describe('fsync pool growth (wantsThread)', () => {
  it('wants none while the idle threads cover the queue', () => {
    assert.equal(wantsThread({ queued: 0, idle: 0, live: 0, serviceUs: 0 }), false);
    assert.equal(wantsThread({ queued: 3, idle: 3, live: 3, serviceUs: 100_000 }), false);
  });

  it('wants the first thread for any queued fsync', () => {
    assert.equal(wantsThread({ queued: 1, idle: 0, live: 0, serviceUs: 1 }), true);
  });

  it('leaves a queue the running threads clear quickly to them (fast fsyncs, or a busy CPU)', () => {
    // 30 fsyncs of 0.5 ms on 2 threads: 7.5 ms of waiting.
    assert.equal(wantsThread({ queued: 30, idle: 0, live: 2, serviceUs: 500 }), false);
    // A few queued on a journaled disk (4 ms each) behind 3 threads: 4 ms.
    assert.equal(wantsThread({ queued: 3, idle: 0, live: 3, serviceUs: 4_000 }), false);
  });

  it('grows for a batch the running threads would take long over (slow fsyncs)', () => {
    assert.equal(wantsThread({ queued: 8, idle: 0, live: 2, serviceUs: 5_000 }), true); // 20 ms
    assert.equal(wantsThread({ queued: 3, idle: 0, live: 1, serviceUs: 0 }), true); // none timed yet: 5 ms each
  });

  it('wants a thread exactly when the wait beyond the idle threads exceeds the bound', () => {
    fc.assert(
      fc.property(
        fc.nat(300),
        fc.nat(20),
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 1, max: 100_000 }),
        (queued, idle, live, serviceUs) => {
          const waitMs = ((queued - idle) * serviceUs) / 1000 / live;
          assert.equal(wantsThread({ queued, idle, live, serviceUs }), queued > idle && waitMs > QUEUE_DELAY_MAX_MS);
        },
      ),
    );
  });
});
