import { readSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import { MinimrError } from '../errors.js';
import { crc32Combine } from '../storage/index.js';
import { CODEC_NONE_ID, codecById, type BlockCodec } from './codec.js';
import { varintSize, writeVarint } from './record-format.js';

/**
 * Frames: the unit of compression and checksumming of every shuffle file (spills, final map output,
 * the reduce side's merged runs) and of segments sent over the network.
 *
 *   frame  := header stored
 *   header := u32 rawLength | u32 storedLength | u32 crc32(stored) | u8 codecId | u8 0 | u16 0  (LE)
 *   raw    := whole records in the record format of record-format.ts
 *
 * A segment (one partition's records in a file) is a sequence of frames; its index entry gives its
 * offset, stored length, raw length, record count and the crc32 of all its stored bytes. Frames hold
 * ~256 KiB of raw records: large enough that the codec runs at full speed, small enough that a
 * k-way merge keeps only one frame per run in memory. A record larger than that gets a frame of its own.
 */

export const FRAME_HEADER_SIZE = 16;
export const DEFAULT_FRAME_RAW_BYTES = 256 * 1024;

/**
 * `segmentCrc` (the CRC-32 of a segment's stored bytes so far) extended by `frame`, a whole frame
 * whose header is as written, from the CRC of its 16 header bytes and the stored bytes' CRC the
 * header holds: the writer has just computed that one. A second pass over the stored bytes cost
 * 13-16 ms per 256 frames of ~190 KB (47 MiB, about one 64 MB TeraSort map's output); this, 1-4 ms.
 */
export function segmentCrcWith(segmentCrc: number, frame: Buffer): number {
  const header = crc32(frame.subarray(0, FRAME_HEADER_SIZE));
  const frameCrc = crc32Combine(header, frame.readUInt32LE(8), frame.length - FRAME_HEADER_SIZE);
  return crc32Combine(segmentCrc, frameCrc, frame.length);
}

export interface SegmentStats {
  readonly offset: number;
  /** Stored bytes, headers included. */
  readonly length: number;
  /** Bytes of the records once decompressed (what a reducer needs in memory). */
  readonly rawLength: number;
  readonly records: number;
  readonly crc32: number;
}

export interface FrameSource {
  /** For error messages: the file or the map output the frames came from. */
  readonly name: string;
  /** Extra ids for errors (jobId, attemptId, mapIndex ...). */
  readonly details?: Readonly<Record<string, string | number>>;
}

function corrupt(source: FrameSource, offset: number, why: string): MinimrError {
  return new MinimrError('ECHECKSUM', `corrupt shuffle data in ${source.name} at byte ${offset}: ${why}`, {
    ...source.details,
    file: source.name,
    offset,
  });
}

/** Packs records into frames; a completed frame comes back from `add`/`flush` ready to write. */
class FrameEncoder {
  private raw: Buffer;
  private used = 0;
  private readonly frameRawBytes: number;
  records = 0;

  constructor(
    private readonly codec: BlockCodec,
    frameRawBytes = DEFAULT_FRAME_RAW_BYTES,
  ) {
    this.frameRawBytes = frameRawBytes;
    this.raw = Buffer.allocUnsafe(frameRawBytes);
  }

  get pendingRawBytes(): number {
    return this.used;
  }

  /** Adds a record; returns a finished frame when this record did not fit in the pending one. */
  add(key: Buffer, value: Buffer): Buffer | null {
    const size = varintSize(key.length) + varintSize(value.length) + key.length + value.length;
    let done: Buffer | null = null;
    if (this.used > 0 && this.used + size > this.frameRawBytes) done = this.flush();
    if (size > this.raw.length) this.raw = Buffer.allocUnsafe(size);
    let pos = writeVarint(this.raw, this.used, key.length);
    pos = writeVarint(this.raw, pos, value.length);
    pos += key.copy(this.raw, pos);
    pos += value.copy(this.raw, pos);
    this.used = pos;
    this.records++;
    if (this.raw.length > this.frameRawBytes && this.used >= this.frameRawBytes) {
      // An oversized record: its frame is complete on its own, and the big buffer is released.
      const frame = this.flush();
      this.raw = Buffer.allocUnsafe(this.frameRawBytes);
      return done ? Buffer.concat([done, frame!]) : frame;
    }
    return done;
  }

  /** The pending frame, if any records are waiting. */
  flush(): Buffer | null {
    if (this.used === 0) return null;
    const frame = encodeFrame(this.codec, this.raw.subarray(0, this.used));
    this.used = 0;
    return frame;
  }
}

/** One frame (header + stored bytes) from raw record bytes. Stored raw when compression does not help. */
function encodeFrame(codec: BlockCodec, raw: Buffer): Buffer {
  return frameFromCompressed(codec, raw, codec.compress(raw));
}

/** The frame of `raw` once `codec` compressed it (possibly on the thread pool); raw if that did not shrink it. */
export function frameFromCompressed(codec: BlockCodec, raw: Buffer, compressed: Buffer): Buffer {
  let stored = compressed;
  let codecId = codec.id;
  if (codecId !== CODEC_NONE_ID && stored.length >= raw.length) {
    stored = raw;
    codecId = CODEC_NONE_ID;
  }
  const frame = Buffer.allocUnsafe(FRAME_HEADER_SIZE + stored.length);
  frame.writeUInt32LE(raw.length, 0);
  frame.writeUInt32LE(stored.length, 4);
  frame.writeUInt32LE(crc32(stored) >>> 0, 8);
  frame.writeUInt32LE(codecId, 12);
  stored.copy(frame, FRAME_HEADER_SIZE);
  return frame;
}

/**
 * Writes segments of frames to a file, batching writes, and returns each segment's stats for the
 * index. Used for spills, the final map output and the reduce side's on-disk runs.
 */
export class FramedFileWriter {
  private readonly encoder: FrameEncoder;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private filePos = 0;
  private segOffset = 0;
  private segCrc = 0;
  private segRaw = 0;
  private segRecords = 0;
  private inSegment = false;
  /** Stored bytes written so far (headers included). */
  bytesWritten = 0;

  constructor(
    private readonly fh: FileHandle,
    codec: BlockCodec,
    private readonly writeBatchBytes = 1 << 20,
    frameRawBytes = DEFAULT_FRAME_RAW_BYTES,
  ) {
    this.encoder = new FrameEncoder(codec, frameRawBytes);
  }

  beginSegment(): void {
    this.segOffset = this.filePos + this.pendingBytes;
    this.segCrc = 0;
    this.segRaw = 0;
    this.segRecords = 0;
    this.inSegment = true;
  }

  /** Adds a record; resolves at once unless a batch of frames has to be written first. */
  append(key: Buffer, value: Buffer): Promise<void> | undefined {
    this.segRecords++;
    this.segRaw += varintSize(key.length) + varintSize(value.length) + key.length + value.length;
    const frame = this.encoder.add(key, value);
    if (!frame) return undefined;
    this.queue(frame);
    return this.pendingBytes >= this.writeBatchBytes ? this.writePending() : undefined;
  }

  async endSegment(): Promise<SegmentStats> {
    if (!this.inSegment) throw new MinimrError('EINTERNAL', 'endSegment without beginSegment');
    const frame = this.encoder.flush();
    if (frame) this.queue(frame);
    this.inSegment = false;
    const stats = {
      offset: this.segOffset,
      length: this.filePos + this.pendingBytes - this.segOffset,
      rawLength: this.segRaw,
      records: this.segRecords,
      crc32: this.segCrc >>> 0,
    };
    if (this.pendingBytes >= this.writeBatchBytes) await this.writePending();
    return stats;
  }

  /** Writes what is queued; call before closing the file. */
  async finish(): Promise<void> {
    await this.writePending();
  }

  private queue(frame: Buffer): void {
    this.segCrc = segmentCrcWith(this.segCrc, frame);
    this.pending.push(frame);
    this.pendingBytes += frame.length;
  }

  private async writePending(): Promise<void> {
    if (this.pendingBytes === 0) return;
    const chunks = this.pending;
    const bytes = this.pendingBytes;
    this.pending = [];
    this.pendingBytes = 0;
    const position = this.filePos;
    this.filePos += bytes;
    this.bytesWritten += bytes;
    let written = 0;
    const buf = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, bytes);
    while (written < bytes) {
      const { bytesWritten } = await this.fh.write(buf, written, bytes - written, position + written);
      written += bytesWritten;
    }
  }
}

