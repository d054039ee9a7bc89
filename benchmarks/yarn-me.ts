/**
 * YARN-ME against YARN (issue 14, docs/specs/yarn-me.md), in the simulator at the paper's scale:
 *
 * - the sweep: 100 nodes x 16 cores x 10 GB (yarn-me-100), 100 jobs arriving uniformly in
 *   [0, 1000] s, one phase per job, YARN-ME's uniform and exponential traces with 1.5x and 3x
 *   step penalties. A configuration is one seed of the trace generator, which draws the trace's
 *   ranges of tasks per job, task memory and task duration (the paper's DSS sweeps); the figure
 *   is YARN-ME's average job completion time (JCT) over YARN's on the same trace, its CDF over
 *   configurations, and the share of configurations at or below 0.7 (the paper: 40% for uniform
 *   traces at 3x);
 * - the meganode bound: each uniform trace on one node pooling the cluster, under shortest
 *   remaining job first (srjf), beside YARN-ME;
 * - mis-estimation: the uniform 3x configurations again with durations, ideal memory and
 *   penalties mis-estimated by +-15% (both policies see the same errors); the share at or below
 *   0.7 should drop by no more than 10 points;
 * - the 3000-node case: yarn-me-3000 with the uniform 3x trace scaled 30x (--big-scale);
 * - memory utilization and elastic tasks over time for the first uniform 3x configuration.
 *
 * Both policies run in the same process, one after the other, so the ratios hold on a busy
 * machine; wall times are printed for direction only.
 *
 * With `--real`, the real-cluster part (a TeraSort/WordCount/GrepCount mix on a local cluster
 * whose worker memory leaves idle memory under regular allocation, yarn vs yarn-me, with the
 * simulator's prediction beside it; `--real-repeats` pairs of runs, default 3): what
 * `npm run bench:yarn-me-real` runs alone, with its options (src/experiments/yarn-me-real.ts).
 *
 * Run: npm run bench:yarn-me [-- --seeds 12 --other-seeds 6 --big-scale 30 --skip-big | --only-big | --real
 * --real-repeats 3]
 * Writes bench-results/yarn-me/{yarn-me.json, yarn-me.md, ratio-cdf.svg, memory.svg, elastic.svg}, with a CSV
 * beside each SVG
 * (with --only-big: yarn-me-big.json and yarn-me-big.md).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { runYarnMeReal, yarnMeRealJson, yarnMeRealMarkdown, yarnMeRealSvgs } from '../src/experiments/index.js';
import type { RunRecord } from '../src/metrics/index.js';
import { createPolicy, type PolicyOptions } from '../src/scheduler/index.js';
import { defaultHeartbeatMs, simulate, type SimSettings } from '../src/sim/index.js';
import { clusterPreset, meganode, yarnMeTrace, type ClusterShape, type Workload } from '../src/workloads/index.js';
import { lineChartFiles, type Series } from '../src/util/index.js';
import yargs from 'yargs';

const positive =
  (name: string) =>
  (v: number): number => {
    if (!Number.isFinite(v) || v <= 0) throw new Error(`--${name} must be a positive number`);
    return v;
  };

const args = yargs(process.argv.slice(2))
  .option('seeds', {
    type: 'number',
    default: 12,
    coerce: positive('seeds'),
    describe: 'configurations of each uniform trace (and of the mis-estimated one)',
  })
  .option('other-seeds', {
    type: 'number',
    default: 6,
    coerce: positive('other-seeds'),
    describe: 'configurations of each exponential trace',
  })
  .option('big-scale', {
    type: 'number',
    default: 30,
    coerce: positive('big-scale'),
    describe: 'the 3000-node case: the uniform 3x trace scaled this many times',
  })
  .option('skip-big', { type: 'boolean', default: false, describe: 'leave out the 3000-node case' })
  .option('only-big', {
    type: 'boolean',
    default: false,
    describe: 'only the 3000-node case (the slowest by far; run it apart on a busy machine)',
  })
  .option('real', {
    type: 'boolean',
    default: false,
    describe: 'also the real-cluster part (what bench:yarn-me-real runs)',
  })
  .option('real-repeats', {
    type: 'number',
    default: 3,
    coerce: positive('real-repeats'),
    describe: 'real: pairs of runs',
  })
  .strict()
  .parseSync();

const SEEDS = Math.round(args.seeds);
const OTHER_SEEDS = Math.round(args['other-seeds']);
const BIG_SCALE = args['big-scale'];
const SKIP_BIG = args['skip-big'];
const ONLY_BIG = args['only-big'];
const REAL = args.real;
const OUT = join('bench-results', 'yarn-me');
const TARGET_RATIO = 0.7;
/** +-15% of duration, ideal memory and penalty. */
const MISESTIMATION: Partial<SimSettings> = { noise: 0.15, memoryNoise: 0.15, penaltyNoise: 0.15 };

