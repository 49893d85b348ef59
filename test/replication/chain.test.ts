import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseAddress } from '../../src/core/address.js';
import { SimClock } from '../../src/core/clock.js';
import { SeededRandom } from '../../src/core/random.js';
import { ChainConflict, createLink } from '../../src/replication/chain.js';
import { CorruptLink } from '../../src/core/errors.js';
import { decodeLink, encodeLink } from '../../src/replication/link.js';
import { chainPrefix, linkKey, parseLinkKey, seqOfKey } from '../../src/replication/state-keys.js';
import { MemoryStore } from '../../src/store/memory.js';

const a = parseAddress('acme/Counter/hits é');
const fields = (seq: number) => ({
  seq,
  kind: 'delta' as const,
  generation: 3,
  nodeId: 'n1',
  epoch: 2,
  atMs: 1_800_000_000_000,
  pageSize: 4096,
  pageCount: 7,
});
const retry = { clock: new SimClock(), random: new SeededRandom(1), attemptsMax: 3, retryBaseMs: 1 };

describe('state keys', () => {
  it('build and parse round-trip, in seq order', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), (seq) => {
        const key = linkKey(a, seq);
        assert.equal(seqOfKey(a, key), seq);
        assert.deepEqual(parseLinkKey(key), { address: a, seq });
      }),
    );
    assert.ok(linkKey(a, 9) < linkKey(a, 10));
    assert.equal(
      linkKey(a, 7),
      'state/acme/Counter/68697473c3a9/00000000000000000007'.replace('68697473c3a9', Buffer.from('hits é').toString('hex')),
    );
    assert.ok(linkKey(a, 1).startsWith(chainPrefix(a)));
    assert.equal(seqOfKey(a, chainPrefix(a) + 'x'), undefined);
    assert.throws(() => linkKey(a, 0), RangeError);
  });
});

describe('links', () => {
  it('round-trip with their header', () => {
    const payload = Uint8Array.from({ length: 10_000 }, (_, i) => i % 7);
    const link = decodeLink(encodeLink(fields(5), payload), 5);
    assert.deepEqual({ ...link.header, sha256: '', size: 0 }, { v: 1, ...fields(5), sha256: '', size: 0 });
    assert.deepEqual(Buffer.from(link.payload), Buffer.from(payload));
  });

  it('any corrupted byte, a wrong seq or a foreign body is detected', () => {
    const body = encodeLink(
      fields(5),
      Uint8Array.from({ length: 500 }, (_, i) => i & 0xff),
    );
    assert.throws(() => decodeLink(body, 6), CorruptLink);
    assert.throws(() => decodeLink(new TextEncoder().encode('hello world'), 5), CorruptLink);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: body.length - 1 }), fc.integer({ min: 1, max: 255 }), (i, x) => {
        const bad = Uint8Array.from(body);
        bad[i] = bad[i]! ^ x;
        assert.throws(
          () => decodeLink(bad, 5),
          (e: { code?: string }) => e.code === 'CORRUPT_LINK',
        );
      }),
      { numRuns: 300 },
    );
  });
});

describe('creating a link', () => {
  it('two writers racing for the same seq: exactly one wins, the other is told it conflicts', async () => {
    const store = new MemoryStore();
    const bodies = Array.from({ length: 16 }, (_, i) => encodeLink({ ...fields(1), nodeId: `n${i}` }, new Uint8Array(0)));
    const results = await Promise.allSettled(bodies.map((b) => createLink(store, a, 1, b, retry)));
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
    for (const r of results)
      if (r.status === 'rejected') assert.ok(r.reason instanceof ChainConflict && r.reason.code === 'ACTOR_GIVEN_UP');
  });

  it('a retried create whose 412 shows our own body is a success', async () => {
    const clock = new SimClock();
    const store = new MemoryStore({ clock });
    const body = encodeLink(fields(1), new Uint8Array(3));
    // The first attempt times out but lands; the retry meets our own object.
    store.setFaults((r) => (r.op === 'put' && r.seq === 0 ? { timeout: { afterMs: 5, landAfterMs: 6 } } : undefined));
    const created = createLink(store, a, 1, body, { ...retry, clock, retryBaseMs: 10 });
    await clock.advance(100);
    const { etag } = await created;
    assert.equal((await store.get(linkKey(a, 1)))!.etag, etag);
  });

  it('a persistent failure is reported after the bounded attempts', async () => {
    const clock = new SimClock();
    const store = new MemoryStore({ faults: (r) => (r.op === 'put' ? { fail: true } : undefined) });
    const created = assert.rejects(createLink(store, a, 1, encodeLink(fields(1), new Uint8Array(0)), { ...retry, clock }), {
      code: 'STORE_UNAVAILABLE',
    });
    await clock.advance(1000);
    await created;
    assert.equal(store.counts.put, 3);
  });
});
