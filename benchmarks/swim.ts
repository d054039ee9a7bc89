/**
 * Every built-in policy on SWIM's FB-2009 sample (benchmarks/traces/swim/, issue 38), in the
 * simulator, with slowdown by job size class.
 *
 * The workload is `swim:FILE` as `minimr sim` reads it (src/workloads/swim.ts: a map per 64 MiB
 * block, a reduce per 64 MiB of shuffle, work from bytes at the rates measured on minimr). Sizes are
 * scaled as SWIM's own replay scales them, by machines now / machines then: the cluster's workers
 * over FB-2009's 600 (`--size-scale` overrides). Each `--time-scales` value is a run of every policy
 * with the submit times multiplied by it: 1 replays the day as it was; 1/96 replays it in 15 minutes,
 * which loads the cluster more. Size classes by the trace's (unscaled) input bytes: small below 1 GB,
 * medium below 100 GB, large from 100 GB (SWIM_SIZE_CLASS_EDGES). Per setting, policy and class:
 * jobs, median, p95, p99 and max slowdown (nearest rank); per setting and class, the slowdown CDF of
 * every policy as SVG (x: slowdown on a log axis) with its points as CSV beside it.
 *
 * Every policy runs with its defaults except tyrex-static, which has no default timer: it gets
 * `--tyrex-static-timer-s` (30 s of partial size, about what a small job's maps add up to), with
 * Tyrex's C_1 = 0.3. All policies are created (their options checked) before anything runs.
 *
 * Run: npm run bench:swim [-- --time-scales 1 0.0104166667 --policies fifo fair --cluster tyrex-20
 *   --size-scale 0.0333 --trace FILE --tyrex-static-timer-s 30 --seed 1]
 * Writes bench-results/swim/{swim.json, swim.md, cdf-<setting>-<class>.svg and .csv}.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import yargs from 'yargs';
import { comparePolicies, type PolicyFactory } from '../src/experiments/index.js';
import { quantile } from '../src/metrics/index.js';
import { createPolicy, policyNames, type PolicyOptions } from '../src/scheduler/index.js';
import { lineChartFiles } from '../src/util/index.js';
import {
  SWIM_SIZE_CLASSES,
  SWIM_SIZE_CLASS_EDGES,
  loadCluster,
  parseSwimTrace,
  type SwimSizeClass,
} from '../src/workloads/index.js';

const SELF = fileURLToPath(import.meta.url);
const ROOT = resolve(dirname(SELF), '..', '..');
const OUT = join(ROOT, 'bench-results', 'swim');
const FB_2009 = join(ROOT, 'benchmarks', 'traces', 'swim', 'FB-2009_samples_24_times_1hr_0.tsv');
/** Machines of Facebook's 2009 cluster, which SWIM's replay scales sizes against. */
const FB_2009_MACHINES = 600;
const T0 = Date.now();
const log = (m: string) => process.stderr.write(`[${((Date.now() - T0) / 1000).toFixed(1).padStart(6)}s] ${m}\n`);

const args = yargs(process.argv.slice(2))
  .option('trace', { type: 'string', default: FB_2009, describe: 'a SWIM TSV' })
  .option('cluster', { type: 'string', default: 'tyrex-20', describe: 'cluster preset or file' })
  .option('size-scale', { type: 'number', describe: 'default: workers / 600 (SWIM: machines now / then)' })
  .option('time-scales', { type: 'number', array: true, default: [1, 1 / 96], describe: 'one run per value' })
  .option('policies', { type: 'string', array: true, describe: 'default: every built-in policy' })
  .option('tyrex-static-timer-s', { type: 'number', default: 30 })
  .option('seed', { type: 'number', default: 1 })
  .strict()
  .parseSync();

interface ClassFigures {
  readonly jobs: number;
  readonly finished: number;
  readonly median: number;
  readonly p95: number;
  readonly p99: number;
  readonly max: number;
}

interface PolicyFigures {
  readonly policy: string;
  readonly wallS: number;
  readonly meanJctS: number;
  readonly classes: Readonly<Record<SwimSizeClass | 'all', ClassFigures>>;
  /** Slowdowns of the finished jobs per class, ascending (for the CDFs; not in the JSON). */
  readonly sorted: Readonly<Record<SwimSizeClass, readonly number[]>>;
}

interface Setting {
  readonly timeScale: number;
  readonly label: string;
  readonly slotUtilization: Readonly<Record<string, number>>;
  readonly policies: readonly PolicyFigures[];
}

