import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseAddress } from '../../src/core/address.js';
import { ErrorCode, isKeepworkError } from '../../src/core/errors.js';
import { SeededRandom } from '../../src/core/random.js';
import {
  DUE_MAX_MS,
  NonceSource,
  dueBound,
  entryKey,
  formatIndexed,
  parseEntryKey,
  parseIndexed,
  type IndexEntry,
} from '../../src/alarms/keys.js';
import { compareKeys, validateKey } from '../../src/store/keys.js';

const address = fc.record({
  tenant: fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,20}$/),
  className: fc.stringMatching(/^[A-Za-z0-9_-]{1,20}$/),
  name: fc.string({ minLength: 1, maxLength: 40, unit: 'grapheme' }).filter((s) => Buffer.byteLength(s) <= 400),
});
const tag = fc.option(
  fc.record({ generation: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), nonce: fc.stringMatching(/^[0-9a-f]{1,32}$/) }),
  { nil: null },
);
const entry: fc.Arbitrary<IndexEntry> = fc.record({
  address: address.map((a) => parseAddress(a)),
  dueMs: fc.integer({ min: 0, max: DUE_MAX_MS }),
  tag,
});

describe('alarm index keys', () => {
  it('round-trip, tagged and legacy, and every key is a valid store key', () => {
    fc.assert(
      fc.property(entry, (e) => {
        const key = entryKey(e);
        validateKey(key);
        assert.equal(JSON.stringify(parseEntryKey(key)), JSON.stringify(e));
      }),
      { numRuns: 500 },
    );
  });

  it('byte order equals due order', () => {
    fc.assert(
      fc.property(entry, entry, (a, b) => {
        if (a.address.tenant !== b.address.tenant || a.dueMs === b.dueMs) return;
        assert.equal(Math.sign(compareKeys(entryKey(a), entryKey(b))), Math.sign(a.dueMs - b.dueMs));
      }),
      { numRuns: 500 },
    );
  });

  it('no key is both an object and the folder of another', () => {
    fc.assert(
      fc.property(fc.array(entry, { minLength: 2, maxLength: 8 }), (entries) => {
        const keys = entries.map(entryKey);
        for (const k of keys) for (const other of keys) assert.ok(!other.startsWith(k + '/'), `${k} is a folder of ${other}`);
      }),
    );
    const a = parseAddress('t/C/x');
    const legacy = entryKey({ address: a, dueMs: 5, tag: null });
    const tagged = entryKey({ address: a, dueMs: 5, tag: { generation: 1, nonce: 'ab' } });
    assert.ok(!tagged.startsWith(legacy + '/'));
  });

  it('the listing bound includes exactly the entries due at or before it', () => {
    const a = parseAddress('t/C/x');
    const bound = dueBound('t', 1000);
    assert.ok(compareKeys(entryKey({ address: a, dueMs: 1000, tag: { generation: 9, nonce: 'ff' } }), bound) < 0);
    assert.ok(compareKeys(entryKey({ address: a, dueMs: 1001, tag: null }), bound) >= 0);
  });

  it('alarm_indexed: tagged, legacy (a bare <at>) and none', () => {
    assert.deepEqual(parseIndexed('1800000000000/00000000000000000003-ab12'), {
      at: 1_800_000_000_000,
      tag: { generation: 3, nonce: 'ab12' },
    });
    assert.deepEqual(parseIndexed('1800000000000'), { at: 1_800_000_000_000, tag: null });
    assert.equal(parseIndexed(''), null);
    assert.equal(parseIndexed(null), null);
    assert.equal(formatIndexed({ at: 5, tag: { generation: 2, nonce: 'c' } }), '5/00000000000000000002-c');
    assert.equal(formatIndexed(null), '');
    assert.throws(
      () => parseIndexed('soon'),
      (e: unknown) => isKeepworkError(e, ErrorCode.CorruptState) && /alarm_indexed holds "soon"/.test(e.message),
    );
    assert.throws(
      () => parseIndexed('5/not-a-tag'),
      (e: unknown) => isKeepworkError(e, ErrorCode.CorruptState),
    );
  });

  it('an alarm time past the index’s 15 digits is BAD_REQUEST (the caller’s input), not a handler failure', () => {
    const a = parseAddress({ tenant: 't', className: 'C', name: 'n' });
    assert.throws(
      () => entryKey({ address: a, dueMs: DUE_MAX_MS + 1, tag: null }),
      (e: unknown) => isKeepworkError(e, ErrorCode.BadRequest),
    );
    assert.throws(
      () => dueBound('t', -1),
      (e: unknown) => isKeepworkError(e, ErrorCode.BadRequest),
    );
  });

  it('R1: a nonce source never repeats', () => {
    const n = new NonceSource(new SeededRandom(1));
    const seen = new Set(Array.from({ length: 10_000 }, () => n.next()));
    assert.equal(seen.size, 10_000);
  });
});
