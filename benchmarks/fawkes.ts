/**
 * FAWKES (fawkes.md, issue 15): balanced allocations across dynamic MR-clusters, in the simulator at
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
 * output is bound by the core nodes' disks whatever the growth). The real-cluster part (a scaled-down WKLD-D and WKLD-C on a
 * local cluster in 3 MR-clusters) needs the runtime's MR-clusters: see `realPart` below.
 *
 * Run: npm run bench:fawkes [-- --full | --workloads d,e | --seed 2]
 * Writes bench-results/fawkes/{fawkes.json,fawkes.md,nodes-*.svg,slowdown-*.svg}.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import yargs from 'yargs';
import { computeMetrics, type MrClusterSample, type PolicyMetrics, type RunRecord } from '../src/metrics/index.js';
import { FawkesPolicy, WEIGHTINGS, parseFawkesOptions, type BalanceSample, type Weighting } from '../src/scheduler/index.js';
import { clusterPreset, fawkesWorkload, simulate, type FawkesVariant, type Workload } from '../src/sim/index.js';
import { barChart, lineChart } from '../src/util/index.js';

const SELF = fileURLToPath(import.meta.url);
const OUT = resolve(dirname(SELF), '..', '..', 'bench-results', 'fawkes');
const T0 = Date.now();
const log = (m: string) => process.stderr.write(`[${((Date.now() - T0) / 1000).toFixed(1).padStart(7)}s] ${m}\n`);

const args = yargs(process.argv.slice(2))
  .option('full', { type: 'boolean', default: false, describe: 'every workload x 11 weightings x TR/TC x IP/DP' })
  .option('workloads', { type: 'string', default: 'a,b,c,d,e', describe: 'which of WKLD-A..E to run' })
  .option('seed', { type: 'number', default: 1 })
  .option('output-replication', { type: 'number', default: 1, describe: 'replicas of each output block (Hadoop\'s Sort and TeraSort write one)' })
  .option('real', { type: 'boolean', default: false, describe: 'the real-cluster part (not built yet: needs the runtime\'s MR-clusters)' })
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
  const wanted = new Set(args.workloads.split(',').map((s) => s.trim().toLowerCase().replace(/^wkld-/, '')));
  const cases: Case[] = [];
  const add = (c: Case) => {
    if (wanted.has(c.variant) && !cases.some((k) => labelOf(k) === labelOf(c) && k.variant === c.variant)) cases.push(c);
  };
  const variants: FawkesVariant[] = ['a', 'b', 'c', 'd', 'e'];
  if (args.full) {
    for (const variant of variants) for (const weighting of WEIGHTINGS) for (const grow of ['TR', 'TC'] as const) for (const shrink of ['IP', 'DP'] as const) add({ variant, weighting, grow, shrink });
    return cases;
  }
  add({ variant: 'a', weighting: 'jd', grow: 'TR', shrink: 'IP' });
  add({ variant: 'a', weighting: 'none', grow: 'TR', shrink: 'IP' });
  for (const variant of ['b', 'c'] as const) {
    add({ variant, weighting: 'none', grow: 'TC', shrink: 'DP' });
    for (const grow of ['TR', 'TC'] as const) for (const shrink of ['IP', 'DP'] as const) add({ variant, weighting: 'td', grow, shrink });
  }
  for (const variant of ['d', 'e'] as const) for (const weighting of WEIGHTINGS) add({ variant, weighting, grow: 'TC', shrink: 'DP' });
  return cases;
}

function run(c: Case, workload: Workload): Row {
  const policy = new FawkesPolicy(parseFawkesOptions({ weighting: c.weighting, grow: c.grow, shrink: c.shrink, intervalMs: intervalFor(c.variant) }));
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
    `| weighting / grow / shrink | jobs done | mean slowdown | median | p95 | ${clusters.map((c) => `${c} slowdown / mean nodes`).join(' | ')} | reconfigurations | mean Var(D) | drains (mean s) | copied GiB | blocks lost | sim wall s |`,
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
      `| ${r.label} | ${m.finished}/${m.jobs} | ${num(m.slowdown.mean)} | ${num(m.slowdown.median)} | ${num(m.slowdown.p95)} | ${per.join(' | ')} | ${mr.reconfigurations}/${mr.intervals} | ${num(mr.meanGlobalDiscrimination, 4)} | ${mr.drains} (${num(mr.meanDrainMs / 1000, 1)}) | ${num(mr.copiedBytes / 2 ** 30, 1)} | ${mr.blocks.missing} | ${num(r.wallS, 1)} |`,
    );
  }
  return lines.join('\n');
}

/** Nodes per MR-cluster over time (stacked kinds summed), one line per cluster. */
function nodesSvg(row: Row, title: string): string {
  const names = [...new Set(row.samples.flatMap((s) => s.clusters.map((c) => c.name)))].sort();
  const series = names.map((name) => ({ name, points: row.samples.map((s): [number, number] => [s.timeMs / 1000, s.clusters.find((c) => c.name === name)?.nodes ?? 0]) }));
  series.push({ name: 'free', points: row.samples.map((s): [number, number] => [s.timeMs / 1000, s.freeNodes]) });
  return lineChart({ title, xLabel: 'time (s)', yLabel: 'nodes', series: series.map((s) => ({ ...s, points: thin(s.points) })) });
}

