/**
 * The unsigned LEB128 varint of `codecs.varuint` (a non-negative integer up to 2^53 - 1, 7 bits a
 * byte, low bits first), read from bytes [start, end) of `bytes` without a view of them: the codec
 * decodes with it, and so does the summing fold, which reads values where the merges hold them
 * (runtime/task/sum-combiner.ts). -1 when the bytes end inside the varint.
 */
export function readVaruint(bytes: Uint8Array, start: number, end: number): number {
  let value = 0;
  let scale = 1;
  for (let i = start; i < end; i++) {
    const byte = bytes[i]!;
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return value;
    scale *= 0x80;
  }
  return -1;
}
