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
  PartitionIndexEntry,
  ShuffleCounters,
} from './types.js';
export { createShuffleCounters } from './counters.js';
export { hashPartition, murmur3_32 } from './partitioner.js';
export {
  assertValidShuffleId,
  isValidShuffleId,
  mapOutputPaths,
  removeAttemptMapOutput,
  removeJobMapOutputs,
  type MapOutputPaths,
} from './paths.js';
export { encodeSegment, SegmentReader, type KeyValue } from './record-format.js';
export { decodeIndex, encodeIndex, readIndexFile, type IndexFileContents } from './index-file.js';
export { InMemoryMapOutputBuffer, type InMemoryMapOutputBufferOptions } from './map-output-buffer.js';
export { applyCombiner, groupByKey, mergeSortedRuns } from './merger.js';
export {
  createShuffleRequestHandler,
  shuffleUrlPath,
  SHUFFLE_PATH_PREFIX,
  type ShuffleHandlerOptions,
  type ShuffleRequestHandler,
} from './shuffle-handler.js';
export { fetchMapOutputs } from './fetcher.js';
