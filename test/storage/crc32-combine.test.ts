import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { crc32 } from 'node:zlib';
import { CHECKSUM_CHUNK_SIZE, crc32Combine } from '../../src/storage/index.js';
import { ChunkChecksummer } from '../../src/storage/block-store.js';
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

describe('ChunkChecksummer', () => {
  it("gives zlib's crc32 of the whole block and of each 64 KiB chunk, however the writes split it", () => {
    const data = pseudoRandomBytes(3 * CHECKSUM_CHUNK_SIZE + 777, 33);
    const splits: number[][] = [
      [data.length],
      [1, CHECKSUM_CHUNK_SIZE - 1, CHECKSUM_CHUNK_SIZE, 0, 5, data.length],
      [CHECKSUM_CHUNK_SIZE * 3, data.length],
      [100_000, 100_001, data.length],
    ];
    for (const cuts of splits) {
      const summer = new ChunkChecksummer();
      let at = 0;
      for (const cut of cuts) {
        const end = Math.min(data.length, at + cut);
        summer.update(data.subarray(at, end));
        at = end;
      }
      const { length, crc32: blockCrc, chunkCrcs } = summer.finish();
      assert.equal(length, data.length, `writes ${cuts.join(',')}`);
      assert.equal(blockCrc, crc32(data), `writes ${cuts.join(',')}`);
      const expected: number[] = [];
      for (let c = 0; c < data.length; c += CHECKSUM_CHUNK_SIZE)
        expected.push(crc32(data.subarray(c, c + CHECKSUM_CHUNK_SIZE)));
      assert.deepEqual(chunkCrcs, expected, `writes ${cuts.join(',')}`);
    }
  });

  it('of nothing: length 0, crc32 0, no chunks; of exactly one chunk: that chunk', () => {
    assert.deepEqual(new ChunkChecksummer().finish(), { length: 0, crc32: 0, chunkCrcs: [] });
    const one = pseudoRandomBytes(CHECKSUM_CHUNK_SIZE, 34);
    const summer = new ChunkChecksummer();
    summer.update(one);
    assert.deepEqual(summer.finish(), { length: one.length, crc32: crc32(one), chunkCrcs: [crc32(one)] });
  });
});
