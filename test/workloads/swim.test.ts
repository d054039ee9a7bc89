import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { MinimrError } from '../../src/errors.js';
import { createPolicy } from '../../src/scheduler/index.js';
import { simulate } from '../../src/sim/index.js';
import {
  clusterPreset,
  loadWorkload,
  parseSwimOptions,
  parseSwimTrace,
  type JobSpec,
} from '../../src/workloads/index.js';

const MiB = 1024 * 1024;

/**
 * Small numbers so the arithmetic below is done by hand: 100-byte blocks, 50 shuffle bytes per
 * reduce, maps at 0.001 MB/s (1 byte per ms), reduces at 0.002 MB/s (2 bytes per ms), 10 ms to start.
 */
const TINY = { blockBytes: 100, bytesPerReduce: 50, mapMBps: 0.001, reduceMBps: 0.002, taskStartMs: 10 };

const THREE_JOBS = ['jobA\t5\t5\t250\t120\t30', 'jobB\t7.5\t2.5\t0\t0\t40', 'jobC\t7.5\t0\t100\t1\t0', ''].join('\n');

function works(tasks: JobSpec['maps']): number[] {
  return tasks.map((t) => t.workMs);
}

describe('SWIM trace parsing', () => {
  test('maps per block, reduces per bytesPerReduce, work from bytes, arrivals from submit times', () => {
    const w = parseSwimTrace(THREE_JOBS, { name: 'three', ...TINY });
    assert.equal(w.name, 'three');
    assert.deepEqual(
      w.jobs.map((j) => [j.id, j.name, j.submitMs]),
      [
        ['job_0001', 'jobA', 5000],
        ['job_0002', 'jobB', 7500],
        ['job_0003', 'jobC', 7500],
      ],
    );
    const [a, b, c] = w.jobs as [JobSpec, JobSpec, JobSpec];
    // jobA: 250 bytes in 100-byte blocks: 3 maps of 100, 100, 50 bytes, 10 + bytes ms each; the
    // 120 shuffle bytes go out in proportion (48, 48, 24). Reduces: ceil(120 / 50) = 3, each with
    // (120 + 30) / 3 = 50 bytes at 2 per ms: 10 + 25 ms.
    assert.deepEqual(
      a.maps.map((m) => m.inputBytes),
      [100, 100, 50],
    );
    assert.deepEqual(works(a.maps), [110, 110, 60]);
    assert.deepEqual(
      a.maps.map((m) => m.outputBytes),
      [48, 48, 24],
    );
    assert.deepEqual(works(a.reduces), [35, 35, 35]);
    // jobB: no input still runs one map; no shuffle: map-only, its map writes the 40 output bytes.
    assert.equal(b.maps.length, 1);
    assert.equal(b.maps[0]!.inputBytes, 0);
    assert.equal(b.maps[0]!.workMs, 10 + 40);
    assert.equal(b.reduces.length, 0);
    // jobC: one full block; one shuffle byte is one reduce of 10 + 1 / 2 ms.
    assert.deepEqual(works(c.maps), [110]);
    assert.deepEqual(works(c.reduces), [10.5]);
    for (const job of w.jobs) for (const t of [...job.maps, ...job.reduces]) assert.equal(t.memoryMb, 1024);
  });

  test('the defaults: 64 MiB blocks and per reduce, maps at 58 MB/s, reduces at 340 MB/s, 200 ms to start', () => {
    const w = parseSwimTrace(`big\t0\t0\t${128 * MiB + 1}\t${64 * MiB + 1}\t0\n`);
    const [job] = w.jobs as [JobSpec];
    assert.deepEqual(
      job.maps.map((m) => m.inputBytes),
      [64 * MiB, 64 * MiB, 1],
    );
    assert.deepEqual(works(job.maps), [200 + (64 * MiB) / 58_000, 200 + (64 * MiB) / 58_000, 200 + 1 / 58_000]);
    // ceil((64 MiB + 1) / 64 MiB) = 2 reduces of (64 MiB + 1) / 2 bytes each.
    assert.deepEqual(works(job.reduces), [200 + (64 * MiB + 1) / 2 / 340_000, 200 + (64 * MiB + 1) / 2 / 340_000]);
  });

  test('sizeScale scales the bytes before the rules, timeScale the submit times; classes by unscaled input', () => {
    const w = parseSwimTrace(THREE_JOBS, { ...TINY, sizeScale: 0.5, timeScale: 0.1 });
    const a = w.jobs[0]!;
    // 125 input bytes: maps of 100 and 25; 60 shuffle bytes: 2 reduces of (60 + 15) / 2 = 37.5 bytes.
    assert.equal(a.submitMs, 500);
    assert.deepEqual(works(a.maps), [110, 35]);
    assert.deepEqual(works(a.reduces), [10 + 37.5 / 2, 10 + 37.5 / 2]);
    const classes = parseSwimTrace(
      ['s\t0\t0\t999999999\t0\t0', 'm\t1\t1\t1000000000\t0\t0', 'l\t2\t1\t100000000000\t0\t0'].join('\n'),
      { sizeScale: 0.001 },
    );
    assert.deepEqual(
      classes.jobs.map((j) => j.sizeClass),
      ['small', 'medium', 'large'],
    );
  });

  test('CRLF line ends and blank lines are accepted', () => {
    const w = parseSwimTrace('a\t1\t1\t10\t0\t0\r\n\r\nb\t2\t1\t10\t0\t0\r\n', TINY);
    assert.deepEqual(
      w.jobs.map((j) => j.name),
      ['a', 'b'],
    );
  });
});

