import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isMinimrError } from '../../src/errors.js';
import { hashPartition } from '../../src/shuffle/index.js';
import { withTempDir } from '../shuffle/support.js';

// Shuffle checks that need a second node process (the rest of test/shuffle/formats.test.ts and
// map-buffer-spill.test.ts run in one).

test('hashPartition is in range, spreads keys, and is the same in another process', () => {
  const keys = Array.from({ length: 2000 }, (_, i) => Buffer.from(`key-${i}`));
  const counts = new Array<number>(7).fill(0);
  const mine = keys.map((k) => hashPartition(k, 7));
  for (const p of mine) {
    assert.ok(Number.isInteger(p) && p >= 0 && p < 7);
    counts[p]!++;
  }
  for (const c of counts) assert.ok(c > 2000 / 7 / 2, `skewed partition counts ${counts.join(',')}`);
  const modUrl = pathToFileURL(
    join(fileURLToPath(new URL('.', import.meta.url)), '../../src/shuffle/partitioner.js'),
  ).href;
  const script = `import { hashPartition } from ${JSON.stringify(modUrl)};
    const out = []; for (let i = 0; i < 2000; i++) out.push(hashPartition(Buffer.from('key-' + i), 7));
    process.stdout.write(JSON.stringify(out));`;
  const other = JSON.parse(
    execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }),
  ) as number[];
  assert.deepEqual(other, mine);
  assert.throws(
    () => hashPartition(Buffer.from('x'), 0),
    (e: unknown) => isMinimrError(e, 'EBADJOB'),
  );
});

test(
  'records collected from memory their owner reuses ' +
    '(collectRange, srcIsGarbage false) pace no full GC; from ' +
    'garbage they do',
  async () => {
    await withTempDir(async (root) => {
      // In a process with --expose-gc, as task processes run: the GC pacer only acts there.
      const script = join(root, 'collect.mjs');
      const moduleUrl = new URL('../../src/shuffle/map-output-buffer.js', import.meta.url).href;
      await writeFile(
        script,
        `import { MapOutputBuffer } from ${JSON.stringify(moduleUrl)};
import { PerformanceObserver, constants } from 'node:perf_hooks';
const [dir, garbage] = process.argv.slice(2);
let majors = 0;
const observer = new PerformanceObserver((list) => { for (const e of list.getEntries()) if (e.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors++; });
observer.observe({ entryTypes: ['gc'] });
const buffer = new MapOutputBuffer({ dir, numPartitions: 2, bufferBytes: 160 << 20 });
const chunk = Buffer.alloc(100 * 1000, 7);
for (let i = 0; i < 800; i++) for (let at = 0; at < chunk.length; at += 100) buffer.collectRange(at & 1, chunk, at, at + 10, at + 100, garbage === 'yes');
await new Promise((r) => setTimeout(r, 50));
console.log(majors);
await buffer.abort();
`,
      );
      const majors = (garbage: 'yes' | 'no'): number =>
        Number(
          execFileSync(process.execPath, ['--expose-gc', script, join(root, `b-${garbage}`), garbage], {
            encoding: 'utf8',
          }).trim(),
        );
      // 80 MB of records, no spill. V8 may run one full GC of its own (the 160 MiB arena's allocation).
      const reused = majors('no');
      const garbage = majors('yes');
      assert.ok(reused <= 1, `80 MB collected from a reused chunk: no paced full GC (${reused} full GCs)`);
      assert.ok(garbage >= reused + 4, `80 MB collected from garbage: a full GC every 16 MiB (${garbage} full GCs)`);
    });
  },
);
