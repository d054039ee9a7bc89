import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OutputWriter, type ByteSink } from '../../src/runtime/task/output-writer.js';
import { seededRandom } from '../../src/util/index.js';

/** A sink that copies what it is given, as FsClient's writer does, and keeps the copies. */
function copyingSink(): ByteSink & { readonly parts: Buffer[]; closed: boolean } {
  const parts: Buffer[] = [];
  return {
    parts,
    closed: false,
    garbageBytes: 0,
    async write(chunk) {
      parts.push(Buffer.from(chunk));
      await new Promise((resolve) => setImmediate(resolve));
    },
    async close() {
      this.closed = true;
    },
    async abort() {},
  };
}

test('records output across many reused chunks equals the concatenation of the emitted bytes', async () => {
  const rand = seededRandom(5);
  const sink = copyingSink();
  const writer = new OutputWriter({ kind: 'records' }, sink);
  const expected: Buffer[] = [];
  // ~6 MiB in records of up to 3 KiB, plus one record larger than a chunk.
  for (let i = 0; i < 4000; i++) {
    const key = Buffer.from(`key-${i}-`);
    const value = Buffer.alloc(Math.floor(rand() * 3000), i % 251);
    if (i === 1234) value.fill(7, 0, 0);
    writer.emit(key, value);
    expected.push(key, value);
    if (i === 2000) {
      const big = Buffer.alloc(3 << 20, 0x5a);
      writer.emit(big, null);
      expected.push(big);
    }
    if (writer.needsFlush) await writer.flush();
  }
  await writer.close();
  assert.ok(sink.closed);
  assert.ok(sink.parts.length > 4, 'several chunks went to the sink');
  assert.deepEqual(Buffer.concat(sink.parts), Buffer.concat(expected));
  assert.equal(writer.bytes, Buffer.concat(expected).length);
  assert.equal(writer.records, 4001);
});

test('text output: key, separator, value and newline; null key or value leaves out its separator', async () => {
  const sink = copyingSink();
  const writer = new OutputWriter({ kind: 'text', separator: '\t' }, sink);
  let expected = '';
  for (let i = 0; i < 200_000; i++) {
    const key = i % 7 === 0 ? null : `w${i}`;
    const value = i % 11 === 0 ? undefined : i * 3;
    writer.emit(key, value);
    expected +=
      [key, value === undefined ? undefined : String(value)].filter((x) => x !== null && x !== undefined).join('\t') +
      '\n';
    if (writer.needsFlush) await writer.flush();
  }
  await writer.close();
  assert.equal(Buffer.concat(sink.parts).toString(), expected);
});

test(
  'emitRange writes what emit writes for the same key and value ' +
    'bytes, in both formats, with and without a DataView of the ' +
    'source',
  async () => {
    const rand = seededRandom(11);
    for (const [format, withView] of [
      [{ kind: 'records' } as const, false],
      [{ kind: 'text', separator: '\t' } as const, false],
      [{ kind: 'records' } as const, true],
      [{ kind: 'text', separator: '\t' } as const, true],
    ] as const) {
      const sink = copyingSink();
      const writer = new OutputWriter(format, sink);
      const expected: Buffer[] = [];
      // Keys and values of 0..99 and up to 3 KiB, side by side or with a gap (a tagged record), across chunks.
      for (let i = 0; i < 3000; i++) {
        const key = Buffer.alloc(Math.floor(rand() * 100), i % 251);
        const value = Buffer.alloc(Math.floor(rand() * (i % 10 === 0 ? 3000 : 100)), (i * 7) % 251);
        const gap = i % 3 === 0 ? 2 : 0;
        for (let b = 0; b < key.length; b++) if (rand() < 0.5) key[b] = Math.floor(rand() * 256);
        for (let b = 0; b < value.length; b++) if (rand() < 0.5) value[b] = Math.floor(rand() * 256);
        // The source starts inside a larger buffer, as a decoded frame may: the view covers src's bytes only.
        const whole = Buffer.concat([
          Buffer.from('pad'),
          Buffer.from('xy'),
          key,
          Buffer.alloc(gap, 0xee),
          value,
          Buffer.from('z'),
        ]);
        const src = whole.subarray(3);
        const keyStart = 2;
        const valueStart = keyStart + key.length + gap;
        const view = withView ? new DataView(src.buffer, src.byteOffset, src.length) : undefined;
        writer.emitRange(src, keyStart, keyStart + key.length, valueStart, valueStart + value.length, view);
        expected.push(
          format.kind === 'records'
            ? Buffer.concat([key, value])
            : Buffer.concat([key, Buffer.from('\t'), value, Buffer.from('\n')]),
        );
        if (writer.needsFlush) await writer.flush();
      }
      await writer.close();
      assert.equal(writer.records, 3000);
      assert.ok(
        Buffer.concat(sink.parts).equals(Buffer.concat(expected)),
        `${format.kind} output${withView ? ', with a view' : ''}`,
      );
    }
  },
);
