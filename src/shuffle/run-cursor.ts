import { closeSync, openSync } from 'node:fs';
import { MinimrError } from '../errors.js';
import { compareBytes, compareByteRanges } from './bytes-compare.js';
import { decodeFrameAt, decodeFrameReusing, FRAME_HEADER_SIZE, readFully, type FrameSource } from './frames.js';
import { MinHeap } from './min-heap.js';
import { sourceIterator, viewOf, type FramePacker, type SegmentSource } from './spill-writer.js';
import type { KeyComparator, ShuffleCounters, ValueFold } from './types.js';

/**
 * Record cursors: the k-way merges of the map side (spills into the map output) and of the reduce
 * side (runs into runs, runs into the reduce) read their runs through these instead of iterators of
 * [key, value] Buffers. A cursor points at its current record as offsets into the raw frame that
 * holds it (`buf`: key at [keyStart, keyEnd), value at [valueStart, end), the encoded record at
 * [start, end)), so moving through a run allocates nothing per record: the merge compares keys in
 * place and a merge that writes copies the encoded record in one piece. Buffers (subarrays) are only
 * made where a caller needs them: a job comparator, a combiner, the reduce function.
 *
 * Why: on TeraSort's 100-byte records the iterator version spent more CPU in per-record objects
 * (two subarrays, a tuple, a tagged record, one generator frame per nesting level) and per-field
 * copies than in decompressing, comparing and compressing together.
 *
 * A frame buffer is never reused once a record of it was handed out: subarrays given to a consumer
 * stay valid (a reducer may keep a key while it reads the next records). Only the stored (compressed)
 * bytes are read into a buffer reused from frame to frame.
 *
 * Tags. The reduce side's runs carry a tag per record (the map index, which orders equal keys): a
 * fetched segment's records all have the segment's map index (`tag` constant), the runs the reduce
 * side writes have it as a varint at the start of each value (`TAG_IN_VALUE`; the cursor's value
 * then starts after it, and `tagStart` is where it starts).
 */

/** The raw frames of one run, in order. */
export interface FrameFeed {
  /** The next frame's raw record bytes; undefined at the end. */
  next(): Buffer | undefined;
  close(): void;
}

/** `tag` argument of a cursor whose records carry their tag at the start of the value. */
export const TAG_IN_VALUE = -1;

const EMPTY = Buffer.alloc(0);
const EMPTY_VIEW = new DataView(new ArrayBuffer(0));

function malformed(source: string, why: string, offset: number): MinimrError {
  return new MinimrError('EPROTOCOL', `malformed shuffle segment in ${source}: ${why} at byte ${offset}`, {
    file: source,
    offset,
  });
}

export class RecordCursor {
  /** Raw bytes of the frame holding the current record. */
  buf: Buffer = EMPTY;
  /** A DataView of `buf` (made once per frame), for the packer's word copies. */
  view: DataView = EMPTY_VIEW;
  start = 0;
  keyStart = 0;
  keyEnd = 0;
  /** Where the tag varint starts (= valueStart for a run without tags in its values). */
  tagStart = 0;
  valueStart = 0;
  end = 0;
  tag: number;
  /**
   * The key's first 4 bytes as a big-endian number, missing bytes as 0: when two prefixes differ
   * they order the keys in byte order (a shorter key that is padded is a prefix of the other up to
   * where they differ), so the merge compares numbers and reads the keys only on a tie.
   */
  prefix = 0;
  private pos = 0;
  private keyView: Buffer | undefined;
  private readonly tagged: boolean;

  /**
   * `tag`: the tag of every record, or TAG_IN_VALUE. `order`: the run's position in the merge, which
   * breaks ties after key and tag (a stable merge).
   */
  constructor(
    private readonly feed: FrameFeed,
    tag: number,
    readonly order: number,
    private readonly name = 'run',
  ) {
    this.tagged = tag === TAG_IN_VALUE;
    this.tag = this.tagged ? 0 : tag;
  }

