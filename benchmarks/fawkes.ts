/**
 * FAWKES (docs/specs/fawkes.md, issue 15): balanced allocations across dynamic MR-clusters, in the simulator at
 * the paper's scale.
 *
 * 1. WKLD-A on fawkes-60 (3 clusters of 10 core nodes arriving 100 s apart, 50 small WordCount
 *    each), JD weights, T = 60 s, growing with transient nodes: new clusters are admitted by
 *    shrinking the active ones, idle capacity flows to busy clusters (nodes per cluster over time).
 * 2. WKLD-B (WordCount) and WKLD-C (Sort) on fawkes-60, TD weights, T = 60 s: growing with
 *    transient (TR) or transient-core (TC) nodes, shrinking by instant (IP) or delayed (DP)
 *    preemption, and None. Check: on WKLD-C, TC keeps Sort's slowdown below TR, with either shrink.
 * 3. WKLD-D and WKLD-E on fawkes-48 (very uneven clusters), T = 120 s, TC nodes, DP: all 11
 *    weightings. Check: TD's average job slowdown at least 25% below None's on WKLD-D.
 *    `--full` runs every workload with every weighting, TR and TC, IP and DP (220 runs, hours).
 *
 * Slowdown = response time (arrival to finish, waiting for its cluster included) / the job's
 * runtime on the static reference cluster (one cluster at its minimum share: 10 nodes), the same
 * reference the JS weighting reads. Output blocks are written with one replica by default, as
 * Hadoop's Sort and TeraSort benchmarks write theirs (`--output-replication 3` for HDFS's default:
 * then a transient-core node writes two of every three replicas to the core nodes too, and Sort's
 * output is bound by the core nodes' disks whatever the growth).
 *
 * `--real` adds the real-cluster part (`realPart` below): a scaled-down WKLD-D and WKLD-C on a local
 * cluster of 12 workers in 3 MR-clusters, under None, EQ, TD and PU, interleaved repeats, paired
 * differences against None with standard errors, the simulator's prediction beside it, `fs fsck`
 * after every run, and one more TD run in which a draining worker is SIGKILLed.
 *
 * Run: npm run bench:fawkes [-- --full | --workloads d,e | --seed 2 | --real [--repeats 3] [--no-sim]]
 * Writes bench-results/fawkes/{fawkes.json,fawkes.md,nodes-*.svg,slowdown-*.svg}.
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import yargs from 'yargs';
import { computeMetrics, type MrClusterSample, type PolicyMetrics, type RunRecord } from '../src/metrics/index.js';
import {
  FawkesPolicy,
  WEIGHTINGS,
  parseFawkesOptions,
  type BalanceSample,
  type Weighting,
} from '../src/scheduler/index.js';
import { runWorkloadOnCluster } from '../src/experiments/index.js';
import { simulate } from '../src/sim/index.js';
import {
  clusterPreset,
  estimatedAloneMs,
  fawkesWorkload,
  uniformCluster,
  type ClusterShape,
  type FawkesVariant,
  type Workload,
} from '../src/workloads/index.js';
import type { FsckReport } from '../src/storage/index.js';
import {
  barChartFiles,
  type BarChartOptions,
  lineChartFiles,
  type LineChartOptions,
  meanWithStandardError,
} from '../src/util/index.js';
import { MachineLoadSampler, type MachineLoadSample } from './lib/machine-load.js';

const SELF = fileURLToPath(import.meta.url);
const OUT = resolve(dirname(SELF), '..', '..', 'bench-results', 'fawkes');
const T0 = Date.now();
const log = (m: string) => process.stderr.write(`[${((Date.now() - T0) / 1000).toFixed(1).padStart(7)}s] ${m}\n`);

const args = yargs(process.argv.slice(2))
  .option('full', { type: 'boolean', default: false, describe: 'every workload x 11 weightings x TR/TC x IP/DP' })
  .option('workloads', { type: 'string', default: 'a,b,c,d,e', describe: 'which of WKLD-A..E to run' })
  .option('seed', { type: 'number', default: 1 })
  .option('output-replication', {
    type: 'number',
    default: 1,
    describe: "replicas of each output block (Hadoop's Sort and TeraSort write one)",
  })
  .option('real', {
    type: 'boolean',
    default: false,
    describe: 'the real-cluster part: scaled WKLD-D and WKLD-C on a local cluster',
  })
  .option('sim', {
    type: 'boolean',
    default: true,
    describe: "the simulator part at the paper's scale (--no-sim: only the real part)",
  })
  .option('repeats', { type: 'number', default: 3, describe: 'real: interleaved runs per weighting' })
  .option('real-workloads', { type: 'string', default: 'd,c' })
  .option('real-weightings', { type: 'string', default: 'none,eq,td,pu' })
  .option('real-workers', { type: 'number', default: 12 })
  .option('real-min-nodes', { type: 'number', default: 3, describe: 'real: minimum share of each MR-cluster' })
  .option('real-scale', { type: 'number', default: 0.03, describe: "real: fraction of the workload's jobs" })
  .option('bytes-per-map', { type: 'number', default: 128 * 1024 })
  .option('map-scale', {
    type: 'number',
    default: 1,
    describe:
      'real: maps per workload map (at least 1 per job, at most ' +
      '--max-maps-per-job): below 1, big jobs keep their size relative ' +
      'to small ones under a cap that a local cluster can run',
  })
  .option('max-maps-per-job', { type: 'number', default: 16 })
  .option('time-scale', { type: 'number', default: 0.05, describe: 'real: arrival times and T scaled by this' })
  .option('cpu-throttle', {
    type: 'number',
    default: 1,
    describe:
      "real: every worker's --cpu-throttle on the 'cpu' basis (each " +
      'task as if on a core of its own, F times slower); it stretches ' +
      "a task's own work only, so the workers still share the cores " +
      'for the rest: --cpu-quota holds all of it',
  })
  .option('cpu-quota', {
    type: 'number',
    default: 0,
    describe:
      'real: cores of CPU time each worker, with its task processes, ' +
      'may use (a cgroup quota; Linux, root); 0: none. Unlike ' +
      '--cpu-throttle it holds everything a worker does, so with ' +
      "quotas adding up to at most this machine's cores, no worker can " +
      'slow another',
  })
  .option('kill-draining', {
    type: 'boolean',
    default: true,
    describe: 'real: one more TD run with a draining worker SIGKILLed',
  })
  .option('alone-file', {
    type: 'string',
    describe:
      'real: where the runtimes alone are kept: read from it when it ' +
      'holds them for the same settings (workload, cluster, bytes, ' +
      'maps, throttle), else measured in the first None run and ' +
      'written to it',
  })
  .option('trace-runs', {
    type: 'boolean',
    default: false,
    describe:
      "real: write each run's jobs, attempts, node moves and the " +
      "machine's load second by second to real-runs/*.json beside the " +
      'report',
  })
  .strict()
  .parseSync();

type Grow = 'TR' | 'TC';
type Shrink = 'IP' | 'DP';

interface Case {
  readonly variant: FawkesVariant;
  readonly weighting: Weighting;
  readonly grow: Grow;
  readonly shrink: Shrink;
}

interface Row extends Case {
  readonly label: string;
  readonly metrics: PolicyMetrics;
  /** Mean slowdown of each app's jobs. */
  readonly appSlowdown: Readonly<Record<string, number>>;
  readonly balance: readonly BalanceSample[];
  readonly samples: readonly MrClusterSample[];
  readonly wallS: number;
  readonly events: number;
}

