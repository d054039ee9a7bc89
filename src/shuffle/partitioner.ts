import { MinimrError } from '../errors.js';
import { murmur3_32 } from '../util/index.js';

/**
 * The default partitioner. Every map task of a job, in whatever process, must send a key to the same
 * reducer, so the hash depends only on the key bytes: MurmurHash3 x86_32 with seed 0 (not the JS
 * engine's string hash, not anything seeded per process).
 */
export function hashPartition(keyBytes: Buffer, numPartitions: number): number {
  if (!Number.isInteger(numPartitions) || numPartitions < 1) {
    throw new MinimrError('EBADJOB', `numPartitions must be a positive integer, got ${numPartitions}`, {
      numPartitions,
    });
  }
  return murmur3_32(keyBytes) % numPartitions;
}
