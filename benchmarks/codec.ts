/**
 * Shuffle block codecs on shuffle-shaped data: which LZ4 binding should the shuffle use?
 *
 * Data (built in memory, deterministic), ~64 MiB each, in our record format
 * (`[varint keyLen][varint valueLen][key][value]`, src/shuffle/record-format.ts), sorted by key the
 * way one partition of a map's output is:
 *   terasort   TeraGen rows from apps/teragen.ts's own generator: 10-byte random key, 90-byte value
 *              (markers, row number as hex, hex filler with each digit repeated 4 times)
 *   wordcount  un-combined WordCount map output: words of a Zipf (s = 1) vocabulary of 4000 made-up
 *              words (benchmarks/lib/corpus.ts) as UTF-8 keys, msgpack `1` (one byte) as the value
 * cut into frames of whole records of at most 256 KiB (the shuffle's DEFAULT_FRAME_RAW_BYTES) and,
 * as a second row, 1 MiB, exactly as FrameEncoder cuts them.
 *
 * Codecs, each over every frame:
 *   none              memcpy into a preallocated buffer (the floor any codec is measured against)
 *   lz4-napi sync     compressSync / uncompressSync (what src/shuffle/codec.ts uses; Rust lz4_flex)
 *   lz4-napi async    compress / uncompress with N frames in flight on libuv's pool, as a spill does
 *   lz4 native        the `lz4` package's block API (encodeBlock / decodeBlock into preallocated
 *                     outputs of encodeBound size), when its node-gyp addon is present (C liblz4)
 *   lz4 native, fresh out   the same with a new allocUnsafe output per call (as lz4-napi returns),
 *                     to tell allocation cost from codec speed
 *   lz4 pure-JS       the same block API from the package's JS implementation (lib/binding.js)
 *                     (browserify's build uses it; Node never falls back to it by itself). It
 *                     returns 0 for a block with no match at all (e.g. a one-record tail frame):
 *                     such a frame is stored raw, as the shuffle would write it with codec none
 * For each: compress and decompress throughput in MiB/s of RAW bytes (wall time of a pass over all
 * frames; median of --reps passes, interleaved across codecs, after an untimed warm-up), stored/raw
 * ratio (codec output only, without our 16-byte frame headers; lz4-napi's output includes its
 * 4-byte length prefix), and a byte-for-byte check of every frame's round trip in every pass. CPU
 * seconds of each pass are in the JSON (for the async rows they include libuv's pool threads).
 *
 * How the `lz4` package picks native vs JS (0.6.5): in Node, `require('lz4')` loads
 * lib/utils.js, which requires build/Release/xxhash.node and build/Release/lz4.node with no
 * fallback; the pure-JS implementation (lib/utils-js.js + lib/binding.js) is only wired in for
 * browserify (the "browser" field). The published tarball ships a build/ directory built on macOS,
 * so without its install script (`node-gyp rebuild`) `require('lz4')` throws ERR_DLOPEN_FAILED;
 * with it, the addon is compiled here. This benchmark reports which of the two it found.
 *
 * Run: npm run bench:codec [-- --size-mb 64] [--reps 5] [--in-flight 4]
 * Writes bench-results/codec.json and codec.md at the package root. MiB = 2^20 bytes.
 */
