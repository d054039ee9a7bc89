/**
 * `minimr sim`: the logic behind the yargs command, so the CLI stays a thin shell.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { MinimrError } from '../errors.js';
import { metricsTable, mrClusterTable } from '../metrics/index.js';
import type { PolicyOptions } from '../scheduler/index.js';
import { clusterPreset, clusterPresetNames, meganode, readClusterFile } from './clusters.js';
import { comparePolicies, writeComparison, type ComparisonResult } from './compare.js';
import { readWorkloadFile } from './traces.js';
import type { ClusterShape, Workload } from './types.js';
import { WORKLOAD_NAMES, defaultClusterFor, namedWorkload } from './workloads.js';

export interface SimCommandArgs {
  readonly workload: string;
  readonly cluster?: string;
  readonly policies: readonly string[];
  readonly policyOptions?: PolicyOptions;
  readonly seed?: number;
  readonly load?: number;
  readonly scale?: number;
  readonly out?: string;
  readonly heartbeatMs?: number;
  readonly noise?: number;
  readonly memoryNoise?: number;
  readonly penaltyNoise?: number;
  readonly reduceSlowStart?: number;
  /** Nodes of an SLS / DSS topology file that name no resources of their own. */
  readonly nodeMemoryMb?: number;
  readonly nodeCores?: number;
  /** Pool the cluster into one node (YARN-ME's meganode bound; run it under srjf). */
  readonly meganode?: boolean;
}

async function readText(path: string, what: string): Promise<string> {
  try {
    return await readFile(resolve(path), 'utf8');
  } catch (err) {
    throw new MinimrError('EBADCONF', `cannot read the ${what} ${path}: ${(err as Error).message}`);
  }
}

/** A named workload, or a .json file: minimr workload JSON, a Hadoop SLS or a Hadoop Rumen job trace. */
export async function loadWorkload(name: string, o: { seed?: number; load?: number; scale?: number }): Promise<Workload> {
  if ((WORKLOAD_NAMES as readonly string[]).includes(name)) return namedWorkload(name, o);
  if (!/\.json$/i.test(name)) throw new MinimrError('EBADCONF', `unknown workload "${name}"; known: ${WORKLOAD_NAMES.join(', ')}, or a .json minimr workload / Hadoop SLS / Hadoop Rumen trace file`);
  return readWorkloadFile(await readText(name, 'workload file'), name);
}

/**
 * A preset name, or a .json file: minimr's cluster JSON or a Hadoop SLS node file (the paper's
 * simulator's topology file), whose nodes get `sls` memory and cores unless they name their own.
 */
export async function loadCluster(name: string, sls: { memoryMb?: number; vcores?: number } = {}): Promise<ClusterShape> {
  if (clusterPresetNames().includes(name)) return clusterPreset(name);
  if (!/\.json$/i.test(name)) return clusterPreset(name);
  return readClusterFile(await readText(name, 'cluster file'), name, sls);
}

/** Runs the simulation(s), writes the report when `out` is given, returns the result and the table. */
export async function runSimCommand(args: SimCommandArgs, progress: (line: string) => void): Promise<{ result: ComparisonResult; table: string; files: string[] }> {
  const workload = await loadWorkload(args.workload, { seed: args.seed, load: args.load, scale: args.scale });
  const sls = { ...(args.nodeMemoryMb !== undefined ? { memoryMb: args.nodeMemoryMb } : {}), ...(args.nodeCores !== undefined ? { vcores: args.nodeCores } : {}) };
  const loaded = await loadCluster(args.cluster ?? defaultClusterFor(args.workload), sls);
  const cluster = args.meganode ? meganode(loaded) : loaded;
  progress(`workload ${workload.name}: ${workload.jobs.length} jobs; cluster ${cluster.name}: ${cluster.workers.length} workers`);
  const policyOptions = Object.fromEntries(args.policies.map((p) => [p, args.policyOptions ?? {}]));
  const result = comparePolicies({
    workload,
    cluster,
    policies: args.policies,
    policyOptions,
    keepRuns: false,
    onProgress: progress,
    ...(args.seed !== undefined ? { seed: args.seed } : {}),
    ...(args.heartbeatMs !== undefined ? { heartbeatMs: args.heartbeatMs } : {}),
    ...(args.noise !== undefined ? { noise: args.noise } : {}),
    ...(args.memoryNoise !== undefined ? { memoryNoise: args.memoryNoise } : {}),
    ...(args.penaltyNoise !== undefined ? { penaltyNoise: args.penaltyNoise } : {}),
    ...(args.reduceSlowStart !== undefined ? { reduceSlowStart: args.reduceSlowStart } : {}),
  });
  const rows = result.policies.map((p) => ({ policy: p.policy, metrics: p.metrics }));
  const mr = mrClusterTable(rows);
  const table = mr ? `${metricsTable(rows)}\n${mr}` : metricsTable(rows);
  const files = args.out ? await writeComparison(resolve(args.out), result) : [];
  return { result, table, files };
}
