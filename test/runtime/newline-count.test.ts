import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { countNewlines } from '../../src/runtime/task/newline-count.js';

/** The reference: one byte at a time. */
function newlinesOneByOne(bytes: Uint8Array): number {
  let n = 0;
  for (const b of bytes) if (b === 0x0a) n++;
  return n;
}

/**
 * Deterministic bytes in which `\n` has probability about 1/`every`; the rest avoids 0x0a but includes its look-alikes
 * (0x8a, 0x0b, 0x1a).
 */
function textBytes(length: number, every: number, seed: number): Buffer {
  const out = Buffer.alloc(length);
  let x = seed >>> 0 || 1;
  const others = [0x20, 0x61, 0x8a, 0x0b, 0x1a, 0x0d, 0xff, 0x00];
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x % every === 0 ? 0x0a : others[x % others.length]!;
  }
  return out;
}

describe('countNewlines', () => {
  it('counts like a byte loop on short, odd-length and unaligned inputs', () => {
    const data = textBytes(5000, 7, 1);
    for (const [start, end] of [
      [0, 0],
      [0, 1],
      [0, 15],
      [0, 16],
      [0, 17],
      [1, 33],
      [3, 4099],
      [7, 5000],
      [4999, 5000],
    ] as const) {
      const bytes = data.subarray(start, end);
      assert.equal(countNewlines(bytes), newlinesOneByOne(bytes), `[${start}, ${end})`);
    }
  });

  it('counts inputs longer than its 1 MiB pieces, with long and short lines', () => {
    for (const [length, every, seed] of [
      [3 * (1 << 20) + 5, 80, 2],
      [(1 << 20) + 16, 3, 3],
      [2 * (1 << 20) - 1, 100_000, 4],
    ] as const) {
      const bytes = textBytes(length, every, seed).subarray(1);
      assert.equal(countNewlines(bytes), newlinesOneByOne(bytes), `${length} bytes, 1 in ${every}`);
    }
  });

  it('does not overflow when every byte is a newline (more than 255 per lane between sums)', () => {
    for (const length of [4080, 4096, 70_000, (1 << 20) + 3])
      assert.equal(countNewlines(Buffer.alloc(length, 0x0a)), length);
  });

  it('finds none in text without newlines', () => {
    assert.equal(countNewlines(Buffer.alloc(100_000, 0x8a)), 0);
    assert.equal(countNewlines(new Uint8Array(0)), 0);
  });
});
