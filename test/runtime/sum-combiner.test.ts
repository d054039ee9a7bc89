import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { codecs, sumValues, type Codec } from '../../src/api/index.js';
import { isMinimrError } from '../../src/errors.js';
import { summingCombiner } from '../../src/runtime/task/sum-combiner.js';
import { compareBytes } from '../../src/shuffle/bytes-compare.js';
import type { BytesCombiner } from '../../src/shuffle/index.js';
import { bufferFeed, CursorMerge, foldMerged, RecordCursor } from '../../src/shuffle/run-cursor.js';
import { FramePacker } from '../../src/shuffle/spill-writer.js';
import { seededRandom } from '../../src/util/index.js';
import { buildSegment, parseSegment, varint } from '../shuffle/support.js';

/** The generic combiner of a job whose combine is sumValues: what task-process.ts builds for any other. */
function generic(keyCodec: Codec<unknown>, valueCodec: Codec<unknown>): BytesCombiner {
  return (key, values, emit) =>
    sumValues(
      keyCodec.decode(key),
      [...values].map((v) => valueCodec.decode(v) as number),
      { emit: (k, v) => emit(keyCodec.encode(k), valueCodec.encode(v)) },
    );
}

function run(combiner: BytesCombiner, key: Buffer, values: Buffer[]): [Buffer, Buffer][] {
  const out: [Buffer, Buffer][] = [];
  // A single-pass iterable, as the shuffle's merges give.
  combiner(key, values.values(), (k, v) => out.push([Buffer.from(k), Buffer.from(v)]));
  return out;
}

describe('summingCombiner: sumValues at the shuffle, on bytes', () => {
  it("gives the generic combiner's bytes, counts and floats (with -0) alike", () => {
    const random = seededRandom(5);
    const cases: [Codec<unknown>, () => number][] = [
      [codecs.varuint as Codec<unknown>, () => Math.floor(random() * 300)],
      [codecs.msgpack() as Codec<unknown>, () => (random() < 0.2 ? -0 : random() * 1e6 - 5e5)],
    ];
    for (const [valueCodec, draw] of cases) {
      for (let group = 0; group < 300; group++) {
        const key = codecs.text.encode(`w${group}`);
        const values = Array.from({ length: 1 + Math.floor(random() * 20) }, () => valueCodec.encode(draw()));
        const want = run(generic(codecs.text as Codec<unknown>, valueCodec), key, values);
        const got = run(summingCombiner(codecs.text as Codec<unknown>, valueCodec), key, values);
        assert.deepEqual(got, want, `${valueCodec.name} group ${group}`);
      }
    }
  });

  it("a value that is not a number is sumValues' EBADJOB, naming the key", () => {
    const valueCodec = codecs.msgpack() as Codec<unknown>;
    const key = codecs.text.encode('word');
    const values = [valueCodec.encode(1), valueCodec.encode('2')];
    const messageOf = (combiner: BytesCombiner): string => {
      try {
        run(combiner, key, values);
      } catch (err) {
        assert.ok(isMinimrError(err, 'EBADJOB'));
        return (err as Error).message;
      }
      assert.fail('no error');
    };
    const message = messageOf(summingCombiner(codecs.text as Codec<unknown>, valueCodec));
    assert.match(message, /key "word" has a value of type string/);
    assert.equal(message, messageOf(generic(codecs.text as Codec<unknown>, valueCodec)));
  });
});

interface RunRecord {
  readonly key: Buffer;
  readonly value: Buffer;
}

/** `runs` sorted runs merged with the summing combiner's fold; the packer's records as bytes (small frames). */
function foldRuns(
  runs: readonly RunRecord[][],
  valueCodec: Codec<unknown>,
  options: { tagged: boolean; passSingleRecords: boolean },
): Buffer {
  const cursors = runs.map(
    (run, i) => new RecordCursor(bufferFeed(buildSegment(run.map((r) => [r.key, r.value]))), 10 + i, i),
  );
  const packer = new FramePacker(512);
  const frames: Buffer[] = [];
  const fold = summingCombiner(codecs.text as Codec<unknown>, valueCodec).fold!;
  for (const _ of foldMerged(new CursorMerge(cursors, compareBytes), fold(), packer, options)) {
    frames.push(...packer.ready.splice(0).map((f) => Buffer.from(f)));
  }
  packer.cut();
  frames.push(...packer.ready.splice(0));
  return Buffer.concat(frames);
}

/**
 * What the fold must give, worked out from the runs alone: keys in byte order, each group's values
 * in run order summed from the first, encoded by the codec; a group's tag is its first run's
 * (10 + run index); with passSingleRecords a key found once keeps its value's bytes.
 */
function expectedFold(
  runs: readonly RunRecord[][],
  valueCodec: Codec<unknown>,
  options: { tagged: boolean; passSingleRecords: boolean },
): Buffer {
  const groups = new Map<string, { key: Buffer; tag: number; values: Buffer[] }>();
  runs.forEach((run, i) => {
    for (const r of run) {
      const id = r.key.toString('hex');
      const g = groups.get(id) ?? { key: r.key, tag: 10 + i, values: [] };
      g.values.push(r.value);
      groups.set(id, g);
    }
  });
  const parts: Buffer[] = [];
  for (const g of [...groups.values()].sort((a, b) => Buffer.compare(a.key, b.key))) {
    let value: Buffer;
    if (options.passSingleRecords && g.values.length === 1) value = g.values[0]!;
    else {
      const numbers = g.values.map((v) => valueCodec.decode(v) as number);
      value = valueCodec.encode(numbers.slice(1).reduce((a, b) => a + b, numbers[0]!));
    }
    if (options.tagged) value = Buffer.concat([varint(g.tag), value]);
    parts.push(varint(g.key.length), varint(value.length), g.key, value);
  }
  return Buffer.concat(parts);
}

