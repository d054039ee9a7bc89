import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Packr } from 'msgpackr';
import { PROTOCOL_VERSION, decodeFrame, encodeFrame } from '../../src/runtime/index.js';
import { hashPartition } from '../../src/shuffle/index.js';
import { CountMinSketch, partitionOfKey, sketchSeeds } from '../../src/skew/index.js';
import { seededRandom, zipfSampler } from '../../src/util/index.js';

/** N records over a Zipf vocabulary: the exact per-key counts (records and bytes) and the stream. */
function zipfStream(records: number, vocabulary: number, s: number, seed: number) {
  const rank = zipfSampler(vocabulary, s, seededRandom(seed));
  const size = seededRandom(seed + 1);
  const stream: { key: Buffer; bytes: number }[] = [];
  const exact = new Map<string, { records: number; bytes: number }>();
  for (let i = 0; i < records; i++) {
    const word = `k${rank()}`;
    const bytes = word.length + 1 + Math.floor(size() * 40);
    stream.push({ key: Buffer.from(word), bytes });
    const e = exact.get(word) ?? { records: 0, bytes: 0 };
    e.records++;
    e.bytes += bytes;
    exact.set(word, e);
  }
  return { stream, exact };
}

describe('count-min sketch', () => {
  it('row 0 is the default partitioner, the other rows hash differently', () => {
    const seeds = sketchSeeds(4);
    assert.equal(seeds[0], 0);
    assert.equal(new Set(seeds).size, 4);
    for (const w of ['a', 'the', 'Straße', '']) {
      const key = Buffer.from(w);
      assert.equal(partitionOfKey(key, 7, 0), hashPartition(key, 7));
    }
    // Seeds are fixed constants: every process and every build must agree on them.
    assert.deepEqual(sketchSeeds(4), seeds);
  });

  it('never underestimates and stays within epsilon * N except with probability delta (records and bytes)', () => {
    const { stream, exact } = zipfStream(60_000, 5_000, 1.1, 42);
    const epsilon = 0.01;
    const delta = 0.01;
    const sketch = CountMinSketch.forError(epsilon, delta);
    assert.equal(sketch.width, Math.ceil(Math.E / epsilon));
    assert.equal(sketch.depth, Math.ceil(Math.log(1 / delta)));
    for (const r of stream) sketch.add(r.key, r.bytes);
    const n = stream.length;
    const totalBytes = stream.reduce((a, r) => a + r.bytes, 0);
    assert.equal(sketch.totalRecords, n);
    assert.equal(sketch.totalBytes, totalBytes);
    let recordMisses = 0;
    let byteMisses = 0;
    for (const [word, e] of exact) {
      const est = sketch.estimate(Buffer.from(word));
      assert.ok(est.records >= e.records, `records of ${word}: ${est.records} < ${e.records}`);
      assert.ok(est.bytes >= e.bytes, `bytes of ${word}: ${est.bytes} < ${e.bytes}`);
      if (est.records > e.records + (Math.E / sketch.width) * n) recordMisses++;
      if (est.bytes > e.bytes + (Math.E / sketch.width) * totalBytes) byteMisses++;
    }
    assert.ok(recordMisses / exact.size <= delta, `${recordMisses} of ${exact.size} record estimates beyond the bound`);
    assert.ok(byteMisses / exact.size <= delta, `${byteMisses} of ${exact.size} byte estimates beyond the bound`);
  });

  it('row i counters are the partition sizes of murmur3(key, seed_i) mod w', () => {
    const { stream } = zipfStream(5_000, 300, 0.8, 3);
    const sketch = new CountMinSketch(3, 8);
    for (const r of stream) sketch.add(r.key, r.bytes);
    for (let row = 0; row < 3; row++) {
      const records = new Array<number>(8).fill(0);
      const bytes = new Array<number>(8).fill(0);
      for (const r of stream) {
        const p = partitionOfKey(r.key, 8, sketchSeeds(3)[row]!);
        records[p]!++;
        bytes[p]! += r.bytes;
      }
      assert.deepEqual([...sketch.row(row).records], records);
      assert.deepEqual([...sketch.row(row).bytes], bytes);
    }
  });

  it('the merge of two sketches is the sketch of the union', () => {
    const { stream } = zipfStream(10_000, 1_000, 1.5, 9);
    const whole = new CountMinSketch(4, 16);
    const a = new CountMinSketch(4, 16);
    const b = new CountMinSketch(4, 16);
    stream.forEach((r, i) => {
      whole.add(r.key, r.bytes);
      (i % 3 === 0 ? a : b).add(r.key, r.bytes);
    });
    a.merge(b);
    assert.deepEqual([...a.records], [...whole.records]);
    assert.deepEqual([...a.bytes], [...whole.bytes]);
    assert.throws(() => a.merge(new CountMinSketch(4, 17)), { code: 'EBADJOB' });
    assert.throws(() => a.merge(new CountMinSketch(4, 16, [1, 2, 3, 4])), { code: 'EBADJOB' });
  });

  it('survives msgpackr, alone and inside a protocol frame', () => {
    const sketch = new CountMinSketch(3, 5);
    sketch.add(Buffer.from('x'), 10);
    sketch.add(Buffer.from('y'), 2 ** 40 + 0.5);
    const packr = new Packr({ useRecords: false, mapsAsObjects: true, int64AsType: 'number' });
    const alone = CountMinSketch.fromWire(packr.unpack(packr.pack(sketch.toWire())));
    assert.deepEqual([...alone.records], [...sketch.records]);
    assert.deepEqual([...alone.bytes], [...sketch.bytes]);
    assert.deepEqual(alone.seeds, sketch.seeds);
    const frame = decodeFrame(
      encodeFrame({ v: PROTOCOL_VERSION, type: 'reply', re: 1, ok: true, result: { sketch: sketch.toWire() } }),
    );
    const viaFrame = CountMinSketch.fromWire((frame as { result: { sketch: unknown } }).result.sketch);
    assert.deepEqual([...viaFrame.bytes], [...sketch.bytes]);
    assert.equal(viaFrame.estimate(Buffer.from('y')).bytes, 2 ** 40 + 0.5);
  });

  it('refuses a malformed wire sketch', () => {
    const good = new CountMinSketch(2, 3).toWire();
    assert.throws(() => CountMinSketch.fromWire({ ...good, records: new Uint8Array(8) }), { code: 'EBADJOB' });
    assert.throws(() => CountMinSketch.fromWire({ ...good, seeds: [0] }), { code: 'EBADJOB' });
    const negative = new Float64Array(6).fill(-1);
    assert.throws(() => CountMinSketch.fromWire({ ...good, bytes: new Uint8Array(negative.buffer) }), {
      code: 'EBADJOB',
    });
    assert.throws(() => CountMinSketch.fromWire('nope'), { code: 'EBADJOB' });
  });
});