const clusterFor = (v: FawkesVariant) => clusterPreset(v === 'd' || v === 'e' ? 'fawkes-48' : 'fawkes-60');
const intervalFor = (v: FawkesVariant) => (v === 'd' || v === 'e' ? 120_000 : 60_000);
const labelOf = (c: Case) => `${c.weighting.toUpperCase()} ${c.grow} ${c.shrink}`;

function plan(): Case[] {
  const wanted = new Set(
    args.workloads.split(',').map((s) =>
      s
        .trim()
        .toLowerCase()
        .replace(/^wkld-/, ''),
    ),
  );
  const cases: Case[] = [];
  const add = (c: Case) => {
    if (wanted.has(c.variant) && !cases.some((k) => labelOf(k) === labelOf(c) && k.variant === c.variant))
      cases.push(c);
  };
  const variants: FawkesVariant[] = ['a', 'b', 'c', 'd', 'e'];
  if (args.full) {
    for (const variant of variants)
      for (const weighting of WEIGHTINGS)
        for (const grow of ['TR', 'TC'] as const)
          for (const shrink of ['IP', 'DP'] as const) add({ variant, weighting, grow, shrink });
    return cases;
  }
  add({ variant: 'a', weighting: 'jd', grow: 'TR', shrink: 'IP' });
  add({ variant: 'a', weighting: 'none', grow: 'TR', shrink: 'IP' });
  for (const variant of ['b', 'c'] as const) {
    add({ variant, weighting: 'none', grow: 'TC', shrink: 'DP' });
    for (const grow of ['TR', 'TC'] as const)
      for (const shrink of ['IP', 'DP'] as const) add({ variant, weighting: 'td', grow, shrink });
  }
  for (const variant of ['d', 'e'] as const)
    for (const weighting of WEIGHTINGS) add({ variant, weighting, grow: 'TC', shrink: 'DP' });
  return cases;
}

function run(c: Case, workload: Workload): Row {
  const policy = new FawkesPolicy(
    parseFawkesOptions({ weighting: c.weighting, grow: c.grow, shrink: c.shrink, intervalMs: intervalFor(c.variant) }),
  );
  const started = Date.now();
  const result = simulate({
    workload,
    cluster: clusterFor(c.variant),
    policy,
    seed: args.seed,
    outputReplication: args['output-replication'],
    recordDecisions: false,
    onProgress: (p) => log(`    t=${(p.simMs / 1000).toFixed(0)} s, ${p.jobsDone}/${p.jobsTotal} jobs`),
  });
  const wallS = (Date.now() - started) / 1000;
  const reference = Object.fromEntries(workload.jobs.map((j) => [j.id, j.referenceMs!]));
  const metrics = computeMetrics(result.run, reference);
  return {
    ...c,
    label: labelOf(c),
    metrics,
    appSlowdown: appSlowdowns(result.run, metrics),
    balance: result.run.mrClusters?.balance ?? [],
    samples: result.run.mrClusters?.samples ?? [],
    wallS,
    events: result.stats.events,
  };
}

