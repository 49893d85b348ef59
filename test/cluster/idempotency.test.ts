/**
 * Exactly-once durable calls across real node processes (docs/guide.md "Idempotent durable calls"):
 *
 *   forward timeout   a durable call forwarded to a holder whose handler is slow times out with
 *                     OWNER_UNREACHABLE; the client retries with the same Idempotency-Key until it
 *                     is answered: the call is applied once and every answer is the first result
 *                     (the retries reach the holder's lane behind the first run; forwarding keeps
 *                     the key)
 *   kill -9           a repeat after kill -9 of the holder and the takeover by another node
 *                     returns the first result (and the recorded error); other arguments → 409
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { checkBucket, LinkLedger } from './chains.js';
import { call, mustCall, type CallResult } from '../../support/cluster/calls.js';
import { FAST, withCluster } from '../../support/cluster/cluster.js';
import { checkNoLeftovers } from './leftovers.js';
import { waitFor } from '../helpers/wait.js';
import { describeCall } from './takeover.js';

checkNoLeftovers();

const TEST_OPTIONS = { timeout: 120_000 };
const TAKEOVER_BOUND_MS = FAST.leasePeriodMs! + FAST.graceMs! + 20_000;

describe('idempotent durable calls (real node processes)', () => {
  it('a retry after a forward timed out (OWNER_UNREACHABLE) is applied once and answered with the first result', TEST_OPTIONS, (t) =>
    withCluster(t, 'idem-forward', async (c) => {
      // n2 forwards with a short time limit; the holder n1 takes far longer than that to answer.
      const FORWARD_TIMEOUT_MS = 1_500;
      const HANDLER_MS = 6_000;
      const n1 = await c.start('n1', { set: { leasePeriodMs: 6_000 } });
      const n2 = await c.start('n2', { set: { leasePeriodMs: 6_000, forwardTimeoutMs: FORWARD_TIMEOUT_MS } });
      const X = 'idem/Probe/pay';
      assert.equal(await mustCall(n1.url, X, 'value'), 0, 'n1 takes the actor');

      const attempts: CallResult[] = [];
      const once = { durable: true, idempotencyKey: 'payment-4711', timeoutMs: 30_000 };
      const answer = await waitFor('a retry through n2 to be answered', 60_000, async () => {
        const r = await call(n2.url, X, 'slowIncrement', [HANDLER_MS], once);
        attempts.push(r);
        return r.ok ? r.result : undefined;
      });
      assert.deepEqual(
        { status: attempts[0]!.status, error: attempts[0]!.error },
        { status: 503, error: 'OWNER_UNREACHABLE' },
        `the first attempt times out in the forward: ${describeCall(attempts[0]!)}`,
      );
      for (const r of attempts.slice(0, -1))
        assert.equal(r.error, 'OWNER_UNREACHABLE', `every attempt before the answer timed out: ${describeCall(r)}`);
      assert.equal(answer, 1, 'the retry is answered with the first run’s result');
      // A plain read queues behind every retry still waiting in n1's lane for the actor.
      assert.equal(await mustCall(n1.url, X, 'value'), 1, `applied once over ${attempts.length} attempts`);
      assert.equal(await mustCall(n2.url, X, 'slowIncrement', [HANDLER_MS], once), 1, 'one more repeat, answered from the record');
      assert.equal(await mustCall(n1.url, X, 'value'), 1);
    }),
  );

  it('a repeat after kill -9 of the holder and a takeover returns the first result; other arguments → 409', TEST_OPTIONS, (t) =>
    withCluster(t, 'idem-kill9', async (c) => {
      const [n1, n2] = await c.startAll(['n1', 'n2']);
      const X = 'idem/Probe/order';
      const pay = { durable: true, idempotencyKey: 'order-17' };
      const refuse = { durable: true, idempotencyKey: 'order-17-refund' };
      assert.equal(await mustCall(n1!.url, X, 'slowIncrement', [1], pay), 1);
      const refused = await call(n1!.url, X, 'refuse', ['card declined'], refuse);
      assert.deepEqual(
        { status: refused.status, error: refused.error, message: refused.message },
        {
          status: 500,
          error: 'HANDLER_FAILED',
          message: 'card declined',
        },
      );
      await n1!.killAndWait('SIGKILL');

      // Until n2 takes the actor over, its repeats are forwarded to the dead n1 and refused.
      const repeated = await waitFor('a repeat through n2 to be answered after the takeover', TAKEOVER_BOUND_MS, async () => {
        const r = await call(n2!.url, X, 'slowIncrement', [1], { ...pay, timeoutMs: 5_000 });
        return r.ok ? r.result : undefined;
      });
      assert.equal(repeated, 1, 'the first result, from the record the chain carried');
      const again = await call(n2!.url, X, 'refuse', ['card declined'], refuse);
      assert.deepEqual(
        { status: again.status, error: again.error, message: again.message },
        {
          status: 500,
          error: 'HANDLER_FAILED',
          message: 'card declined',
        },
      );
      const mismatch = await call(n2!.url, X, 'slowIncrement', [2], pay);
      assert.deepEqual({ status: mismatch.status, error: mismatch.error }, { status: 409, error: 'IDEMPOTENCY_MISMATCH' });
      assert.equal(await mustCall(n2!.url, X, 'value'), 1, 'the handler never ran again');
      await checkBucket(c.store(), new LinkLedger(), join(c.root, 'restore'));
    }),
  );
});
