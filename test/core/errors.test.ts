import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BadKey, ErrorCode, KeepworkError, PreconditionFailed, isKeepworkError } from '../../src/core/errors.js';

describe('errors', () => {
  it('each class carries its stable code, name, cause and details', () => {
    const cause = new Error('root');
    const e = new PreconditionFailed('lost', { cause, details: { key: 'k' } });
    assert.ok(e instanceof KeepworkError && e instanceof Error);
    assert.equal(e.code, 'PRECONDITION_FAILED');
    assert.equal(e.name, 'PreconditionFailed');
    assert.equal(e.cause, cause);
    assert.deepEqual(e.details, { key: 'k' });
  });

  it('codes survive a structured clone (the worker boundary) and are matched by code', () => {
    const cloned = structuredClone(new BadKey('bad').toJSON());
    assert.ok(isKeepworkError(cloned, ErrorCode.BadKey));
    assert.ok(!isKeepworkError(cloned, ErrorCode.PreconditionFailed));
    assert.ok(!isKeepworkError({ code: 'ENOENT' }));
    assert.ok(!isKeepworkError(null));
  });
});