import yargs from 'yargs';
import { mkdirSync, openSync, readFileSync, readSync, closeSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { pack } from 'msgpackr';
import { generateRow, KEY_LENGTH, RECORD_LENGTH } from '../apps/teragen.js';
import { varintSize, writeVarint } from '../src/shuffle/record-format.js';
import { seededUint32 } from '../src/util/index.js';
import { makeVocabulary, zipfProbabilities } from './lib/corpus.js';
import { median } from './lib/shell.js';

const SELF = fileURLToPath(import.meta.url);
const require = createRequire(import.meta.url);
const MiB = 1 << 20;
const KiB = 1 << 10;

// ---------------------------------------------------------------- arguments

interface Args {
  sizeMb: number;
  reps: number;
  inFlight: number;
}

function parseArgs(argv: string[]): Args {
  const a = yargs(argv)
    .option('size-mb', { type: 'number', default: 64, describe: 'MiB of frames per data set' })
    .option('reps', { type: 'number', default: 5 })
    .option('in-flight', { type: 'number', default: 4, describe: 'async compressions in flight' })
    .strict()
    .parseSync();
  return { sizeMb: a.sizeMb, reps: Math.round(a.reps), inFlight: Math.round(a.inFlight) };
}

// ---------------------------------------------------------------- progress

const T0 = performance.now();
function log(msg: string): void {
  process.stdout.write(`[${((performance.now() - T0) / 1000).toFixed(1).padStart(6)}s] ${msg}\n`);
}

// ---------------------------------------------------------------- data

/** Writes one record at `pos`; returns the position after it. */
function putRecord(out: Buffer, pos: number, key: Buffer, value: Buffer): number {
  pos = writeVarint(out, pos, key.length);
  pos = writeVarint(out, pos, value.length);
  pos += key.copy(out, pos);
  pos += value.copy(out, pos);
  return pos;
}

/** TeraGen rows 0..n-1 (n chosen to fill `targetBytes` of encoded records), sorted by key. */
function teraSortSegment(targetBytes: number): { data: Buffer; records: number } {
  const encoded = varintSize(KEY_LENGTH) + varintSize(RECORD_LENGTH - KEY_LENGTH) + RECORD_LENGTH;
  const n = Math.floor(targetBytes / encoded);
  const rows = Buffer.allocUnsafe(n * RECORD_LENGTH);
  const prefix = new Float64Array(n); // key bytes 0..5 as a 48-bit number: exact in a double
  for (let r = 0; r < n; r++) {
    const at = r * RECORD_LENGTH;
    generateRow(r, rows, at);
    prefix[r] = rows.readUIntBE(at, 6);
  }
  const order = Array.from({ length: n }, (_, i) => i);
  order.sort((a, b) => {
    const d = prefix[a]! - prefix[b]!;
    if (d !== 0) return d;
    const pa = a * RECORD_LENGTH;
    const pb = b * RECORD_LENGTH;
    return Buffer.compare(rows.subarray(pa + 6, pa + KEY_LENGTH), rows.subarray(pb + 6, pb + KEY_LENGTH));
  });
  const data = Buffer.allocUnsafe(n * encoded);
  let pos = 0;
  for (const r of order) {
    const at = r * RECORD_LENGTH;
    pos = putRecord(data, pos, rows.subarray(at, at + KEY_LENGTH), rows.subarray(at + KEY_LENGTH, at + RECORD_LENGTH));
  }
  if (pos !== data.length) throw new Error('terasort segment size mismatch');
  return { data, records: n };
}

/**
 * Un-combined WordCount map output: tokens drawn from the corpus generator's Zipf vocabulary until
 * the encoded records reach `targetBytes`, then laid out sorted by the key's bytes (so a word's
 * records are adjacent, as after the map-side sort).
 */
function wordCountSegment(targetBytes: number): { data: Buffer; records: number; vocabulary: number } {
  const rng = seededUint32(20240601);
  const vocabulary = makeVocabulary(4000, rng);
  const probabilities = zipfProbabilities(vocabulary.length);
  const cumulative = new Float64Array(vocabulary.length);
  let c = 0;
  for (let i = 0; i < probabilities.length; i++) cumulative[i] = c += probabilities[i]!;
  cumulative[cumulative.length - 1] = 1;
  const keys = vocabulary.map((w) => Buffer.from(w, 'utf8'));
  const one = pack(1) as Buffer; // what codecs.msgpack<number>() writes for a count of 1
  if (one.length !== 1) throw new Error(`msgpack(1) is ${one.length} bytes, expected 1`);
  const sizes = keys.map((k) => varintSize(k.length) + varintSize(one.length) + k.length + one.length);
  const counts = new Array<number>(keys.length).fill(0);
  let bytes = 0;
  let records = 0;
  for (;;) {
    const u = rng() / 4294967296;
    let lo = 0;
    let hi = cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cumulative[mid]! > u) hi = mid;
      else lo = mid + 1;
    }
    if (bytes + sizes[lo]! > targetBytes) break;
    bytes += sizes[lo]!;
    counts[lo]!++;
    records++;
  }
  const order = keys.map((_, i) => i).sort((a, b) => Buffer.compare(keys[a]!, keys[b]!));
  const data = Buffer.allocUnsafe(bytes);
  let pos = 0;
  for (const i of order) for (let k = 0; k < counts[i]!; k++) pos = putRecord(data, pos, keys[i]!, one);
  if (pos !== bytes) throw new Error('wordcount segment size mismatch');
  return { data, records, vocabulary: keys.length };
}

