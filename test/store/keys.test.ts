import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { compareKeys, resolveList, validateKey } from '../../src/store/keys.js';

const sign = (n: number) => Math.sign(n);

describe('store keys', () => {
  it('compareKeys equals UTF-8 byte order for any strings', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme' }), (a, b) => {
        assert.equal(sign(compareKeys(a, b)), sign(Buffer.compare(Buffer.from(a), Buffer.from(b))));
      }),
      { numRuns: 2000 },
    );
  });

  it('compareKeys orders an astral character after U+FF61 (UTF-16 order would not)', () => {
    assert.ok('\ud83d\ude00' < '\uff61');
    assert.ok(compareKeys('\ud83d\ude00', '\uff61') > 0);
  });

  it('accepts the key formats of the bucket layout', () => {
    for (const k of [
      'nodes/n1',
      'holds/t/Counter/6a6f65',
      'state/t/C/00/00000000000000000001',
      'alarms/t/000001700000000000/C.t/00/00000000000000000001-ab',
    ]) {
      assert.equal(validateKey(k), k);
    }
  });

  it('refuses keys whose segments could escape a folder, whatever surrounds them', () => {
    fc.assert(
      fc.property(fc.array(fc.stringMatching(/^[a-z0-9]{1,4}$/), { maxLength: 3 }), fc.constantFrom('..', '.', ''), (segs, bad) => {
        const key = [...segs, bad, 'x'].join('/');
        assert.throws(() => validateKey(key), { code: 'BAD_KEY' });
      }),
    );
  });

  it('folds startAfter and continuation into the larger lower bound', () => {
    const token = Buffer.from('m').toString('base64url');
    assert.equal(resolveList({ startAfter: 'a', continuation: token }).after, 'm');
    assert.equal(resolveList({ startAfter: 'z', continuation: token }).after, 'z');
    assert.throws(() => resolveList({ continuation: 'not a token!' }), { code: 'BAD_REQUEST' });
  });
});
