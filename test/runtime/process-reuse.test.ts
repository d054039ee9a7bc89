import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { idleProcessFits, MAX_FIRST_ATTEMPT_GROWTH_BYTES, MAX_REUSE_GROWTH_BYTES, memoryFitForReuse } from '../../src/runtime/process-reuse.js';

const MiB = 1 << 20;
const clean = { rssBytes: 60 * MiB, liveBytes: 9 * MiB };

describe('memoryFitForReuse', () => {
  it('lets the first attempt grow RSS by the runtime\'s own growth, not live memory', () => {
    // A TeraSort map at 64 MiB buffers, measured: RSS 27-34 MiB above the clean process, ~1 MiB more live.
    assert.equal(memoryFitForReuse({ rssBytes: clean.rssBytes + 30 * MiB, liveBytes: clean.liveBytes + 1 * MiB }, clean, undefined), true);
    assert.equal(memoryFitForReuse({ rssBytes: clean.rssBytes + 48 * MiB, liveBytes: clean.liveBytes }, clean, undefined), true);
    assert.equal(memoryFitForReuse({ rssBytes: clean.rssBytes + 48 * MiB + 1, liveBytes: clean.liveBytes }, clean, undefined), false);
    // A module that keeps data reachable (a module-level cache) is caught however little RSS shows it.
    assert.equal(memoryFitForReuse({ rssBytes: clean.rssBytes + 8 * MiB, liveBytes: clean.liveBytes + 8 * MiB }, clean, undefined), true);
    assert.equal(memoryFitForReuse({ rssBytes: clean.rssBytes + 8 * MiB, liveBytes: clean.liveBytes + 8 * MiB + 1 }, clean, undefined), false);
  });

  it('measures later attempts from the warm state after the first, not from the clean process', () => {
    const warm = { rssBytes: clean.rssBytes + 5 * MiB, liveBytes: clean.liveBytes + 1 * MiB };
    // Grep's processes, measured: 8.6 MiB above clean after seven attempts is 3.6 MiB above warm.
    assert.equal(memoryFitForReuse({ rssBytes: clean.rssBytes + 8.6 * MiB, liveBytes: warm.liveBytes + 2 * MiB }, clean, warm), true);
    assert.equal(memoryFitForReuse({ rssBytes: warm.rssBytes + 8 * MiB, liveBytes: warm.liveBytes }, clean, warm), true);
    // A big attempt's heap that stays (a non-local map read 25 MiB more) is still caught.
    assert.equal(memoryFitForReuse({ rssBytes: clean.rssBytes + 25 * MiB, liveBytes: warm.liveBytes }, clean, warm), false);
    assert.equal(memoryFitForReuse({ rssBytes: warm.rssBytes + 8 * MiB + 1, liveBytes: warm.liveBytes }, clean, warm), false);
    // Live memory accumulating from attempt to attempt, from the warm state.
    assert.equal(memoryFitForReuse({ rssBytes: warm.rssBytes, liveBytes: warm.liveBytes + 8 * MiB + 1 }, clean, warm), false);
  });

  it('allows 8 MiB of growth, 48 MiB of RSS over the first attempt', () => {
    assert.equal(MAX_REUSE_GROWTH_BYTES, 8 * MiB);
    assert.equal(MAX_FIRST_ATTEMPT_GROWTH_BYTES, 48 * MiB);
  });
});

describe('idleProcessFits', () => {
  it('gives a process that kept little memory to any attempt of its module', () => {
    const idle = { retainedRssBytes: MAX_REUSE_GROWTH_BYTES, grantMb: 164 };
    assert.equal(idleProcessFits(idle, 164), true);
    assert.equal(idleProcessFits(idle, 101), true);
  });

  it('gives a process that kept a big attempt\'s free memory only to attempts granted at least as much', () => {
    // A TeraSort map at 64 MiB buffers (grant 164 MB) left ~30 MiB of RSS over the clean process.
    const idle = { retainedRssBytes: 30 * MiB, grantMb: 164 };
    assert.equal(idleProcessFits(idle, 164), true);
    assert.equal(idleProcessFits(idle, 200), true);
    // An elastic attempt of the same job, granted less: a fresh process.
    assert.equal(idleProcessFits(idle, 163), false);
    assert.equal(idleProcessFits({ retainedRssBytes: MAX_REUSE_GROWTH_BYTES + 1, grantMb: 164 }, 116), false);
  });
});
