import { crc32 } from 'node:zlib';
import { isMinimrError } from '../errors.js';
import type { BlockStore } from './block-store.js';

/** A replica to check against what the NameNode recorded when the block was written. */
export interface BlockVerification {
  readonly blockId: string;
  readonly length: number;
  readonly crc32: number;
}

/**
 * Reads the local replica whole and compares it with the NameNode's length and crc32: why it is
 * corrupt, or undefined when it is good. A datanode runs this when a reader reported the replica,
 * so that only a replica its own holder found bad is ever deleted (a reader's word deletes nothing).
 */
export async function checkLocalReplica(store: BlockStore, expected: BlockVerification): Promise<string | undefined> {
  let crc = 0;
  let length = 0;
  try {
    for await (const chunk of store.read(expected.blockId)) {
      crc = crc32(chunk, crc);
      length += chunk.length;
    }
  } catch (err) {
    if (isMinimrError(err, 'ECHECKSUM') || isMinimrError(err, 'ENOENT')) return err.message;
    throw err;
  }
  if (length !== expected.length) return `replica has ${length} bytes, the NameNode recorded ${expected.length}`;
  if (crc >>> 0 !== expected.crc32) return `replica's crc32 ${crc >>> 0} is not the NameNode's ${expected.crc32}`;
  return undefined;
}