/** Frames of whole records of at most `frameBytes` raw bytes, as FrameEncoder packs them. */
function cutFrames(data: Buffer, frameBytes: number): Buffer[] {
  const frames: Buffer[] = [];
  let start = 0;
  let pos = 0;
  const readVarint = (): number => {
    let result = 0;
    let mul = 1;
    for (;;) {
      const b = data[pos++]!;
      result += (b & 0x7f) * mul;
      if ((b & 0x80) === 0) return result;
      mul *= 128;
    }
  };
  while (pos < data.length) {
    const recStart = pos;
    const keyLen = readVarint();
    const valueLen = readVarint();
    const end = pos + keyLen + valueLen;
    if (recStart > start && end - start > frameBytes) {
      frames.push(data.subarray(start, recStart));
      start = recStart;
    }
    pos = end;
  }
  if (pos > start) frames.push(data.subarray(start, pos));
  return frames;
}

// ---------------------------------------------------------------- codecs

interface Lz4Napi {
  compressSync(data: Buffer): Buffer;
  uncompressSync(data: Buffer): Buffer;
  compress(data: Buffer): Promise<Buffer>;
  uncompress(data: Buffer): Promise<Buffer>;
}

/** The block API of the `lz4` package (native addon and lib/binding.js share it). */
interface Lz4Block {
  compress(src: Buffer, dst: Buffer): number;
  uncompress(src: Buffer, dst: Buffer): number;
  compressBound(n: number): number;
}

interface Lz4Package {
  encodeBlock(src: Buffer, dst: Buffer): number;
  decodeBlock(src: Buffer, dst: Buffer): number;
  encodeBound(n: number): number;
}

interface BenchCodec {
  name: string;
  detail: string;
  async: boolean;
  /** Called once per frame set, untimed: allocate output arenas. */
  prepare(frames: Buffer[]): void;
  compress(frame: Buffer, i: number): Buffer | Promise<Buffer>;
  decompress(stored: Buffer, rawLength: number, i: number): Buffer | Promise<Buffer>;
}

/**
 * Offsets of one slot per frame in one preallocated arena, so block-API codecs write every frame's
 * output without allocating (what a shuffle would do with one reused scratch buffer, minus the
 * write to disk that frees it) and every output survives for the round-trip check.
 */
class Arena {
  private buf = Buffer.alloc(0);
  private offsets: number[] = [];
  private sizes: number[] = [];

  reset(sizes: number[]): void {
    this.sizes = sizes;
    this.offsets = [];
    let total = 0;
    for (const s of sizes) {
      this.offsets.push(total);
      total += s;
    }
    if (this.buf.length < total) this.buf = Buffer.alloc(total); // alloc, not allocUnsafe: pages touched up front
  }

  slot(i: number): Buffer {
    const at = this.offsets[i]!;
    return this.buf.subarray(at, at + this.sizes[i]!);
  }
}

function memcpyCodec(): BenchCodec {
  const out = new Arena();
  const back = new Arena();
  return {
    name: 'none',
    detail: 'Buffer.copy into preallocated slots (memcpy)',
    async: false,
    prepare(frames) {
      const sizes = frames.map((f) => f.length);
      out.reset(sizes);
      back.reset(sizes);
    },
    compress(frame, i) {
      const dst = out.slot(i);
      frame.copy(dst);
      return dst;
    },
    decompress(stored, rawLength, i) {
      const dst = back.slot(i);
      if (stored.copy(dst) !== rawLength) throw new Error('memcpy length mismatch');
      return dst;
    },
  };
}

function napiSyncCodec(lz4: Lz4Napi, version: string): BenchCodec {
  return {
    name: 'lz4-napi sync',
    detail: `lz4-napi ${version} compressSync/uncompressSync (Rust lz4_flex, new output Buffer per call)`,
    async: false,
    prepare() {},
    compress: (frame) => lz4.compressSync(frame),
    decompress(stored, rawLength) {
      const out = lz4.uncompressSync(stored);
      if (out.length !== rawLength) throw new Error(`lz4-napi decompressed ${out.length} bytes, expected ${rawLength}`);
      return out;
    },
  };
}

function napiAsyncCodec(lz4: Lz4Napi, version: string, inFlight: number): BenchCodec {
  return {
    name: `lz4-napi async x${inFlight}`,
    detail: `lz4-napi ${version} compress/uncompress, ${inFlight} frames in flight on libuv's thread pool`,
    async: true,
    prepare() {},
    compress: (frame) => lz4.compress(frame),
    async decompress(stored, rawLength) {
      const out = await lz4.uncompress(stored);
      if (out.length !== rawLength) throw new Error(`lz4-napi decompressed ${out.length} bytes, expected ${rawLength}`);
      return out;
    },
  };
}

