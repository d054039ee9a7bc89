import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TaskSplitInput, type SplitPacing } from '../../src/runtime/task/input.js';
import { FsClient } from '../../src/storage/index.js';
import { pseudoRandomBytes, silentLogger, startCluster } from '../storage/helpers.js';

const RECORD = 100;

/** Pacing that records what the split asked of it, in order. */
function recordingPacing(chunkBytes: number | undefined): SplitPacing & { readonly calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    chunkBytes,
    due: () => false,
    pause: async () => {
      calls.push('pause');
    },
    roomFor: async (bytes) => {
      calls.push(`room ${bytes}`);
    },
  };
}

test(
  "a mapSplit's fixed-length records come in pieces of at most " +
    "the pacing's chunkBytes, each after waiting for room for it",
  async () => {
    const cluster = await startCluster(['r1'], { defaultBlockSize: 1 << 20 });
    try {
      const w1 = cluster.datanodes[0]!;
      const fs = new FsClient({
        namenode: cluster.namenode,
        logger: silentLogger,
        client: { workerId: 'w1', rack: 'r1' },
        localStore: w1.store,
      });
      // 3 MiB of records over 1 MiB blocks: records straddle the blocks' ends.
      const data = pseudoRandomBytes(31_457 * RECORD, 8);
      await fs.put(data, '/fixed.dat', { replication: 1 });
      const split = {
        kind: 'file' as const,
        path: '/fixed.dat',
        start: 0,
        length: data.length,
        fileLength: data.length,
      };
      const format = { kind: 'fixed' as const, recordLength: RECORD };

      const pacing = recordingPacing(10_050);
      const input = new TaskSplitInput(fs, split, format, 0, pacing);
      const pieces: Buffer[] = [];
      let expectedOffset = 0;
      for await (const { bytes, offset } of input.chunks({ reuseBuffers: true })) {
        assert.ok(
          bytes.length > 0 && bytes.length <= 10_000 && bytes.length % RECORD === 0,
          `a piece of ${bytes.length} bytes`,
        );
        assert.equal(offset, expectedOffset, 'pieces follow each other in the file');
        assert.equal(
          pacing.calls.at(-1),
          `room ${bytes.length}`,
          'the map waited for room for this piece before it got it',
        );
        expectedOffset += bytes.length;
        pieces.push(Buffer.from(bytes));
      }
      assert.equal(Buffer.compare(Buffer.concat(pieces), data), 0, 'every record once, in order');
      assert.equal(input.recordsRead, data.length / RECORD);
      assert.ok(pacing.calls.includes('pause'), 'the split still paces itself between chunks');

      // Without a chunk size (no sort buffer: a map-only job) the chunks come as read.
      const asRead = recordingPacing(undefined);
      const whole = new TaskSplitInput(fs, split, format, 0, asRead);
      let largest = 0;
      for await (const { bytes } of whole.chunks()) largest = Math.max(largest, bytes.length);
      assert.ok(largest > 10_000, `chunks as read (largest ${largest} bytes)`);
      assert.ok(!asRead.calls.some((c) => c.startsWith('room')));
    } finally {
      await cluster.close();
    }
  },
);
