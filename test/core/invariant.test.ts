import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { ErrorCode, isKeepworkError } from '../../src/core/errors.js';
import { invariant, invariantFailure, invariantHooks, type InternalError } from '../../src/core/invariant.js';

describe('invariant', () => {
  afterEach(() => (invariantHooks.onFailure = undefined));

  it('passes a true condition, and builds no message for it', () => {
    invariant(1 + 1 === 2, () => assert.fail('the message is built only on failure'));
  });

  it('throws an INTERNAL error naming what failed, with details', () => {
    assert.throws(
      () => invariant(false, 'plan over its cap', { cap: 3 }),
      (e: unknown) =>
        isKeepworkError(e, ErrorCode.Internal) &&
        /invariant failed: plan over its cap/.test(e.message) &&
        (e as InternalError).details.cap === 3,
    );
  });

  it('tells the hook at the moment it fails, even when the caller catches the error', () => {
    const heard: string[] = [];
    invariantHooks.onFailure = (e) => heard.push(e.message);
    try {
      invariant(false, () => 'lazy message');
    } catch {
      /* a caller turning it into a reply */
    }
    const e = invariantFailure('built, not thrown');
    assert.deepEqual(heard, ['invariant failed: lazy message', 'invariant failed: built, not thrown']);
    assert.equal(e.code, ErrorCode.Internal);
  });
});
