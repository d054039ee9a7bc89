import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { codecs, sumValues, type Codec } from '../../src/api/index.js';
import { isMinimrError } from '../../src/errors.js';
import { summingCombiner } from '../../src/runtime/task/sum-combiner.js';
import type { BytesCombiner } from '../../src/shuffle/index.js';
import { seededRandom } from '../../src/util/index.js';

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
