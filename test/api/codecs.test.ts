import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { codecs } from '../../src/api/index.js';

describe('codecs.varuint', () => {
  it('round-trips integers from 0 to 2^53 - 1 in LEB128: 7 bits a byte, low bits first', () => {
    const cases: [number, number[]][] = [
      [0, [0x00]],
      [1, [0x01]],
      [127, [0x7f]],
      [128, [0x80, 0x01]],
      [300, [0xac, 0x02]],
      [16383, [0xff, 0x7f]],
      [16384, [0x80, 0x80, 0x01]],
    ];
    for (const [value, bytes] of cases) {
      assert.deepEqual([...codecs.varuint.encode(value)], bytes, String(value));
      assert.equal(codecs.varuint.decode(Buffer.from(bytes)), value);
    }
    for (const value of [2 ** 31, 2 ** 32 + 5, 2 ** 40 + 12345, Number.MAX_SAFE_INTEGER]) {
      const encoded = codecs.varuint.encode(value);
      assert.equal(encoded.length, Math.ceil(Math.log2(value + 1) / 7));
      assert.equal(codecs.varuint.decode(encoded), value);
    }
  });

  it('refuses what is not a safe non-negative integer, and bytes that end inside a varint', () => {
    for (const bad of [-1, 1.5, Number.NaN, 2 ** 53, Infinity])
      assert.throws(() => codecs.varuint.encode(bad), /codecs.varuint: expected an integer/);
    assert.throws(() => codecs.varuint.decode(Buffer.from([0x80, 0x80])), /end inside a varint/);
  });
});
