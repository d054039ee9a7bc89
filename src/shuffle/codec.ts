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
 */
export interface BlockCodec {
  readonly id: number;
  readonly name: string;
  compress(raw: Buffer): Buffer;
  /** `rawLength` is the frame header's; a mismatch is an ECHECKSUM-class corruption. */
  decompress(stored: Buffer, rawLength: number): Buffer;
  /** Compression on libuv's thread pool, so a spill can overlap the map's own work. */
  compressAsync(raw: Buffer): Promise<Buffer>;
}

export const CODEC_NONE_ID = 0;
export const CODEC_LZ4_ID = 1;

export const noneCodec: BlockCodec = {
  id: CODEC_NONE_ID,
  name: 'none',
  compress: (raw) => raw,
  decompress: (stored) => stored,
  compressAsync: async (raw) => raw,
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
  compressAsync: (raw) => lz4().compress(raw).then((out) => noteNativeBytes(out, raw.length)),
};

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
