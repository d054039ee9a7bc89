import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KEY_HASH_START, keyHash, keyHashStep } from '../../src/api/index.js';

test('keyHash is 32-bit FNV-1a (published vectors), and keyHashStep folds it byte by byte', () => {
  // Vectors from the FNV reference (Fowler, Noll, Vo), 32-bit FNV-1a.
  const vectors: [string, number][] = [
    ['', 0x811c9dc5],
    ['a', 0xe40c292c],
    ['foobar', 0xbf9cf968],
  ];
  for (const [text, want] of vectors) {
    const bytes = Buffer.from(text);
    assert.equal(keyHash(bytes) >>> 0, want, JSON.stringify(text));
    assert.equal(bytes.reduce((h, b) => keyHashStep(h, b), KEY_HASH_START) >>> 0, want);
  }
  const padded = Buffer.from('xxfoobaryy');
  assert.equal(keyHash(padded, 2, 8) >>> 0, 0xbf9cf968);
});
