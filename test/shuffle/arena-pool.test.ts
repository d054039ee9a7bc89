import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createShuffleCounters, hashPartition, mapOutputPaths, type ArenaPool } from '../../src/shuffle/index.js';
import { MapOutputBuffer } from '../../src/shuffle/map-output-buffer.js';
import { readOutput } from './map-support.js';
import { randomBytes, referenceSort, rng, u32, withTempDir, type Rec } from './support.js';

/** A pool that hands out an arena full of garbage and records what comes back. */
class GarbagePool implements ArenaPool {
  given: ArrayBuffer[] = [];
  taken = 0;
  private kept: ArrayBuffer | undefined;

  constructor(bytes: number, seed: number) {
    this.kept = new ArrayBuffer(bytes);
    const view = new Uint8Array(this.kept);
    const rand = rng(seed);
    for (let i = 0; i < view.length; i += 4096) view.fill(Math.floor(rand() * 256), i, i + 4096);
  }

  take(bytes: number): ArrayBuffer | undefined {
    const a = this.kept;
    if (a?.byteLength !== bytes) return undefined;
    this.kept = undefined;
    this.taken++;
    return a;
  }

  give(arena: ArrayBuffer): void {
    this.given.push(arena);
    this.kept = arena;
  }
}

function perPartition(sorted: readonly Rec[], numPartitions: number): string[][] {
  const out: string[][] = Array.from({ length: numPartitions }, () => []);
  for (const r of sorted) out[r.partition]!.push(`${r.key.toString('hex')}:${r.value.toString('hex')}`);
  return out;
}

/** Collects `count` random records into a buffer using `pool`, and checks the output against the reference. */
async function runWith(
  root: string,
  name: string,
  pool: ArenaPool,
  bufferBytes: number,
  count: number,
  seed: number,
  mergeFactor?: number,
) {
  const rand = rng(seed);
  const numPartitions = 3;
  const counters = createShuffleCounters();
  const dir = mapOutputPaths(root, 'job_pool', name).dir;
  const buffer = new MapOutputBuffer({
    dir,
    numPartitions,
    bufferBytes,
    counters,
    arenas: pool,
    ...(mergeFactor ? { mergeFactor } : {}),
  });
  const records: Rec[] = [];
  for (let i = 0; i < count; i++) {
    const key = randomBytes(rand, 9, 6);
    const value = Buffer.concat([u32(i), randomBytes(rand, 12)]);
    const partition = hashPartition(key, numPartitions);
    records.push({ partition, key, value });
    buffer.collect(partition, key, value);
    if (buffer.mustWait) await buffer.waitForRoom();
  }
  const info = await buffer.finish();
  const back = await readOutput(info.dataFile, info.indexFile, numPartitions);
  assert.deepEqual(back.partitions, perPartition(referenceSort(records), numPartitions));
  return counters;
}

test(
  'a map output buffer uses an arena from its pool, whatever it ' + 'holds, and gives it back when no merge follows',
  async () => {
    await withTempDir(async (root) => {
      const bufferBytes = 256 * 1024;
      const pool = new GarbagePool(bufferBytes, 5);
      const first = await runWith(root, 'a_0', pool, bufferBytes, 2000, 1);
      assert.equal(first.spills, 1);
      assert.equal(pool.taken, 1);
      assert.equal(pool.given.length, 1, 'one spill: the arena goes back to the pool');
      // The same arena again, now holding the first map's records: the output is still exactly right.
      await runWith(root, 'a_1', pool, bufferBytes, 1500, 2);
      assert.equal(pool.taken, 2);
      assert.equal(pool.given.length, 2);
      assert.equal(pool.given[0], pool.given[1], 'the very same memory');
    });
  },
);

test('an arena released before a merge is not given back (the merge must not run on top of it)', async () => {
  await withTempDir(async (root) => {
    const bufferBytes = 64 * 1024;
    const pool = new GarbagePool(bufferBytes, 6);
    // More spills than the merge factor: the last generation is spilled too, and the arena freed before the merges.
    const counters = await runWith(root, 'b_0', pool, bufferBytes, 6000, 3, 2);
    assert.ok(counters.spills > 2, `several spills, got ${counters.spills}`);
    assert.ok(counters.mergePasses > 0);
    assert.equal(pool.taken, 1);
    assert.equal(pool.given.length, 0);
  });
});

test('an arena whose last generation joined the final merge goes back to the pool after that merge', async () => {
  await withTempDir(async (root) => {
    const bufferBytes = 64 * 1024;
    const pool = new GarbagePool(bufferBytes, 7);
    const counters = await runWith(root, 'c_0', pool, bufferBytes, 6000, 4);
    assert.ok(counters.spills > 1 && counters.spills <= 10, `a few spills, got ${counters.spills}`);
    assert.equal(counters.mergePasses, 0);
    assert.equal(pool.taken, 1);
    assert.equal(pool.given.length, 1);
  });
});