function appSlowdowns(runRecord: RunRecord, m: PolicyMetrics): Record<string, number> {
  const appOf = new Map(runRecord.jobs.map((j) => [j.id, j.app]));
  const sums = new Map<string, { s: number; n: number }>();
  for (const j of m.perJob) {
    if (!Number.isFinite(j.slowdown)) continue;
    const app = appOf.get(j.id) ?? '?';
    const e = sums.get(app) ?? { s: 0, n: 0 };
    e.s += j.slowdown;
    e.n += 1;
    sums.set(app, e);
  }
  return Object.fromEntries([...sums].map(([app, { s, n }]) => [app, s / n]));
}

const num = (v: number, d = 2) => (Number.isFinite(v) ? v.toFixed(d) : '-');

function table(rows: readonly Row[]): string {
  const clusters = ['c-1', 'c-2', 'c-3'];
  const lines = [
    `| weighting / grow / shrink | jobs done | mean slowdown | ` +
      `median | p95 ` +
      `| ${clusters.map((c) => `${c} slowdown / mean nodes`).join(' | ')} ` +
      `| reconfigurations | mean Var(D) | drains (mean s) | copied GiB ` +
      `| blocks lost | sim wall s |`,
    `|---|---:|---:|---:|---:|${clusters.map(() => '---:').join('|')}|---:|---:|---:|---:|---:|---:|`,
  ];
  for (const r of rows) {
    const m = r.metrics;
    const mr = m.mrClusters!;
    const per = clusters.map((name) => {
      const c = mr.clusters.find((x) => x.name === name);
      return c ? `${num(c.meanSlowdown)} / ${num(c.meanNodes, 1)}` : '-';
    });
    lines.push(
      `| ${r.label} | ${m.finished}/${m.jobs} ` +
        `| ${num(m.slowdown.mean)} | ${num(m.slowdown.median)} ` +
        `| ${num(m.slowdown.p95)} | ${per.join(' | ')} ` +
        `| ${mr.reconfigurations}/${mr.intervals} ` +
        `| ${num(mr.meanGlobalDiscrimination, 4)} | ${mr.drains} ` +
        `(${num(mr.meanDrainMs / 1000, 1)}) ` +
        `| ${num(mr.copiedBytes / 2 ** 30, 1)} | ${mr.blocks.missing} ` +
        `| ${num(r.wallS, 1)} |`,
    );
  }
  return lines.join('\n');
}

/** Nodes per MR-cluster over time (stacked kinds summed), one line per cluster. */
function nodesChart(row: Row, title: string): LineChartOptions {
  const names = [...new Set(row.samples.flatMap((s) => s.clusters.map((c) => c.name)))].sort();
  const series = names.map((name) => ({
    name,
    points: row.samples.map((s): [number, number] => [
      s.timeMs / 1000,
      s.clusters.find((c) => c.name === name)?.nodes ?? 0,
    ]),
  }));
  series.push({ name: 'free', points: row.samples.map((s): [number, number] => [s.timeMs / 1000, s.freeNodes]) });
  return {
    title,
    xLabel: 'time (s)',
    yLabel: 'nodes',
    series: series.map((s) => ({ ...s, points: thin(s.points) })),
  };
}

/** At most ~400 points per line. */
function thin(points: ReadonlyArray<readonly [number, number]>): Array<readonly [number, number]> {
  const step = Math.max(1, Math.floor(points.length / 400));
  return points.filter((_, i) => i % step === 0 || i === points.length - 1);
}

function slowdownChart(rows: readonly Row[], title: string): BarChartOptions {
  const clusters = ['c-1', 'c-2', 'c-3'];
  return {
    title,
    yLabel: 'mean job slowdown',
    categories: rows.map((r) => r.label),
    series: [
      ...clusters.map((name) => ({
        name,
        values: rows.map((r) => r.metrics.mrClusters!.clusters.find((c) => c.name === name)?.meanSlowdown ?? 0),
      })),
      { name: 'all jobs', values: rows.map((r) => r.metrics.slowdown.mean) },
    ],
    width: Math.max(640, 90 * rows.length + 240),
  };
}

function checks(rows: readonly Row[]): string[] {
  const out: string[] = [];
  const mark = (ok: boolean) => (ok ? 'PASS' : 'FAIL');
  const find = (variant: FawkesVariant, label: string) => rows.find((r) => r.variant === variant && r.label === label);
  const td = find('d', 'TD TC DP');
  const none = find('d', 'NONE TC DP');
  if (td && none) {
    const lower = 1 - td.metrics.slowdown.mean / none.metrics.slowdown.mean;
    out.push(
      `${mark(lower >= 0.25)} WKLD-D: TD's average job ` +
        `slowdown ${num(td.metrics.slowdown.mean)} ` +
        `is ${num(100 * lower, 0)}% below ` +
        `None's ${num(none.metrics.slowdown.mean)} (target: at least ` +
        `25%)`,
    );
  }
  for (const shrink of ['IP', 'DP'] as const) {
    const tc = find('c', `TD TC ${shrink}`);
    const tr = find('c', `TD TR ${shrink}`);
    if (tc && tr) {
      const s = (r: Row) => r.appSlowdown.sort ?? Number.NaN;
      out.push(
        `${mark(s(tc) < s(tr))} WKLD-C, shrinking by ${shrink}: Sort's ` +
          `mean slowdown growing with TC ${num(s(tc))} vs with ` +
          `TR ${num(s(tr))} (${num(100 * (1 - s(tc) / s(tr)), 1)}% lower; ` +
          `target: lower)`,
      );
    }
  }
  return out;
}

