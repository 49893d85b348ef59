/**
 * A link's body round-trips whatever its payload deflates to: an empty one, pages that deflate to a
 * sliver of the output buffer, and random bytes that deflate to more than the payload itself (the
 * output then spans several of encodeLink's deflate chunks).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { decodeLink, encodeLink } from '../../src/replication/link.js';

const FIELDS = {
  seq: 3,
  kind: 'delta',
  generation: 2,
  nodeId: 'n1',
  epoch: 1,
  atMs: 1_700_000_000_000,
  pageSize: 4096,
  pageCount: 5,
} as const;

function pages(n: number): Buffer {
  const b = Buffer.alloc(n * 4096);
  for (let p = 0; p < n; p++) b.write(`page ${p} of a database image`, p * 4096 + 100);
  return b;
}

describe('link round trip', () => {
  for (const [name, payload] of [
    ['empty', Buffer.alloc(0)],
    ['one byte', Buffer.from([7])],
    ['three sparse pages (12 KB)', pages(3)],
    ['random 100 KB (deflates to more than its own size)', randomBytes(100 * 1024)],
    ['random 5 KB', randomBytes(5 * 1024)],
    ['256 sparse pages (1 MB)', pages(256)],
  ] as const) {
    it(`${name}: the payload and header come back as they went`, () => {
      const link = decodeLink(encodeLink(FIELDS, payload), FIELDS.seq);
      assert.deepEqual(Buffer.from(link.payload), payload);
      assert.equal(link.header.size, payload.byteLength);
      assert.equal(link.header.kind, 'delta');
      assert.equal(link.header.pageCount, 5);
    });
  }
});
