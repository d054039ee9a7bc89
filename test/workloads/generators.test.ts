import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import {
  TYREX_TARGETS,
  clusterPreset,
  estimatedAloneMs,
  fawkesWorkload,
  fitSampleCv2,
  improvedFairWorkload,
  listScheduleMs,
  squaredCv,
  tyrexWorkload,
  yarnMeTrace,
  type JobSpec,
} from '../../src/workloads/index.js';

const workOf = (j: JobSpec) => [...j.maps, ...j.reduces].reduce((s, t) => s + t.workMs, 0);

describe('workload helpers', () => {
  test('squared CV by hand', () => {
    // mean 2, variance ((1-2)^2 + (3-2)^2) / 2 = 1 -> CV^2 = 1/4
    assert.equal(squaredCv([1, 3]), 0.25);
  });

  test('fitSampleCv2 hits the target and the mean, keeping the order', () => {
    const xs = [1, 2, 3, 50, 4, 0.5];
    const ys = fitSampleCv2(xs, 3, 10);
    assert.ok(Math.abs(squaredCv(ys) - 3) < 1e-6);
    assert.ok(Math.abs(ys.reduce((s, v) => s + v, 0) / ys.length - 10) < 1e-9);
    assert.deepEqual(
      [...ys.keys()].sort((a, b) => ys[a]! - ys[b]!),
      [...xs.keys()].sort((a, b) => xs[a]! - xs[b]!),
    );
  });

  test('list scheduling by hand', () => {
    // 2 slots: 5 | 3 -> 3+4=7 | 5+1=6 -> makespan 7
    assert.equal(listScheduleMs([5, 3, 4, 1], 2), 7);
  });
});

describe('Tyrex workloads (seed 1)', () => {
  for (const variant of ['hvw', 'mvw', 'lvw'] as const) {
    test(`${variant}: CV^2, totals, class mix and offered load`, () => {
      const target = TYREX_TARGETS[variant];
      const w = tyrexWorkload({ variant, seed: 1 });
      assert.equal(w.jobs.length, 300);
      const sizes = w.jobs.map(workOf);
      const cv2 = squaredCv(sizes);
      assert.ok(Math.abs(cv2 / target.cv2 - 1) <= 0.15, `CV^2 ${cv2} vs ${target.cv2}`);
      const maps = w.jobs.reduce((s, j) => s + j.maps.length, 0);
      const reduces = w.jobs.reduce((s, j) => s + j.reduces.length, 0);
      const cpuHours = sizes.reduce((s, v) => s + v, 0) / 3_600_000;
      assert.ok(Math.abs(maps / target.maps - 1) < 0.01, `maps ${maps}`);
      assert.ok(Math.abs(reduces / target.reduces - 1) < 0.02, `reduces ${reduces}`);
      assert.ok(Math.abs(cpuHours / target.cpuHours - 1) < 0.01, `CPU-hours ${cpuHours}`);
      // Size classes from the runtime alone (list-scheduled on tyrex-20's slots).
      const cluster = clusterPreset('tyrex-20');
      const small = w.jobs.filter((j) => estimatedAloneMs(j, cluster) < 10 * 60_000).length;
      assert.ok(small / 300 > 0.6, `tiny+short ${small}/300`);
      // Offered load on the busier slot kind = its work / (its slots * arrival span), Poisson:
      // within 15% of 0.7 for this seed. tyrex-20 has 120 map and 40 reduce slots.
      const span = w.jobs.at(-1)!.submitMs - w.jobs[0]!.submitMs;
      const work = (kind: 'maps' | 'reduces') =>
        w.jobs.reduce((s, j) => s + j[kind].reduce((a, t) => a + t.workMs, 0), 0);
      const load = Math.max(work('maps') / 120, work('reduces') / 40) / span;
      assert.ok(Math.abs(load / 0.7 - 1) < 0.15, `load ${load}`);
      assert.ok(w.jobs.every((j, i) => i === 0 || j.submitMs >= w.jobs[i - 1]!.submitMs));
    });
  }

  test('deterministic per seed, different across seeds; load 0.9 packs arrivals tighter', () => {
    assert.deepEqual(tyrexWorkload({ variant: 'hvw', seed: 3 }), tyrexWorkload({ variant: 'hvw', seed: 3 }));
    assert.notDeepEqual(
      tyrexWorkload({ variant: 'hvw', seed: 3 }).jobs,
      tyrexWorkload({ variant: 'hvw', seed: 4 }).jobs,
    );
    const a = tyrexWorkload({ variant: 'hvw', seed: 3, load: 0.7 }).jobs.at(-1)!.submitMs;
    const b = tyrexWorkload({ variant: 'hvw', seed: 3, load: 0.9 }).jobs.at(-1)!.submitMs;
    assert.ok(Math.abs(b / a - 0.7 / 0.9) < 0.01);
  });
});

