import { createRequire } from 'node:module';
import type { pack as Pack, unpack as Unpack } from 'msgpackr';
import { readVaruint } from '../util/varuint.js';

/**
 * A codec turns map output keys and values into bytes and back. The shuffle sorts keys by their
 * encoded bytes (unless the job gives a comparator), so a key codec decides the sort order:
 * `text` sorts by UTF-8 bytes (= code point order), `bytes` by raw bytes, `uint32`/`uint64` numerically.
 */
export interface Codec<T> {
  readonly name: string;
  encode(value: T): Buffer;
  decode(bytes: Buffer): T;
}

const text: Codec<string> = {
  name: 'text',
  encode: (value) => Buffer.from(value, 'utf8'),
  decode: (bytes) => bytes.toString('utf8'),
};

const bytes: Codec<Buffer> = {
  name: 'bytes',
  encode: (value) => value,
  decode: (b) => b,
};

const uint32: Codec<number> = {
  name: 'uint32',
  encode: (value) => {
    const b = Buffer.allocUnsafe(4);
    b.writeUInt32BE(value >>> 0, 0);
    return b;
  },
  decode: (b) => b.readUInt32BE(0),
};

const uint64: Codec<bigint> = {
  name: 'uint64',
  encode: (value) => {
    const b = Buffer.allocUnsafe(8);
    b.writeBigUInt64BE(value, 0);
    return b;
  },
  decode: (b) => b.readBigUInt64BE(0),
};

/**
 * A non-negative integer up to 2^53 - 1 as an LEB128 varint: 1 byte for 0..127, 2 up to 16383. For
 * counts: as small as msgpack for them, and plain JS (msgpack loads a native addon in each task,
 * tens of milliseconds before a task's first record). Not order-preserving.
 */
const varuint: Codec<number> = {
  name: 'varuint',
  encode: (value) => {
    if (!Number.isSafeInteger(value) || value < 0)
      throw new TypeError(`codecs.varuint: expected an integer in 0..2^53-1, got ${String(value)}`);
    if (value < 0x80) {
      const b = Buffer.allocUnsafe(1);
      b[0] = value;
      return b;
    }
    const bytes: number[] = [];
    for (let v = value; ; ) {
      const low = v % 0x80;
      v = Math.floor(v / 0x80);
      if (v === 0) {
        bytes.push(low);
        break;
      }
      bytes.push(low | 0x80);
    }
    return Buffer.from(bytes);
  },
  decode: (b) => {
    const value = readVaruint(b, 0, b.length);
    if (value < 0) throw new TypeError(`codecs.varuint: ${b.length} bytes end inside a varint`);
    return value;
  },
};

/**
 * msgpackr is loaded on first use: it loads a native addon (msgpackr-extract), ~6 MiB of resident
 * memory in every task process that imports this module, which the task's fixed memory overhead
 * (TASK_OVERHEAD_MB) must cover even for jobs that never use this codec (TeraSort's bytes).
 */
let msgpackr: { pack: typeof Pack; unpack: typeof Unpack } | undefined;
const loadMsgpackr = () =>
  (msgpackr ??= createRequire(import.meta.url)('msgpackr') as { pack: typeof Pack; unpack: typeof Unpack });

/** Any msgpack-able value; compact for small numbers (1 byte for 0..127), not order-preserving. */
function msgpack<T = unknown>(): Codec<T> {
  return {
    name: 'msgpack',
    encode: (value) => loadMsgpackr().pack(value),
    decode: (b) => loadMsgpackr().unpack(b) as T,
  };
}

export const codecs = { text, bytes, uint32, uint64, varuint, msgpack };
