import { closeSync, openSync, write, writeSync } from 'node:fs';
import { crc32 } from 'node:zlib';
import { CODEC_NONE_ID, type BlockCodec } from './codec.js';
import {
  DEFAULT_FRAME_RAW_BYTES,
  FRAME_HEADER_SIZE,
  frameFromCompressed,
  segmentCrcWith,
  type SegmentStats,
} from './frames.js';
import { writeVarint } from './record-format.js';

/**
 * Writing a whole framed file (spill, intermediate merged run, final map output): one segment per
 * partition, each a sequence of frames in the format of frames.ts. Two drivers over the same packing:
 *
 *  - `writeFramedFile` (async): compression runs on libuv's thread pool (`compressAsync`) with up to
 *    `inFlight` frames at once and writes are batched, so a spill proceeds while the map keeps running;
 *  - `writeFramedFileSync`: compression and writes on the calling thread, for the rare spill that
 *    `collect` must finish before returning (see map-output-buffer.ts).
 *
 * Memory: `inFlight` raw frames and their compressed copies plus one write batch, whatever the file;
 * raw frames and the batch buffer are reused within a file (a 64 MiB spill used to allocate ~200 MiB
 * of frame, frame-copy and batch Buffers that lived until the next full GC).
 */

/** The file operations a spill needs; a seam so tests can inject ENOSPC. */
export interface SpillFile {
  /** Writes all of `data` at `position`; `data` may be reused by the caller once this is done. */
  write(data: Buffer, position: number): Promise<void>;
  writeSync(data: Buffer, position: number): void;
  close(): Promise<void>;
  closeSync(): void;
}

/** `existing`: open the file as it is, to write past its end (by default it is created or truncated). */
export type OpenSpillFile = (path: string, existing?: boolean) => SpillFile;

/** Default: a plain file opened for writing. */
export const openSpillFile: OpenSpillFile = (path, existing = false) => {
  const fd = openSync(path, existing ? 'r+' : 'w');
  let closed = false;
  const writeOnce = (data: Buffer, off: number, len: number, pos: number): Promise<number> =>
    new Promise((resolve, reject) => write(fd, data, off, len, pos, (err, n) => (err ? reject(err) : resolve(n))));
  return {
    async write(data, position) {
      for (let done = 0; done < data.length; ) done += await writeOnce(data, done, data.length - done, position + done);
    },
    writeSync(data, position) {
      for (let done = 0; done < data.length; ) done += writeSync(fd, data, done, data.length - done, position + done);
    },
    async close() {
      if (closed) return;
      closed = true;
      closeSync(fd);
    },
    closeSync() {
      if (closed) return;
      closed = true;
      closeSync(fd);
    },
  };
};

/** Receives records; a generator source yields after `add` whenever `frameReady` is set. */
/** Raw frame buffers a packer keeps for reuse: as many as can be compressing at once, and one more. */
const MAX_SPARE_FRAMES = 8;

/**
 * Copies `len` bytes between two DataViews four at a time. The packer copies every record of every
 * spill and merge, mostly short ones (TeraSort: 100 bytes): Buffer.prototype.copy costs a native call
 * plus, in Node 20, a Uint8Array view allocated per call (the merge's copies were most of its young
 * garbage), and a byte loop does four times the loads and stores. DataView accesses compile to plain
 * unaligned loads and stores, so this is the cheapest copy for short records measured here.
 */
export function copyViaViews(dst: DataView, dstPos: number, src: DataView, srcPos: number, len: number): void {
  let i = 0;
  for (; i + 4 <= len; i += 4) dst.setInt32(dstPos + i, src.getInt32(srcPos + i, true), true);
  for (; i < len; i++) dst.setUint8(dstPos + i, src.getUint8(srcPos + i));
}

/** Records up to this long are copied with `copyViaViews`; longer ones natively. */
export const VIEW_COPY_MAX = 256;

/** A DataView over exactly the bytes of `buf`. */
export function viewOf(buf: Buffer): DataView {
  return new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
}

export class FramePacker {
  private raw: Buffer;
  private rawView: DataView;
  private used = 0;
  private readonly spare: Buffer[] = [];
  /** Completed raw frames waiting to be compressed. */
  readonly ready: Buffer[] = [];
  records = 0;
  rawBytes = 0;

  constructor(private readonly frameRawBytes = DEFAULT_FRAME_RAW_BYTES) {
    this.raw = Buffer.allocUnsafe(frameRawBytes);
    this.rawView = viewOf(this.raw);
  }

  get frameReady(): boolean {
    return this.ready.length > 0;
  }