/**
 * The real-cluster part of issue 15 (item 6): a scaled-down WKLD-D (and WKLD-C) on a local cluster
 * of about 12 workers in 3 MR-clusters under None, EQ, TD and PU, over several interleaved runs
 * (paired differences with standard errors, as bench:fair prints them), the simulator's prediction
 * for the same scaled workload beside each, and `fs fsck` after every run (0 missing blocks),
 * one run with a draining worker SIGKILLed.
 *
 * The simulator's nodes are separate machines; the local cluster's workers share this machine's
 * cores. For the comparison to mean anything, a busy MR-cluster must not take CPU from another:
 * `--cpu-quota` holds each worker, task processes included, to its share (a cgroup quota). The
 * older `--cpu-throttle` only stretches a task's own work, and what it left unstretched (task
 * process starts, heartbeats, serving blocks and map outputs) made c-3, which TD never touches,
 * a third slower whenever TD kept all 12 workers busy.
 */
async function realPart(): Promise<{
  readonly markdown: string;
  readonly json: unknown;
  readonly files: Array<[string, string]>;
} | null> {
  const variants = args['real-workloads'].split(',').map((v) => v.trim().toLowerCase()) as FawkesVariant[];
  const weightings = args['real-weightings'].split(',').map((w) => w.trim().toLowerCase()) as Weighting[];
  for (const w of weightings)
    if (!(WEIGHTINGS as readonly string[]).includes(w)) throw new Error(`unknown weighting ${w}`);
  const md: string[] = [];
  const json: unknown[] = [];
  const files: Array<[string, string]> = [];
  for (const variant of variants) {
    const part = await realVariant(variant, weightings);
    md.push(part.markdown);
    json.push(part.json);
    files.push(...barChartFiles(`real-slowdown-wkld-${variant}`, part.chart));
  }
  return { markdown: md.join('\n'), json, files };
}

interface RealRow {
  readonly weighting: Weighting;
  readonly repeat: number;
  /** The extra run in which a draining worker is SIGKILLed (`killed`: the one it was, if one drained). */
  readonly killRun: boolean;
  readonly killed?: string;
  readonly meanSlowdown: number;
  readonly clusterSlowdown: Readonly<Record<string, number>>;
  readonly finished: number;
  readonly jobs: number;
  readonly moves: number;
  readonly fsck: Pick<FsckReport, 'totalBlocks' | 'totalReplicas' | 'underReplicated' | 'missing' | 'healthy'>;
  readonly wallS: number;
}

/** The real cluster of the scaled runs: workers in 3 racks, two map slots and one reduce slot each. */
function realShape(): ClusterShape {
  const workers = args['real-workers'];
  return uniformCluster({
    name: `fawkes-real-${workers}`,
    workers,
    perRack: Math.ceil(workers / 3),
    mapSlots: 2,
    reduceSlots: 1,
    memoryMb: 2048,
    diskMBps: 100,
  });
}

const fawkesOptionsFor = (variant: FawkesVariant, weighting: Weighting, timeScale: number) => ({
  weighting,
  grow: 'TC',
  shrink: 'DP',
  intervalMs: Math.max(1000, Math.round(intervalFor(variant) * timeScale)),
  sampleMs: Math.max(200, Math.round(5000 * timeScale)),
  // The runs alone come after the workload, on the same clusters.
  deactivateIdle: false,
});

/** Mean slowdown overall and per MR-cluster, from each job's response time over its runtime alone. */
function slowdowns(
  run: RunRecord,
  aloneMs: ReadonlyMap<string, number>,
): { mean: number; perCluster: Record<string, number> } {
  const all: number[] = [];
  const per = new Map<string, number[]>();
  for (const j of run.jobs) {
    const alone = aloneMs.get(j.id);
    if (j.finishMs === null || alone === undefined || alone <= 0) continue;
    const s = (j.finishMs - j.submitMs) / alone;
    all.push(s);
    per.set(j.cluster, [...(per.get(j.cluster) ?? []), s]);
  }
  const mean = (xs: readonly number[]) => (xs.length > 0 ? xs.reduce((a, b) => a + b, 0) / xs.length : Number.NaN);
  return { mean: mean(all), perCluster: Object.fromEntries([...per].sort().map(([c, xs]) => [c, mean(xs)])) };
}

/** The runtimes alone kept in --alone-file for exactly these settings, or null. */
async function readAlone(key: Readonly<Record<string, unknown>>): Promise<ReadonlyMap<string, number> | null> {
  const file = args['alone-file'];
  if (file === undefined) return null;
  let kept: { key: unknown; aloneMs: Array<[string, number]> };
  try {
    kept = JSON.parse(await readFile(file, 'utf8')) as typeof kept;
  } catch {
    return null;
  }
  if (JSON.stringify(kept.key) !== JSON.stringify(key)) {
    log(`  ${file} holds runtimes alone for other settings: measuring them again`);
    return null;
  }
  return new Map(kept.aloneMs);
}

