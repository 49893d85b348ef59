/**
 * The two TEST-ONLY rules the chaos run turns off (src/alarms/rules.ts; docs/testing.md "Planted
 * bugs"): each does what its breakage needs, and on (SAFE_RULES) it does not.
 *
 *   deleteAfterUpload off   the entry an event replaced is deleted before the link holding it is up
 *   idempotencyRecord off   a repeated idempotency key runs the handler again
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SAFE_RULES, type ProtocolRules } from '../../src/alarms/rules.js';
import { SimClock } from '../../src/core/clock.js';
import { listAll } from '../../src/store/keys.js';
import { MemoryStore } from '../../src/store/memory.js';
import { inlineEnvs, okResult, Timer } from '../helpers/inline-actors.js';

const env = inlineEnvs({ Timer }, { replicationDelayMs: 20 });
const A = 't/Timer/a';
const off = (rule: keyof ProtocolRules): ProtocolRules => ({ ...SAFE_RULES, [rule]: false });

async function entries(store: MemoryStore): Promise<string[]> {
  const keys: string[] = [];
  for await (const k of listAll(store, { prefix: 'alarms/' })) keys.push(k);
  return keys;
}

describe('the rules the chaos run plants off', () => {
  for (const rules of [SAFE_RULES, off('deleteAfterUpload')])
    it(`deleteAfterUpload ${rules.deleteAfterUpload ? 'on: the replaced entry stays until the upload' : 'off: it is gone before the upload'}`, async () => {
      const clock = new SimClock(1_800_000_000_000);
      const store = new MemoryStore({ clock });
      const e = env(store, 0, { clock });
      e.deps = { ...e.deps, rules };
      okResult(await e.callDurable(A, 'arm', 60_000));
      assert.equal((await entries(store)).length, 1);
      store.setFaults((r) => (r.op === 'put' && r.key.startsWith('state/') ? { delayMs: 60_000 } : undefined)); // uploads hang
      okResult(await e.call(A, 'arm', 120_000));
      await clock.advance(1_000);
      assert.equal((await entries(store)).length, rules.deleteAfterUpload ? 2 : 1);
      store.setFaults(undefined);
      await clock.advance(60_000);
    });

  for (const rules of [SAFE_RULES, off('idempotencyRecord')])
    it(`idempotencyRecord ${rules.idempotencyRecord ? 'on: a repeated key is answered from its record' : 'off: a repeated key runs again'}`, async () => {
      const e = env(new MemoryStore(), 0);
      e.deps = { ...e.deps, rules };
      assert.equal(okResult(await e.callOnce('k1', A, 'arm', 60_000)), 1);
      assert.equal(okResult(await e.callOnce('k1', A, 'arm', 60_000)), rules.idempotencyRecord ? 1 : 2);
    });
});
