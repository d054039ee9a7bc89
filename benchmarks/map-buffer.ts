/**
 * MapOutputBuffer: collect + finish of 1M TeraSort records (10-byte random keys, 90-byte values,
 * 100 MB of data, 4 partitions) at sort buffers of 64, 16 and 4 MiB, the map loop awaiting
 * waitForRoom() when mustWait is set. Not an npm script:
 * `npx tsc -p . && node dist/benchmarks/map-buffer.js [records]`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createShuffleCounters } from '../src/shuffle/index.js';
import { MapOutputBuffer } from '../src/shuffle/map-output-buffer.js';
import { seededRandom } from '../src/util/index.js';

const N = Number(process.argv[2] ?? 1_000_000);
const P = 4;
const rand = seededRandom(42);
const keys = Buffer.alloc(N * 10);
for (let i = 0; i < keys.length; i++) keys[i] = Math.floor(rand() * 256);
const value = Buffer.alloc(90, 0x41);

const root = await mkdtemp(join(tmpdir(), 'minimr-mapbuf-'));
try {
  for (const mib of [64, 16, 4]) {
    const counters = createShuffleCounters();
    const buffer = new MapOutputBuffer({
      dir: join(root, `b${mib}`),
      numPartitions: P,
      bufferBytes: mib << 20,
      counters,
    });
    const t0 = performance.now();
    for (let i = 0; i < N; i++) {
      const key = keys.subarray(i * 10, i * 10 + 10);
      value.writeUInt32BE(i, 0);
      buffer.collect((key[0]! * P) >> 8, key, value);
      if ((i & 7) === 7 && buffer.mustWait) await buffer.waitForRoom();
    }
    const t1 = performance.now();
    await buffer.finish();
    const t2 = performance.now();
    console.log(
      `${String(mib).padStart(2)} MiB: ` +
        `collect ${((t1 - t0) / 1000).toFixed(2)} s + ` +
        `finish ${((t2 - t1) / 1000).toFixed(2)} s ` +
        `= ${((t2 - t0) / 1000).toFixed(2)} s` +
        (`  spills ${counters.spills}, ` +
          `mergePasses ${counters.mergePasses}, ` +
          `spilled ${counters.spilledRecords} records ` +
          `/ ${(counters.spilledBytes / 2 ** 20).toFixed(1)} MiB, ` +
          `peak ${(counters.peakBufferBytes / 2 ** 20).toFixed(2)} MiB`),
    );
    await rm(join(root, `b${mib}`), { recursive: true, force: true });
  }
} finally {
  await rm(root, { recursive: true, force: true });
}