function blockCodec(name: string, detail: string, block: Lz4Block): BenchCodec & { rawFrames(): number } {
  const out = new Arena();
  const back = new Arena();
  // Frames the encoder refused (returned 0: "cannot compress", which lib/binding.js does for input
  // with no match at all, e.g. a one-record tail frame). A shuffle would write such a frame with
  // codec none; here its slot holds a raw copy and the flag says so.
  let storedRaw: boolean[] = [];
  return {
    name,
    detail,
    async: false,
    prepare(frames) {
      out.reset(frames.map((f) => Math.max(block.compressBound(f.length), f.length)));
      back.reset(frames.map((f) => f.length));
      storedRaw = frames.map(() => false);
    },
    compress(frame, i) {
      const dst = out.slot(i);
      const n = block.compress(frame, dst);
      if (n === 0) {
        storedRaw[i] = true;
        frame.copy(dst);
        return dst.subarray(0, frame.length);
      }
      if (!(n > 0)) throw new Error(`${name}: encodeBlock returned ${n}`);
      storedRaw[i] = false;
      return dst.subarray(0, n);
    },
    decompress(stored, rawLength, i) {
      const dst = back.slot(i);
      const n = storedRaw[i] ? stored.copy(dst) : block.uncompress(stored, dst);
      if (n !== rawLength) throw new Error(`${name}: decodeBlock returned ${n}, expected ${rawLength}`);
      return dst;
    },
    rawFrames: () => storedRaw.filter(Boolean).length,
  };
}

/**
 * The native block API with a fresh (allocUnsafe) output per call, as lz4-napi returns one: the
 * difference to "lz4 native" is the cost of allocating (and first touching) output memory, which
 * separates it from the speed of the codec itself.
 */
function blockCodecFreshOutput(name: string, detail: string, block: Lz4Block): BenchCodec {
  return {
    name,
    detail,
    async: false,
    prepare() {},
    compress(frame) {
      const dst = Buffer.allocUnsafe(block.compressBound(frame.length));
      const n = block.compress(frame, dst);
      if (!(n > 0)) throw new Error(`${name}: encodeBlock returned ${n}`);
      return dst.subarray(0, n);
    },
    decompress(stored, rawLength) {
      const dst = Buffer.allocUnsafe(rawLength);
      const n = block.uncompress(stored, dst);
      if (n !== rawLength) throw new Error(`${name}: decodeBlock returned ${n}, expected ${rawLength}`);
      return dst;
    },
  };
}

// ---------------------------------------------------------------- lz4 package detection

/** A package's version, found from its entry point (lz4-napi's "exports" hides its package.json). */
function packageVersion(name: string): string {
  let dir = dirname(require.resolve(name));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === name) return pkg.version ?? '?';
    } catch {
      // no package.json here: keep walking up
    }
    const up = dirname(dir);
    if (up === dir) return '?';
    dir = up;
  }
}

interface Lz4PackageInfo {
  version: string;
  dir: string;
  /** What the files in build/Release are: built here (ELF), or the tarball's macOS build. */
  addonFile: string;
  addonLoaded: boolean;
  addonError?: string;
  requireLz4: 'native' | 'js' | 'error';
  requireLz4Error?: string;
  liblz4Version?: string;
  native?: Lz4Block;
  js: Lz4Block;
}

function fileKind(path: string): string {
  try {
    const fd = openSync(path, 'r');
    const head = Buffer.alloc(4);
    readSync(fd, head, 0, 4, 0);
    closeSync(fd);
    if (head.equals(Buffer.from([0x7f, 0x45, 0x4c, 0x46]))) return 'ELF (built on this machine by node-gyp)';
    if (head.readUInt32LE(0) === 0xfeedfacf)
      return 'Mach-O (the macOS build shipped in the npm tarball: install script did not run)';
    return `unknown format (${head.toString('hex')})`;
  } catch (err) {
    return `missing (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`;
  }
}