  /** Adds the record whose key starts at `src[start]`, value right after it; `srcView` is `viewOf(src)`. */
  addContiguous(src: Buffer, srcView: DataView, start: number, keyLen: number, valueLen: number): void {
    const size = varint(keyLen) + varint(valueLen) + keyLen + valueLen;
    const buf = this.reserve(size);
    let pos = writeVarint(buf, this.used, keyLen);
    pos = writeVarint(buf, pos, valueLen);
    const len = keyLen + valueLen;
    if (len <= VIEW_COPY_MAX) copyViaViews(this.rawView, pos, srcView, start, len);
    else src.copy(buf, pos, start, start + len);
    this.used = pos + len;
    this.records++;
    this.rawBytes += size;
    if (this.used >= this.frameRawBytes) this.cut();
  }

  /**
   * Adds one record already in the record format (`len` bytes at `src[start]`), e.g. from a merged
   * run; `srcView` is `viewOf(src)`.
   */
  addEncoded(src: Buffer, srcView: DataView, start: number, len: number): void {
    const buf = this.reserve(len);
    if (len <= VIEW_COPY_MAX) copyViaViews(this.rawView, this.used, srcView, start, len);
    else src.copy(buf, this.used, start, start + len);
    this.used += len;
    this.records++;
    this.rawBytes += len;
    if (this.used >= this.frameRawBytes) this.cut();
  }

  /**
   * Adds a record whose value gets `tag` as a varint in front (the reduce side's runs): key
   * `keyLen` bytes at `keySrc[keyStart]`, value `valueLen` bytes at `valueSrc[valueStart]`.
   * `srcView`, when given, is `viewOf(keySrc)` and keySrc === valueSrc (a cursor's frame).
   */
  addTagged(
    keySrc: Buffer,
    keyStart: number,
    keyLen: number,
    tag: number,
    valueSrc: Buffer,
    valueStart: number,
    valueLen: number,
    srcView?: DataView,
  ): void {
    const tagLen = varint(tag);
    const size = varint(keyLen) + varint(tagLen + valueLen) + keyLen + tagLen + valueLen;
    const buf = this.reserve(size);
    let pos = writeVarint(buf, this.used, keyLen);
    pos = writeVarint(buf, pos, tagLen + valueLen);
    if (srcView !== undefined && keyLen <= VIEW_COPY_MAX) copyViaViews(this.rawView, pos, srcView, keyStart, keyLen);
    else if (keyLen < 32) for (let i = 0; i < keyLen; i++) buf[pos + i] = keySrc[keyStart + i]!;
    else keySrc.copy(buf, pos, keyStart, keyStart + keyLen);
    pos = writeVarint(buf, pos + keyLen, tag);
    if (srcView !== undefined && valueLen <= VIEW_COPY_MAX)
      copyViaViews(this.rawView, pos, srcView, valueStart, valueLen);
    else valueSrc.copy(buf, pos, valueStart, valueStart + valueLen);
    this.used = pos + valueLen;
    this.records++;
    this.rawBytes += size;
    if (this.used >= this.frameRawBytes) this.cut();
  }

  add(key: Buffer, value: Buffer): void {
    const size = varint(key.length) + varint(value.length) + key.length + value.length;
    const buf = this.reserve(size);
    let pos = writeVarint(buf, this.used, key.length);
    pos = writeVarint(buf, pos, value.length);
    pos += key.copy(buf, pos);
    pos += value.copy(buf, pos);
    this.used = pos;
    this.records++;
    this.rawBytes += size;
    if (this.used >= this.frameRawBytes) this.cut();
  }

  /** Ends the pending frame (at a segment end). */
  cut(): void {
    if (this.used === 0) return;
    this.ready.push(this.raw.subarray(0, this.used));
    this.raw = this.spare.pop() ?? Buffer.allocUnsafe(this.frameRawBytes);
    this.rawView = viewOf(this.raw);
    this.used = 0;
  }

  /** Gives back a frame from `ready` once its bytes are no longer needed (compressed and copied). */
  recycle(frame: Buffer): void {
    const whole = frame.buffer;
    if (frame.byteOffset === 0 && whole.byteLength === this.frameRawBytes && this.spare.length < MAX_SPARE_FRAMES) {
      this.spare.push(Buffer.from(whole, 0, this.frameRawBytes));
    }
  }

  private reserve(size: number): Buffer {
    if (this.used + size <= this.raw.length) return this.raw;
    this.cut();
    // A record larger than a frame gets a frame of its own.
    if (size > this.raw.length) {
      this.raw = Buffer.allocUnsafe(size);
      this.rawView = viewOf(this.raw);
    }
    return this.raw;
  }
}

