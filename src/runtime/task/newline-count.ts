/**
 * Counting the newlines of a map's input (its MAP_INPUT_RECORDS when a `mapSplit` reads chunks).
 *
 * A `Buffer.indexOf` per line costs a native call per line: on an 80-byte-line text it was the
 * biggest single cost of a Grep map after reading the block. A byte loop in JavaScript is slower
 * still. WebAssembly's 128-bit SIMD compares 16 bytes per instruction, so the bytes are copied into
 * a small WebAssembly memory, 1 MiB at a time (a copy from cache is far cheaper than a call per
 * line), and counted there. The module is assembled below from its text form:
 *
 *   (func (export "count") (param $at i32) (param $length i32) (result i32)   ;; $length: a multiple of 16
 *     (local $end i32) (local $left i32) (local $lanes v128) (local $total v128) (local $newline v128)
 *     $end = $at + $length;  $newline = i8x16.splat(10)
 *     block loop                                         ;; rounds of at most 255 vectors, so no 8-bit lane overflows
 *       br_if 1 ($at >= $end)
 *       $lanes = 0;  $left = 255
 *       loop                                             ;; an equal lane is -1: subtracting it adds 1
 *         $lanes = i8x16.sub($lanes, i8x16.eq(v128.load($at), $newline))
 *         $at += 16;  $left -= 1
 *         br_if 0 (($at < $end) & ($left != 0))
 *       end
 *       $total = i32x4.add($total, i32x4.extadd_pairwise_i16x8_u(i16x8.extadd_pairwise_i8x16_u($lanes)))
 *       br 0
 *     end end
 *     return the sum of $total's four lanes)
 *
 * Where WebAssembly SIMD is missing, the count falls back to `indexOf`.
 */

const NEWLINE = 0x0a;
/** Bytes copied into the module's memory per call. */
const PIECE_BYTES = 1 << 20;
const WASM_PAGE_BYTES = 64 * 1024;

function unsignedLeb(n: number): number[] {
  const out: number[] = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n !== 0) byte |= 0x80;
    out.push(byte);
  } while (n !== 0);
  return out;
}

/** A signed LEB128 of a small non-negative constant. */
function signedLeb(n: number): number[] {
  return n < 64 ? [n] : [(n & 0x7f) | 0x80, ...signedLeb(n >> 7)];
}