  /** Moves to the next record; false at the end of the run (the feed is then closed). */
  advance(): boolean {
    let buf = this.buf;
    let pos = this.pos;
    while (pos >= buf.length) {
      const next = this.feed.next();
      if (next === undefined) {
        this.buf = EMPTY;
        this.view = EMPTY_VIEW;
        this.pos = 0;
        this.feed.close();
        return false;
      }
      buf = next;
      pos = 0;
      this.buf = buf;
      this.view = viewOf(buf);
    }
    this.start = pos;
    let keyLen = buf[pos++]!;
    if (keyLen >= 0x80) {
      keyLen = this.slowVarint(buf, pos - 1);
      pos = this.varEnd;
    }
    let valueLen = pos < buf.length ? buf[pos++]! : this.truncated(pos);
    if (valueLen >= 0x80) {
      valueLen = this.slowVarint(buf, pos - 1);
      pos = this.varEnd;
    }
    this.keyStart = pos;
    this.keyEnd = pos + keyLen;
    this.prefix =
      keyLen >= 4
        ? buf[pos]! * 0x1000000 + ((buf[pos + 1]! << 16) | (buf[pos + 2]! << 8) | buf[pos + 3]!)
        : (keyLen > 0 ? buf[pos]! * 0x1000000 : 0) +
          (keyLen > 1 ? buf[pos + 1]! << 16 : 0) +
          (keyLen > 2 ? buf[pos + 2]! << 8 : 0);
    const end = this.keyEnd + valueLen;
    if (end > buf.length) throw malformed(this.name, 'record runs past the end of the frame', this.start);
    this.end = end;
    this.tagStart = this.keyEnd;
    this.valueStart = this.keyEnd;
    if (this.tagged) {
      let at = this.keyEnd;
      let tag = 0;
      let mul = 1;
      for (;;) {
        if (at >= end || at - this.keyEnd >= 5) throw malformed(this.name, 'bad record tag', this.start);
        const b = buf[at++]!;
        tag += (b & 0x7f) * mul;
        if ((b & 0x80) === 0) break;
        mul *= 128;
      }
      this.tag = tag;
      this.valueStart = at;
    }
    this.pos = end;
    this.keyView = undefined;
    return true;
  }

  /** The current key as a Buffer (a view, made once per record). */
  key(): Buffer {
    return (this.keyView ??= this.buf.subarray(this.keyStart, this.keyEnd));
  }

  value(): Buffer {
    return this.buf.subarray(this.valueStart, this.end);
  }

  close(): void {
    this.buf = EMPTY;
    this.view = EMPTY_VIEW;
    this.pos = 0;
    this.feed.close();
  }

  private varEnd = 0;

  private slowVarint(buf: Buffer, at: number): number {
    let result = 0;
    let mul = 1;
    const start = at;
    for (;;) {
      if (at >= buf.length) throw malformed(this.name, 'truncated varint', start);
      const b = buf[at++]!;
      result += (b & 0x7f) * mul;
      if ((b & 0x80) === 0) break;
      mul *= 128;
      if (at - start >= 5) throw malformed(this.name, 'varint too long', start);
    }
    if (result > 0xffffffff) throw malformed(this.name, 'length out of range', start);
    this.varEnd = at;
    return result;
  }

  private truncated(at: number): never {
    throw malformed(this.name, 'truncated varint', at);
  }
}

/** One buffer of raw records (a segment held in memory). */
export function bufferFeed(raw: Buffer): FrameFeed {
  let done = false;
  return {
    next() {
      if (done) return undefined;
      done = true;
      return raw;
    },
    close() {
      done = true;
    },
  };
}

/**
 * The frames a segment source packs, one at a time, as a run to merge without writing it first: the
 * map side's last sort-buffer generation joins the final merge this way instead of as a spill file.
 * `packer` may be shared by the feeds of several segments read one after the other (each feed cuts
 * its last frame). `reuseFrames`: as for FileFrameFeed, a frame's bytes go back to the packer when
 * the next frame is asked for; otherwise every frame stays valid for the views handed out of it.
 */
export function packedFeed(
  source: SegmentSource,
  segment: number,
  packer: FramePacker,
  reuseFrames: boolean,
): FrameFeed {
  let records: Iterator<void> | undefined;
  let lent: Buffer | undefined;
  let done = false;
  return {
    next() {
      if (lent !== undefined && reuseFrames) packer.recycle(lent);
      lent = undefined;
      if (packer.ready.length === 0 && !done) {
        const it = (records ??= sourceIterator(source(segment, packer)));
        while (packer.ready.length === 0) {
          if (it.next().done) {
            done = true;
            packer.cut();
            break;
          }
        }
      }
      lent = packer.ready.shift();
      return lent;
    },
    close() {
      if (!done) records?.return?.();
      done = true;
      // A feed closed early leaves no frame of its segment for the next feed of the packer.
      packer.ready.length = 0;
    },
  };
}

