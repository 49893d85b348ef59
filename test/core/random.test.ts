import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { SeededRandom, SystemRandom, jitter, randomHex } from '../../src/core/random.js';

describe('SeededRandom', () => {
  it('the same seed gives the same sequence; different seeds differ', () => {
    const a = new SeededRandom(42);
    const b = new SeededRandom(42);
    const c = new SeededRandom(43);
    const seq = (r: SeededRandom) => Array.from({ length: 8 }, () => r.next32());
    const sa = seq(a);
    assert.deepEqual(sa, seq(b));
    assert.notDeepEqual(sa, seq(c));
  });

  it('int(n) stays in range and float in [0, 1) for any seed', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 40 }), fc.integer({ min: 1, max: 1_000_000 }), (seed, n) => {
        const r = new SeededRandom(seed);
        for (let i = 0; i < 20; i++) {
          const v = r.int(n);
          assert.ok(Number.isInteger(v) && v >= 0 && v < n);
          const f = r.float();
          assert.ok(f >= 0 && f < 1);
        }
      }),
    );
  });

  it('int(n) is roughly uniform', () => {
    const r = new SeededRandom(7);
    const counts = new Array(4).fill(0);
    for (let i = 0; i < 40_000; i++) counts[r.int(4)]++;
    for (const c of counts) assert.ok(c > 9_000 && c < 11_000, `${counts}`);
  });

  it('bytes(n) has n bytes and is reproducible', () => {
    assert.equal(new SeededRandom(1).bytes(7).length, 7);
    assert.deepEqual(new SeededRandom(1).bytes(9), new SeededRandom(1).bytes(9));
    assert.match(randomHex(new SeededRandom(3), 8), /^[0-9a-f]{16}$/);
  });

  it('refuses a bad bound', () => {
    assert.throws(() => new SeededRandom(1).int(0), RangeError);
    assert.throws(() => new SystemRandom().int(1.5), RangeError);
  });

  it('jitter stays within [base * (1 - spread), base]', () => {
    const r = new SeededRandom(9);
    for (let i = 0; i < 100; i++) {
      const j = jitter(r, 1000, 0.5);
      assert.ok(j >= 500 && j <= 1000, String(j));
    }
  });
});

describe('SystemRandom', () => {
  it('gives bytes, floats and ints in range', () => {
    const r = new SystemRandom();
    assert.equal(r.bytes(16).length, 16);
    const f = r.float();
    assert.ok(f >= 0 && f < 1);
    assert.equal(r.int(1), 0);
  });
});
