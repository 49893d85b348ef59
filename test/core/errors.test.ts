import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  BadKey,
  CorruptLink,
  CorruptState,
  ErrorCode,
  Internal,
  KeepworkError,
  MethodNotAllowed,
  PayloadTooLarge,
  PreconditionFailed,
  isKeepworkError,
  reviveError,
  errorOf,
  Forbidden,
} from '../../src/core/errors.js';

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

describe('errors across the worker boundary', () => {
  it('reviveError keeps the thrower’s stack, code, message and details', () => {
    const thrown = new CorruptLink('link 7: bad', { details: { seq: 7 } });
    const revived = reviveError(structuredClone(thrown.toJSON()));
    assert.equal(revived.code, ErrorCode.CorruptLink);
    assert.equal(revived.message, 'link 7: bad');
    assert.deepEqual(revived.details, { seq: 7 });
    assert.equal(revived.stack, thrown.stack);
    assert.match(revived.stack!, /errors\.test\.ts/, 'the stack names the file that threw');
  });

  it('a revived error without a stack gets one of its own', () => {
    const revived = reviveError({ code: ErrorCode.HandlerFailed, message: 'x' });
    assert.match(revived.stack!, /x/);
  });

  it('the codes the HTTP layer answers with are ErrorCodes, each with its class', () => {
    const kinds = [
      [new CorruptLink('a'), 'CORRUPT_LINK', 'CorruptLink'],
      [new CorruptState('a'), 'CORRUPT_STATE', 'CorruptState'],
      [new Internal('a'), 'INTERNAL', 'Internal'],
      [new PayloadTooLarge('a'), 'PAYLOAD_TOO_LARGE', 'PayloadTooLarge'],
      [new MethodNotAllowed('a'), 'METHOD_NOT_ALLOWED', 'MethodNotAllowed'],
    ] as const;
    for (const [e, code, name] of kinds) {
      assert.equal(e.code, code);
      assert.equal(e.name, name);
      assert.ok(isKeepworkError(e, code));
    }
  });
});

describe('errorOf', () => {
  it('raises every code as its own class (what keepwork/client rebuilds from an answer)', () => {
    for (const code of Object.values(ErrorCode)) {
      const e = errorOf(code, 'm', { details: { status: 500 } });
      assert.equal(e.code, code);
      assert.equal(
        e.constructor.name,
        Object.keys(ErrorCode).find((k) => ErrorCode[k as keyof typeof ErrorCode] === code),
      );
      assert.deepEqual(e.details, { status: 500 });
    }
    assert.ok(errorOf(ErrorCode.Forbidden, 'no') instanceof Forbidden);
  });
});
