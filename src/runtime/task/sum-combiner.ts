/**
 * The combiner the shuffle runs (per key group, at map spills and in a reduce's merges) for a job
 * that combines with the API's `sumValues`: each value is decoded and added as it comes, and the
 * key's bytes go on as they came, as the map-side hash table passes them. The generic combiner
 * decodes the key into a JS value and the group's values into an iterator, calls `combine`, and
 * encodes the key again: over a million keys (a Zipf WordCount's reduce) that garbage grew the JS
 * heap from 10 to 23-38 MiB during the shuffle (docs/performance-notes.md). The same numbers are
 * added in the same order (a left fold from the first value), so the sums are the same; a value that
 * is not a number is sumValues' own EBADJOB, naming the key.
 *
 * Its `fold` does the same a record at a time where the merges read them (shuffle/run-cursor.ts
 * `foldMerged`): with that, a reduce's merge made no garbage per record, and a Zipf WordCount
 * reduce's JS heap no longer grew to 35-48 MiB while it merged a million groups in the shuffle
 * (docs/performance-notes.md). Values in `codecs.varuint` (WordCount's) are read and written in
 * place, as that codec reads and writes them; others through their codec.
 */
import { codecs, sumValues, type Codec } from '../../api/index.js';
import { writeVarint, type BytesCombiner, type ValueFold } from '../../shuffle/index.js';
import { readVaruint } from '../../util/index.js';

export function summingCombiner(keyCodec: Codec<unknown>, valueCodec: Codec<unknown>): BytesCombiner {
  const combine = (key: Buffer, values: Iterable<Buffer>, emit: (key: Buffer, value: Buffer) => void): void => {
    let sum = 0;
    let first = true;
    for (const bytes of values) {
      const v = asNumber(valueCodec.decode(bytes), keyCodec, key, 0, key.length);
      sum = first ? v : sum + v;
      first = false;
    }
    emit(key, valueCodec.encode(sum));
  };
  return Object.assign(combine, { fold: () => summingFold(keyCodec, valueCodec) });
}

/** sumValues' left fold over a group's values as bytes, with its error for a value that is not a number. */
function summingFold(keyCodec: Codec<unknown>, valueCodec: Codec<unknown>): ValueFold {
  const varuint = valueCodec === codecs.varuint;
  const decode = varuint
    ? varuintAt
    : (buf: Buffer, start: number, end: number) => valueCodec.decode(buf.subarray(start, end));
  let sum = 0;
  const numberAt = (buf: Buffer, keyStart: number, keyEnd: number, valueStart: number, valueEnd: number): number =>
    asNumber(decode(buf, valueStart, valueEnd), keyCodec, buf, keyStart, keyEnd);
  const fold = {
    out: Buffer.allocUnsafe(16),
    first(buf: Buffer, keyStart: number, keyEnd: number, valueStart: number, valueEnd: number): void {
      sum = numberAt(buf, keyStart, keyEnd, valueStart, valueEnd);
    },
    add(buf: Buffer, keyStart: number, keyEnd: number, valueStart: number, valueEnd: number): void {
      sum += numberAt(buf, keyStart, keyEnd, valueStart, valueEnd);
    },
    finish(): number {
      // The codec's own encoding (and its error) for what it would refuse or spell otherwise.
      if (!varuint || !Number.isSafeInteger(sum) || sum < 0) {
        const bytes = valueCodec.encode(sum);
        if (bytes.length > fold.out.length) fold.out = Buffer.allocUnsafe(bytes.length);
        return bytes.copy(fold.out);
      }
      // LEB128, as the codec writes it: the shuffle's own record-length varint is the same encoding.
      return writeVarint(fold.out, 0, sum);
    },
  };
  return fold;
}

/**
 * `v`, which must be a number; else sumValues words the error (the key, bytes [keyStart, keyEnd) of
 * `keyBuf`, decoded; the value's type): it throws for this value.
 */
function asNumber(v: unknown, keyCodec: Codec<unknown>, keyBuf: Buffer, keyStart: number, keyEnd: number): number {
  if (typeof v !== 'number')
    sumValues(keyCodec.decode(keyBuf.subarray(keyStart, keyEnd)), [v as number], { emit: () => undefined });
  return v as number;
}

/** `codecs.varuint`'s decode of bytes [start, end) of `buf`, without a view of them. */
function varuintAt(buf: Buffer, start: number, end: number): number {
  const value = readVaruint(buf, start, end);
  // The codec's own error for bytes that end inside a varint.
  return value >= 0 ? value : codecs.varuint.decode(buf.subarray(start, end));
}
