/**
 * Contracts of the shuffle. Map output records are (partition, key bytes, value bytes); keys are
 * ordered by `KeyComparator` (byte order unless the job gives its own). A finished map output is one
 * data file plus an index with one entry per reduce partition, stored on the map worker's disk and
 * served to reducers over HTTP. The first version sorts in memory; the external-sort issue replaces
 * the collector and merger behind these same interfaces.
 */

export type KeyComparator = (a: Buffer, b: Buffer) => number;

/** A combiner over encoded records: gets one key's values, emits zero or more records. */
export type BytesCombiner = (key: Buffer, values: Iterable<Buffer>, emit: (key: Buffer, value: Buffer) => void) => void;

export interface ShuffleCounters {
  mapOutputRecords: number;
  mapOutputBytes: number;
  combineInputRecords: number;
  combineOutputRecords: number;
  spilledRecords: number;
  spills: number;
  shuffleBytesLocal: number;
  shuffleBytesRemote: number;
  reduceInputRecords: number;
  reduceInputGroups: number;
}

export interface PartitionIndexEntry {
  /** Byte offset of the partition's segment in the data file. */
  readonly offset: number;
  /** Segment length in bytes as stored. */
  readonly length: number;
  readonly records: number;
  /** CRC-32 of the stored segment bytes. */
  readonly crc32: number;
}

export interface MapOutputInfo {
  readonly dataFile: string;
  readonly indexFile: string;
  readonly partitions: readonly PartitionIndexEntry[];
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

/** An iterator over one reduce group's values; valid only until the next group is taken. */
export interface KeyGroup {
  readonly key: Buffer;
  readonly values: Iterable<Buffer>;
}