/** At most ~400 points per line. */
function thin(points: ReadonlyArray<readonly [number, number]>): Array<readonly [number, number]> {
  const step = Math.max(1, Math.floor(points.length / 400));
  return points.filter((_, i) => i % step === 0 || i === points.length - 1);
}

function slowdownSvg(rows: readonly Row[], title: string): string {
  const clusters = ['c-1', 'c-2', 'c-3'];
  return barChart({
    title,
    yLabel: 'mean job slowdown',
    categories: rows.map((r) => r.label),
    series: [
      ...clusters.map((name) => ({ name, values: rows.map((r) => r.metrics.mrClusters!.clusters.find((c) => c.name === name)?.meanSlowdown ?? 0) })),
      { name: 'all jobs', values: rows.map((r) => r.metrics.slowdown.mean) },
    ],
    width: Math.max(640, 90 * rows.length + 240),
  });
}

function checks(rows: readonly Row[]): string[] {
  const out: string[] = [];
  const mark = (ok: boolean) => (ok ? 'PASS' : 'FAIL');
  const find = (variant: FawkesVariant, label: string) => rows.find((r) => r.variant === variant && r.label === label);
  const td = find('d', 'TD TC DP');
  const none = find('d', 'NONE TC DP');
  if (td && none) {
    const lower = 1 - td.metrics.slowdown.mean / none.metrics.slowdown.mean;
    out.push(`${mark(lower >= 0.25)} WKLD-D: TD's average job slowdown ${num(td.metrics.slowdown.mean)} is ${num(100 * lower, 0)}% below None's ${num(none.metrics.slowdown.mean)} (target: at least 25%)`);
  }
  for (const shrink of ['IP', 'DP'] as const) {
    const tc = find('c', `TD TC ${shrink}`);
    const tr = find('c', `TD TR ${shrink}`);
    if (tc && tr) {
      const s = (r: Row) => r.appSlowdown.sort ?? Number.NaN;
      out.push(`${mark(s(tc) < s(tr))} WKLD-C, shrinking by ${shrink}: Sort's mean slowdown growing with TC ${num(s(tc))} vs with TR ${num(s(tr))} (${num(100 * (1 - s(tc) / s(tr)), 1)}% lower; target: lower)`);
    }
  }
  return out;
}

