/**
 * Report writers for a policy comparison: one Markdown row per policy, the slowdown CDF per policy
 * and data-movement bars as SVG, and the JSON every figure comes from.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { barChartFiles, type BarChartOptions, lineChartFiles, type LineChartOptions } from '../util/index.js';
import type { PolicyMetrics } from './compute.js';

export interface PolicyRow {
  readonly policy: string;
  readonly metrics: PolicyMetrics;
  /** Share of the reference run's jobs within 10% of their duration there (perJobAgreement). */
  readonly agreement?: number;
}

export interface MetricsTableOptions {
  /** The run the agreement column compares with; the column shows when a row has an agreement. */
  readonly reference?: string;
}

function num(v: number, digits = 2): string {
  return Number.isFinite(v) ? v.toFixed(digits) : '-';
}

function gib(bytes: number): string {
  return Number.isFinite(bytes) ? (bytes / 2 ** 30).toFixed(2) : '-';
}

function percent(share: number): string {
  return Number.isFinite(share) ? `${(share * 100).toFixed(0)}%` : '-';
}

function secs(ms: number): string {
  return Number.isFinite(ms) ? (ms / 1000).toFixed(1) : '-';
}

/**
 * One row per policy; GiB = 2^30 bytes, times in seconds. Beside the mean JCT, when rows carry
 * one, the share of the reference's jobs each run finished within 10% of the reference's duration.
 */