const log = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

interface Figures {
  readonly avgJctS: number;
  readonly makespanS: number;
  /** Time-averaged share of the cluster's memory granted to running attempts. */
  readonly memoryUtilization: number;
  /** Of the attempts run, the share launched elastic. */
  readonly elasticShare: number;
  readonly unfinished: number;
  readonly wallS: number;
}

function figures(run: RunRecord, wallS: number): Figures {
  const done = run.jobs.filter((j) => j.finishMs !== null);
  const avgJctS = done.reduce((s, j) => s + (j.finishMs! - j.submitMs), 0) / Math.max(1, done.length) / 1000;
  const u = run.utilization;
  let area = 0;
  for (let i = 1; i < u.length; i++)
    area +=
      (u[i]!.timeMs - u[i - 1]!.timeMs) * (u[i - 1]!.memoryMb > 0 ? u[i - 1]!.memoryUsedMb / u[i - 1]!.memoryMb : 0);
  const span = u.length > 1 ? u[u.length - 1]!.timeMs - u[0]!.timeMs : 0;
  const elastic = run.attempts.filter((a) => a.memoryMb < a.idealMemoryMb).length;
  return {
    avgJctS,
    makespanS: run.endMs / 1000,
    memoryUtilization: span > 0 ? area / span : 0,
    elasticShare: run.attempts.length > 0 ? elastic / run.attempts.length : 0,
    unfinished: run.jobs.length - done.length,
    wallS,
  };
}

function simulateUnder(
  policy: string,
  workload: Workload,
  cluster: ClusterShape,
  settings: Partial<SimSettings>,
  label: string,
  options: PolicyOptions = {},
): { figures: Figures; run: RunRecord } {
  const started = performance.now();
  // Progress at most every 10 s of wall time: the 3000-node runs take minutes each.
  let said = started;
  const r = simulate({
    ...settings,
    workload,
    cluster,
    policy: createPolicy(policy, options),
    recordDecisions: false,
    onProgress: (p) => {
      const now = performance.now();
      if (now - said < 10_000) return;
      said = now;
      log(
        `  ${label} ${policy}: ${p.jobsDone}/${p.jobsTotal} jobs done ` +
          `at t=${(p.simMs / 1000).toFixed(0)} ` +
          `s, ${((now - started) / 1000).toFixed(0)} s wall`,
      );
    },
  });
  const f = figures(r.run, (performance.now() - started) / 1000);
  log(
    `  ${label} ${policy}: avg JCT ${f.avgJctS.toFixed(0)} s, ` +
      `makespan ${f.makespanS.toFixed(0)} s, ` +
      `memory ${(100 * f.memoryUtilization).toFixed(0)}%, ` +
      `elastic ${(100 * f.elasticShare).toFixed(0)}%, ${f.wallS.toFixed(1)} ` +
      `s wall`,
  );
  return { figures: f, run: r.run };
}

interface ConfigRow {
  readonly row: string;
  readonly kind: 'uniform' | 'exponential';
  readonly penalty: number;
  readonly seed: number;
  readonly trace: Readonly<Record<string, string | number | boolean>>;
  readonly yarn: Figures;
  readonly yarnMe: Figures;
  readonly ratio: number;
  readonly meganode?: Figures;
}

const cluster100 = clusterPreset('yarn-me-100');
const keptRuns = new Map<string, RunRecord>();

function configuration(
  row: string,
  kind: 'uniform' | 'exponential',
  penalty: number,
  seed: number,
  settings: Partial<SimSettings>,
  withMeganode: boolean,
  cluster = cluster100,
  scale = 1,
  yarnMeOptions: PolicyOptions = {},
): ConfigRow {
  const workload = yarnMeTrace({ kind, penalty, seed, ...(scale !== 1 ? { scale } : {}) });
  const label = `[${row} seed ${seed}]`;
  log(`${label} ${workload.jobs.length} jobs, ${workload.meta?.tasks} tasks on ${cluster.workers.length} nodes`);
  const yarn = simulateUnder('yarn', workload, cluster, settings, label);
  const yarnMe = simulateUnder('yarn-me', workload, cluster, settings, label, yarnMeOptions);
  if (seed === 1 && row === 'uniform 3x') {
    keptRuns.set('yarn', yarn.run);
    keptRuns.set('yarn-me', yarnMe.run);
  }
  const mega = withMeganode
    ? simulateUnder('srjf', workload, meganode(cluster), settings, `${label} meganode`).figures
    : undefined;
  return {
    row,
    kind,
    penalty,
    seed,
    trace: workload.meta ?? {},
    yarn: yarn.figures,
    yarnMe: yarnMe.figures,
    ratio: yarnMe.figures.avgJctS / yarn.figures.avgJctS,
    ...(mega ? { meganode: mega } : {}),
  };
}

