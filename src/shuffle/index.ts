/** The shuffle's public surface: other folders import from here only. */
export type {
  BytesCombiner,
  FetchedSegment,
  FetchMapOutputsOptions,
  KeyComparator,
  KeyGroup,
  LocalShuffleSource,
  MapOutputCollector,
  MapOutputInfo,
  MapOutputLocation,
  MergedInput,
  PartitionIndexEntry,
  SegmentRun,
  RecordBytes,
  ShuffleCounters,
  ValueFold,
} from './types.js';
export { MAX_MAP_OUTPUT_RUNS } from './types.js';
export { createShuffleCounters } from './counters.js';
export { compareByteRanges } from './bytes-compare.js';
export { hashPartition } from './partitioner.js';
export {
  assertValidShuffleId,
  isValidShuffleId,
  listMapOutputs,
  mapOutputPaths,
  removeAllMapOutputs,
  removeAttemptMapOutput,
  removeJobMapOutputs,
  reduceWorkDir,
  type MapOutputPaths,
} from './paths.js';
export { encodeSegment, SegmentReader, writeVarint, type KeyValue } from './record-format.js';
export { decodeIndex, encodeIndex, readIndexFile, runTotals, type IndexFileContents } from './index-file.js';
export { HashCombiner, type HashCombinerOptions, type ValueCodec, type ValueCombiner } from './hash-combiner.js';
export {
  MapOutputBuffer,
  MIN_MAP_BUFFER_BYTES,
  type ArenaPool,
  type MapOutputBufferOptions,
} from './map-output-buffer.js';
export { codecByName, codecById, lz4Codec, noneCodec, type BlockCodec } from './codec.js';
export { GC_PACE_BYTES, collectGarbageNow, noteTransientBytes } from './gc-pacer.js';
export { FramedFileWriter, decodeSegment, type SegmentStats } from './frames.js';
export { applyCombiner, groupByKey, mergeSortedRuns } from './merger.js';
export {
  createShuffleRequestHandler,
  shuffleUrlPath,
  type ShuffleHandlerOptions,
  type ShuffleRequestHandler,
} from './shuffle-handler.js';
export { ReduceShuffle, type ReduceShuffleOptions } from './reduce-shuffle.js';
export { newShuffleSecret, shuffleRequestHash, SHUFFLE_HASH_HEADER } from './shuffle-secret.js';
export { META_BYTES } from './sort.js';
export { copyViaViews, VIEW_COPY_MAX } from './spill-writer.js';
export { MapOutputDirectory, type FetchItem, type MapOutputDirectoryOptions } from './map-output-directory.js';
export type { SegmentHeader } from './fetcher.js';
