import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FramePacker, viewOf } from '../../src/shuffle/spill-writer.js';
import { rng, varint } from './support.js';

/** Every frame the packer completed, then its pending one, as one byte string. */
function drain(packer: FramePacker): Buffer {
  packer.cut();
  return Buffer.concat(packer.ready.splice(0));
}

test(
  'the packer copies records of every length up to past the ' + 'word-copy limit, at unaligned offsets, byte for byte',
  () => {
    const rand = rng(11);
    // Lengths around the 4-byte word boundary and the view-copy limit (256), sources at odd offsets.
    const lengths = [0, 1, 2, 3, 4, 5, 7, 8, 9, 31, 32, 33, 99, 100, 101, 255, 256, 257, 300, 1000];
    const records: Array<[Buffer, Buffer, number]> = [];
    for (const kl of lengths)
      for (const vl of lengths)
        records.push([randomRecordBytes(rand, kl), randomRecordBytes(rand, vl), Math.floor(rand() * 300)]);
    const expectedPlain: Buffer[] = [];
    const expectedTagged: Buffer[] = [];
    for (const [k, v, tag] of records) {
      expectedPlain.push(varint(k.length), varint(v.length), k, v);
      const t = varint(tag);
      expectedTagged.push(varint(k.length), varint(t.length + v.length), k, t, v);
    }
    // Small frames so that records cross frame ends and get frames of their own.
    const contiguous = new FramePacker(512);
    const encoded = new FramePacker(512);
    const tagged = new FramePacker(512);
    const taggedNoView = new FramePacker(512);
    for (const [k, v, tag] of records) {
      const pad = 1 + Math.floor(rand() * 7);
      const src = Buffer.concat([Buffer.alloc(pad, 0xee), k, v, Buffer.alloc(3, 0xee)]);
      // A view into a larger buffer, so that its byteOffset is not the ArrayBuffer's start.
      const shifted = Buffer.alloc(src.length + 5).subarray(5);
      src.copy(shifted);
      contiguous.addContiguous(shifted, viewOf(shifted), pad, k.length, v.length);
      const enc = Buffer.concat([
        Buffer.alloc(pad, 0xdd),
        varint(k.length),
        varint(v.length),
        k,
        v,
        Buffer.alloc(2, 0xdd),
      ]);
      encoded.addEncoded(enc, viewOf(enc), pad, enc.length - pad - 2);
      tagged.addTagged(shifted, pad, k.length, tag, shifted, pad + k.length, v.length, viewOf(shifted));
      taggedNoView.addTagged(k, 0, k.length, tag, v, 0, v.length);
    }
    const plain = Buffer.concat(expectedPlain);
    assert.ok(drain(contiguous).equals(plain));
    assert.ok(drain(encoded).equals(plain));
    const withTags = Buffer.concat(expectedTagged);
    assert.ok(drain(tagged).equals(withTags));
    assert.ok(drain(taggedNoView).equals(withTags));
  },
);

function randomRecordBytes(rand: () => number, len: number): Buffer {
  const b = Buffer.alloc(len);
  for (let i = 0; i < len; i++) b[i] = Math.floor(rand() * 256);
  return b;
}