describe("summingCombiner's fold: sumValues in the merges, records read in place", () => {
  const random = seededRandom(9);
  // Words of 1-60 bytes (past the 32-byte copy loop), many sharing long prefixes.
  const vocabulary = Array.from({ length: 400 }, (_, i) =>
    Buffer.from(`${i % 3 === 0 ? 'prefix-shared-by-many-words-'.repeat(2) : ''}w${Math.floor(random() * 1e6)}`),
  );
  const runsOf = (valueCodec: Codec<unknown>, draw: () => number): RunRecord[][] =>
    Array.from({ length: 5 }, () => {
      const records = Array.from({ length: Math.floor(random() * 600) }, () => ({
        key: vocabulary[Math.floor(random() ** 2 * vocabulary.length)]!,
        value: valueCodec.encode(draw()),
      }));
      // Sorted by key, equal keys in the order drawn (stable).
      return records.sort((a, b) => Buffer.compare(a.key, b.key));
    });

  for (const tagged of [true, false]) {
    for (const passSingleRecords of [false, true]) {
      it(`merges to the reference's bytes (${tagged ? 'tagged' : 'plain'} output, single records ${passSingleRecords ? 'passed' : 'combined'})`, () => {
        const options = { tagged, passSingleRecords };
        const cases: [Codec<unknown>, () => number][] = [
          // Counts up to past 2^14, so that sums take up to 3 varint bytes.
          [codecs.varuint as Codec<unknown>, () => (random() < 0.05 ? Math.floor(random() * 40000) : 1)],
          [codecs.msgpack() as Codec<unknown>, () => (random() < 0.2 ? -0 : random() * 1e6 - 5e5)],
        ];
        for (const [valueCodec, draw] of cases) {
          const runs = runsOf(valueCodec, draw);
          const got = foldRuns(runs, valueCodec, options);
          assert.ok(got.equals(expectedFold(runs, valueCodec, options)), valueCodec.name);
          assert.ok(parseSegment(got).length > 100);
        }
      });
    }
  }

  it("keeps a single record's own bytes only when asked to: 5 as a msgpack float64 stays 9 bytes", () => {
    const valueCodec = codecs.msgpack() as Codec<unknown>;
    const float5 = Buffer.from([0xcb, 0x40, 0x14, 0, 0, 0, 0, 0, 0]);
    assert.equal(valueCodec.decode(float5), 5);
    const runs = [[{ key: Buffer.from('a'), value: float5 }], [{ key: Buffer.from('b'), value: float5 }]];
    const passed = parseSegment(foldRuns(runs, valueCodec, { tagged: false, passSingleRecords: true }));
    assert.deepEqual(
      passed.map(([, v]) => v.length),
      [9, 9],
    );
    const combined = parseSegment(foldRuns(runs, valueCodec, { tagged: false, passSingleRecords: false }));
    assert.deepEqual(
      combined.map(([, v]) => v),
      [valueCodec.encode(5), valueCodec.encode(5)],
    );
  });

  it("a value that is not a number is the combiner's own EBADJOB, naming the key", () => {
    const valueCodec = codecs.msgpack() as Codec<unknown>;
    const runs = [
      [{ key: Buffer.from('word'), value: valueCodec.encode(1) }],
      [{ key: Buffer.from('word'), value: valueCodec.encode('2') }],
    ];
    let message = '';
    try {
      foldRuns(runs, valueCodec, { tagged: true, passSingleRecords: false });
    } catch (err) {
      assert.ok(isMinimrError(err, 'EBADJOB'));
      message = (err as Error).message;
    }
    assert.match(message, /key "word" has a value of type string/);
    const generic = summingCombiner(codecs.text as Codec<unknown>, valueCodec);
    assert.throws(
      () =>
        run(
          generic,
          Buffer.from('word'),
          runs.map((r) => r[0]!.value),
        ),
      { message },
    );
  });

  it('varuint sums past 2^32 up to 2^53 - 1 are spelled as the codec spells them', () => {
    const valueCodec = codecs.varuint as Codec<unknown>;
    const parts = [2 ** 52 - 1, 2 ** 40 + 3, 2 ** 33 + 127, 2 ** 51];
    const runs = parts.map((v) => [{ key: Buffer.from('k'), value: valueCodec.encode(v) }]);
    const options = { tagged: false, passSingleRecords: false };
    assert.ok(foldRuns(runs, valueCodec, options).equals(expectedFold(runs, valueCodec, options)));
    const [[, sum]] = parseSegment(foldRuns(runs, valueCodec, options)) as [[Buffer, Buffer]];
    assert.equal(valueCodec.decode(sum), 2 ** 52 + 2 ** 51 + 2 ** 40 + 2 ** 33 + 129);
  });

  it("varuint sums past 2^53 - 1 are the codec's own error, as with the combiner", () => {
    const valueCodec = codecs.varuint as Codec<unknown>;
    const big = valueCodec.encode(2 ** 52);
    const runs = [[{ key: Buffer.from('k'), value: big }], [{ key: Buffer.from('k'), value: big }]];
    assert.throws(() => foldRuns(runs, valueCodec, { tagged: false, passSingleRecords: false }), /codecs\.varuint/);
  });
});
