/** Which index entries are stale and when they may be removed (stale.ts; ADR 0009 R2/R3, the owner fence, the empty-bucket rule). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAddress } from '../../src/core/address.js';
import { staleEntries, staleRemoval } from '../../src/alarms/stale.js';

const address = parseAddress('t/Rem/a');

describe('stale entries (pure)', () => {
  const e = (dueMs: number, gen: number | null, nonce = 'a') => ({ address, dueMs, tag: gen === null ? null : { generation: gen, nonce } });
  it('R2: every entry of the actor at that time except the one the state names; R3: none of a higher generation', () => {
    const listed = [e(5, 1, 'a'), e(5, 2, 'b'), e(5, 7, 'c'), e(5, null)];
    assert.deepEqual(staleEntries(listed, { at: 5, tag: { generation: 2, nonce: 'b' } }, 3), [e(5, 1, 'a'), e(5, null)]);
    assert.deepEqual(staleEntries(listed, { at: 5, tag: null }, 9), [e(5, 1, 'a'), e(5, 2, 'b'), e(5, 7, 'c')]);
    assert.deepEqual(staleEntries(listed, null, 0), [e(5, null)]);
  });
  it('the owner fence first, unless the owner uploaded already; an empty bucket removes nothing', () => {
    assert.equal(staleRemoval({ foundNothing: false, uploadedUnderHold: false }), 'fenceFirst');
    assert.equal(staleRemoval({ foundNothing: false, uploadedUnderHold: true }), 'allowed');
    assert.equal(staleRemoval({ foundNothing: true, uploadedUnderHold: false }), 'emptyBucket');
    assert.equal(staleRemoval({ foundNothing: true, uploadedUnderHold: true }), 'allowed');
  });
});