export function metricsTable(rows: readonly PolicyRow[], options: MetricsTableOptions = {}): string {
  const withAgreement = rows.some((r) => r.agreement !== undefined);
  const head = [
    'policy',
    'jobs done',
    'median slowdown',
    'p95 slowdown',
    'max slowdown',
    'V_F(95)',
    'avg JCT s',
    ...(withAgreement ? [`jobs within 10% of ${options.reference ?? 'the reference'}`] : []),
    'makespan s',
    'map phase s',
    'reduce phase s',
    'slot util',
    'mem util',
    'remote GiB',
    'off-rack GiB',
    're-read GiB',
    'killed slot-s',
  ];
  const lines = [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`];
  for (const { policy, metrics: m, agreement } of rows) {
    const d = m.dataMovement;
    lines.push(
      `| ${[
        policy,
        `${m.finished}/${m.jobs}`,
        num(m.slowdown.median),
        num(m.slowdown.p95),
        num(m.slowdown.max),
        num(m.slowdown.vf95),
        secs(m.avgJctMs),
        ...(withAgreement ? [agreement === undefined ? '-' : percent(agreement)] : []),
        secs(m.makespanMs),
        secs(m.avgMapPhaseMs),
        secs(m.avgReducePhaseMs),
        num(m.utilization.slots),
        num(m.utilization.memory),
        gib(d.remoteNodeBytes + d.replicatedBytes),
        gib(d.remoteRackBytes + d.replicatedCrossRackBytes),
        gib(d.rereadBytes),
        num(d.killedSlotSeconds, 0),
      ].join(' | ')} |`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/**
 * Runs on MR-clusters (FAWKES): per policy and cluster, its jobs' mean slowdown, its mean and most
 * nodes and its mean queue; per policy, reconfigurations, Var(D), drains and blocks lost. Empty
 * when no run had MR-clusters.
 */
export function mrClusterTable(rows: readonly PolicyRow[]): string {
  const withMr = rows.filter((r) => r.metrics.mrClusters !== undefined);
  if (withMr.length === 0) return '';
  const lines = [
    '| policy | MR-cluster | jobs done | mean slowdown | mean nodes | max nodes | mean queue (waiting / active jobs) |',
    '|---|---|---:|---:|---:|---:|---|',
  ];
  for (const { policy, metrics } of withMr) {
    for (const c of metrics.mrClusters!.clusters) {
      lines.push(
        `| ${policy} | ${c.name} | ${c.finished}/${c.jobs} ` +
          `| ${num(c.meanSlowdown)} | ${num(c.meanNodes, 1)} ` +
          `| ${c.maxNodes} | ${num(c.meanWaitingJobs, 1)} ` +
          `/ ${num(c.meanActiveJobs, 1)} |`,
      );
    }
  }
  lines.push(
    '',
    '| policy | reconfigurations / intervals | mean Var(D) | max ' +
      'Var(D) | moves | drains | mean drain s | copied GiB | blocks ' +
      'lost | under-replicated at end |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  );
  for (const { policy, metrics } of withMr) {
    const m = metrics.mrClusters!;
    lines.push(
      `| ${policy} | ${m.reconfigurations} / ${m.intervals} ` +
        `| ${num(m.meanGlobalDiscrimination, 4)} ` +
        `| ${num(m.maxGlobalDiscrimination, 4)} | ${m.moves} ` +
        `| ${m.drains} | ${secs(m.meanDrainMs)} | ${gib(m.copiedBytes)} ` +
        `| ${m.blocks.missing} | ${m.blocks.underReplicated} |`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/** Empirical CDF of the slowdowns, one line per policy (`xScale` 'log' for long tails). */
export function slowdownCdfChart(
  rows: readonly PolicyRow[],
  title = 'Job slowdown CDF',
  xScale: 'linear' | 'log' = 'linear',
): LineChartOptions {
  const series = rows.map(({ policy, metrics }) => {
    const sorted = metrics.perJob
      .map((j) => j.slowdown)
      .filter((s) => Number.isFinite(s))
      .sort((a, b) => a - b);
    // At most ~200 points per line: the plot stays light for 3000-job runs.
    const step = Math.max(1, Math.floor(sorted.length / 200));
    const points: Array<[number, number]> = [];
    for (let i = 0; i < sorted.length; i += step) points.push([sorted[i]!, (i + 1) / sorted.length]);
    if (sorted.length > 0) points.push([sorted[sorted.length - 1]!, 1]);
    return { name: policy, points };
  });
  return { title, xLabel: 'slowdown (response time / runtime alone)', yLabel: 'fraction of jobs', series, xScale };
}

/** Remote, off-rack and re-read bytes (GiB) per policy. */
function dataMovementChart(rows: readonly PolicyRow[], title = 'Data movement'): BarChartOptions {
  return {
    title,
    yLabel: 'GiB',
    categories: ['read from another node', 'read from another rack', 're-read after kills', 'copied by replicate'],
    series: rows.map(({ policy, metrics: { dataMovement: d } }) => ({
      name: policy,
      values: [d.remoteNodeBytes, d.remoteRackBytes, d.rereadBytes, d.replicatedBytes].map((b) => b / 2 ** 30),
    })),
  };
}

/**
 * Writes results.json (`json` as given), results.md (`title` and the table), slowdown-cdf.svg and
 * data-movement.svg, each with its data as CSV beside it, into `outDir`; returns the paths written.
 * `logScale`: the slowdown CDF on a log x axis.
 */
export async function writeReport(
  outDir: string,
  rows: readonly PolicyRow[],
  json: unknown,
  title: string,
  table: MetricsTableOptions = {},
  options: { logScale?: boolean } = {},
): Promise<string[]> {
  const cdf = slowdownCdfChart(rows, `Job slowdown CDF: ${title}`, options.logScale ? 'log' : 'linear');
  const moved = dataMovementChart(rows, `Data movement: ${title}`);
  await mkdir(outDir, { recursive: true });
  const files: Array<[string, string]> = [
    ['results.json', `${JSON.stringify(json, null, 2)}\n`],
    [
      'results.md',
      `# ${title}\n\n${metricsTable(rows, table)}\nQuantiles are ` +
        `nearest-rank (F^-1(q) = smallest slowdown with F >= q); V_F(95) ` +
        `= p95 / median.\n${mrClusterTable(rows) ? `\n${mrClusterTable(rows)}` : ''}`,
    ],
    ...lineChartFiles('slowdown-cdf', cdf),
    ...barChartFiles('data-movement', moved),
  ];
  const paths: string[] = [];
  for (const [name, text] of files) {
    const path = join(outDir, name);
    await writeFile(path, text);
    paths.push(path);
  }
  return paths;
}