function varint(n: number): number {
  return n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x200000 ? 3 : n < 0x10000000 ? 4 : 5;
}

/** Pushes partition `p`'s records into the packer, yielding whenever a frame is ready. */
export type SegmentSource = (p: number, packer: FramePacker) => Iterator<void> | Iterable<void>;

export interface FramedFileOptions {
  readonly codec: BlockCodec;
  readonly numSegments: number;
  /** Called between frames; throws to stop (attempt aborted). */
  readonly check?: () => void;
  readonly inFlight?: number;
  readonly writeBatchBytes?: number;
  readonly frameRawBytes?: number;
  /** Where in the file the first segment starts (default 0): the offsets of `segments` count from the file's start. */
  readonly startOffset?: number;
}

export interface FramedFileStats {
  readonly segments: SegmentStats[];
  /** Stored bytes written. */
  readonly bytes: number;
  readonly records: number;
}

class SegmentAccounts {
  readonly length: number[];
  readonly crc: number[];
  readonly raw: number[];
  readonly records: number[];
  constructor(n: number) {
    this.length = new Array<number>(n).fill(0);
    this.crc = new Array<number>(n).fill(0);
    this.raw = new Array<number>(n).fill(0);
    this.records = new Array<number>(n).fill(0);
  }
  add(seg: number, frame: Buffer): void {
    this.length[seg]! += frame.length;
    this.crc[seg] = segmentCrcWith(this.crc[seg]!, frame);
  }
  stats(startOffset = 0): FramedFileStats {
    const segments: SegmentStats[] = [];
    let offset = startOffset;
    let records = 0;
    for (let p = 0; p < this.length.length; p++) {
      segments.push({
        offset,
        length: this.length[p]!,
        rawLength: this.raw[p]!,
        records: this.records[p]!,
        crc32: this.crc[p]! >>> 0,
      });
      offset += this.length[p]!;
      records += this.records[p]!;
    }
    return { segments, bytes: offset - startOffset, records };
  }
}

/** What a segment source returned, as an iterator. */
export function sourceIterator(source: Iterator<void> | Iterable<void>): Iterator<void> {
  return Symbol.iterator in source ? (source as Iterable<void>)[Symbol.iterator]() : (source as Iterator<void>);
}

function* drive(source: Iterator<void> | Iterable<void>): Generator<void> {
  const it = sourceIterator(source);
  let done = false;
  try {
    for (let r = it.next(); !r.done; r = it.next()) yield;
    done = true;
  } finally {
    // Stopped early (a failed write, an abort): let the source close what it opened.
    if (!done) it.return?.();
  }
}

/**
 * Frames (header + stored bytes) laid out one after the other in a single write buffer, reused
 * from batch to batch: no Buffer per frame and no concatenation (the file's write of a batch has
 * completed before the buffer takes new frames). A frame larger than the buffer (a record larger
 * than a frame) is written on its own.
 */
class FrameBatch {
  private readonly buf: Buffer;
  used = 0;

  constructor(
    readonly limit: number,
    frameRawBytes: number,
  ) {
    this.buf = Buffer.allocUnsafe(limit + FRAME_HEADER_SIZE + frameRawBytes);
  }

  /** Whether a frame of `raw` fits after what is there (stored bytes are never longer than raw). */
  fits(raw: Buffer): boolean {
    return this.used + FRAME_HEADER_SIZE + raw.length <= this.buf.length;
  }

  /** Appends the frame of `raw`, whose compressed form is `compressed`, to segment `seg`'s accounts. */
  put(acc: SegmentAccounts, seg: number, codec: BlockCodec, raw: Buffer, compressed: Buffer): void {
    let stored = compressed;
    let codecId = codec.id;
    if (codecId !== CODEC_NONE_ID && stored.length >= raw.length) {
      stored = raw;
      codecId = CODEC_NONE_ID;
    }
    const b = this.buf;
    const at = this.used;
    b.writeUInt32LE(raw.length, at);
    b.writeUInt32LE(stored.length, at + 4);
    b.writeUInt32LE(crc32(stored) >>> 0, at + 8);
    b.writeUInt32LE(codecId, at + 12);
    stored.copy(b, at + FRAME_HEADER_SIZE);
    const end = at + FRAME_HEADER_SIZE + stored.length;
    acc.add(seg, b.subarray(at, end));
    this.used = end;
  }

  /** The bytes to write; the buffer is reused by the next `put`, so write them first. */
  take(): Buffer {
    const out = this.buf.subarray(0, this.used);
    this.used = 0;
    return out;
  }
}