/**
 * The frames of one segment of a file, read with blocking reads one frame at a time. Blocking is
 * deliberate: this runs in a task process (never in a worker), where it keeps the merge and the user's
 * reduce synchronous; memory is one frame per open run, whatever the run's size. Opens the file at the
 * first frame, closes it at the end or on `close`.
 *
 * `reuseFrames`: the reader is done with a frame's bytes when it asks for the next one (a merge that
 * copies each record into its output, with no views handed out), so frames are decompressed into one
 * buffer reused from frame to frame (decodeFrameReusing) instead of a new Buffer each: a merge then
 * makes no garbage per frame. The default keeps every frame valid for as long as views of it live.
 */
export class FileFrameFeed implements FrameFeed {
  private fd: number | undefined;
  private pos: number;
  private readonly end: number;
  private stored: Buffer | undefined;
  private scratch: Buffer | undefined;
  private closed = false;

  constructor(
    private readonly path: string,
    offset: number,
    length: number,
    private readonly source: FrameSource = { name: path },
    private readonly reuseFrames = false,
  ) {
    this.pos = offset;
    this.end = offset + length;
  }

  next(): Buffer | undefined {
    if (this.closed || this.pos >= this.end) {
      this.close();
      return undefined;
    }
    this.fd ??= openSync(this.path, 'r');
    const pos = this.pos;
    let frame = this.stored;
    if (frame === undefined || frame.length < FRAME_HEADER_SIZE) frame = this.stored = Buffer.allocUnsafe(64 * 1024);
    if (readFully(this.fd, frame, 0, FRAME_HEADER_SIZE, pos) !== FRAME_HEADER_SIZE)
      throw this.corrupt(pos, 'truncated frame header');
    const frameLength = FRAME_HEADER_SIZE + frame.readUInt32LE(4);
    if (pos + frameLength > this.end) throw this.corrupt(pos, 'frame runs past the end of the segment');
    if (frame.length < frameLength) {
      const bigger = Buffer.allocUnsafe(Math.max(frameLength, frame.length * 2));
      frame.copy(bigger, 0, 0, FRAME_HEADER_SIZE);
      frame = this.stored = bigger;
    }
    if (
      readFully(this.fd, frame, FRAME_HEADER_SIZE, frameLength - FRAME_HEADER_SIZE, pos + FRAME_HEADER_SIZE) !==
      frameLength - FRAME_HEADER_SIZE
    ) {
      throw this.corrupt(pos, 'truncated frame');
    }
    const view = frame.length === frameLength ? frame : frame.subarray(0, frameLength);
    const source = { ...this.source, details: { ...this.source.details, frameOffset: pos } };
    let raw: Buffer;
    if (this.reuseFrames) {
      const decoded = decodeFrameReusing(view, source, this.scratch);
      raw = decoded.raw;
      this.scratch = decoded.scratch;
    } else {
      raw = decodeFrameAt(view, 0, source).raw;
      // A frame stored uncompressed is a view of the read buffer: that buffer now belongs to the records.
      if (raw.buffer === frame.buffer) this.stored = undefined;
    }
    this.pos = pos + frameLength;
    return raw;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.stored = undefined;
    this.scratch = undefined;
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }

  private corrupt(offset: number, why: string): MinimrError {
    return new MinimrError('ECHECKSUM', `corrupt shuffle data in ${this.source.name} at byte ${offset}: ${why}`, {
      ...this.source.details,
      file: this.source.name,
      offset,
    });
  }
}

/**
 * k-way merge of cursors by key, then tag, then order (stable). Use:
 *   for (let c = merge.first(); c !== undefined; c = merge.next()) { ...c's current record... }
 * A cursor's record is valid until `next()`; `close()` closes every run (also after an early stop).
 */
export class CursorMerge {
  private readonly heap: MinHeap<RecordCursor>;
  private readonly cursors: readonly RecordCursor[];

  constructor(cursors: readonly RecordCursor[], compare: KeyComparator) {
    this.cursors = cursors;
    const less =
      compare === compareBytes
        ? (a: RecordCursor, b: RecordCursor): boolean => {
            if (a.prefix !== b.prefix) return a.prefix < b.prefix;
            const c = compareByteRanges(a.buf, a.keyStart, a.keyEnd, b.buf, b.keyStart, b.keyEnd);
            if (c !== 0) return c < 0;
            if (a.tag !== b.tag) return a.tag < b.tag;
            return a.order < b.order;
          }
        : (a: RecordCursor, b: RecordCursor): boolean => {
            const c = compare(a.key(), b.key());
            if (c !== 0) return c < 0;
            if (a.tag !== b.tag) return a.tag < b.tag;
            return a.order < b.order;
          };
    this.heap = new MinHeap<RecordCursor>(less);
  }

