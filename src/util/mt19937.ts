/**
 * MT19937 seeded as NumPy's legacy `numpy.random.seed(int)` seeds it (init_genrand), with
 * `random_sample` (53-bit doubles, genrand_res53) and `uniform(low, high)`. A generator that must
 * draw exactly what a NumPy script draws from the same seed uses it: DSS's trace generator, whose
 * traces minimr regenerates byte for byte (src/workloads/dss-traces.ts). Everything else draws from
 * the smaller seeded generators of random.ts.
 */
const N = 624;
const M = 397;
const MATRIX_A = 0x9908b0df;
const UPPER_MASK = 0x80000000;
const LOWER_MASK = 0x7fffffff;

export class Mt19937 {
  private readonly state = new Uint32Array(N);
  private index = N;

  /** `seed` an integer in [0, 2^32), as NumPy requires. */
  constructor(seed: number) {
    if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff)
      throw new RangeError(`an MT19937 seed is an integer in [0, 2^32), not ${seed}`);
    const mt = this.state;
    mt[0] = seed >>> 0;
    for (let i = 1; i < N; i++) {
      const prev = mt[i - 1]! ^ (mt[i - 1]! >>> 30);
      // 1812433253 * prev + i, modulo 2^32, in two 16-bit halves so nothing exceeds 2^53.
      mt[i] = (((((prev & 0xffff0000) >>> 16) * 1812433253) << 16) + (prev & 0x0000ffff) * 1812433253 + i) >>> 0;
    }
  }

  private twist(): void {
    const mt = this.state;
    for (let k = 0; k < N; k++) {
      const y = (mt[k]! & UPPER_MASK) | (mt[(k + 1) % N]! & LOWER_MASK);
      mt[k] = mt[(k + M) % N]! ^ (y >>> 1) ^ (y & 1 ? MATRIX_A : 0);
    }
    this.index = 0;
  }

  /** The next 32-bit output (genrand_int32). */
  nextUint32(): number {
    if (this.index >= N) this.twist();
    let y = this.state[this.index++]!;
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y >>> 0;
  }

  /** A double in [0, 1) with 53 random bits, as NumPy's `random_sample`. */
  randomSample(): number {
    const a = this.nextUint32() >>> 5;
    const b = this.nextUint32() >>> 6;
    return (a * 67108864 + b) / 9007199254740992;
  }

  /** `numpy.random.uniform(low, high)`: low + (high - low) * random_sample(). */
  uniform(low: number, high: number): number {
    return low + (high - low) * this.randomSample();
  }
}