function figures(jobs: number, sorted: readonly number[]): ClassFigures {
  return {
    jobs,
    finished: sorted.length,
    median: quantile(sorted, 50),
    p95: quantile(sorted, 95),
    p99: quantile(sorted, 99),
    max: sorted.length > 0 ? sorted[sorted.length - 1]! : Number.NaN,
  };
}

function settingLabel(timeScale: number): string {
  if (timeScale === 1) return 'the day as it was';
  const minutes = (24 * 60 * timeScale).toFixed(timeScale * 24 * 60 >= 10 ? 0 : 1);
  return `the day in ${minutes} min (time x ${Number(timeScale.toPrecision(4))})`;
}

const fmt = (v: number) => (Number.isFinite(v) ? v.toFixed(2) : '-');
const percent = (share: number | undefined) =>
  share !== undefined && Number.isFinite(share) ? `${(share * 100).toFixed(1)}%` : '-';

/** Groups of policies whose slowdowns (every class's figures and mean JCT) came out identical. */
function sameFigures(rows: readonly PolicyFigures[]): string[] {
  const groups = new Map<string, string[]>();
  for (const p of rows) {
    const key = JSON.stringify([p.classes, p.meanJctS]);
    groups.set(key, [...(groups.get(key) ?? []), p.policy]);
  }
  return [...groups.values()].filter((g) => g.length > 1).map((g) => g.join(' = '));
}