function inspectLz4Package(): Lz4PackageInfo {
  const pkgPath = require.resolve('lz4/package.json');
  const dir = dirname(pkgPath);
  const version = (JSON.parse(readFileSync(pkgPath, 'utf8')) as { version: string }).version;
  const addonPath = join(dir, 'build', 'Release', 'lz4.node');
  const info: Lz4PackageInfo = {
    version,
    dir,
    addonFile: fileKind(addonPath),
    addonLoaded: false,
    requireLz4: 'error',
    js: require('lz4/lib/binding.js') as Lz4Block,
  };
  try {
    const header = readFileSync(join(dir, 'deps', 'lz4', 'lib', 'lz4.h'), 'utf8');
    const v = (part: string): string =>
      header.match(new RegExp(`#define\\s+LZ4_VERSION_${part}\\s+(\\d+)`))?.[1] ?? '?';
    info.liblz4Version = `${v('MAJOR')}.${v('MINOR')}.${v('RELEASE')}`;
  } catch {
    // no bundled sources: leave the version out
  }
  try {
    info.native = require(addonPath) as Lz4Block;
    info.addonLoaded = true;
  } catch (err) {
    info.addonError = `${(err as NodeJS.ErrnoException).code ?? ''} ${(err as Error).message.split('\n')[0]}`.trim();
  }
  try {
    const pkg = require('lz4') as Lz4Package;
    info.requireLz4 = info.native !== undefined && pkg.encodeBlock === info.native.compress ? 'native' : 'js';
  } catch (err) {
    info.requireLz4Error =
      `${(err as NodeJS.ErrnoException).code ?? ''} ${(err as Error).message.split('\n')[0]}`.trim();
  }
  return info;
}

// ---------------------------------------------------------------- measurement

interface PassStats {
  seconds: number;
  cpuSeconds: number;
}

interface Row {
  dataset: string;
  frameBytes: number;
  frames: number;
  rawBytes: number;
  codec: string;
  detail: string;
  storedBytes: number;
  ratio: number;
  compressMiBs: number;
  decompressMiBs: number;
  /** Raw MiB per CPU-second of this process (all its threads): less sensitive to a loaded machine. */
  compressMiBPerCpuS: number;
  decompressMiBPerCpuS: number;
  compressPasses: PassStats[];
  decompressPasses: PassStats[];
  /** Frames whose round trip was byte-identical, over all passes. */
  framesChecked: number;
  mismatches: number;
  /** Frames the block encoder refused (returned 0) and that were stored raw instead. */
  framesStoredRaw?: number;
  error?: string;
}

