/** classifyS3Error: which S3 answers (status and error name) the store retries, reads back, or fails on. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { classifyS3Error } from '../../src/store/s3/errors.js';

describe('classifyS3Error', () => {
  const err = (name: string, status?: number) => Object.assign(new Error(name), { name, $metadata: { httpStatusCode: status } });
  it('maps statuses and names to what the store does with them', () => {
    assert.equal(classifyS3Error(err('PreconditionFailed', 412)), 'precondition');
    assert.equal(classifyS3Error(err('NoSuchKey', 404)), 'notFound');
    assert.equal(classifyS3Error(err('NoSuchBucket', 404)), 'fatal');
    assert.equal(classifyS3Error(err('ConditionalRequestConflict', 409)), 'conflict');
    assert.equal(classifyS3Error(err('UnknownError', 500)), 'unknown');
    assert.equal(classifyS3Error(err('SlowDown', 503)), 'throttled');
    assert.equal(classifyS3Error(err('UnknownError', 429)), 'throttled');
    assert.equal(classifyS3Error(err('Throttling', 400)), 'throttled');
    assert.equal(classifyS3Error(err('RequestLimitExceeded', 503)), 'throttled');
    assert.equal(classifyS3Error(err('ServiceUnavailable', 503)), 'unknown', 'a 503 that does not say throttle may have been applied');
    assert.equal(classifyS3Error(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })), 'unknown');
    assert.equal(classifyS3Error(err('AccessDenied', 403)), 'fatal');
  });
});