async function main(): Promise<void> {
  const cluster = await loadCluster(args.cluster);
  const sizeScale = args['size-scale'] ?? cluster.workers.length / FB_2009_MACHINES;
  const policies = args.policies ?? [...policyNames()];
  const optionsOf = (name: string): PolicyOptions =>
    name === 'tyrex-static' ? { capacities: [0.3, 0.7], timersMs: [args['tyrex-static-timer-s'] * 1000] } : {};
  // Every policy and its options checked before the first simulation.
  for (const name of policies) createPolicy(name, optionsOf(name));
  const factories: PolicyFactory[] = policies.map((name) => ({
    name,
    create: () => createPolicy(name, optionsOf(name)),
  }));
  const text = await readFile(args.trace, 'utf8');
  const settings: Setting[] = [];
  let classCounts: Record<SwimSizeClass, number> | undefined;
  let workloadMeta: unknown;
  for (const timeScale of args['time-scales']) {
    const workload = parseSwimTrace(text, { name: 'FB-2009', sizeScale, timeScale });
    workloadMeta = workload.meta;
    const classOf = new Map(workload.jobs.map((j) => [j.id, j.sizeClass as SwimSizeClass]));
    classCounts = Object.fromEntries(
      SWIM_SIZE_CLASSES.map((c) => [c, workload.jobs.filter((j) => j.sizeClass === c).length]),
    ) as Record<SwimSizeClass, number>;
    const tasks = workload.jobs.reduce((s, j) => s + j.maps.length + j.reduces.length, 0);
    log(`${settingLabel(timeScale)}: ${workload.jobs.length} jobs, ${tasks} tasks, sizes x ${sizeScale.toFixed(4)}`);
    const started = performance.now();
    const result = comparePolicies({
      workload,
      cluster,
      policies: factories,
      seed: args.seed,
      keepRuns: false,
      onProgress: (m) => {
        if (!m.includes(' t=')) log(m);
      },
    });
    log(`${settingLabel(timeScale)}: ${((performance.now() - started) / 1000).toFixed(1)} s wall in all`);
    const rows: PolicyFigures[] = result.policies.map((p) => {
      const by = Object.fromEntries(SWIM_SIZE_CLASSES.map((c) => [c, [] as number[]])) as Record<
        SwimSizeClass,
        number[]
      >;
      for (const j of p.metrics.perJob) if (Number.isFinite(j.slowdown)) by[classOf.get(j.id)!].push(j.slowdown);
      for (const c of SWIM_SIZE_CLASSES) by[c].sort((a, b) => a - b);
      const all = SWIM_SIZE_CLASSES.flatMap((c) => by[c]).sort((a, b) => a - b);
      return {
        policy: p.policy,
        wallS: p.wallMs / 1000,
        meanJctS: p.metrics.avgJctMs / 1000,
        classes: {
          ...(Object.fromEntries(SWIM_SIZE_CLASSES.map((c) => [c, figures(classCounts![c], by[c])])) as Record<
            SwimSizeClass,
            ClassFigures
          >),
          all: figures(workload.jobs.length, all),
        },
        sorted: by,
      };
    });
    settings.push({
      timeScale,
      label: settingLabel(timeScale),
      slotUtilization: Object.fromEntries(result.policies.map((p) => [p.policy, p.metrics.utilization.slots])),
      policies: rows,
    });
  }

  await mkdir(OUT, { recursive: true });
  const files: string[] = [];
  for (const [i, s] of settings.entries()) {
    for (const c of SWIM_SIZE_CLASSES) {
      const base = `cdf-t${i + 1}-${c}`;
      // At most ~500 points a line (the CSV beside the SVG holds the same), on a log slowdown axis.
      const series = s.policies.map((p) => {
        const sorted = p.sorted[c];
        const step = Math.max(1, Math.floor(sorted.length / 500));
        const points = sorted.flatMap((v, k) =>
          k % step === 0 || k === sorted.length - 1 ? [[v, (k + 1) / sorted.length] as const] : [],
        );
        return { name: p.policy, points };
      });
      const chart = lineChartFiles(base, {
        title: `FB-2009, ${c} jobs (${classCounts![c]}), ${s.label}`,
        xLabel: 'slowdown',
        yLabel: 'fraction of jobs',
        series,
        width: 760,
        xScale: 'log',
      });
      for (const [name, text] of chart) {
        await writeFile(join(OUT, name), text);
        files.push(join(OUT, name));
      }
    }
  }

  const command = `npm run bench:swim${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`;
  const edges =
    `small: input < ${SWIM_SIZE_CLASS_EDGES.mediumFromBytes / 1e9} GB (${classCounts!.small} jobs), ` +
    `medium: < ${SWIM_SIZE_CLASS_EDGES.largeFromBytes / 1e9} GB (${classCounts!.medium}), ` +
    `large: the rest (${classCounts!.large}), by the trace's unscaled input bytes`;
  const md = [
    `# Policies on SWIM's FB-2009 sample (simulator)`,
    '',
    `\`${command}\`; trace ${args.trace.startsWith(ROOT) ? args.trace.slice(ROOT.length + 1) : args.trace}, ` +
      `cluster ${cluster.name} (${cluster.workers.length} workers), sizes x ${sizeScale.toFixed(4)} ` +
      `(workers / ${FB_2009_MACHINES}, as SWIM's replay scales them), seed ${args.seed}. Size classes: ${edges}.`,
    '',
  ];
  for (const s of settings) {
    md.push(
      `## ${s.label}`,
      '',
      '| policy | small median | small p95 | medium median | medium p95 | large median | large p95 ' +
        '| all p95 | all max | mean JCT s | jobs done | slot util |',
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    );
    for (const p of s.policies) {
      const k = p.classes;
      md.push(
        `| ${p.policy} | ${fmt(k.small.median)} | ${fmt(k.small.p95)} ` +
          `| ${fmt(k.medium.median)} | ${fmt(k.medium.p95)} ` +
          `| ${fmt(k.large.median)} | ${fmt(k.large.p95)} | ${fmt(k.all.p95)} | ${fmt(k.all.max)} ` +
          `| ${p.meanJctS.toFixed(1)} | ${k.all.finished}/${k.all.jobs} | ${percent(s.slotUtilization[p.policy])} |`,
      );
    }
    const same = sameFigures(s.policies);
    md.push('', ...(same.length > 0 ? [`Every figure the same: ${same.join('; ')}.`, ''] : []));
  }
  md.push(
    "Slowdown = response time / the job's runtime alone on the empty cluster (simulated); quantiles " +
      'nearest-rank. CDFs: cdf-tN-CLASS.svg per setting N and class, with its points as CSV beside each.',
    '',
  );
  const json = {
    command,
    trace: args.trace,
    cluster: cluster.name,
    workers: cluster.workers.length,
    sizeScale,
    seed: args.seed,
    workloadMeta,
    sizeClassEdges: SWIM_SIZE_CLASS_EDGES,
    classCounts,
    settings: settings.map((s) => ({
      timeScale: s.timeScale,
      label: s.label,
      policies: s.policies.map(({ sorted: _sorted, ...p }) => ({ ...p, slotUtilization: s.slotUtilization[p.policy] })),
    })),
  };
  await writeFile(join(OUT, 'swim.json'), `${JSON.stringify(json, null, 2)}\n`);
  await writeFile(join(OUT, 'swim.md'), md.join('\n'));
  files.push(join(OUT, 'swim.json'), join(OUT, 'swim.md'));
  process.stdout.write(`${md.join('\n')}\n`);
  for (const f of files) log(`wrote ${f}`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
