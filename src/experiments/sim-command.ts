/**
 * `minimr sim`: the logic behind the yargs command, so the CLI stays a thin shell.
 */
import { resolve } from 'node:path';
import { MinimrError } from '../errors.js';
import { metricsTable, mrClusterTable, type RunRecord } from '../metrics/index.js';
import { loadPolicyPlugins } from '../policy-plugins/index.js';
import { policyDefinitions, type PolicyOptions } from '../scheduler/index.js';
import {
  defaultClusterFor,
  loadCluster,
  loadWorkload,
  meganode,
  type ClusterShape,
  type SwimOptions,
  type Workload,
} from '../workloads/index.js';
import { comparePolicies, writeComparison, type ComparisonResult } from './compare.js';
import { defaultHeartbeatMs } from '../sim/index.js';

export interface SimCommandArgs {
  readonly workload: string;
  readonly cluster?: string;
  readonly policies: readonly string[];
  readonly policyOptions?: PolicyOptions;
  /** The policy whose run the others' per-job agreement is measured against (default: the first). */
  readonly reference?: string;
  readonly seed?: number;
  readonly load?: number;
  readonly scale?: number;
  /** A swim:FILE workload's options (rates, block size, time and size scaling). */
  readonly swim?: SwimOptions;
  readonly out?: string;
  /** The slowdown CDF of --out on a log x axis. */
  readonly logScale?: boolean;
  readonly heartbeatMs?: number;
  readonly noise?: number;
  readonly memoryNoise?: number;
  readonly penaltyNoise?: number;
  /** The penalty model of a DSS trace's task groups that name none (`step:3`, as DSS's `PEEK STEP 3`). */
  readonly penalty?: string;
  readonly reduceSlowStart?: number;
  /** Speculative execution for jobs whose spec does not say (SimSettings.speculation). */
  readonly speculation?: boolean;
  /** Nodes of an SLS / DSS topology file that name no resources of their own. */
  readonly nodeMemoryMb?: number;
  readonly nodeCores?: number;
  /** Pool the cluster into one node (YARN-ME's meganode bound; run it under srjf). */
  readonly meganode?: boolean;
  /**
   * `dss`: the YARN-shaped policies allocate as DSS, the YARN-ME paper's simulator (their `compat`
   * option), on DSS's 1 s node heartbeats unless `heartbeatMs` says otherwise.
   */
  readonly compat?: 'dss';
  /** ApplicationMaster memory (MB) and cores of the YARN-shaped policies (0 MB: none). */
  readonly amMb?: number;
  readonly amCores?: number;
}

/** DSS's node heartbeat, as the paper's runs set it. */
export const DSS_NODE_HEARTBEAT_MS = 1000;

/** Whether `policy` models YARN's shape (it takes `compat`, `amMb`, `amCores`): yarn, yarn-me. */
export function modelsYarn(policy: string): boolean {
  return policyDefinitions().some((d) => d.name === policy && 'compat' in d.options);
}

/**
 * Each policy's options: `--policy-options`, and for the policies that model YARN's shape (they take
 * `compat`) `--compat`, `--am-mb` and `--am-cores`. Those flags for a run with no such policy are EUSAGE.
 */
export function simPolicyOptions(args: SimCommandArgs): Record<string, PolicyOptions> {
  const yarnShape = {
    ...(args.compat !== undefined ? { compat: args.compat } : {}),
    ...(args.amMb !== undefined ? { amMb: args.amMb } : {}),
    ...(args.amCores !== undefined ? { amCores: args.amCores } : {}),
  };
  if (Object.keys(yarnShape).length > 0 && !args.policies.some(modelsYarn))
    throw new MinimrError(
      'EUSAGE',
      `--compat, --am-mb and --am-cores apply to the policies that model YARN (yarn, yarn-me), not to ${args.policies.join(', ')}`,
    );
  // `--policy-options` is one policy's options, given to each; or, keyed by the policies' names, each its own.
  const given: Record<string, unknown> = args.policyOptions ?? {};
  const perPolicy = Object.keys(given).length > 0 && Object.keys(given).every((k) => args.policies.includes(k));
  const own = (p: string): PolicyOptions =>
    perPolicy ? ((given[p] ?? {}) as PolicyOptions) : (args.policyOptions ?? {});
  return Object.fromEntries(args.policies.map((p) => [p, { ...(modelsYarn(p) ? yarnShape : {}), ...own(p) }]));
}

/** The hosts an SLS or Rumen trace's maps read from that are not workers of `cluster`, by name. */
export function traceHostsNotIn(workload: Workload, cluster: ClusterShape): string[] {
  if (workload.meta?.generator !== 'sls' && workload.meta?.generator !== 'rumen') return [];
  const workers = new Set(cluster.workers.map((w) => w.id));
  const strangers = new Set<string>();
  for (const job of workload.jobs)
    for (const map of job.maps) for (const host of map.replicas ?? []) if (!workers.has(host)) strangers.add(host);
  return [...strangers].sort();
}

