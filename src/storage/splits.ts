import type { BlockInfo, InputSplit } from './types.js';

/** One split per non-empty block, preferring the workers (and racks) that hold it, like Hadoop's FileInputFormat. */
export function computeSplits(path: string, blocks: readonly BlockInfo[]): InputSplit[] {
  const fileLength = blocks.reduce((sum, b) => Math.max(sum, b.offset + b.length), 0);
  return blocks
    .filter((block) => block.length > 0)
    .map((block) => ({
      path,
      start: block.offset,
      length: block.length,
      fileLength,
      preferredWorkers: block.locations.map((l) => l.workerId),
      preferredRacks: [...new Set(block.locations.map((l) => l.rack))],
    }));
}
