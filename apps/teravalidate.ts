/**
 * TeraValidate: checks TeraSort's output (or any 100-byte-record files) and sums a checksum.
 *
 * Output, from its single reducer:
 *
 *   misorder<TAB>N     adjacent record pairs out of order (keys compared as bytes), inside a split
 *                      or across the boundary between consecutive splits; 0 for a valid sort
 *   rows<TAB>N         records read
 *   checksum<TAB>H     16 hex digits: the sum mod 2^64 of a 64-bit hash of every record (high
 *                      32 bits FNV-1a, low 32 bits CRC-32). Order-independent, so TeraGen's output
 *                      validated the same way (misordered, but the same records) gives the same H.
 *   splits<TAB>N       non-empty input splits seen
 *   error<TAB>...      one line per boundary misorder or gap (at most 20), for debugging
 *
 * The cross-split check relies on the runtime's documented map-index order (input paths as given,
 * files of a directory by name, blocks of a file by offset): split i+1 is what follows split i in
 * part-r-00000, part-r-00001, ... The check compares split i's last key with split i+1's first key.
 *
 * Each map keeps a running summary of its split in module scope (every attempt runs in a process of
 * its own) and emits it once from cleanupMap: { split, byte range, first/last key, count, misorder,
 * checksum }. So a map emits one record per split, not one per row, and no combiner is needed. If
 * the reader ever handed over records that are not contiguous, the map starts a new run at the gap
 * and the reducer reports the gap. One key for everything, so one reduce call sees all splits.
 */
import { crc32 } from 'node:zlib';
import {
  codecs,
  defineJob,
  fixedRecordInput,
  textOutput,
  type Codec,
  type JsonValue,
  type ReduceContext,
} from 'minimr';

const RECORD_LENGTH = 100;
const KEY_LENGTH = 10;
const SUMMARY_KEY = 'teravalidate';
const MAX_ERROR_LINES = 20;

/** A run of consecutive records of one split: bytes [start, end) of the split's file. */
export interface Summary {
  mapIndex: number;
  start: number;
  end: number;
  count: number;
  misorder: number;
  sumLo: number;
  sumHi: number;
  firstKey: Buffer;
  lastKey: Buffer;
}

const HEADER = 4 + 8 * 4 + 4 * 2;

/** Fixed binary layout: exact for the key bytes and the 64-bit sum halves, with no msgpack dependence. */
export const summaryCodec: Codec<Summary> = {
  name: 'teravalidate-summary',
  encode(s) {
    const b = Buffer.allocUnsafe(HEADER + 2 + s.firstKey.length + 2 + s.lastKey.length);
    b.writeUInt32BE(s.mapIndex, 0);
    b.writeDoubleBE(s.start, 4);
    b.writeDoubleBE(s.end, 12);
    b.writeDoubleBE(s.count, 20);
    b.writeDoubleBE(s.misorder, 28);
    b.writeUInt32BE(s.sumLo, 36);
    b.writeUInt32BE(s.sumHi, 40);
    let at = HEADER;
    b.writeUInt16BE(s.firstKey.length, at);
    at += 2 + s.firstKey.copy(b, at + 2);
    b.writeUInt16BE(s.lastKey.length, at);
    s.lastKey.copy(b, at + 2);
    return b;
  },
  decode(b) {
    let at = HEADER;
    const firstLen = b.readUInt16BE(at);
    const firstKey = Buffer.from(b.subarray(at + 2, at + 2 + firstLen));
    at += 2 + firstLen;
    const lastLen = b.readUInt16BE(at);
    const lastKey = Buffer.from(b.subarray(at + 2, at + 2 + lastLen));
    return {
      mapIndex: b.readUInt32BE(0),
      start: b.readDoubleBE(4),
      end: b.readDoubleBE(12),
      count: b.readDoubleBE(20),
      misorder: b.readDoubleBE(28),
      sumLo: b.readUInt32BE(36),
      sumHi: b.readUInt32BE(40),
      firstKey,
      lastKey,
    };
  },
};

