/**
 * Contracts of the shuffle. Map output records are (partition, key bytes, value bytes); keys are
 * ordered by `KeyComparator` (byte order unless the job gives its own). A finished map output is one
 * data file plus an index with one entry per reduce partition and sorted run (one run, or two: see
 * MAX_MAP_OUTPUT_RUNS), stored on the map worker's disk and served to reducers over HTTP. The first version sorts in
 * memory; the external-sort issue replaces the collector and merger behind these same interfaces.
 */

import type { KeyValue } from './record-format.js';

export type KeyComparator = (a: Buffer, b: Buffer) => number;

/**
 * A combiner over encoded records: gets one key's values, emits zero or more records. With `fold`
 * (a combiner the runtime knows, such as the API's sumValues), merges in byte order combine a
 * group as a fold over its records where they lie instead: the same output bytes, with no Buffer,
 * iterator or array per record (a Zipf WordCount's reduce combines a million groups per merge).
 */
export type BytesCombiner = ((
  key: Buffer,
  values: Iterable<Buffer>,
  emit: (key: Buffer, value: Buffer) => void,
) => void) & { readonly fold?: () => ValueFold };

/**
 * One key group's combination, a record at a time: `first` starts a group, `add` takes its next
 * record (the same key); each gets the record's key and value as byte ranges of `buf`, to read at
 * once. `finish` encodes the group's value into `out` and returns its length (the combiner's one
 * emitted value for the group's key).
 */
export interface ValueFold {
  first(buf: Buffer, keyStart: number, keyEnd: number, valueStart: number, valueEnd: number): void;
  add(buf: Buffer, keyStart: number, keyEnd: number, valueStart: number, valueEnd: number): void;
  finish(): number;
  /** Where `finish` put the value (it may replace the buffer to make room). */
  readonly out: Buffer;
}

export interface ShuffleCounters {
  mapOutputRecords: number;
  mapOutputBytes: number;
  combineInputRecords: number;
  combineOutputRecords: number;
  /** Records a map emitted into its combining hash table (map-side combining by hash). */
  hashCombineInputRecords: number;
  /** Records the hash table passed on to the sort buffer (the rest were combined in the table). */
  hashCombineOutputRecords: number;
  /** Times the hash table was emptied into the sort buffer (full, or at the end of the map). */
  hashCombineFlushes: number;
  /** Records written to local disk by spills and merges (map side and reduce side), as Hadoop counts them. */
  spilledRecords: number;
  /** Stored (compressed) bytes those writes took. */
  spilledBytes: number;
  spills: number;
  /** Merge passes that wrote an intermediate run to disk (0 when everything merged in one final pass). */
  mergePasses: number;
  /** Largest number of bytes held in the task's sort or shuffle buffer at any time. */
  peakBufferBytes: number;
  /** Stored bytes fetched from this worker's disk / from other workers. */
  shuffleBytesLocal: number;
  shuffleBytesRemote: number;
  /** Of shuffleBytesLocal: the segments too big for memory, read in place from their map's file instead of spilled. */
  shuffleBytesInPlace: number;
  reduceInputRecords: number;
  reduceInputGroups: number;
}

/**
 * Most sorted runs one partition of a map output holds. A map whose output took two generations of
 * its sort buffer publishes both as they are, rather than merging them (map-output-buffer.ts); the
 * reduce merges them with the other maps' runs. Records of one map and run carry the tag
 * mapIndex * MAX_MAP_OUTPUT_RUNS + run on the reduce side, so equal keys still come out in map order,
 * then emission order.
 */
export const MAX_MAP_OUTPUT_RUNS = 2;

/** One sorted run of one partition, as stored: its frames, checksummed. */
export interface SegmentRun {
  /** Length in bytes as stored (frame headers included). */
  readonly length: number;
  /** Bytes of the run's records once decompressed (what a reducer needs to hold it in memory). */
  readonly rawLength: number;
  readonly records: number;
  /** CRC-32 of the stored bytes. */
  readonly crc32: number;
}