/** Decodes one frame at `offset` of `buf`; returns the raw records and where the next frame starts. */
export function decodeFrameAt(buf: Buffer, offset: number, source: FrameSource): { raw: Buffer; next: number } {
  if (offset + FRAME_HEADER_SIZE > buf.length) throw corrupt(source, offset, 'truncated frame header');
  const rawLength = buf.readUInt32LE(offset);
  const storedLength = buf.readUInt32LE(offset + 4);
  const expected = buf.readUInt32LE(offset + 8);
  const codecId = buf.readUInt8(offset + 12);
  const start = offset + FRAME_HEADER_SIZE;
  const end = start + storedLength;
  if (end > buf.length) throw corrupt(source, offset, 'frame runs past the end of the segment');
  const stored = buf.subarray(start, end);
  if (crc32(stored) >>> 0 !== expected) throw corrupt(source, offset, 'frame checksum mismatch');
  let raw: Buffer;
  try {
    raw = codecById(codecId).decompress(stored, rawLength);
  } catch (err) {
    throw corrupt(source, offset, (err as Error).message);
  }
  return { raw, next: end };
}

/**
 * Decodes the frame at the start of `frame` into `scratch` when it is compressed, so that a reader
 * that is done with each frame before the next (a merge that copies records out) reuses one buffer
 * instead of getting a new one per frame; a stored frame's raw bytes are returned in place. Returns
 * the raw bytes and the scratch buffer (a new, larger one when `scratch` was too small or absent).
 */
