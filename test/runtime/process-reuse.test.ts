import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  fitWithoutGc,
  MAX_FIRST_ATTEMPT_GROWTH_BYTES,
  MAX_HEADROOM_GROWTH_BYTES,
  MAX_REUSE_GROWTH_BYTES,
  memoryFitForReuse,
  REUSE_BOUND_MARGIN_BYTES,
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

  it('past the allowances, reuses a process while its next attempt would peak 32 MiB or more below the bound', () => {
    const clean = 60 * MiB;
    const warm = 62.5 * MiB;
    // A 64 MB Grep map's process, measured: 71.4 MiB after its fourth map (8.9 above warm), maps
    // peaking at ~75 MiB from a start of ~65; its bound 64 MiB + 100 MiB.
    const grep = { lastStartRss: 65 * MiB, lastPeakRss: 75 * MiB, boundBytes: 164 * MiB };
    assert.equal(memoryFitForReuse(71.4 * MiB, clean, warm), false, 'the allowance alone ends it');
    assert.equal(memoryFitForReuse(71.4 * MiB, clean, warm, grep), true);
    // Next peak 75 + (x - 65) MiB: fits up to x = 122, but growth stops at 32 MiB over warm first.
    assert.equal(memoryFitForReuse(warm + 32 * MiB, clean, warm, grep), true);
    assert.equal(memoryFitForReuse(warm + 32 * MiB + 1, clean, warm, grep), false);
    // A TeraSort map's process peaks near its bound: growth past the allowance ends it as before.
    const tera = { lastStartRss: 70 * MiB, lastPeakRss: 154 * MiB, boundBytes: 164 * MiB };
    assert.equal(memoryFitForReuse(warm + 9 * MiB, clean, warm, tera), false);
    // The edge: the next peak exactly 32 MiB below the bound.
    const edge = { lastStartRss: 60 * MiB, lastPeakRss: 120 * MiB, boundBytes: 164 * MiB };
    assert.equal(memoryFitForReuse(72 * MiB, clean, warm, edge), true);
    assert.equal(memoryFitForReuse(72 * MiB + 1, clean, warm, edge), false);
    // A first attempt that grew the clean process by 25 MiB: kept when its next attempt has room.
    assert.equal(memoryFitForReuse(clean + 25 * MiB, clean, undefined, grep), true);
    assert.equal(memoryFitForReuse(clean + 25 * MiB, clean, undefined, tera), false);
    assert.equal(MAX_HEADROOM_GROWTH_BYTES, 32 * MiB);
    assert.equal(REUSE_BOUND_MARGIN_BYTES, 32 * MiB);
  });
});

describe('fitWithoutGc: the full GC skipped when the RSS before it already fits', () => {
  const clean = 60 * MiB;
  const warm = 65 * MiB;
  const grep = { lastStartRss: 70 * MiB, lastPeakRss: 76 * MiB, boundBytes: 164 * MiB };

  it("a Grep map's process with its garbage uncollected: fit without a GC, which before always ran past warm + 8 MiB", () => {
    // Measured after a GC: 75-78 MiB; before it, with the attempt's garbage, more.
    assert.equal(fitWithoutGc(84 * MiB, clean, warm, grep), true);
    assert.equal(fitWithoutGc(warm + 8 * MiB, clean, warm), true);
    // Past the headroom's 32 MiB over warm: measured after a GC (which may bring it under).
    assert.equal(fitWithoutGc(warm + 32 * MiB + 1, clean, warm, grep), false);
    // The first attempt's check always collects: the warm state is a GC'd RSS.
    assert.equal(fitWithoutGc(clean + 1 * MiB, clean, undefined, grep), false);
  });

  it('never says fit where the check after a GC could say otherwise: fit at an RSS is fit at every lower one', () => {
    const tera = { lastStartRss: 70 * MiB, lastPeakRss: 154 * MiB, boundBytes: 164 * MiB };
    const edge = { lastStartRss: 60 * MiB, lastPeakRss: 120 * MiB, boundBytes: 164 * MiB };
    for (const headroom of [undefined, grep, tera, edge]) {
      for (let before = warm - 8 * MiB; before <= warm + 40 * MiB; before += MiB / 4) {
        if (!fitWithoutGc(before, clean, warm, headroom)) continue;
        for (let after = before; after >= warm - 16 * MiB; after -= MiB / 4)
          assert.equal(memoryFitForReuse(after, clean, warm, headroom), true, `${before / MiB} -> ${after / MiB} MiB`);
      }
    }
  });
});