async function runPass(
  n: number,
  fn: (i: number) => Buffer | Promise<Buffer>,
  async: boolean,
  inFlight: number,
): Promise<{ outputs: Buffer[]; stats: PassStats }> {
  const outputs = new Array<Buffer>(n);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  if (!async) {
    for (let i = 0; i < n; i++) outputs[i] = fn(i) as Buffer;
  } else {
    let next = 0;
    const lane = async (): Promise<void> => {
      while (next < n) {
        const i = next++;
        outputs[i] = await fn(i);
      }
    };
    await Promise.all(Array.from({ length: Math.min(inFlight, n) }, lane));
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return { outputs, stats: { seconds, cpuSeconds: (cpu.user + cpu.system) / 1e6 } };
}

/**
 * All codecs over one frame set. Passes are interleaved (rep 1 of every codec, then rep 2 ...), so
 * a burst of load from other work on the machine spreads over all codecs instead of one.
 */
async function measureAll(
  codecs: BenchCodec[],
  dataset: string,
  frameBytes: number,
  frames: Buffer[],
  args: Args,
): Promise<Row[]> {
  const rawBytes = frames.reduce((s, f) => s + f.length, 0);
  const rows: Row[] = codecs.map((codec) => ({
    dataset,
    frameBytes,
    frames: frames.length,
    rawBytes,
    codec: codec.name,
    detail: codec.detail,
    storedBytes: 0,
    ratio: NaN,
    compressMiBs: NaN,
    decompressMiBs: NaN,
    compressMiBPerCpuS: NaN,
    decompressMiBPerCpuS: NaN,
    compressPasses: [],
    decompressPasses: [],
    framesChecked: 0,
    mismatches: 0,
  }));
  const fail = (row: Row, err: unknown): void => {
    row.error = (err as Error).message;
  };
  for (let k = 0; k < codecs.length; k++) {
    const codec = codecs[k]!;
    try {
      codec.prepare(frames);
      // Warm-up (untimed): JIT for the JS codec, lazy loads, first touch of the output arenas.
      const warm = await runPass(frames.length, (i) => codec.compress(frames[i]!, i), codec.async, args.inFlight);
      await runPass(
        frames.length,
        (i) => codec.decompress(warm.outputs[i]!, frames[i]!.length, i),
        codec.async,
        args.inFlight,
      );
    } catch (err) {
      fail(rows[k]!, err);
    }
  }
  for (let rep = 0; rep < args.reps; rep++) {
    for (let k = 0; k < codecs.length; k++) {
      const codec = codecs[k]!;
      const row = rows[k]!;
      if (row.error !== undefined) continue;
      try {
        const c = await runPass(frames.length, (i) => codec.compress(frames[i]!, i), codec.async, args.inFlight);
        const stored = c.outputs;
        const d = await runPass(
          frames.length,
          (i) => codec.decompress(stored[i]!, frames[i]!.length, i),
          codec.async,
          args.inFlight,
        );
        row.compressPasses.push(c.stats);
        row.decompressPasses.push(d.stats);
        row.storedBytes = stored.reduce((s, b) => s + b.length, 0);
        for (let i = 0; i < frames.length; i++) {
          row.framesChecked++;
          if (!d.outputs[i]!.equals(frames[i]!)) row.mismatches++;
        }
      } catch (err) {
        fail(row, err);
      }
    }
  }
  for (let k = 0; k < codecs.length; k++) {
    const row = rows[k]!;
    if (row.error !== undefined) continue;
    row.ratio = row.storedBytes / rawBytes;
    const raw = (codecs[k] as Partial<{ rawFrames(): number }>).rawFrames?.();
    if (raw !== undefined) row.framesStoredRaw = raw;
    row.compressMiBs = rawBytes / MiB / median(row.compressPasses.map((p) => p.seconds));
    row.decompressMiBs = rawBytes / MiB / median(row.decompressPasses.map((p) => p.seconds));
    row.compressMiBPerCpuS = rawBytes / MiB / median(row.compressPasses.map((p) => p.cpuSeconds));
    row.decompressMiBPerCpuS = rawBytes / MiB / median(row.decompressPasses.map((p) => p.cpuSeconds));
  }
  return rows;
}

/** Can each LZ4 implementation read the other's blocks? (lz4-napi prefixes a u32 LE raw length.) */
function interop(napi: Lz4Napi, block: Lz4Block, frames: Buffer[]): { napiToBlock: boolean; blockToNapi: boolean } {
  let napiToBlock = true;
  let blockToNapi = true;
  for (const frame of frames.slice(0, 8)) {
    const a = napi.compressSync(frame);
    const back = Buffer.alloc(frame.length);
    if (
      a.readUInt32LE(0) !== frame.length ||
      block.uncompress(a.subarray(4), back) !== frame.length ||
      !back.equals(frame)
    ) {
      napiToBlock = false;
    }
    const dst = Buffer.alloc(block.compressBound(frame.length));
    const n = block.compress(frame, dst);
    const prefixed = Buffer.alloc(4 + n);
    prefixed.writeUInt32LE(frame.length, 0);
    dst.copy(prefixed, 4, 0, n);
    try {
      if (!napi.uncompressSync(prefixed).equals(frame)) blockToNapi = false;
    } catch {
      blockToNapi = false;
    }
  }
  return { napiToBlock, blockToNapi };
}

// ---------------------------------------------------------------- report

const f1 = (x: number): string => (Number.isFinite(x) ? x.toFixed(0) : '—');
const f3 = (x: number): string => (Number.isFinite(x) ? x.toFixed(3) : '—');
const sizeLabel = (b: number): string => (b >= MiB ? `${b / MiB} MiB` : `${b / KiB} KiB`);

function markdown(rows: Row[], meta: Record<string, unknown>, lz4: Lz4PackageInfo, notes: string[]): string {
  const lines: string[] = [];
  lines.push('# Shuffle block codecs on shuffle frames');
  lines.push('');
  lines.push(
    `Generated by \`npm run bench:codec\` on ${String(meta.date)}: ` +
      `Node ${String(meta.node)}, ${String(meta.cpus)} ` +
      `× ${String(meta.cpuModel)}, ` +
      `UV_THREADPOOL_SIZE ${String(meta.uvThreadpoolSize)}. ` +
      (`MiB/s of raw bytes, median of ${String(meta.reps)} passes over ` +
        `all frames (interleaved across codecs) after a warm-up pass; ` +
        `ratio = codec output / raw bytes (frame headers excluded). `) +
      ('MiB/CPU-s = raw MiB per CPU-second of the whole process (for ' +
        'async rows: main thread plus libuv pool), which a loaded ' +
        'machine disturbs less than wall time. ') +
      'The machine is shared: compare rows of the same run, not absolute numbers across runs.',
  );
  lines.push('');
  lines.push(
    `\`lz4\` package ${lz4.version}: build/Release/lz4.node ` +
      `is ${lz4.addonFile}; ` +
      `addon ${lz4.addonLoaded ? 'loaded' : `did not load (${lz4.addonError ?? '?'})`}; ` +
      `\`require('lz4')\` ${lz4.requireLz4 === 'error' ? `throws (${lz4.requireLz4Error ?? '?'})` : `gives the ${lz4.requireLz4 === 'native' ? 'native addon (C liblz4 ' + (lz4.liblz4Version ?? '?') + ')' : 'pure-JS'} ` + `block API`}. ` +
      'The "lz4 pure-JS" rows call the package\'s JS block implementation (lib/binding.js) directly.',
  );
  lines.push('');
  lines.push(
    '| data | frame | codec | compress MiB/s | compress MiB/CPU-s | ' +
      'decompress MiB/s | decompress MiB/CPU-s | stored/raw | round ' +
      'trip |',
  );
  lines.push('|---|---|---|---:|---:|---:|---:|---:|---|');
  for (const r of rows) {
    const check = r.error
      ? `error: ${r.error}`
      : r.mismatches === 0
        ? `identical (${r.framesChecked} ` +
          `frames${r.framesStoredRaw ? `; ${r.framesStoredRaw} refused by the encoder, stored raw` : ''})`
        : `**${r.mismatches} MISMATCHES**`;
    lines.push(
      `| ${r.dataset} | ${sizeLabel(r.frameBytes)} (${r.frames}) ` +
        `| ${r.codec} | ${f1(r.compressMiBs)} ` +
        `| ${f1(r.compressMiBPerCpuS)} | ${f1(r.decompressMiBs)} ` +
        `| ${f1(r.decompressMiBPerCpuS)} | ${f3(r.ratio)} | ${check} |`,
    );
  }
  lines.push('');
  for (const n of notes) lines.push(`- ${n}`);
  lines.push('');
  return lines.join('\n');
}

// ---------------------------------------------------------------- main

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const target = Math.round(args.sizeMb * MiB);

  const napiPkg = { version: packageVersion('lz4-napi') };
  const napi = require('lz4-napi') as Lz4Napi;
  const lz4 = inspectLz4Package();
  log(`lz4 ${lz4.version}: addon file ${lz4.addonFile}`);
  log(
    `lz4 ${lz4.version}: ` +
      `addon ${lz4.addonLoaded ? 'loaded' : `NOT loaded: ${lz4.addonError}`}; ` +
      `require('lz4') ` +
      `-> ${lz4.requireLz4}${lz4.requireLz4Error ? ` (${lz4.requireLz4Error})` : ''}`,
  );

  const codecs: BenchCodec[] = [
    memcpyCodec(),
    napiSyncCodec(napi, napiPkg.version),
    napiAsyncCodec(napi, napiPkg.version, args.inFlight),
  ];
  if (lz4.native) {
    codecs.push(
      blockCodec(
        'lz4 native',
        `lz4 ${lz4.version} encodeBlock/decodeBlock, node-gyp addon (C liblz4 ${lz4.liblz4Version ?? '?'})`,
        lz4.native,
      ),
    );
    codecs.push(
      blockCodecFreshOutput(
        'lz4 native, fresh out',
        `lz4 ${lz4.version} encodeBlock/decodeBlock into a new allocUnsafe Buffer per call`,
        lz4.native,
      ),
    );
  }
  codecs.push(
    blockCodec(
      'lz4 pure-JS',
      `lz4 ${lz4.version} lib/binding.js compress/uncompress (the package's JS implementation)`,
      lz4.js,
    ),
  );

  log(`building ${args.sizeMb} MiB of TeraSort map output ...`);
  const tera = teraSortSegment(target);
  log(`  ${tera.records} records, ${tera.data.length} bytes`);
  log(`building ${args.sizeMb} MiB of WordCount map output ...`);
  const wc = wordCountSegment(target);
  log(`  ${wc.records} records over ${wc.vocabulary} words, ${wc.data.length} bytes`);
  const datasets = [
    { name: 'terasort', data: tera.data, records: tera.records },
    { name: 'wordcount', data: wc.data, records: wc.records },
  ];

  const rows: Row[] = [];
  const interopResults: Record<string, { napiToBlock: boolean; blockToNapi: boolean }> = {};
  for (const ds of datasets) {
    if (lz4.native) interopResults[ds.name] = interop(napi, lz4.native, cutFrames(ds.data, 256 * KiB));
    for (const frameBytes of [256 * KiB, MiB]) {
      const frames = cutFrames(ds.data, frameBytes);
      log(
        `${ds.name} in ${sizeLabel(frameBytes)} ` +
          `frames: ${frames.length} frames, ${args.reps} interleaved ` +
          `passes per codec ...`,
      );
      for (const row of await measureAll(codecs, ds.name, frameBytes, frames, args)) {
        rows.push(row);
        log(
          `${ds.name.padEnd(9)} ${sizeLabel(frameBytes).padStart(7)} ${row.codec.padEnd(22)} ` +
            (row.error
              ? `ERROR ${row.error}`
              : `compress ${f1(row.compressMiBs).padStart(6)} MiB/s ` +
                `(${f1(row.compressMiBPerCpuS).padStart(6)}/CPU-s)  ` +
                (`decompress ${f1(row.decompressMiBs).padStart(6)} MiB/s ` +
                  `(${f1(row.decompressMiBPerCpuS).padStart(6)}/CPU-s)  ` +
                  `ratio ${f3(row.ratio)}  `) +
                (row.mismatches === 0 ? 'round trip identical' : `${row.mismatches} MISMATCHES`) +
                (row.framesStoredRaw ? ` (${row.framesStoredRaw} frames refused by the encoder, stored raw)` : '')),
        );
      }
    }
  }

  const failed = rows.filter((r) => r.error !== undefined || r.mismatches > 0);
  const meta = {
    date: new Date().toISOString(),
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? '?',
    uvThreadpoolSize: Number(process.env.UV_THREADPOOL_SIZE ?? 4),
    reps: args.reps,
    inFlight: args.inFlight,
    sizeMb: args.sizeMb,
  };
  const notes: string[] = [
    `Data: terasort = ${tera.records} TeraGen rows (apps/teragen.ts ` +
      `generator) as [varint 10][varint 90][key][value], sorted by ` +
      `key; ` +
      (`wordcount = ${wc.records} un-combined WordCount records (Zipf ` +
        `s=1 over ${wc.vocabulary} words, value = msgpack 1 = 1 byte), ` +
        `sorted by key. `) +
      ('Frames hold whole records, at most the frame size, cut as ' +
        'FrameEncoder cuts them; the count of frames is in parentheses.'),
    'lz4-napi output carries a 4-byte little-endian raw-length ' +
      'prefix before the LZ4 block; the `lz4` package writes the bare ' +
      'block into a preallocated encodeBound-sized slot (no allocation ' +
      'per call).',
    `lz4-napi async keeps ${args.inFlight} frames in flight; ` +
      `on ${meta.cpus} cores its MiB/s is wall-clock throughput, not ` +
      `per-core speed; its MiB/CPU-s counts the pool threads too.`,
  ];
  for (const [name, r] of Object.entries(interopResults)) {
    notes.push(
      `Interop on ${name} frames: lz4 native decodes lz4-napi blocks ` +
        `(prefix stripped): ${r.napiToBlock ? 'yes' : 'NO'}; lz4-napi ` +
        `decodes lz4 native blocks (prefix ` +
        `added): ${r.blockToNapi ? 'yes' : 'NO'}.`,
    );
  }
  if (failed.length > 0)
    notes.push(`FAILED rows: ${failed.map((r) => `${r.dataset}/${sizeLabel(r.frameBytes)}/${r.codec}`).join(', ')}`);

  const { native: _n, js: _j, ...lz4Json } = lz4;
  const md = markdown(rows, meta, lz4, notes);
  const outDir = resolve(dirname(SELF), '..', '..', 'bench-results');
  mkdirSync(outDir, { recursive: true });
  writeFileSync(
    join(outDir, 'codec.json'),
    JSON.stringify(
      { meta, lz4Package: lz4Json, lz4Napi: { version: napiPkg.version }, interop: interopResults, rows, notes },
      null,
      2,
    ) + '\n',
  );
  writeFileSync(join(outDir, 'codec.md'), md);
  process.stdout.write('\n' + md);
  log(`wrote ${join(outDir, 'codec.json')} and codec.md`);
  if (failed.length > 0) process.exitCode = 1;
}

await main();