export function decodeFrameReusing(
  frame: Buffer,
  source: FrameSource,
  scratch: Buffer | undefined,
): { raw: Buffer; scratch: Buffer | undefined } {
  if (FRAME_HEADER_SIZE > frame.length) throw corrupt(source, 0, 'truncated frame header');
  const rawLength = frame.readUInt32LE(0);
  const storedLength = frame.readUInt32LE(4);
  const expected = frame.readUInt32LE(8);
  const codecId = frame.readUInt8(12);
  const end = FRAME_HEADER_SIZE + storedLength;
  if (end > frame.length) throw corrupt(source, 0, 'frame runs past the end of the segment');
  const stored = frame.subarray(FRAME_HEADER_SIZE, end);
  if (crc32(stored) >>> 0 !== expected) throw corrupt(source, 0, 'frame checksum mismatch');
  if (codecId === CODEC_NONE_ID) {
    if (storedLength !== rawLength)
      throw corrupt(source, 0, `stored frame has ${storedLength} bytes, header says ${rawLength}`);
    return { raw: stored, scratch };
  }
  if (scratch === undefined || scratch.length < rawLength)
    scratch = Buffer.allocUnsafe(Math.max(rawLength, DEFAULT_FRAME_RAW_BYTES));
  const raw = scratch.length === rawLength ? scratch : scratch.subarray(0, rawLength);
  try {
    codecById(codecId).decompressInto(stored, raw);
  } catch (err) {
    throw corrupt(source, 0, (err as Error).message);
  }
  return { raw, scratch };
}

/** All raw record bytes of a segment held in memory (a fetched segment), decompressed. */
export function decodeSegment(stored: Buffer, source: FrameSource): Buffer {
  const parts: Buffer[] = [];
  let total = 0;
  for (let pos = 0; pos < stored.length; ) {
    const { raw, next } = decodeFrameAt(stored, pos, source);
    parts.push(raw);
    total += raw.length;
    pos = next;
  }
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts, total);
}

/** Reads until `length` bytes or end of file; returns how many were read. */
export function readFully(fd: number, buf: Buffer, offset: number, length: number, position: number): number {
  let got = 0;
  while (got < length) {
    const n = readSync(fd, buf, offset + got, length - got, position + got);
    if (n === 0) break;
    got += n;
  }
  return got;
}