async function writeAlone(key: Readonly<Record<string, unknown>>, aloneMs: ReadonlyMap<string, number>): Promise<void> {
  const file = args['alone-file'];
  if (file === undefined || aloneMs.size === 0) return;
  await writeFile(file, `${JSON.stringify({ key, aloneMs: [...aloneMs] }, null, 1)}\n`);
}

/** One run's jobs, attempts, MR-cluster record and decisions, with the machine's load, for later study. */
async function writeTrace(
  name: string,
  result: Awaited<ReturnType<typeof runWorkloadOnCluster>>,
  load: readonly MachineLoadSample[],
): Promise<void> {
  const dir = join(OUT, 'real-runs');
  await mkdir(dir, { recursive: true });
  const { jobs, attempts, mrClusters, endMs } = result.run;
  // CPU the attempt used after its code started (TASK_CPU_MS), and the time the throttle slept.
  const counters = Object.fromEntries(
    result.jobRuns.flatMap((j) =>
      j.attempts.map((a) => [
        a.attemptId,
        { cpuMs: a.counters.TASK_CPU_MS ?? null, throttleSleptMs: a.counters.THROTTLE_SLEEP_MS ?? null },
      ]),
    ),
  );
  await writeFile(
    join(dir, `${name}.json`),
    `${JSON.stringify({ endMs, jobs, attempts, counters, mrClusters, decisions: result.decisions, load })}\n`,
  );
}

