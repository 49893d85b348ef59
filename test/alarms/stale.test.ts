/**
 * Which index entries are stale and when they may be removed (stale.ts; R2/R3, the owner fence,
 * the empty-bucket rule: docs/alarm-index.md).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { staleEntries, staleRemoval } from '../../src/alarms/stale.js';
import { SAFE_RULES } from '../../src/alarms/rules.js';

const address = parseAddress('t/Rem/a');

describe('stale entries (pure)', () => {
  const e = (dueMs: number, gen: number | null, nonce = 'a') => ({ address, dueMs, tag: gen === null ? null : { generation: gen, nonce } });
  it('R2: every entry of the actor at that time except the one the state names; R3: none of a higher generation', () => {
    const listed = [e(5, 1, 'a'), e(5, 2, 'b'), e(5, 7, 'c'), e(5, null)];
    assert.deepEqual(staleEntries(listed, { at: 5, tag: { generation: 2, nonce: 'b' } }, 3, SAFE_RULES), [e(5, 1, 'a'), e(5, null)]);
    assert.deepEqual(staleEntries(listed, { at: 5, tag: null }, 9, SAFE_RULES), [e(5, 1, 'a'), e(5, 2, 'b'), e(5, 7, 'c')]);
    assert.deepEqual(staleEntries(listed, null, 0, SAFE_RULES), [e(5, null)]);
  });
  it('the owner fence first, unless the owner uploaded already; an empty bucket removes nothing', () => {
    assert.equal(staleRemoval({ foundNothing: false, uploadedUnderHold: false }, SAFE_RULES), 'fenceFirst');
    assert.equal(staleRemoval({ foundNothing: false, uploadedUnderHold: true }, SAFE_RULES), 'allowed');
    assert.equal(staleRemoval({ foundNothing: true, uploadedUnderHold: false }, SAFE_RULES), 'emptyBucket');
    assert.equal(staleRemoval({ foundNothing: true, uploadedUnderHold: true }, SAFE_RULES), 'allowed');
  });
  it('with a rule off (the simulator only): R3, the fence and the empty-bucket rule each stop holding', () => {
    const listed = [e(5, 1, 'a'), e(5, 7, 'c')];
    assert.deepEqual(staleEntries(listed, null, 3, { ...SAFE_RULES, generationCheck: false }), listed);
    const noFence = { ...SAFE_RULES, ownerFence: false };
    assert.equal(staleRemoval({ foundNothing: false, uploadedUnderHold: false }, noFence), 'allowed');
    assert.equal(staleRemoval({ foundNothing: true, uploadedUnderHold: false }, noFence), 'emptyBucket');
    const clearOnEmpty = { ...SAFE_RULES, keepOnEmptyBucket: false };
    assert.equal(staleRemoval({ foundNothing: true, uploadedUnderHold: false }, clearOnEmpty), 'allowed');
    assert.equal(staleRemoval({ foundNothing: false, uploadedUnderHold: false }, clearOnEmpty), 'fenceFirst');
  });
});