  /** Reads each run's first record; the cursor with the smallest, or undefined when all are empty. */
  first(): RecordCursor | undefined {
    try {
      for (const c of this.cursors) if (c.advance()) this.heap.push(c);
    } catch (err) {
      this.close();
      throw err;
    }
    return this.heap.size > 0 ? this.heap.peek() : undefined;
  }

  /** Moves past the smallest record; the cursor with the next one, or undefined at the end. */
  next(): RecordCursor | undefined {
    const heap = this.heap;
    const top = heap.peek();
    if (!top.advance()) {
      heap.pop();
      return heap.size > 0 ? heap.peek() : undefined;
    }
    if (heap.size > 1) heap.replaceTop(top);
    return heap.peek();
  }

  close(): void {
    this.heap.drain();
    for (const c of this.cursors) c.close();
  }
}

/**
 * A merge as [key, value] views, for the paths that need Buffers (combiner). Closes the runs at the end or on return.
 */
export function* cursorRecords(merge: CursorMerge): Generator<[Buffer, Buffer]> {
  try {
    for (let c = merge.first(); c !== undefined; c = merge.next()) yield [c.key(), c.value()];
  } finally {
    merge.close();
  }
}

/**
 * Copies a merge's records into `packer` as they come, encoded bytes and all: no Buffer per key or
 * value, no frame kept. Yields whenever a frame is ready to write; closes the runs at the end or on return.
 */
export function* copyMerged(merge: CursorMerge, packer: FramePacker): Generator<void> {
  try {
    for (let c = merge.first(); c !== undefined; c = merge.next()) {
      packer.addEncoded(c.buf, c.view, c.start, c.end - c.start);
      if (packer.frameReady) yield;
    }
  } finally {
    merge.close();
  }
}

/**
 * Combines a byte-ordered merge's key groups with `fold` into `packer`, records read in place. A
 * group's key and first value are copied once into a scratch buffer (so the runs may reuse their
 * frames), then its combined value is packed after the key: `tagged`, with the group's first tag
 * (a reduce's runs); else as a plain record. `passSingleRecords`: a group of one record goes on as it
 * came (applyCombiner's option, for runs whose keys were combined already). Counts
 * combineInputRecords and combineOutputRecords; yields whenever a frame is ready; closes the runs
 * at the end or on return.
 */
export function* foldMerged(
  merge: CursorMerge,
  fold: ValueFold,
  packer: FramePacker,
  options: { readonly tagged: boolean; readonly passSingleRecords: boolean; readonly counters?: ShuffleCounters },
): Generator<void> {
  const { tagged, passSingleRecords, counters } = options;
  let scratch: Buffer = Buffer.allocUnsafe(256);
  let scratchView = viewOf(scratch);
  try {
    let c = merge.first();
    while (c !== undefined) {
      const keyLen = c.keyEnd - c.keyStart;
      const firstLen = c.end - c.valueStart;
      if (keyLen + firstLen > scratch.length) {
        scratch = Buffer.allocUnsafe(Math.max(2 * scratch.length, keyLen + firstLen));
        scratchView = viewOf(scratch);
      }
      c.buf.copy(scratch, 0, c.keyStart, c.keyEnd);
      c.buf.copy(scratch, keyLen, c.valueStart, c.end);
      const tag = c.tag;
      fold.first(c.buf, c.keyStart, c.keyEnd, c.valueStart, c.end);
      let records = 1;
      for (c = merge.next(); c !== undefined; c = merge.next()) {
        if (compareByteRanges(c.buf, c.keyStart, c.keyEnd, scratch, 0, keyLen) !== 0) break;
        fold.add(c.buf, c.keyStart, c.keyEnd, c.valueStart, c.end);
        records++;
      }
      let value: Buffer = scratch;
      let valueStart = keyLen;
      let valueLen = firstLen;
      if (!(passSingleRecords && records === 1)) {
        valueLen = fold.finish();
        value = fold.out;
        valueStart = 0;
      }
      if (counters) {
        counters.combineInputRecords += records;
        counters.combineOutputRecords++;
      }
      if (tagged) packer.addTagged(scratch, 0, keyLen, tag, value, valueStart, valueLen);
      else {
        if (keyLen + valueLen > scratch.length) {
          const grown = Buffer.allocUnsafe(keyLen + valueLen);
          scratch.copy(grown, 0, 0, keyLen);
          scratch = grown;
          scratchView = viewOf(scratch);
        }
        if (value !== scratch) value.copy(scratch, keyLen, valueStart, valueStart + valueLen);
        packer.addContiguous(scratch, scratchView, 0, keyLen, valueLen);
      }
      if (packer.frameReady) yield;
    }
  } finally {
    merge.close();
  }
}
