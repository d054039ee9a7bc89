import assert from 'node:assert/strict';
import { test } from 'node:test';
import { murmur3_32 } from '../../src/util/index.js';

test('murmur3_32 matches published MurmurHash3 x86_32 vectors', () => {
  // Vectors from the reference implementation (seed 0 unless given).
  assert.equal(murmur3_32(Buffer.alloc(0)), 0);
  assert.equal(murmur3_32(Buffer.alloc(0), 1), 0x514e28b7);
  assert.equal(murmur3_32(Buffer.from('hello')), 0x248bfa47);
  assert.equal(murmur3_32(Buffer.from('The quick brown fox jumps over the lazy dog')), 0x2e4ff723);
  assert.equal(murmur3_32(Buffer.from([0x21, 0x43, 0x65, 0x87])), 0xf55b516b);
  assert.equal(murmur3_32(Buffer.from([0x21, 0x43, 0x65])), 0x7e4a8634);
  assert.equal(murmur3_32(Buffer.from([0x21, 0x43])), 0xa0f7b07a);
  assert.equal(murmur3_32(Buffer.from([0x21])), 0x72661cf4);
});