describe('malformed SWIM lines are EBADCONF naming the line and the field', () => {
  const GOOD = 'ok\t1\t1\t10\t10\t10';
  const cases: Array<[string, string, string]> = [
    ['\t2\t1\t10\t10\t10', 'job name', 'empty'],
    ['j\tsoon\t1\t10\t10\t10', 'submit time', 'soon'],
    ['j\t0.5\t1\t10\t10\t10', 'submit time', 'before the previous'],
    ['j\t2\t-1\t10\t10\t10', 'inter-job gap', '-1'],
    ['j\t2\t1\t1e\t10\t10', 'map input bytes', '1e'],
    ['j\t2\t1\t10\t\t10', 'shuffle bytes', '""'],
    ['j\t2\t1\t10\t10\tNaN', 'reduce output bytes', 'NaN'],
    ['j\t2\t1\t10\t10\tInfinity', 'reduce output bytes', 'Infinity'],
    ['j\t2\t1\t10\t10', 'reduce output bytes', 'missing'],
    ['j\t2\t1', 'map input bytes', 'missing'],
    ['j\t2\t1\t10\t10\t10\textra', 'reduce output bytes', 'after it'],
  ];
  for (const [line, field, says] of cases) {
    test(`${JSON.stringify(line)}: ${field}`, () => {
      assert.throws(
        () => parseSwimTrace(`${GOOD}\n${line}\n${GOOD.replace('\t1\t', '\t9\t')}\n`, { name: 't.tsv' }),
        (err: unknown) => {
          assert.ok(err instanceof MinimrError);
          assert.equal(err.code, 'EBADCONF');
          assert.equal(err.details.line, 2);
          assert.equal(err.details.field, field);
          assert.match(err.message, new RegExp(`^t\\.tsv line 2: ${field}: `));
          assert.ok(err.message.includes(says), err.message);
          return true;
        },
      );
    });
  }

  test('a file with no jobs, and bad options, are EBADCONF', () => {
    assert.throws(() => parseSwimTrace('\n\n'), { code: 'EBADCONF' });
    assert.throws(() => parseSwimTrace(GOOD, { blockBytes: 0 }), {
      code: 'EBADCONF',
      details: { field: 'blockBytes' },
    });
    assert.throws(() => parseSwimTrace(GOOD, { mapMBps: -1 }), { code: 'EBADCONF', details: { field: 'mapMBps' } });
    assert.throws(() => parseSwimOptions('{"mapMbps": 3}'), { code: 'EBADCONF', details: { field: 'mapMbps' } });
    assert.throws(() => parseSwimOptions('{"timeScale": "fast"}'), { code: 'EBADCONF' });
    assert.throws(() => parseSwimOptions('[1]'), { code: 'EBADCONF' });
    assert.deepEqual(parseSwimOptions('{"timeScale": 0.5, "mapMBps": 40}'), { timeScale: 0.5, mapMBps: 40 });
  });
});

