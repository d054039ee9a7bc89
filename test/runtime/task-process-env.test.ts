import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HUGE_PAGES_MIN_BUFFER_BYTES, taskProcessEnv } from '../../src/runtime/worker/worker.js';
import type { AttemptSpec } from '../../src/runtime/index.js';

const MiB = 1024 * 1024;
const attempt = (kind: 'map' | 'reduce', mapMiB: number, reduceMiB: number) =>
  ({ kind, shuffle: { mapBufferBytes: mapMiB * MiB, reduceBufferBytes: reduceMiB * MiB } }) as Pick<
    AttemptSpec,
    'kind' | 'shuffle'
  >;

describe('taskProcessEnv: malloc settings, and transparent huge pages for big buffers only', () => {
  it('keeps the environment and sets the malloc limits unless the user did', () => {
    const env = taskProcessEnv({ PATH: '/bin', MALLOC_ARENA_MAX: '4' });
    assert.equal(env.PATH, '/bin');
    assert.equal(env.MALLOC_ARENA_MAX, '4');
    assert.equal(env.MALLOC_MMAP_THRESHOLD_, '524288');
  });

  it('asks glibc for huge pages for an attempt whose own buffer is at least 32 MiB', () => {
    assert.equal(HUGE_PAGES_MIN_BUFFER_BYTES, 32 * MiB);
    assert.equal(taskProcessEnv({}, attempt('map', 64, 1)).GLIBC_TUNABLES, 'glibc.malloc.hugetlb=1');
    assert.equal(taskProcessEnv({}, attempt('reduce', 1, 32)).GLIBC_TUNABLES, 'glibc.malloc.hugetlb=1');
    // The other phase's buffer does not count.
    assert.equal('GLIBC_TUNABLES' in taskProcessEnv({}, attempt('map', 16, 64)), false);
    assert.equal('GLIBC_TUNABLES' in taskProcessEnv({}, attempt('reduce', 64, 31)), false);
  });

  it('never for a spare, which may run any attempt', () => {
    assert.equal('GLIBC_TUNABLES' in taskProcessEnv({}), false);
    assert.equal(taskProcessEnv({ GLIBC_TUNABLES: 'glibc.malloc.check=3' }).GLIBC_TUNABLES, 'glibc.malloc.check=3');
  });

  it("adds to the user's tunables, and leaves a hugetlb they chose alone", () => {
    assert.equal(
      taskProcessEnv({ GLIBC_TUNABLES: 'glibc.malloc.check=3' }, attempt('map', 64, 64)).GLIBC_TUNABLES,
      'glibc.malloc.check=3:glibc.malloc.hugetlb=1',
    );
    assert.equal(
      taskProcessEnv({ GLIBC_TUNABLES: 'glibc.malloc.hugetlb=0' }, attempt('map', 64, 64)).GLIBC_TUNABLES,
      'glibc.malloc.hugetlb=0',
    );
    assert.equal(
      taskProcessEnv({ GLIBC_TUNABLES: 'glibc.pthread.rseq=0:glibc.malloc.hugetlb=2' }, attempt('map', 64, 64))
        .GLIBC_TUNABLES,
      'glibc.pthread.rseq=0:glibc.malloc.hugetlb=2',
    );
  });
});
