import { createRequire } from 'node:module';
import { MinimrError } from '../errors.js';
import { noteTransientBytes } from './gc-pacer.js';

/**
 * Block codecs for shuffle frames. A codec compresses one frame's raw bytes at a time (never one
 * record at a time: per-call overhead would dominate). The id is stored in every frame header and
 * in the index file, so a reader always knows how a frame was written.
 *
 * LZ4 comes from `lz4-napi` (prebuilt native binaries, no build step at install). The design card's
 * `lz4` package needs node-gyp at install time, which npm 11 does not run without approval, and then
 * silently falls back to a pure-JS codec; `npm run bench:codec` measures both on shuffle data.
 * Merges that copy records out of their runs decode frames with `decompressInto`, a JS decoder of the
 * addon's block format writing into reused memory (decodeLz4Block below says why).
 */
export interface BlockCodec {
  readonly id: number;
  readonly name: string;
  compress(raw: Buffer): Buffer;
  /** `rawLength` is the frame header's; a mismatch is an ECHECKSUM-class corruption. */
  decompress(stored: Buffer, rawLength: number): Buffer;
  /** Compression on libuv's thread pool, so a spill can overlap the map's own work. */
  compressAsync(raw: Buffer): Promise<Buffer>;
  /**
   * Decompresses into `out` (exactly the frame's raw length; a mismatch throws ECHECKSUM), memory the
   * caller reuses from frame to frame: no Buffer per frame, so no garbage for the GC pacer.
   */
  decompressInto(stored: Buffer, out: Buffer): void;
}

export const CODEC_NONE_ID = 0;
export const CODEC_LZ4_ID = 1;

export const noneCodec: BlockCodec = {
  id: CODEC_NONE_ID,
  name: 'none',
  compress: (raw) => raw,
  decompress: (stored) => stored,
  compressAsync: async (raw) => raw,
  decompressInto: (stored, out) => {
    if (stored.length !== out.length)
      throw new MinimrError('ECHECKSUM', `stored frame has ${stored.length} bytes, header says ${out.length}`);
    stored.copy(out);
  },
};

interface Lz4Napi {
  compressSync(data: Buffer): Buffer;
  uncompressSync(data: Buffer): Buffer;
  compress(data: Buffer): Promise<Buffer>;
}

let lz4Binding: Lz4Napi | undefined;
function lz4(): Lz4Napi {
  // Loaded on first use: processes that never touch compressed frames do not pay for the addon.
  lz4Binding ??= createRequire(import.meta.url)('lz4-napi') as Lz4Napi;
  return lz4Binding;
}

export const lz4Codec: BlockCodec = {
  id: CODEC_LZ4_ID,
  name: 'lz4',
  compress: (raw) => noteNativeBytes(lz4().compressSync(raw), raw.length),
  decompress: (stored, rawLength) => {
    let out: Buffer;
    try {
      out = lz4().uncompressSync(stored);
    } catch (err) {
      throw new MinimrError('ECHECKSUM', `LZ4 frame does not decompress: ${(err as Error).message}`);
    }
    noteNativeBytes(out, out.length);
    if (out.length !== rawLength) {
      throw new MinimrError('ECHECKSUM', `LZ4 frame decompressed to ${out.length} bytes, header says ${rawLength}`);
    }
    return out;
  },
  compressAsync: (raw) =>
    lz4()
      .compress(raw)
      .then((out) => noteNativeBytes(out, raw.length)),
  decompressInto: (stored, out) => decodeLz4Block(stored, out),
};

function badLz4(why: string): MinimrError {
  return new MinimrError('ECHECKSUM', `LZ4 frame does not decompress: ${why}`);
}

/**
 * Decodes what lz4-napi's compress writes (lz4_flex's compress_prepend_size: the raw length as a u32
 * LE, then one LZ4 block) into `out`, in JS. Why not the addon: its uncompressSync returns a new
 * Buffer of native memory per frame, which the merges drop a frame later: 1 MiB of garbage per MiB
 * merged, and one paced full GC (gc-pacer.ts) per 16 MiB of it, which cost more CPU than the
 * decoding (a map merging 16 MB of spills paid ~5 full GCs instead of 3 without spills). Decoding
 * into a reused buffer makes no garbage; on TeraGen frames it takes ~20 ms per 16 MiB against the
 * addon's ~9 (benchmarks/spill-merge.ts measures the whole merge). Copies go four bytes at a time
 * through DataViews (see copyViaViews in spill-writer.ts); a match whose source overlaps its
 * destination by less than four bytes is copied byte by byte, as the format requires.
 */
export function decodeLz4Block(stored: Buffer, out: Buffer): void {
  const n = stored.length;
  if (n < 5) throw badLz4(`block of ${n} bytes`);
  if (stored.readUInt32LE(0) !== out.length)
    throw badLz4(`block says ${stored.readUInt32LE(0)} raw bytes, header says ${out.length}`);
  const sv = new DataView(stored.buffer, stored.byteOffset, n);
  const ov = new DataView(out.buffer, out.byteOffset, out.length);
  const end = out.length;
  let ip = 4;
  let op = 0;
  for (;;) {
    const token = stored[ip++]!;
    let lit = token >>> 4;
    if (lit === 15) {
      let b: number;
      do {
        if (ip >= n) throw badLz4('truncated literal length');
        b = stored[ip++]!;
        lit += b;
      } while (b === 255);
    }
    if (lit > 0) {
      if (ip + lit > n || op + lit > end) throw badLz4('literals run past the block');
      let i = 0;
      for (; i + 4 <= lit; i += 4) ov.setInt32(op + i, sv.getInt32(ip + i, true), true);
      for (; i < lit; i++) out[op + i] = stored[ip + i]!;
      ip += lit;
      op += lit;
    }
    if (ip >= n) break;
    if (ip + 2 > n) throw badLz4('truncated match offset');
    const offset = stored[ip]! | (stored[ip + 1]! << 8);
    ip += 2;
    let len = (token & 15) + 4;
    if (len === 19) {
      let b: number;
      do {
        if (ip >= n) throw badLz4('truncated match length');
        b = stored[ip++]!;
        len += b;
      } while (b === 255);
    }
    const from = op - offset;
    if (offset === 0 || from < 0) throw badLz4(`match offset ${offset} at raw byte ${op}`);
    if (op + len > end) throw badLz4('match runs past the raw length');
    let i = 0;
    if (offset >= 4) for (; i + 4 <= len; i += 4) ov.setInt32(op + i, ov.getInt32(from + i, true), true);
    for (; i < len; i++) out[op + i] = out[from + i]!;
    op += len;
  }
  if (op !== end) throw badLz4(`decoded ${op} bytes, header says ${end}`);
}

/**
 * Every output of the addon is native memory V8 hardly sees: counted for the GC pacer. A compressed
 * output keeps the allocation of the worst case, about the raw size (lz4_flex allocates the bound
 * and truncates), so it counts as that.
 */
function noteNativeBytes(buf: Buffer, allocated: number): Buffer {
  noteTransientBytes(allocated);
  return buf;
}

export function codecById(id: number): BlockCodec {
  if (id === CODEC_NONE_ID) return noneCodec;
  if (id === CODEC_LZ4_ID) return lz4Codec;
  throw new MinimrError('ECHECKSUM', `unknown shuffle codec id ${id}: file written by a newer minimr, or corrupt`);
}

export function codecByName(name: string): BlockCodec {
  if (name === 'none') return noneCodec;
  if (name === 'lz4') return lz4Codec;
  throw new MinimrError('EBADJOB', `unknown shuffle codec "${name}" (known: none, lz4)`);
}