/**
 * The real-cluster part of issue 15 (item 6): a scaled-down WKLD-D (and WKLD-C) on a local cluster
 * of about 12 workers in 3 MR-clusters under None, EQ, TD and PU, over several interleaved runs
 * (paired differences with standard errors, as bench:fair prints them), the simulator's prediction
 * for the same scaled workload beside each, and `fs fsck` after every run (0 missing blocks),
 * one run with a draining worker SIGKILLed. It needs what the runtime does not have yet (items 1,
 * 2 and 4 of the issue): `minimr mrc activate|list|deactivate`, `submit --mr-cluster`, block
 * placement by node kind and `fs fsck`. Build it here, on `realCluster`/`runWorkloadOnCluster`
 * (src/experiments) as bench:fair does, and return its rows; until then it reports that it did not run.
 */
async function realPart(): Promise<{ readonly markdown: string; readonly json: unknown } | null> {
  return null;
}

async function main(): Promise<void> {
  const cases = plan();
  log(`${cases.length} simulations (seed ${args.seed})${args.full ? ', the full grid' : ''}`);
  const workloads = new Map<FawkesVariant, Workload>();
  const rows: Row[] = [];
  for (const [i, c] of cases.entries()) {
    let workload = workloads.get(c.variant);
    if (!workload) {
      workload = fawkesWorkload({ variant: c.variant, seed: args.seed });
      workloads.set(c.variant, workload);
    }
    log(`[${i + 1}/${cases.length}] WKLD-${c.variant.toUpperCase()} (${workload.jobs.length} jobs) on ${clusterFor(c.variant).name}: ${labelOf(c)}`);
    const row = run(c, workload);
    log(`    mean slowdown ${num(row.metrics.slowdown.mean)}, ${row.metrics.mrClusters!.reconfigurations} reconfigurations, ${num(row.wallS, 1)} s wall`);
    rows.push(row);
  }

  await mkdir(OUT, { recursive: true });
  const md: string[] = ['# FAWKES in the simulator', ''];
  md.push(
    `Seed ${args.seed}, output blocks written with ${args['output-replication']} replica(s). Slowdown = response time (arrival to finish) / runtime on the 10-node reference cluster. ` +
      'Per cluster: mean slowdown of its jobs / mean nodes it held (first arrival to last finish). ' +
      'Var(D) = E[D^2] per interval of T (60 s on fawkes-60, 120 s on fawkes-48); a reconfiguration is an interval with Var(D) > tau = 0.001.',
    '',
  );
  const files: Array<[string, string]> = [];
  for (const variant of ['a', 'b', 'c', 'd', 'e'] as const) {
    const mine = rows.filter((r) => r.variant === variant);
    if (mine.length === 0) continue;
    const w = workloads.get(variant)!;
    md.push(`## WKLD-${variant.toUpperCase()} on ${clusterFor(variant).name} (${w.jobs.length} jobs)`, '', table(mine), '');
    const apps = [...new Set(mine.flatMap((r) => Object.keys(r.appSlowdown)))].sort();
    md.push(`Mean slowdown per app: ${mine.map((r) => `${r.label}: ${apps.map((a) => `${a} ${num(r.appSlowdown[a] ?? Number.NaN)}`).join(', ')}`).join('; ')}.`, '');
    files.push([`slowdown-wkld-${variant}.svg`, slowdownSvg(mine, `WKLD-${variant.toUpperCase()}: mean slowdown per MR-cluster and weighting`)]);
    const plotted = mine.find((r) => r.weighting === (variant === 'a' ? 'jd' : 'td')) ?? mine[0]!;
    files.push([`nodes-wkld-${variant}.svg`, nodesSvg(plotted, `WKLD-${variant.toUpperCase()}, ${plotted.label}: nodes per MR-cluster`)]);
  }
  const verdicts = checks(rows);
  md.push('## Checks', '', ...verdicts.map((v) => `- ${v}`), '');
  const real = args.real ? await realPart() : null;
  md.push('## Real cluster', '', real?.markdown ?? 'Not run: the runtime has no MR-clusters yet (issue 15 items 1, 2 and 4); `realPart` in benchmarks/fawkes.ts is where it goes.', '');
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
