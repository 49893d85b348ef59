/** src/bench/s3-prices.ts: store operations named by S3 request and priced per million. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { byVerb, dollarsPerMillion } from '../../bench/support/s3-prices.js';

describe('S3 prices', () => {
  it('names each store operation by its S3 request', () => {
    const ops = { get: 1, head: 0.5, put: 1, put_conditional: 2, list: 1, delete: 0.25, delete_many: 0.01 };
    assert.deepEqual(byVerb(ops), { GET: 1, HEAD: 0.5, PUT: 1, 'conditional PUT': 2, LIST: 1, DELETE: 0.25, DeleteObjects: 0.01 });
    assert.throws(() => byVerb({ copy: 1 }), /no S3 price for store operation copy/);
  });

  it('prices PUT, conditional PUT, LIST and DeleteObjects at $0.005, GET and HEAD at $0.0004 per 1,000, DELETE free', () => {
    assert.equal(dollarsPerMillion({ PUT: 1 }), 5);
    assert.equal(dollarsPerMillion({ GET: 1, HEAD: 1, DELETE: 10 }), 0.8);
    const delivery = dollarsPerMillion({ GET: 1, 'conditional PUT': 2, LIST: 1, DeleteObjects: 0.02 });
    assert.ok(Math.abs(delivery - (0.4 + 10 + 5 + 0.1)) < 1e-9, String(delivery));
  });
});
