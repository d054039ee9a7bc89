import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MinimrError } from '../../src/errors.js';
import { mapSpilledBytesModel, reduceSpilledBytesModel, validateJobConf } from '../../src/runtime/index.js';
import { attemptShuffleSettings, idealMemoryMb } from '../../src/runtime/jobtracker/runtime-data.js';
import type { JobSubmission } from '../../src/runtime/wire/index.js';

const MiB = 1024 * 1024;

function submission(conf: JobSubmission['conf'] = {}): JobSubmission {
  return {
    name: 'j',
    moduleName: 'j.js',
    moduleSource: 'x',
    inputPaths: ['/in'],
    outputPath: '/out',
    overwrite: false,
    reducers: 1,
    params: {},
    shared: {},
    input: { kind: 'text' },
    output: { kind: 'text', separator: '\t' },
    conf,
  };
}

describe('job settings', () => {
  it('accepts known settings and refuses unknown or out-of-range ones with EBADJOB', () => {
    assert.deepEqual(validateJobConf({ 'shuffle.map.bufferBytes': 16 * MiB, 'shuffle.compress': 'none' }), {
      'shuffle.map.bufferBytes': 16 * MiB,
      'shuffle.compress': 'none',
    });
    for (const bad of [
      { 'shuffle.map.buferBytes': 1 },
      { 'shuffle.map.bufferBytes': 10 },
      { 'shuffle.merge.factor': 1 },
      { 'shuffle.compress': 'zip' },
      { 'shuffle.map.spillPercent': 1.5 },
    ]) {
      assert.throws(
        () => validateJobConf(bad),
        (e: unknown) => e instanceof MinimrError && e.code === 'EBADJOB',
      );
    }
  });

  it('the hash table takes a share of the map buffer in [0, 1), 0.5 unless set; anything else is EBADJOB', () => {
    assert.deepEqual(validateJobConf({ 'shuffle.map.hashCombinePercent': 0 }), { 'shuffle.map.hashCombinePercent': 0 });
    assert.deepEqual(validateJobConf({ 'shuffle.map.hashCombinePercent': 0.25 }), {
      'shuffle.map.hashCombinePercent': 0.25,
    });
    for (const bad of [1, -0.1, '0.5', null]) {
      assert.throws(
        () => validateJobConf({ 'shuffle.map.hashCombinePercent': bad }),
        (e: unknown) => e instanceof MinimrError && e.code === 'EBADJOB' && /hashCombinePercent/.test(e.message),
      );
    }
    assert.equal(attemptShuffleSettings(submission(), 'map', 164).hashCombinePercent, 0.5);
    assert.equal(
      attemptShuffleSettings(submission({ 'shuffle.map.hashCombinePercent': 0 }), 'map', 164).hashCombinePercent,
      0,
    );
  });

  it("a task's ideal memory is its buffer plus the fixed overhead", () => {
    assert.equal(idealMemoryMb(submission({ 'shuffle.map.bufferBytes': 16 * MiB }), 'map'), 16 + 100);
    assert.equal(idealMemoryMb(submission(), 'reduce'), 64 + 100);
  });

  it('an attempt granted its ideal memory gets the configured buffer; granted less, a smaller one', () => {
    const s = submission({ 'shuffle.map.bufferBytes': 64 * MiB });
    assert.equal(attemptShuffleSettings(s, 'map', 164).mapBufferBytes, 64 * MiB);
    assert.equal(attemptShuffleSettings(s, 'map', 4096).mapBufferBytes, 64 * MiB);
    assert.equal(attemptShuffleSettings(s, 'map', 132).mapBufferBytes, 32 * MiB);
    // Never below a useful minimum, even when the grant is below the overhead.
    assert.equal(attemptShuffleSettings(s, 'map', 50).mapBufferBytes, 1 * MiB);
    // Only the attempt's own side shrinks.
    assert.equal(attemptShuffleSettings(s, 'map', 132).reduceBufferBytes, 64 * MiB);
  });
});

describe('spill models of the elasticity profile', () => {
  it(
    'map: nothing extra while one spill suffices; spills + merge ' +
      'once past it; one more pass past the merge factor',
    () => {
      // 100 MiB buffered, 40 MiB stored output, spill at 80%.
      assert.equal(mapSpilledBytesModel(100 * MiB, 40 * MiB, 125 * MiB, 0.8, 10), 0); // 100 <= 0.8 * 125
      // 2 spills: the first generation (80 of the 100 MiB buffered) is written, the last merged from memory
      assert.equal(mapSpilledBytesModel(100 * MiB, 40 * MiB, 100 * MiB, 0.8, 10), 32 * MiB);
      // 10 spills, one merge: 9 of 10 generations written
      assert.equal(mapSpilledBytesModel(100 * MiB, 40 * MiB, 12.5 * MiB, 0.8, 10), 36 * MiB);
      // 13 spills: one intermediate pass
      assert.equal(mapSpilledBytesModel(100 * MiB, 40 * MiB, 10 * MiB, 0.8, 10), 80 * MiB);
    },
  );

  it('reduce: a sawtooth in input/buffer, big segments straight to disk', () => {
    const segs = [10, 10, 10, 10].map((x) => x * MiB);
    // 40 MiB fits under the 66% threshold of 64 MiB: nothing to disk.
    assert.equal(reduceSpilledBytesModel(segs, 0.5, 64 * MiB, 10), 0);
    // Buffer 40 MiB: threshold 26.4 MiB; merges at 30 (3 segments), then 10 left in memory.
    assert.equal(reduceSpilledBytesModel(segs, 0.5, 40 * MiB, 10), 15 * MiB);
    // Buffer 30 MiB: each 10 MiB segment exceeds 25% (7.5 MiB): all go straight to disk.
    assert.equal(reduceSpilledBytesModel(segs, 0.5, 30 * MiB, 10), 20 * MiB);
    // ... unless they come from maps on the reducer's worker: those are read in place, not written.
    assert.equal(reduceSpilledBytesModel(segs, 0.5, 30 * MiB, 10, 1), 0);
    assert.equal(reduceSpilledBytesModel(segs, 0.5, 30 * MiB, 10, 0.25), 15 * MiB);
    // In-memory merges write what they merge, wherever it came from.
    assert.equal(reduceSpilledBytesModel(segs, 0.5, 40 * MiB, 10, 1), 15 * MiB);
  });
});