/**
 * The real-cluster rows (items 4, 5 and 7's real run): bench:yarn-me-real with its defaults
 * (src/experiments/yarn-me-real.ts).
 */
interface RealRunResult {
  readonly markdown: string;
  readonly json: unknown;
}

async function realRun(options: {
  readonly outDir: string;
  readonly log: (line: string) => void;
}): Promise<RealRunResult | null> {
  const dataDir = mkdtempSync(join(tmpdir(), 'minimr-bench-yarn-me-'));
  try {
    const result = await runYarnMeReal({
      dataDir,
      repeats: Math.round(args['real-repeats']),
      onProgress: (m) => options.log(`real: ${m}`),
    });
    for (const [name, svg] of Object.entries(yarnMeRealSvgs(result))) writeFileSync(join(options.outDir, name), svg);
    return { markdown: yarnMeRealMarkdown(result), json: yarnMeRealJson(result) };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function share(rows: readonly ConfigRow[], ratio: (r: ConfigRow) => number, atMost: number): number {
  return rows.length === 0 ? 0 : rows.filter((r) => ratio(r) <= atMost + 1e-12).length / rows.length;
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0
    ? Number.NaN
    : s.length % 2
      ? s[(s.length - 1) / 2]!
      : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

function cdf(name: string, ratios: readonly number[], dashed = false): Series {
  const s = [...ratios].sort((a, b) => a - b);
  return { name, dashed, points: s.flatMap((r, i) => [[r, i / s.length] as const, [r, (i + 1) / s.length] as const]) };
}

const pct = (x: number): string => `${(100 * x).toFixed(0)}%`;

/** ratio-cdf.svg, memory.svg and elastic.svg. */
function writePlots(
  sweepRows: readonly string[],
  sweep: readonly ConfigRow[],
  misestimated: readonly ConfigRow[],
): void {
  const rowNames = [...sweepRows, 'uniform 3x, +-15%'];
  const ratiosOf = (row: string) =>
    (row === 'uniform 3x, +-15%' ? misestimated : sweep.filter((r) => r.row === row)).map((r) => r.ratio);
  const write = (files: Array<[string, string]>) => {
    for (const [name, text] of files) writeFileSync(join(OUT, name), text);
  };
  write(
    lineChartFiles('ratio-cdf', {
      title: 'YARN-ME / YARN average JCT over configurations (CDF)',
      xLabel: 'YARN-ME avg JCT / YARN avg JCT',
      yLabel: 'fraction of configurations',
      series: rowNames.map((row) => cdf(row, ratiosOf(row), row.includes('+-15%'))),
    }),
  );
  const overTime = (
    run: RunRecord | undefined,
    value: (s: RunRecord['utilization'][number]) => number,
  ): Array<readonly [number, number]> => (run?.utilization ?? []).map((s) => [s.timeMs / 1000, value(s)] as const);
  write(
    lineChartFiles('memory', {
      title: 'Memory granted to running tasks, uniform 3x, seed 1',
      xLabel: 'time (s)',
      yLabel: 'share of cluster memory',
      series: ['yarn', 'yarn-me'].map((p) => ({
        name: p,
        points: overTime(keptRuns.get(p), (s) => (s.memoryMb > 0 ? s.memoryUsedMb / s.memoryMb : 0)),
      })),
    }),
  );
  write(
    lineChartFiles('elastic', {
      title: 'Running elastic tasks, uniform 3x, seed 1',
      xLabel: 'time (s)',
      yLabel: 'elastic tasks',
      series: [{ name: 'yarn-me', points: overTime(keptRuns.get('yarn-me'), (s) => s.elasticAttempts) }],
    }),
  );
}

async function main(): Promise<void> {
  const started = performance.now();
  mkdirSync(OUT, { recursive: true });
  const seeds = (n: number) => Array.from({ length: n }, (_, i) => i + 1);
  const sweep: ConfigRow[] = [];
  for (const [kind, penalty, n] of [
    ['uniform', 3, SEEDS],
    ['uniform', 1.5, OTHER_SEEDS],
    ['exponential', 3, OTHER_SEEDS],
    ['exponential', 1.5, OTHER_SEEDS],
  ] as const) {
    const row = `${kind} ${penalty}x`;
    if (!ONLY_BIG)
      for (const seed of seeds(n))
        sweep.push(configuration(row, kind, penalty, seed, {}, kind === 'uniform', cluster100));
  }
  const misestimated = ONLY_BIG
    ? []
    : seeds(SEEDS).map((seed) => configuration('uniform 3x, +-15%', 'uniform', 3, seed, MISESTIMATION, false));
  const bigCluster = clusterPreset('yarn-me-3000');
  // The timeline is rebuilt once per heartbeat of the cluster (30 s on 3000 nodes), as on 100 nodes.
  const bigPolicy = { timelineRefreshMs: defaultHeartbeatMs(bigCluster.workers.length) };
  const big = SKIP_BIG
    ? []
    : [
        configuration(
          `3000 nodes, uniform 3x x${BIG_SCALE}`,
          'uniform',
          3,
          1,
          {},
          false,
          bigCluster,
          BIG_SCALE,
          bigPolicy,
        ),
      ];
  const real = REAL ? await realRun({ outDir: OUT, log }) : null;

  // ---- summary rows ----
  const rows = [...new Set(sweep.map((r) => r.row))].map((row) => {
    const list = sweep.filter((r) => r.row === row);
    const withMega = list.filter((r) => r.meganode);
    return {
      row,
      configurations: list.length,
      shareAtMost07: share(list, (r) => r.ratio, TARGET_RATIO),
      medianRatio: median(list.map((r) => r.ratio)),
      bestRatio: Math.min(...list.map((r) => r.ratio)),
      worstRatio: Math.max(...list.map((r) => r.ratio)),
      yarnMeBeatsMeganode:
        withMega.length > 0 ? share(withMega, (r) => r.yarnMe.avgJctS / r.meganode!.avgJctS, 1) : null,
      medianMeganodeRatio:
        withMega.length > 0 ? median(withMega.map((r) => r.meganode!.avgJctS / r.yarn.avgJctS)) : null,
      memoryUtilization: {
        yarn: median(list.map((r) => r.yarn.memoryUtilization)),
        yarnMe: median(list.map((r) => r.yarnMe.memoryUtilization)),
      },
    };
  });
  const base = rows.find((r) => r.row === 'uniform 3x');
  const misShare = share(misestimated, (r) => r.ratio, TARGET_RATIO);
  const checks = [
    ...(base
      ? [
          {
            claim: `uniform 3x: YARN-ME/YARN avg JCT <= ${TARGET_RATIO} in >= 40% of configurations`,
            figure: pct(base.shareAtMost07),
            pass: base.shareAtMost07 >= 0.4,
          },
          {
            claim: 'uniform 3x, +-15% mis-estimation: the share <= 0.7 drops by <= 10 points',
            figure:
              `${pct(misShare)} ` +
              `(was ${pct(base.shareAtMost07)}, ${((misShare - base.shareAtMost07) * 100).toFixed(0)} ` +
              `points)`,
            pass: base.shareAtMost07 - misShare <= 0.1 + 1e-12,
          },
        ]
      : []),
    ...big.map((b) => ({
      claim: `${b.row}: YARN-ME gains (ratio < 1)`,
      figure: b.ratio.toFixed(2),
      pass: b.ratio < 1,
    })),
  ];

  // ---- tables ----
  const table = (head: string[], body: Array<Array<string | number>>) =>
    [
      `| ${head.join(' | ')} |`,
      `|${head.map(() => '---').join('|')}|`,
      ...body.map((r) => `| ${r.join(' | ')} |`),
    ].join('\n');
  const summary = table(
    [
      'traces',
      'configurations',
      'share <= 0.7',
      'median ratio',
      'best',
      'worst',
      'meganode / YARN (median)',
      'YARN-ME beats meganode',
      'memory util YARN -> YARN-ME (median)',
    ],
    [
      ...rows.map((r) => [
        r.row,
        r.configurations,
        pct(r.shareAtMost07),
        r.medianRatio.toFixed(2),
        r.bestRatio.toFixed(2),
        r.worstRatio.toFixed(2),
        r.medianMeganodeRatio === null ? '-' : r.medianMeganodeRatio.toFixed(2),
        r.yarnMeBeatsMeganode === null ? '-' : pct(r.yarnMeBeatsMeganode),
        `${pct(r.memoryUtilization.yarn)} -> ${pct(r.memoryUtilization.yarnMe)}`,
      ]),
      ...(misestimated.length === 0
        ? []
        : [
            [
              'uniform 3x, +-15% duration, memory, penalty',
              misestimated.length,
              pct(misShare),
              median(misestimated.map((r) => r.ratio)).toFixed(2),
              Math.min(...misestimated.map((r) => r.ratio)).toFixed(2),
              Math.max(...misestimated.map((r) => r.ratio)).toFixed(2),
              '-',
              '-',
              `${pct(median(misestimated.map((r) => r.yarn.memoryUtilization)))} ` +
                `-> ${pct(median(misestimated.map((r) => r.yarnMe.memoryUtilization)))}`,
            ],
          ]),
      ...big.map((b) => [
        b.row,
        1,
        pct(b.ratio <= TARGET_RATIO ? 1 : 0),
        b.ratio.toFixed(2),
        '-',
        '-',
        '-',
        '-',
        `${pct(b.yarn.memoryUtilization)} -> ${pct(b.yarnMe.memoryUtilization)}`,
      ]),
    ],
  );
  const details = table(
    [
      'traces',
      'seed',
      'max tasks/job',
      'max task GB',
      'max task s',
      'YARN avg JCT s',
      'YARN-ME avg JCT s',
      'ratio',
      'meganode avg JCT s',
      'YARN-ME elastic',
      'wall s (YARN, YARN-ME)',
    ],
    [...sweep, ...misestimated, ...big].map((r) => [
      r.row,
      r.seed,
      Number(r.trace.maxTasks ?? 0),
      Number(r.trace.maxMemoryGb ?? 0).toFixed(1),
      Number(r.trace.maxDurationS ?? 0).toFixed(0),
      r.yarn.avgJctS.toFixed(0),
      r.yarnMe.avgJctS.toFixed(0),
      r.ratio.toFixed(2),
      r.meganode ? r.meganode.avgJctS.toFixed(0) : '-',
      pct(r.yarnMe.elasticShare),
      `${r.yarn.wallS.toFixed(1)}, ${r.yarnMe.wallS.toFixed(1)}`,
    ]),
  );
  const claims = table(
    ['claim', 'figure', 'result'],
    checks.map((c) => [c.claim, c.figure, c.pass ? 'MET' : 'NOT MET']),
  );

  // ---- plots ----
  if (!ONLY_BIG)
    writePlots(
      rows.map((r) => r.row),
      sweep,
      misestimated,
    );

  const wallS = (performance.now() - started) / 1000;
  const md = [
    '# YARN-ME vs YARN (npm run bench:yarn-me)',
    '',
    ONLY_BIG
      ? `Simulator, the 3000-node case only (--only-big): yarn-me-3000, ` +
        `the uniform 3x trace scaled ${BIG_SCALE}x (${BIG_SCALE * 100} ` +
        `jobs). Ratio = YARN-ME avg JCT / YARN avg JCT. ` +
        `Node ${process.version}, ${wallS.toFixed(0)} s wall in all.`
      : `Simulator, ${cluster100.workers.length} nodes x 16 cores x 10 ` +
        `GB, 100 jobs per trace arriving in [0, 1000] s; a configuration ` +
        `is one seed of the trace generator. Ratio = YARN-ME avg JCT / ` +
        `YARN avg JCT. Node ${process.version}, ${wallS.toFixed(0)} s ` +
        `wall in all.`,
    '',
    '## Claims',
    '',
    claims,
    '',
    '## Summary',
    '',
    summary,
    '',
    '## Configurations',
    '',
    details,
    '',
    ...(real
      ? ['## Real cluster', '', real.markdown, '']
      : ['## Real cluster', '', 'Not run (pass `--real`, or run `npm run bench:yarn-me-real`).', '']),
    'Plots: ratio-cdf.svg (CDF of the ratio per row), memory.svg ' +
      '(memory granted over time), elastic.svg (elastic tasks over ' +
      'time).',
    '',
  ].join('\n');
  const stem = ONLY_BIG ? 'yarn-me-big' : 'yarn-me';
  writeFileSync(join(OUT, `${stem}.md`), md);
  writeFileSync(
    join(OUT, `${stem}.json`),
    `${JSON.stringify({ node: process.version, wallS, checks, rows, misestimated, big, sweep, real: real?.json ?? null }, null, 2)}\n`,
  );
  process.stdout.write(`${claims}\n\n${summary}\n`);
  log(`wrote ${OUT}/${stem}.md, ${stem}.json${ONLY_BIG ? '' : ', ratio-cdf.svg, memory.svg, elastic.svg'}`);
}

await main();
