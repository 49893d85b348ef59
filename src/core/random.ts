/**
 * The `Random` seam. Protocol code draws nonces, jitter and rotations from an
 * injected `Random`, never from `Math.random` or `crypto` directly.
 *
 *   SystemRandom  crypto.randomBytes / crypto.randomInt     (production)
 *   SeededRandom  xoshiro128** seeded by splitmix32          (simulator, tests: same seed, same run)
 */
import { randomBytes, randomInt } from 'node:crypto';

export interface Random {
  /** A float in [0, 1). */
  float(): number;
  /** An integer in [0, n), for 1 <= n <= 2^32. */
  int(n: number): number;
  /** `n` random bytes. */
  bytes(n: number): Uint8Array;
}

export class SystemRandom implements Random {
  float(): number {
    return randomBytes(4).readUInt32LE(0) / 2 ** 32;
  }
  int(n: number): number {
    checkBound(n);
    return n === 1 ? 0 : randomInt(0, n);
  }
  bytes(n: number): Uint8Array {
    return new Uint8Array(randomBytes(n));
  }
}

/** Deterministic: the same seed yields the same sequence on every machine. */
export class SeededRandom implements Random {
  private readonly s = new Uint32Array(4);
  readonly seed: number;

  constructor(seed: number) {
    if (!Number.isSafeInteger(seed)) throw new TypeError(`seed must be a safe integer, got ${seed}`);
    this.seed = seed;
    let x = (seed ^ Math.floor(seed / 2 ** 32)) >>> 0;
    for (let i = 0; i < 4; i++) {
      x = (x + 0x9e3779b9) >>> 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      this.s[i] = (z ^ (z >>> 16)) >>> 0;
    }
    if (this.s.every((v) => v === 0)) this.s[0] = 1;
  }

  /** The next 32 random bits (xoshiro128**). */
  next32(): number {
    const s = this.s;
    const result = Math.imul(rotl(Math.imul(s[1]!, 5), 7), 9) >>> 0;
    const t = (s[1]! << 9) >>> 0;
    s[2]! ^= s[0]!;
    s[3]! ^= s[1]!;
    s[1]! ^= s[2]!;
    s[0]! ^= s[3]!;
    s[2]! ^= t;
    s[3] = rotl(s[3]!, 11);
    return result;
  }

  float(): number {
    return this.next32() / 2 ** 32;
  }

  int(n: number): number {
    checkBound(n);
    // Rejection sampling keeps the result unbiased.
    const limit = 2 ** 32 - (2 ** 32 % n);
    for (;;) {
      const v = this.next32();
      if (v < limit) return v % n;
    }
  }

  bytes(n: number): Uint8Array {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i += 4) {
      const v = this.next32();
      for (let j = 0; j < 4 && i + j < n; j++) out[i + j] = (v >>> (8 * j)) & 0xff;
    }
    return out;
  }

  /** An independent generator derived from this one (for a component of a simulation). */
  fork(): SeededRandom {
    return new SeededRandom(this.next32() * 2 ** 21 + (this.next32() >>> 11));
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

function checkBound(n: number): void {
  if (!Number.isInteger(n) || n < 1 || n > 2 ** 32) throw new RangeError(`int(n) needs an integer 1 <= n <= 2^32, got ${n}`);
}

/** Lowercase hex of `random.bytes(n)`. */
export function randomHex(random: Random, n: number): string {
  return Buffer.from(random.bytes(n)).toString('hex');
}

/** A delay in [base * (1 - spread), base], drawn from `random` ("equal jitter"). */
export function jitter(random: Random, baseMs: number, spread = 0.5): number {
  return Math.round(baseMs * (1 - spread * random.float()));
}
