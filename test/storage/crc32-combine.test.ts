import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { crc32 } from 'node:zlib';
import { crc32Combine } from '../../src/storage/index.js';
import { pseudoRandomBytes } from './helpers.js';

describe('crc32Combine', () => {
  it("gives zlib's crc32 of A followed by B, from the CRCs of A and B, at any split", () => {
    const data = pseudoRandomBytes(200_000, 31);
    for (const split of [0, 1, 2, 7, 1000, 65_536, 65_537, 131_072, 199_999, 200_000]) {
      const a = data.subarray(0, split);
      const b = data.subarray(split);
      assert.equal(crc32Combine(crc32(a), crc32(b), b.length), crc32(data), `split at ${split}`);
    }
  });

  it('chains over many pieces of mixed sizes, as a block read combines its chunks', () => {
    const data = pseudoRandomBytes(1_000_003, 32);
    let crc = 0;
    let offset = 0;
    for (const size of [65_536, 1 << 20, 3, 0, 65_536, 12_345]) {
      const piece = data.subarray(offset, offset + size);
      crc = crc32Combine(crc, crc32(piece), piece.length);
      offset += piece.length;
    }
    assert.equal(offset, data.length);
    assert.equal(crc, crc32(data));
  });
});