describe('swim:FILE through loadWorkload', () => {
  test('reads the file, --scale is the size scale, and --swim-options applies to swim: only', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'minimr-swim-'));
    try {
      const path = join(dir, 'three.tsv');
      await writeFile(path, THREE_JOBS);
      const w = await loadWorkload(`swim:${path}`, { scale: 0.5, swim: { ...TINY, timeScale: 2 } });
      assert.equal(w.jobs.length, 3);
      assert.equal(w.jobs[0]!.maps.length, 2, '250 * 0.5 bytes in 100-byte blocks');
      assert.equal(w.jobs[0]!.submitMs, 10_000);
      await assert.rejects(loadWorkload('hvw', { swim: { timeScale: 2 } }), { code: 'EBADCONF' });
      await assert.rejects(loadWorkload(`swim:${join(dir, 'absent.tsv')}`, {}), { code: 'EBADCONF' });
      await assert.rejects(loadWorkload('swim:', {}), { code: 'EBADCONF' });
      await writeFile(path, `${THREE_JOBS}jobD\t8\t0.5\t12x\t0\t0\n`);
      await assert.rejects(loadWorkload(`swim:${path}`, {}), {
        code: 'EBADCONF',
        details: { line: 4, field: 'map input bytes' },
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('a SWIM workload in the simulator', () => {
  // Six jobs in the shape of FB-2009's first lines (map-only, a shuffle of a few bytes, GB-scale).
  const LINES = [
    'job0\t49\t49\t740773\t2339561\t627471',
    'job1\t101\t52\t736346\t1700537\t432269',
    'job2\t122\t21\t267631\t594312\t233549',
    'job3\t197\t75\t233422\t42\t37',
    'job4\t208\t11\t3623279\t0\t9838062',
    'job5\t210\t2\t5368709120\t2147483648\t1073741824',
  ].join('\n');

  for (const policy of ['fifo', 'fair', 'srjf']) {
    test(`under ${policy} every job finishes, no sooner than its longest map and reduce allow`, () => {
      const workload = parseSwimTrace(LINES);
      // job5: 5 GiB in 64 MiB blocks is 80 maps; 2 GiB of shuffle is 32 reduces.
      assert.equal(workload.jobs[5]!.maps.length, 80);
      assert.equal(workload.jobs[5]!.reduces.length, 32);
      const r = simulate({
        workload,
        cluster: clusterPreset('tyrex-20'),
        policy: createPolicy(policy),
        heartbeatMs: 1000,
      });
      assert.equal(r.run.jobs.length, 6);
      for (const j of r.run.jobs) {
        assert.equal(j.state, 'succeeded', `${j.id} did not finish`);
        const spec = workload.jobs.find((s) => s.id === j.id)!;
        const longest = (ts: JobSpec['maps']) => Math.max(0, ...ts.map((t) => t.workMs));
        assert.ok(
          // The simulator's clock counts whole ms: each of the two tasks may end up to 1 ms sooner.
          j.finishMs! >= spec.submitMs + longest(spec.maps) + longest(spec.reduces) - 2,
          `${j.id} finished at ${j.finishMs}`,
        );
      }
    });
  }
});

describe('the FB-2009 sample in the repository (benchmarks/traces/swim/)', () => {
  test('reads whole: 5,894 jobs, classed 5,369 / 483 / 42 as counted with awk', async () => {
    const root = fileURLToPath(new URL('../../../', import.meta.url));
    const dir = join(root, 'benchmarks', 'traces', 'swim');
    const w = parseSwimTrace(await readFile(join(dir, 'FB-2009_samples_24_times_1hr_0.tsv'), 'utf8'));
    assert.equal(w.jobs.length, 5894);
    const count = (c: string) => w.jobs.filter((j) => j.sizeClass === c).length;
    // awk -F'\t' on the file: input < 1e9 bytes 5369 lines, < 1e11 483 more, the other 42;
    // 4448 lines with a shuffle of 0.
    assert.deepEqual([count('small'), count('medium'), count('large')], [5369, 483, 42]);
    assert.equal(w.jobs.filter((j) => j.reduces.length === 0).length, 4448);
    assert.equal(w.jobs[w.jobs.length - 1]!.submitMs, 86_404_000);
    assert.match(await readFile(join(dir, 'LICENSE'), 'utf8'), /Regents of the University of California/);
  });
});