export async function writeFramedFile(
  file: SpillFile,
  source: SegmentSource,
  opts: FramedFileOptions,
): Promise<FramedFileStats> {
  const { codec, numSegments, check } = opts;
  const inFlight = opts.inFlight ?? 4;
  const frameRawBytes = opts.frameRawBytes ?? DEFAULT_FRAME_RAW_BYTES;
  const acc = new SegmentAccounts(numSegments);
  const packer = new FramePacker(frameRawBytes);
  const batch = new FrameBatch(opts.writeBatchBytes ?? 1 << 20, frameRawBytes);
  const pending: Array<{ seg: number; raw: Buffer; stored: Promise<Buffer> }> = [];
  let filePos = opts.startOffset ?? 0;

  const write = async (buf: Buffer): Promise<void> => {
    const at = filePos;
    filePos += buf.length;
    await file.write(buf, at);
  };
  const flushBatch = async (): Promise<void> => {
    if (batch.used > 0) await write(batch.take());
  };
  const drainOne = async (): Promise<void> => {
    const e = pending.shift()!;
    const compressed = await e.stored;
    if (!batch.fits(e.raw)) await flushBatch();
    if (batch.fits(e.raw)) {
      batch.put(acc, e.seg, codec, e.raw, compressed);
      if (batch.used >= batch.limit) await flushBatch();
    } else {
      const frame = frameFromCompressed(codec, e.raw, compressed);
      acc.add(e.seg, frame);
      await write(frame);
    }
    packer.recycle(e.raw);
  };
  const submit = async (seg: number): Promise<void> => {
    while (packer.ready.length > 0) {
      const raw = packer.ready.shift()!;
      const stored = codec.compressAsync(raw);
      stored.catch(() => undefined); // awaited in order below; never unhandled
      pending.push({ seg, raw, stored });
      while (pending.length >= inFlight) await drainOne();
    }
    check?.();
  };

  try {
    for (let p = 0; p < numSegments; p++) {
      const before = packer.records;
      const beforeRaw = packer.rawBytes;
      for (const _ of drive(source(p, packer))) if (packer.frameReady) await submit(p);
      packer.cut();
      await submit(p);
      acc.records[p] = packer.records - before;
      acc.raw[p] = packer.rawBytes - beforeRaw;
    }
    while (pending.length > 0) await drainOne();
    await flushBatch();
  } finally {
    // Let compressions still running settle before the caller frees their input.
    await Promise.allSettled(pending.map((e) => e.stored));
  }
  return acc.stats(opts.startOffset);
}

export function writeFramedFileSync(file: SpillFile, source: SegmentSource, opts: FramedFileOptions): FramedFileStats {
  const { codec, numSegments, check } = opts;
  const frameRawBytes = opts.frameRawBytes ?? DEFAULT_FRAME_RAW_BYTES;
  const acc = new SegmentAccounts(numSegments);
  const packer = new FramePacker(frameRawBytes);
  const batch = new FrameBatch(opts.writeBatchBytes ?? 1 << 20, frameRawBytes);
  let filePos = opts.startOffset ?? 0;
  const write = (buf: Buffer): void => {
    file.writeSync(buf, filePos);
    filePos += buf.length;
  };
  const flushBatch = (): void => {
    if (batch.used > 0) write(batch.take());
  };
  const submit = (seg: number): void => {
    while (packer.ready.length > 0) {
      const raw = packer.ready.shift()!;
      const compressed = codec.compress(raw);
      if (!batch.fits(raw)) flushBatch();
      if (batch.fits(raw)) {
        batch.put(acc, seg, codec, raw, compressed);
        if (batch.used >= batch.limit) flushBatch();
      } else {
        const frame = frameFromCompressed(codec, raw, compressed);
        acc.add(seg, frame);
        write(frame);
      }
      packer.recycle(raw);
    }
    check?.();
  };
  for (let p = 0; p < numSegments; p++) {
    const before = packer.records;
    const beforeRaw = packer.rawBytes;
    for (const _ of drive(source(p, packer))) if (packer.frameReady) submit(p);
    packer.cut();
    submit(p);
    acc.records[p] = packer.records - before;
    acc.raw[p] = packer.rawBytes - beforeRaw;
  }
  flushBatch();
  return acc.stats(opts.startOffset);
}

/** Adapts an iterable of records into a segment source. */
export function* recordsInto(records: Iterable<readonly [Buffer, Buffer]>, packer: FramePacker): Generator<void> {
  for (const [key, value] of records) {
    packer.add(key, value);
    if (packer.frameReady) yield;
  }
}