/** A run that ended in a deadlock, for the table's reader: when, how many jobs, and the first few reasons. */
function deadlockLines(policy: string, deadlock: NonNullable<RunRecord['deadlock']>): string {
  const shown = deadlock.jobs.slice(0, 5).map((j) => `  ${j.jobId}: ${j.reason}`);
  const more = deadlock.jobs.length > shown.length ? [`  ... and ${deadlock.jobs.length - shown.length} more`] : [];
  return [
    `${policy}: deadlock at t=${(deadlock.atMs / 1000).toFixed(1)} s: ${deadlock.jobs.length} job(s) can never run; the run ended there`,
    ...shown,
    ...more,
  ].join('\n');
}

/** Runs the simulation(s), writes the report when `out` is given, returns the result and the table. */
/**
 * A warning when most of a workload's tasks are shorter than the cluster's heartbeat (a workload
 * scaled far down, say): the policies then wait on heartbeats more than on work, and slowdowns
 * measure the heartbeat, not the policy. Undefined when at most half of them are.
 */
export function shortTasksWarning(workload: Workload, heartbeatMs: number): string | undefined {
  const tasks = workload.jobs.flatMap((j) => [...j.maps, ...j.reduces]);
  const short = tasks.filter((t) => t.workMs < heartbeatMs).length;
  if (tasks.length === 0 || short <= tasks.length / 2) return undefined;
  const sorted = tasks.map((t) => t.workMs).sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)]!;
  return (
    `warning: ${short} of ${tasks.length} tasks of ${workload.name} (median ${median.toFixed(0)} ms) are shorter ` +
    `than a heartbeat (${heartbeatMs} ms): slowdowns will measure heartbeats more than the policies; ` +
    'use a larger --scale or a shorter --heartbeat-ms'
  );
}

export async function runSimCommand(
  args: SimCommandArgs,
  progress: (line: string) => void,
): Promise<{ result: ComparisonResult; table: string; files: string[] }> {
  // Every policy, plug-ins loaded, and its options checked before the workload is even read.
  const policyOptions = simPolicyOptions(args);
  await loadPolicyPlugins(args.policies, (p) => policyOptions[p] ?? {});
  const workload = await loadWorkload(args.workload, {
    seed: args.seed,
    load: args.load,
    scale: args.scale,
    ...(args.penalty !== undefined ? { penalty: args.penalty } : {}),
    ...(args.swim !== undefined ? { swim: args.swim } : {}),
  });
  const sls = {
    ...(args.nodeMemoryMb !== undefined ? { memoryMb: args.nodeMemoryMb } : {}),
    ...(args.nodeCores !== undefined ? { vcores: args.nodeCores } : {}),
  };
  const loaded = await loadCluster(args.cluster ?? defaultClusterFor(args.workload), sls);
  const cluster = args.meganode ? meganode(loaded) : loaded;
  const strangers = traceHostsNotIn(workload, cluster);
  if (strangers.length > 0)
    progress(
      `warning: the trace's tasks ran on ${strangers.length} host(s) that cluster ${cluster.name} has not ` +
        `(${strangers.slice(0, 3).join(', ')}${strangers.length > 3 ? ', ...' : ''}): their maps cannot be ` +
        "data-local; give --cluster the trace's own hosts (an SLS node file) to replay its locality",
    );
  progress(
    `workload ${workload.name}: ${workload.jobs.length} jobs; ` +
      `cluster ${cluster.name}: ${cluster.workers.length} workers`,
  );
  const heartbeat = args.heartbeatMs ?? (args.compat === 'dss' ? DSS_NODE_HEARTBEAT_MS : undefined);
  const short = shortTasksWarning(workload, heartbeat ?? defaultHeartbeatMs(cluster.workers.length));
  if (short) progress(short);
  const heartbeatMs = args.heartbeatMs ?? (args.compat === 'dss' ? DSS_NODE_HEARTBEAT_MS : undefined);
  const result = comparePolicies({
    workload,
    cluster,
    policies: args.policies,
    policyOptions,
    ...(args.reference !== undefined ? { reference: args.reference } : {}),
    keepRuns: false,
    onProgress: progress,
    ...(args.seed !== undefined ? { seed: args.seed } : {}),
    ...(heartbeatMs !== undefined ? { heartbeatMs } : {}),
    ...(args.noise !== undefined ? { noise: args.noise } : {}),
    ...(args.memoryNoise !== undefined ? { memoryNoise: args.memoryNoise } : {}),
    ...(args.penaltyNoise !== undefined ? { penaltyNoise: args.penaltyNoise } : {}),
    ...(args.reduceSlowStart !== undefined ? { reduceSlowStart: args.reduceSlowStart } : {}),
    ...(args.speculation !== undefined ? { speculation: args.speculation } : {}),
  });
  const rows = result.policies.map((p) => ({ policy: p.policy, metrics: p.metrics, agreement: p.agreement }));
  const mr = mrClusterTable(rows);
  const deadlocks = result.policies.flatMap((p) => (p.deadlock ? [deadlockLines(p.policy, p.deadlock)] : []));
  const policies = metricsTable(rows, { reference: result.reference });
  const table = [policies, ...(mr ? [mr] : []), ...deadlocks.map((d) => `${d}\n`)].join('\n');
  const files = args.out
    ? await writeComparison(resolve(args.out), result, args.logScale ? { logScale: true } : {})
    : [];
  return { result, table, files };
}