function fnv1a32(bytes: Buffer): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) h = Math.imul(h ^ bytes[i]!, 0x01000193);
  return h >>> 0;
}

/** The 64-bit record hash as [high, low] 32-bit halves. */
export function recordHash(record: Buffer): [number, number] {
  return [fnv1a32(record), crc32(record) >>> 0];
}

const TWO_32 = 0x1_0000_0000;

/** (aHi:aLo) + (bHi:bLo) mod 2^64, kept in two uint32 halves to stay exact and BigInt-free. */
function add64(aHi: number, aLo: number, bHi: number, bLo: number): [number, number] {
  let lo = aLo + bLo;
  let carry = 0;
  if (lo >= TWO_32) {
    lo -= TWO_32;
    carry = 1;
  }
  return [(aHi + bHi + carry) >>> 0, lo];
}

export function checksumHex(s: { sumHi: number; sumLo: number }): string {
  return s.sumHi.toString(16).padStart(8, '0') + s.sumLo.toString(16).padStart(8, '0');
}

/** b's records directly follow a's (same split, a.end === b.start): one run. Mutates `a`. */
function append(a: Summary, b: Summary): Summary {
  a.misorder += b.misorder + (Buffer.compare(a.lastKey, b.firstKey) > 0 ? 1 : 0);
  a.count += b.count;
  [a.sumHi, a.sumLo] = add64(a.sumHi, a.sumLo, b.sumHi, b.sumLo);
  a.end = b.end;
  a.lastKey = b.lastKey;
  return a;
}

/**
 * Joins the summaries whose byte ranges touch, in any arrival order: each run is indexed by its
 * start and its end, so a new summary finds its left and right neighbours in O(1). In-order input
 * (the usual case) keeps one growing run per split.
 */
export function joinSummaries(summaries: Iterable<Summary>): Summary[] {
  const bySplit = new Map<number, { byStart: Map<number, Summary>; byEnd: Map<number, Summary> }>();
  const overlapping: Summary[] = [];
  for (const s0 of summaries) {
    let s = s0;
    let idx = bySplit.get(s.mapIndex);
    if (idx === undefined) {
      idx = { byStart: new Map(), byEnd: new Map() };
      bySplit.set(s.mapIndex, idx);
    }
    const left = idx.byEnd.get(s.start);
    if (left !== undefined) {
      idx.byEnd.delete(left.end);
      s = append(left, s);
    } else if (idx.byStart.has(s.start)) {
      // Two summaries claim the same bytes: cannot happen with one attempt per split; keep it
      // aside rather than double-join, and let the reducer report the overlap.
      overlapping.push(s);
      continue;
    } else {
      idx.byStart.set(s.start, s);
    }
    const right = idx.byStart.get(s.end);
    if (right !== undefined && right !== s) {
      idx.byStart.delete(right.start);
      idx.byEnd.delete(right.end);
      s = append(s, right);
    }
    idx.byEnd.set(s.end, s);
  }
  const out: Summary[] = [];
  for (const idx of bySplit.values()) out.push(...idx.byStart.values());
  out.push(...overlapping);
  return out;
}

export interface Validation {
  misorder: number;
  rows: number;
  checksum: string;
  splits: number;
  errors: string[];
}