describe('other generators', () => {
  test('FAWKES WKLD-A and WKLD-B: job counts per MR-cluster, sizes and arrivals', () => {
    const a = fawkesWorkload({ variant: 'a' });
    for (const [k, c] of ['c-1', 'c-2', 'c-3'].entries()) {
      const mine = a.jobs.filter((j) => j.cluster === c);
      assert.equal(mine.length, 50);
      assert.ok(mine.every((j) => j.submitMs === k * 100_000 && j.app === 'wordcount' && j.maps.length === 16));
    }
    const b = fawkesWorkload({ variant: 'b' });
    const sizes = b.jobs.filter((j) => j.cluster === 'c-2').map((j) => j.sizeClass);
    assert.deepEqual(
      [
        sizes.filter((s) => s === 'small').length,
        sizes.filter((s) => s === 'medium').length,
        sizes.filter((s) => s === 'large').length,
      ],
      [90, 5, 5],
    );
    assert.equal(b.jobs.find((j) => j.sizeClass === 'large')!.maps.length, 1600);
  });

  test('FAWKES WKLD-D/E: counts per cluster; E has a 26-job pipeline in sequence', () => {
    const d = fawkesWorkload({ variant: 'd' });
    assert.deepEqual(
      ['c-1', 'c-2', 'c-3'].map((c) => d.jobs.filter((j) => j.cluster === c).length),
      [165, 188, 555],
    );
    const e = fawkesWorkload({ variant: 'e' });
    assert.deepEqual(
      ['c-1', 'c-2', 'c-3'].map((c) => e.jobs.filter((j) => j.cluster === c).length),
      [359, 26, 559],
    );
    const pipeline = e.jobs.filter((j) => j.cluster === 'c-2');
    assert.equal(pipeline.filter((j) => j.after === undefined).length, 1);
    const index = new Map(e.jobs.map((j, i) => [j.id, i]));
    for (const j of pipeline) if (j.after) assert.ok(index.get(j.after)! < index.get(j.id)!);
  });

  test('YARN-ME traces: one phase, ranges, 100 MB steps, 10% minimum, scalable', () => {
    for (const kind of ['uniform', 'exponential'] as const) {
      const w = yarnMeTrace({ kind, seed: 2, maxTasks: 300, maxMemoryGb: 6, maxDurationS: 400, penalty: 1.5 });
      assert.equal(w.jobs.length, 100);
      for (const j of w.jobs) {
        assert.equal(j.reduces.length, 0);
        assert.ok(j.maps.length >= 1 && j.maps.length <= 300);
        const t = j.maps[0]!;
        assert.ok(t.memoryMb >= 1024 && t.memoryMb <= 6 * 1024 + 100 && t.memoryMb % 100 === 0);
        assert.ok(t.workMs >= (kind === 'uniform' ? 1000 : 50_000) && t.workMs <= 400_000);
        assert.deepEqual(t.penalty, { kind: 'step', factor: 1.5, minFraction: 0.1 });
        assert.ok(j.submitMs >= 0 && j.submitMs <= 1_000_000);
      }
    }
    assert.equal(yarnMeTrace({ kind: 'uniform', scale: 30 }).jobs.length, 3000);
  });

  test('improved FAIR scenario: 10 GB jobs of 64 MB blocks, map output ratios, WordCount last', () => {
    const w = improvedFairWorkload();
    assert.deepEqual(
      w.jobs.map((j) => [j.app, j.maps.length, j.pool]),
      [
        ['terasort', 160, 'terasort'],
        ['grepcount', 160, 'grepcount'],
        ['wordcount', 160, 'wordcount'],
      ],
    );
    const ratio = (j: JobSpec) =>
      j.maps.reduce((s, t) => s + (t.outputBytes ?? 0), 0) / j.maps.reduce((s, t) => s + (t.inputBytes ?? 0), 0);
    assert.ok(Math.abs(ratio(w.jobs[0]!) - 1) < 1e-6);
    assert.ok(Math.abs(ratio(w.jobs[1]!) - 0.01) < 1e-6);
    assert.ok(w.jobs[2]!.submitMs > 0 && w.jobs[0]!.submitMs === 0 && w.jobs[1]!.submitMs === 0);
    // WordCount's private data set arrives with it: one replica per block on rack03, round-robin, one owed.
    const wc = w.jobs[2]!;
    assert.deepEqual(
      wc.maps.slice(0, 5).map((m) => m.replicas),
      [['w0009'], ['w0010'], ['w0011'], ['w0012'], ['w0009']],
    );
    assert.deepEqual(wc.inputPlacement, { replication: 2, windowMs: 15_000 });
    assert.equal(w.jobs[0]!.inputPlacement, undefined);
    // Fully uploaded (or spread like the others), nothing is owed.
    assert.equal(improvedFairWorkload({ uploadedReplicas: 2 }).jobs[2]!.inputPlacement, undefined);
    assert.equal(improvedFairWorkload({ privateWorkers: [] }).jobs[2]!.inputPlacement, undefined);
  });
});
