import type { ShuffleCounters } from './types.js';

export function createShuffleCounters(): ShuffleCounters {
  return {
    mapOutputRecords: 0,
    mapOutputBytes: 0,
    combineInputRecords: 0,
    combineOutputRecords: 0,
    hashCombineInputRecords: 0,
    hashCombineOutputRecords: 0,
    hashCombineFlushes: 0,
    spilledRecords: 0,
    spilledBytes: 0,
    spills: 0,
    mergePasses: 0,
    peakBufferBytes: 0,
    shuffleBytesLocal: 0,
    shuffleBytesRemote: 0,
    shuffleBytesInPlace: 0,
    reduceInputRecords: 0,
    reduceInputGroups: 0,
  };
}