/** Reducer's final pass over all joined summaries: totals plus the split-boundary checks. */
export function validate(summaries: Iterable<Summary>): Validation {
  const runs = joinSummaries(summaries).sort((a, b) => a.mapIndex - b.mapIndex || a.start - b.start);
  let misorder = 0;
  let rows = 0;
  let sum = { sumHi: 0, sumLo: 0 };
  const errors: string[] = [];
  const note = (msg: string): void => {
    if (errors.length < MAX_ERROR_LINES) errors.push(msg);
  };
  let splits = 0;
  let prev: Summary | undefined;
  for (const run of runs) {
    misorder += run.misorder;
    rows += run.count;
    const [hi, lo] = add64(sum.sumHi, sum.sumLo, run.sumHi, run.sumLo);
    sum = { sumHi: hi, sumLo: lo };
    if (prev === undefined || prev.mapIndex !== run.mapIndex) splits++;
    if (prev !== undefined) {
      if (prev.mapIndex === run.mapIndex && prev.end !== run.start) {
        note(`split ${run.mapIndex}: bytes [${prev.end}, ${run.start}) missing or read twice`);
      }
      if (Buffer.compare(prev.lastKey, run.firstKey) > 0) {
        misorder++;
        note(
          `misorder between split ${prev.mapIndex} ` +
            `byte ${prev.end - RECORD_LENGTH} ` +
            `(${prev.lastKey.toString('hex')}) ` +
            `and split ${run.mapIndex} byte ${run.start} (${run.firstKey.toString('hex')})`,
        );
      }
    }
    prev = run;
  }
  return { misorder, rows, checksum: checksumHex(sum), splits, errors };
}

/** What the current attempt has read of its split so far: one run of contiguous records. */
interface MapState {
  attemptId: string;
  run: Summary | undefined;
  /** A copy of the run's last key, reused (the reader may reuse a record's memory). */
  lastKey: Buffer;
}

let state: MapState | undefined;

/** The current attempt's state, fresh if an earlier attempt in this process left some behind. */
function stateFor(attemptId: string): MapState {
  if (state === undefined || state.attemptId !== attemptId) {
    state = { attemptId, run: undefined, lastKey: Buffer.alloc(KEY_LENGTH) };
  }
  return state;
}

/** Ends the current run, if any, and returns it with its last key copied out. */
function finishRun(st: MapState): Summary | undefined {
  const run = st.run;
  if (run === undefined) return undefined;
  run.lastKey = Buffer.from(st.lastKey);
  st.run = undefined;
  return run;
}

export default defineJob({
  name: 'teravalidate',
  input: fixedRecordInput(RECORD_LENGTH),
  output: textOutput(),
  reducers: 1,
  mapKey: codecs.text,
  mapValue: summaryCodec,
  map(offset, record, ctx) {
    const st = stateFor(ctx.attemptId);
    const key = record.subarray(0, KEY_LENGTH);
    const [hashHi, hashLo] = recordHash(record);
    const run = st.run;
    if (run !== undefined && run.end === offset) {
      if (Buffer.compare(st.lastKey, key) > 0) run.misorder++;
      run.count++;
      run.end = offset + record.length;
      [run.sumHi, run.sumLo] = add64(run.sumHi, run.sumLo, hashHi, hashLo);
    } else {
      // The first record, or one not contiguous with the run so far: then the run is emitted as it
      // is and the reducer reports the gap.
      if (run !== undefined) ctx.emit(SUMMARY_KEY, finishRun(st)!);
      const firstKey = Buffer.from(key);
      st.run = {
        mapIndex: ctx.mapIndex,
        start: offset,
        end: offset + record.length,
        count: 1,
        misorder: 0,
        sumLo: hashLo,
        sumHi: hashHi,
        firstKey,
        lastKey: firstKey, // replaced by finishRun
      };
    }
    key.copy(st.lastKey);
  },
  cleanupMap(ctx) {
    // Nothing for a split without records: `splits` counts non-empty splits.
    const run = state !== undefined && state.attemptId === ctx.attemptId ? finishRun(state) : undefined;
    state = undefined;
    if (run !== undefined) ctx.emit(SUMMARY_KEY, run);
  },
  reduce(_key, summaries, ctx: ReduceContext<string, JsonValue>) {
    const v = validate(summaries);
    ctx.emit('misorder', v.misorder);
    ctx.emit('rows', v.rows);
    ctx.emit('checksum', v.checksum);
    ctx.emit('splits', v.splits);
    for (const e of v.errors) ctx.emit('error', e);
  },
});