async function realVariant(
  variant: FawkesVariant,
  weightings: readonly Weighting[],
): Promise<{ markdown: string; json: unknown; chart: BarChartOptions }> {
  const timeScale = args['time-scale'];
  const minNodes = args['real-min-nodes'];
  const workload = fawkesWorkload({ variant, seed: args.seed, scale: args['real-scale'], minNodes });
  const shape = realShape();
  const name = `WKLD-${variant.toUpperCase()}`;
  log(
    `real ${name}: ${workload.jobs.length} jobs ` +
      `on ${shape.workers.length} workers, 3 MR-clusters ` +
      `of ${minNodes} core nodes, ${args.repeats} repeat(s) ` +
      `of ${weightings.join(', ')}`,
  );
  const rows: RealRow[] = [];
  // Runtime alone depends on the jobs, the cluster and the throttle, not on arrivals or weightings.
  const aloneKey = {
    variant,
    seed: args.seed,
    scale: args['real-scale'],
    workers: shape.workers.length,
    minNodes,
    bytesPerMap: args['bytes-per-map'],
    mapScale: args['map-scale'],
    maxMapsPerJob: args['max-maps-per-job'],
    cpuThrottle: args['cpu-throttle'],
    cpuQuota: args['cpu-quota'],
    outputReplication: args['output-replication'],
  };
  let aloneMs: ReadonlyMap<string, number> | null = await readAlone(aloneKey);
  if (aloneMs !== null) log(`  runtimes alone of ${aloneMs.size} jobs read from ${args['alone-file']}`);
  const once = async (weighting: Weighting, repeat: number, killDraining: boolean): Promise<void> => {
    const dataDir = join(
      tmpdir(),
      `minimr-bench-fawkes-${process.pid}-${variant}-${weighting}-${repeat}${killDraining ? '-kill' : ''}`,
    );
    const started = Date.now();
    let fsck: FsckReport | undefined;
    let killed: string | undefined;
    let watcher: NodeJS.Timeout | undefined;
    let load: MachineLoadSampler | undefined;
    let loadSamples: readonly MachineLoadSample[] = [];
    log(`  ${name} ${weighting.toUpperCase()} run ${repeat}${killDraining ? ' (a draining worker SIGKILLed)' : ''}`);
    try {
      const result = await runWorkloadOnCluster({
        workload,
        cluster: shape,
        policy: 'fawkes',
        policyOptions: fawkesOptionsFor(variant, weighting, timeScale),
        dataDir,
        bytesPerMap: args['bytes-per-map'],
        mapScale: args['map-scale'],
        maxMapsPerJob: args['max-maps-per-job'],
        timeScale,
        cpuThrottle: args['cpu-throttle'],
        ...(args['cpu-quota'] > 0 ? { cpuQuota: args['cpu-quota'] } : {}),
        mrClusterMinNodes: minNodes,
        // A cluster's blocks live on its core nodes: more replicas than those would stay under-replicated.
        replication: Math.min(3, minNodes),
        // The kill run writes two replicas of every output block: a block with one replica on the
        // killed worker would be lost by design, and the run shows that none with another is.
        confOf: () => ({
          'job.outputReplication': killDraining ? Math.max(2, args['output-replication']) : args['output-replication'],
        }),
        measureAlone: aloneMs === null,
        beforeWorkload: async (cluster) => {
          if (args['trace-runs']) load = new MachineLoadSampler();
          if (!killDraining) return;
          watcher = setInterval(() => {
            void cluster.client.mrcList().then(
              async (l) => {
                const leaving = l.clusters.flatMap((c) => c.leaving);
                if (killed !== undefined || leaving.length === 0) return;
                killed = leaving[0]!.workerId;
                log(`    SIGKILL ${killed}, draining toward ${leaving[0]!.to}`);
                await cluster.killWorker(cluster.workers.findIndex((w) => w.workerId === killed));
              },
              () => undefined,
            );
          }, 50);
        },
        afterWorkload: async (cluster) => {
          if (watcher) clearInterval(watcher);
          if (load) loadSamples = load.stop();
          fsck = await cluster.client.fsck('/');
        },
        onProgress: (line) => log(`    ${line}`),
      });
      if (aloneMs === null) {
        aloneMs = result.aloneMs;
        await writeAlone(aloneKey, aloneMs);
      }
      if (args['trace-runs'])
        await writeTrace(`${variant}-${weighting}-${repeat}${killDraining ? '-kill' : ''}`, result, loadSamples);
      const s = slowdowns(result.run, aloneMs);
      const f = fsck!;
      rows.push({
        weighting,
        repeat,
        killRun: killDraining,
        ...(killed !== undefined ? { killed } : {}),
        meanSlowdown: s.mean,
        clusterSlowdown: s.perCluster,
        finished: result.run.jobs.filter((j) => j.finishMs !== null).length,
        jobs: result.run.jobs.length,
        moves: result.decisions.filter((d) => d.decision.kind === 'move-node').length,
        fsck: {
          totalBlocks: f.totalBlocks,
          totalReplicas: f.totalReplicas,
          underReplicated: f.underReplicated,
          missing: f.missing,
          healthy: f.healthy,
        },
        wallS: (Date.now() - started) / 1000,
      });
      log(
        `    mean slowdown ${num(s.mean)}; fsck: ${f.totalBlocks} ` +
          `blocks, ${f.missing.length} ` +
          `missing, ${f.underReplicated.length} under-replicated`,
      );
    } finally {
      if (watcher) clearInterval(watcher);
      load?.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
  };
  // None first: its first run also measures every job alone on the clusters at their minimum shares.
  const order = ['none' as Weighting, ...weightings.filter((w) => w !== 'none')].filter(
    (w) => weightings.includes(w) || w === 'none',
  );
  for (let r = 1; r <= args.repeats; r++) for (const w of order) await once(w, r, false);
  if (args['kill-draining'])
    await once(weightings.includes('td') ? 'td' : order[order.length - 1]!, args.repeats + 1, true);

  // The simulator's prediction: the same scaled workload on the same cluster shape, T at the paper's
  // scale, each job's slowdown over its estimated runtime alone on one cluster at its minimum share.
  const reference = uniformCluster({
    name: 'reference',
    workers: minNodes,
    perRack: minNodes,
    mapSlots: 2,
    reduceSlots: 1,
    memoryMb: 2048,
    diskMBps: 100,
  });
  const predictedAlone = new Map(workload.jobs.map((j) => [j.id, estimatedAloneMs(j, reference)]));
  const predicted = new Map<Weighting, { mean: number; perCluster: Record<string, number> }>();
  for (const w of order) {
    const policy = new FawkesPolicy(parseFawkesOptions({ ...fawkesOptionsFor(variant, w, 1) }));
    const sim = simulate({
      workload,
      cluster: shape,
      policy,
      seed: args.seed,
      outputReplication: args['output-replication'],
      recordDecisions: false,
    });
    predicted.set(w, slowdowns(sim.run, predictedAlone));
  }

  const measured = rows.filter((r) => !r.killRun);
  const clusters = [...new Set(measured.flatMap((r) => Object.keys(r.clusterSlowdown)))].sort();
  const meanSe = (xs: readonly number[]): string => {
    const { mean: m, standardError: se, n } = meanWithStandardError(xs);
    return `${num(m)}${n > 1 ? ` ± ${num(se)}` : ''}`;
  };
  const md: string[] = [
    `### ${name}, scaled: ${workload.jobs.length} jobs ` +
      `on ${shape.workers.length} local workers, 3 MR-clusters ` +
      `of ${minNodes} core nodes (TC growth, DP shrinks)`,
    '',
    `Arrivals and T scaled by ${timeScale} (T ` +
      `= ${fawkesOptionsFor(variant, 'td', timeScale).intervalMs} ` +
      `ms), ${args['bytes-per-map']} bytes per ` +
      `map, ${args['map-scale']} real map(s) per workload map (at ` +
      `least 1, at most ${args['max-maps-per-job']}), ` +
      `--cpu-throttle ${args['cpu-throttle']}${args['cpu-quota'] > 0 ? `, a CPU quota of ${args['cpu-quota']} cores per worker (cgroup)` : ''}, ` +
      `output blocks with ${args['output-replication']} replica(s). ` +
      ("Slowdown = response time / the job's runtime alone on its " +
        'cluster at its minimum share (measured once, in the first None ' +
        'run). ') +
      (`Real: mean over ${args.repeats} interleaved run(s) ± standard ` +
        `error. Predicted: the simulator on the same workload and ` +
        `cluster shape at the paper's time scale, slowdowns over its own ` +
        `estimate alone.`),
    '',
    `| weighting | real mean slowdown ` +
      `| ${clusters.map((c) => `real ${c}`).join(' | ')} | predicted ` +
      `| ${clusters.map((c) => `predicted ${c}`).join(' | ')} | node ` +
      `moves | missing blocks (fsck, max) |`,
    `|---|---:|${clusters.map(() => '---:').join('|')}|---:|${clusters.map(() => '---:').join('|')}|---:|---:|`,
  ];
  for (const w of order) {
    const mine = measured.filter((r) => r.weighting === w);
    const p = predicted.get(w)!;
    md.push(
      `| ${w.toUpperCase()} ` +
        `| ${meanSe(mine.map((r) => r.meanSlowdown))} ` +
        `| ${clusters.map((c) => meanSe(mine.map((r) => r.clusterSlowdown[c] ?? Number.NaN))).join(' | ')} ` +
        `| ${num(p.mean)} ` +
        `| ${clusters.map((c) => num(p.perCluster[c] ?? Number.NaN)).join(' | ')} ` +
        `| ${meanSe(mine.map((r) => r.moves))} ` +
        `| ${Math.max(...mine.map((r) => r.fsck.missing.length))} |`,
    );
  }
  md.push('');
  const none = measured.filter((r) => r.weighting === 'none').sort((a, b) => a.repeat - b.repeat);
  for (const w of order.filter((x) => x !== 'none')) {
    const diffs = measured
      .filter((r) => r.weighting === w)
      .sort((a, b) => a.repeat - b.repeat)
      .map((r, k) => r.meanSlowdown - none[k]!.meanSlowdown);
    const { mean, standardError: se, n } = meanWithStandardError(diffs);
    const pd = predicted.get(w)!.mean - predicted.get('none')!.mean;
    md.push(
      `- ${w.toUpperCase()} minus None, run by ` +
        `run: ${mean >= 0 ? '+' : ''}${num(mean)} mean slowdown ` +
        `(standard error ${num(se)}), lower ` +
        `in ${diffs.filter((x) => x < 0).length} of ${n}; ` +
        `predicted ${pd >= 0 ? '+' : ''}${num(pd)}.`,
    );
  }
  // The real load equals the simulated one when jobs run alone as much faster as they arrive faster.
  const measuredAlone = aloneMs as ReadonlyMap<string, number> | null;
  const aloneRatios = workload.jobs
    .map((j) => (measuredAlone?.get(j.id) ?? Number.NaN) / predictedAlone.get(j.id)!)
    .filter((x) => Number.isFinite(x))
    .sort((a, b) => a - b);
  const medianRatio = aloneRatios.length > 0 ? aloneRatios[Math.floor(aloneRatios.length / 2)]! : Number.NaN;
  md.push(
    `- Runtime alone, real over simulated: ` +
      `median ${medianRatio.toPrecision(2)} ` +
      `(quartiles ${aloneRatios.length > 0 ? `${aloneRatios[Math.floor(aloneRatios.length / 4)]!.toPrecision(2)}-${aloneRatios[Math.floor((3 * aloneRatios.length) / 4)]!.toPrecision(2)}` : 'n/a'}); ` +
      `arrivals are scaled by ${timeScale}: ` +
      (medianRatio > 1.5 * timeScale
        ? 'the real cluster is more loaded than the simulated one.'
        : medianRatio < timeScale / 1.5
          ? 'the real cluster is less loaded than the simulated one.'
          : 'the two loads are comparable.'),
  );
  const kill = rows.find((r) => r.killRun);
  if (kill?.killed !== undefined) {
    md.push(
      `- ${kill.weighting.toUpperCase()} run with ${kill.killed} ` +
        `SIGKILLed while draining (output blocks ` +
        `with ${Math.max(2, args['output-replication'])} ` +
        `replicas): ${kill.finished}/${kill.jobs} jobs finished, ` +
        (`fsck ${kill.fsck.healthy ? 'HEALTHY' : 'CORRUPT'}: ${kill.fsck.totalBlocks} ` +
          `blocks, ${kill.fsck.missing.length} ` +
          `missing, ${kill.fsck.underReplicated.length} under-replicated.`),
    );
  } else if (args['kill-draining']) md.push('- The kill run saw no worker draining: nobody was killed.');
  const lost = rows.filter((r) => r.fsck.missing.length > 0);
  md.push(
    `- fs fsck after every run (the kill run ` +
      `included): ${lost.length === 0 ? '0 missing blocks in every run' : `missing blocks in ${lost.map((r) => `${r.weighting.toUpperCase()} run ${r.repeat}: ${r.fsck.missing.length}`).join(', ')}`}.`,
    '',
  );
  // Real beside predicted, per cluster: the mean over the repeats of each.
  const realMean = (w: Weighting, pick: (r: RealRow) => number) =>
    meanWithStandardError(measured.filter((r) => r.weighting === w).map(pick)).mean;
  const chart: BarChartOptions = {
    title: `${name} on ${shape.workers.length} local workers: mean slowdown per MR-cluster, real and predicted`,
    yLabel: 'mean job slowdown',
    categories: order.flatMap((w) => [`${w.toUpperCase()} real`, `${w.toUpperCase()} predicted`]),
    series: [
      ...clusters.map((c) => ({
        name: c,
        values: order.flatMap((w) => [
          realMean(w, (r) => r.clusterSlowdown[c] ?? Number.NaN),
          predicted.get(w)!.perCluster[c] ?? Number.NaN,
        ]),
      })),
      { name: 'all jobs', values: order.flatMap((w) => [realMean(w, (r) => r.meanSlowdown), predicted.get(w)!.mean]) },
    ],
    width: Math.max(640, 110 * 2 * order.length + 240),
  };
  return {
    chart,
    markdown: md.join('\n'),
    json: {
      workload: `wkld-${variant}`,
      jobs: workload.jobs.length,
      workers: shape.workers.length,
      minNodes,
      timeScale,
      cpuThrottle: args['cpu-throttle'],
      cpuQuota: args['cpu-quota'],
      aloneRealOverSimulated: medianRatio,
      rows,
      predicted: Object.fromEntries(predicted),
    },
  };
}

async function main(): Promise<void> {
  const cases = args.sim ? plan() : [];
  log(`${cases.length} simulations (seed ${args.seed})${args.full ? ', the full grid' : ''}`);
  const workloads = new Map<FawkesVariant, Workload>();
  const rows: Row[] = [];
  for (const [i, c] of cases.entries()) {
    let workload = workloads.get(c.variant);
    if (!workload) {
      workload = fawkesWorkload({ variant: c.variant, seed: args.seed });
      workloads.set(c.variant, workload);
    }
    log(
      `[${i + 1}/${cases.length}] WKLD-${c.variant.toUpperCase()} ` +
        `(${workload.jobs.length} jobs) ` +
        `on ${clusterFor(c.variant).name}: ${labelOf(c)}`,
    );
    const row = run(c, workload);
    log(
      `    mean ` +
        `slowdown ${num(row.metrics.slowdown.mean)}, ${row.metrics.mrClusters!.reconfigurations} ` +
        `reconfigurations, ${num(row.wallS, 1)} s wall`,
    );
    rows.push(row);
  }

  await mkdir(OUT, { recursive: true });
  const md: string[] = ['# FAWKES in the simulator', ''];
  md.push(
    `Seed ${args.seed}, output blocks written ` +
      `with ${args['output-replication']} replica(s). Slowdown = ` +
      `response time (arrival to finish) / runtime on the 10-node ` +
      `reference cluster. ` +
      'Per cluster: mean slowdown of its jobs / mean nodes it held (first arrival to last finish). ' +
      ('Var(D) = E[D^2] per interval of T (60 s on fawkes-60, 120 s on ' +
        'fawkes-48); a reconfiguration is an interval with Var(D) > tau ' +
        '= 0.001.'),
    '',
  );
  const files: Array<[string, string]> = [];
  for (const variant of ['a', 'b', 'c', 'd', 'e'] as const) {
    const mine = rows.filter((r) => r.variant === variant);
    if (mine.length === 0) continue;
    const w = workloads.get(variant)!;
    md.push(
      `## WKLD-${variant.toUpperCase()} on ${clusterFor(variant).name} (${w.jobs.length} jobs)`,
      '',
      table(mine),
      '',
    );
    const apps = [...new Set(mine.flatMap((r) => Object.keys(r.appSlowdown)))].sort();
    md.push(
      `Mean slowdown per ` +
        `app: ${mine.map((r) => `${r.label}: ${apps.map((a) => `${a} ${num(r.appSlowdown[a] ?? Number.NaN)}`).join(', ')}`).join('; ')}.`,
      '',
    );
    files.push(
      ...barChartFiles(
        `slowdown-wkld-${variant}`,
        slowdownChart(mine, `WKLD-${variant.toUpperCase()}: mean slowdown per MR-cluster and weighting`),
      ),
    );
    const plotted = mine.find((r) => r.weighting === (variant === 'a' ? 'jd' : 'td')) ?? mine[0]!;
    files.push(
      ...lineChartFiles(
        `nodes-wkld-${variant}`,
        nodesChart(plotted, `WKLD-${variant.toUpperCase()}, ${plotted.label}: nodes per MR-cluster`),
      ),
    );
  }
  const verdicts = checks(rows);
  md.push('## Checks', '', ...verdicts.map((v) => `- ${v}`), '');
  const real = args.real ? await realPart() : null;
  md.push('## Real cluster', '', real?.markdown ?? 'Not run (`--real` runs it).', '');
  if (real) files.push(...real.files);
  const json = {
    seed: args.seed,
    outputReplication: args['output-replication'],
    full: args.full,
    runs: rows.map((r) => ({
      workload: `wkld-${r.variant}`,
      weighting: r.weighting,
      grow: r.grow,
      shrink: r.shrink,
      wallS: r.wallS,
      events: r.events,
      slowdown: r.metrics.slowdown,
      appSlowdown: r.appSlowdown,
      finished: r.metrics.finished,
      jobs: r.metrics.jobs,
      mrClusters: r.metrics.mrClusters,
      globalDiscrimination: r.balance.map((b) => [b.timeMs, b.globalDiscrimination, b.reconfigured]),
    })),
    checks: verdicts,
    real: real?.json ?? null,
  };
  files.push(['fawkes.json', `${JSON.stringify(json, null, 2)}\n`], ['fawkes.md', `${md.join('\n')}\n`]);
  for (const [name, text] of files) await writeFile(join(OUT, name), text);
  process.stdout.write(`${md.join('\n')}\n`);
  log(`wrote ${files.map(([n]) => join(OUT, n)).join(', ')}`);
}

await main();