/** One run of one partition in a map output's data file. */
export interface PartitionIndexEntry extends SegmentRun {
  /** Byte offset of the run in the data file. */
  readonly offset: number;
}

export interface MapOutputInfo {
  readonly dataFile: string;
  readonly indexFile: string;
  /** Per partition, its runs in emission order (every partition has the same number of runs). */
  readonly partitions: readonly (readonly PartitionIndexEntry[])[];
}

/** Map side: collects a map task's output and writes the partitioned, sorted file. */
export interface MapOutputCollector {
  collect(partition: number, key: Buffer, value: Buffer): void;
  /** Sorts (and combines), writes data + index, returns where they are. */
  finish(): Promise<MapOutputInfo>;
  /** Drops everything written so far (attempt killed or failed). */
  abort(): Promise<void>;
}

/** Where a reducer finds one map's output. */
export interface MapOutputLocation {
  readonly mapIndex: number;
  readonly attemptId: string;
  readonly workerId: string;
  readonly host: string;
  readonly dataPort: number;
}

/** Where one record's bytes are: key [keyStart, keyEnd) and value [valueStart, end) of `buf`. */
export interface RecordBytes {
  readonly buf: Buffer;
  /** A DataView of `buf`'s bytes, for copies four bytes at a time (copyViaViews). */
  readonly view: DataView;
  readonly keyStart: number;
  readonly keyEnd: number;
  readonly valueStart: number;
  readonly end: number;
}

/**
 * A reduce's merged input, read once: as [key, value] views (the iterator), or, by a reader that
 * copies the bytes it needs, record by record in place (`nextRecord`), with no Buffer per record.
 */
export interface MergedInput extends Iterable<KeyValue> {
  /** Moves to the next record; where it is (valid until the next call), or undefined at the end. */
  nextRecord(): RecordBytes | undefined;
}

/** An iterator over one reduce group's values; valid only until the next group is taken. */
export interface KeyGroup {
  readonly key: Buffer;
  readonly values: Iterable<Buffer>;
}

/** Reduce side: where this worker's own map outputs are, to read them from disk instead of HTTP. */
export interface LocalShuffleSource {
  readonly workerId: string;
  readonly rootDir: string;
}

export interface FetchMapOutputsOptions {
  readonly jobId: string;
  readonly reduceIndex: number;
  /** The job's shuffle secret (shuffle-secret.ts): map workers serve only requests hashed with it. */
  readonly shuffleSecret: string;
  /**
   * Map output partitions this reduce reads, each from every map (virtual partitions, src/skew);
   * default [reduceIndex].
   */
  readonly partitions?: readonly number[];
  readonly locations: readonly MapOutputLocation[];
  /** Fetches in flight at once (default 5). */
  readonly concurrency?: number;
  /** Extra tries per map output after the first (default 3). */
  readonly retries?: number;
  /** Wait before the first retry, doubled for each next one (default 200 ms). */
  readonly backoffMs?: number;
  /** No byte for this long on a connection fails that try (default 30 s). */
  readonly timeoutMs?: number;
  readonly local?: LocalShuffleSource;
  readonly counters?: ShuffleCounters;
  /** Aborting rejects the call with EKILLED and stops all fetches. */
  readonly signal?: AbortSignal;
}

/** One map's segment for one reduce partition, each run verified against its crc32. */
export interface FetchedSegment {
  readonly mapIndex: number;
  readonly attemptId: string;
  readonly workerId: string;
  readonly records: number;
  /** `data` holds these runs one after the other. */
  readonly runs: readonly SegmentRun[];
  /** Segment bytes as stored (record format: `[varint keyLen][varint valueLen][key][value]`...). */
  readonly data: Buffer;
  /** Read from this worker's disk rather than over HTTP. */
  readonly local: boolean;
}
