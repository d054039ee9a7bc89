import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  MAX_FIRST_ATTEMPT_GROWTH_BYTES,
  MAX_REUSE_GROWTH_BYTES,
  memoryFitForReuse,
} from '../../src/runtime/task/process-reuse.js';

const MiB = 1 << 20;

describe('memoryFitForReuse', () => {
  it('measures the first attempt from the clean process, with room for what any first attempt grows', () => {
    const clean = 58 * MiB;
    assert.equal(memoryFitForReuse(clean + 3 * MiB, clean, undefined), true);
    // A 64 MB Grep map's first attempt, measured: 57.5 to 67.8 MiB.
    assert.equal(memoryFitForReuse(clean + 10.3 * MiB, clean, undefined), true);
    assert.equal(memoryFitForReuse(clean + 16 * MiB, clean, undefined), true);
    assert.equal(memoryFitForReuse(clean + 16 * MiB + 1, clean, undefined), false);
    assert.equal(memoryFitForReuse(clean + 25 * MiB, clean, undefined), false);
  });

  it('measures later attempts from the warm state after the first, not from the clean process', () => {
    const clean = 60 * MiB;
    const warm = clean + 5 * MiB;
    // Grep's processes, measured: 8.6 MiB above clean after seven attempts is 3.6 MiB above warm.
    assert.equal(memoryFitForReuse(clean + 8.6 * MiB, clean, warm), true);
    assert.equal(memoryFitForReuse(warm + 8 * MiB, clean, warm), true);
    // A big attempt's heap that stays (a non-local map read 25 MiB more) is still caught.
    assert.equal(memoryFitForReuse(clean + 25 * MiB, clean, warm), false);
    assert.equal(memoryFitForReuse(warm + 8 * MiB + 1, clean, warm), false);
  });

  it('allows 8 MiB of growth after the first attempt and 16 MiB in it', () => {
    assert.equal(MAX_REUSE_GROWTH_BYTES, 8 * MiB);
    assert.equal(MAX_FIRST_ATTEMPT_GROWTH_BYTES, 16 * MiB);
  });
});