function counterModuleBytes(): Uint8Array {
  const I32 = 0x7f;
  const V128 = 0x7b;
  const simd = (op: number): number[] => [0xfd, ...unsignedLeb(op)];
  const get = (local: number): number[] => [0x20, local];
  const set = (local: number): number[] => [0x21, local];
  const tee = (local: number): number[] => [0x22, local];
  const i32Const = (n: number): number[] => [0x41, ...signedLeb(n)];
  const [AT, LENGTH, END, LEFT, LANES, TOTAL, NEWLINE_VECTOR] = [0, 1, 2, 3, 4, 5, 6];
  const [BLOCK, LOOP, END_OP, BR, BR_IF, VOID] = [0x02, 0x03, 0x0b, 0x0c, 0x0d, 0x40];
  const [I32_ADD, I32_SUB, I32_AND, I32_LT_U, I32_GE_U] = [0x6a, 0x6b, 0x71, 0x49, 0x4f];
  const [V128_LOAD, V128_CONST, I8X16_SPLAT, I32X4_EXTRACT_LANE, I8X16_EQ, I8X16_SUB] = [0, 12, 15, 27, 35, 113];
  const [I16X8_EXTADD_PAIRWISE_I8X16_U, I32X4_EXTADD_PAIRWISE_I16X8_U, I32X4_ADD] = [125, 127, 174];
  const code = [
    ...get(AT),
    ...get(LENGTH),
    I32_ADD,
    ...set(END),
    ...i32Const(NEWLINE),
    ...simd(I8X16_SPLAT),
    ...set(NEWLINE_VECTOR),
    BLOCK,
    VOID,
    LOOP,
    VOID,
    ...get(AT),
    ...get(END),
    I32_GE_U,
    BR_IF,
    1,
    ...simd(V128_CONST),
    ...new Array<number>(16).fill(0),
    ...set(LANES),
    ...i32Const(255),
    ...set(LEFT),
    LOOP,
    VOID,
    ...get(LANES),
    ...get(AT),
    ...simd(V128_LOAD),
    0,
    0,
    ...get(NEWLINE_VECTOR),
    ...simd(I8X16_EQ),
    ...simd(I8X16_SUB),
    ...set(LANES),
    ...get(AT),
    ...i32Const(16),
    I32_ADD,
    ...tee(AT),
    ...get(END),
    I32_LT_U,
    ...get(LEFT),
    ...i32Const(1),
    I32_SUB,
    ...tee(LEFT),
    I32_AND,
    BR_IF,
    0,
    END_OP,
    ...get(TOTAL),
    ...get(LANES),
    ...simd(I16X8_EXTADD_PAIRWISE_I8X16_U),
    ...simd(I32X4_EXTADD_PAIRWISE_I16X8_U),
    ...simd(I32X4_ADD),
    ...set(TOTAL),
    BR,
    0,
    END_OP,
    END_OP,
    ...get(TOTAL),
    ...simd(I32X4_EXTRACT_LANE),
    0,
    ...get(TOTAL),
    ...simd(I32X4_EXTRACT_LANE),
    1,
    I32_ADD,
    ...get(TOTAL),
    ...simd(I32X4_EXTRACT_LANE),
    2,
    I32_ADD,
    ...get(TOTAL),
    ...simd(I32X4_EXTRACT_LANE),
    3,
    I32_ADD,
    END_OP,
  ]; // prettier-ignore
  // $end and $left are i32, $lanes, $total and $newline v128 (after the two parameters).
  const body = [2, 2, I32, 3, V128, ...code];
  const vector = (items: number[][]): number[] => [...unsignedLeb(items.length), ...items.flat()];
  const section = (id: number, content: number[]): number[] => [id, ...unsignedLeb(content.length), ...content];
  const name = (text: string): number[] => [text.length, ...Buffer.from(text, 'latin1')];
  const pages = (PIECE_BYTES + WASM_PAGE_BYTES) / WASM_PAGE_BYTES;
  return new Uint8Array([
    0x00,
    0x61,
    0x73,
    0x6d,
    0x01,
    0x00,
    0x00,
    0x00, // "\0asm", version 1
    ...section(1, vector([[0x60, 2, I32, I32, 1, I32]])), // type: (i32, i32) -> i32
    ...section(3, vector([[0]])), // one function of that type
    ...section(5, vector([[0x00, ...unsignedLeb(pages)]])), // memory of `pages` pages
    ...section(
      7,
      vector([
        [...name('count'), 0x00, 0],
        [...name('memory'), 0x02, 0],
      ]),
    ),
    ...section(10, vector([[...unsignedLeb(body.length), ...body]])),
  ]); // prettier-ignore
}

interface SimdCounter {
  readonly memory: Uint8Array;
  count(at: number, length: number): number;
}

/** What is used of the WebAssembly API (the project's TypeScript libraries do not declare it). */
interface WebAssemblyApi {
  validate(bytes: Uint8Array): boolean;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (
    module: object,
  ) => {
    readonly exports: {
      readonly count: (at: number, length: number) => number;
      readonly memory: { readonly buffer: ArrayBuffer };
    };
  };
}

function loadSimdCounter(): SimdCounter | undefined {
  const wasm = (globalThis as { WebAssembly?: WebAssemblyApi }).WebAssembly;
  const bytes = counterModuleBytes();
  if (wasm === undefined || !wasm.validate(bytes)) return undefined;
  const { exports } = new wasm.Instance(new wasm.Module(bytes));
  // The memory never grows, so this view stays valid.
  return { memory: new Uint8Array(exports.memory.buffer), count: exports.count };
}

const simdCounter = loadSimdCounter();

/** The number of `\n` bytes in `bytes`. */
export function countNewlines(bytes: Uint8Array): number {
  return simdCounter === undefined ? countNewlinesByIndexOf(bytes) : countNewlinesBySimd(simdCounter, bytes);
}

function countNewlinesBySimd(counter: SimdCounter, bytes: Uint8Array): number {
  let n = 0;
  for (let from = 0; from < bytes.length; from += PIECE_BYTES) {
    const piece = bytes.subarray(from, Math.min(bytes.length, from + PIECE_BYTES));
    const vectors = piece.length & ~15;
    counter.memory.set(piece.subarray(0, vectors));
    if (vectors > 0) n += counter.count(0, vectors);
    for (let i = vectors; i < piece.length; i++) if (piece[i] === NEWLINE) n++;
  }
  return n;
}

function countNewlinesByIndexOf(bytes: Uint8Array): number {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  let n = 0;
  for (let i = buffer.indexOf(NEWLINE); i >= 0; i = buffer.indexOf(NEWLINE, i + 1)) n++;
  return n;
}
