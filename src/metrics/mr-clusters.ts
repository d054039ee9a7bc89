/**
 * Figures of a run on MR-clusters (FAWKES, docs/specs/metrics-and-workloads.md): per cluster its jobs'
 * average slowdown, its node count and queue length over time; for the run, the discrimination the
 * policy measured, its reconfigurations, and what the shrinks cost (drains, copied bytes) and kept
 * (blocks lost: none, as the books promise).
 */
import type { JobFigures } from './compute.js';
import { mean, timeWeighted } from './stats.js';
import type { MrClusterSample, RunRecord } from './types.js';

export interface MrClusterFigures {
  readonly name: string;
  readonly jobs: number;
  readonly finished: number;
  /** Mean slowdown of its finished jobs (NaN when none has a runtime alone). */
  readonly meanSlowdown: number;
  /** Time-weighted over the run (first submission to last finish; 0 while it does not exist). */
  readonly meanNodes: number;
  readonly maxNodes: number;
  readonly meanWaitingJobs: number;
  readonly meanActiveJobs: number;
}

export interface MrClusterMetrics {
  readonly clusters: readonly MrClusterFigures[];
  /** Intervals whose Var(D) exceeded tau (allocations changed), of all intervals measured. */
  readonly reconfigurations: number;
  readonly intervals: number;
  /** Var(D) = E[D^2]: mean and max over the intervals. */
  readonly meanGlobalDiscrimination: number;
  readonly maxGlobalDiscrimination: number;
  readonly moves: number;
  readonly drains: number;
  readonly meanDrainMs: number;
  readonly maxDrainMs: number;
  readonly copiedBytes: number;
  readonly loadedBytes: number;
  readonly savedBytes: number;
  readonly blocks: { readonly blocks: number; readonly underReplicated: number; readonly missing: number };
}

/** The MR-cluster figures of `run`; null for a run without MR-clusters. */
export function mrClusterMetrics(run: RunRecord, perJob: readonly JobFigures[]): MrClusterMetrics | null {
  const mr = run.mrClusters;
  if (!mr) return null;
  const names = [...new Set(mr.samples.flatMap((s) => s.clusters.map((c) => c.name)))].sort();
  const finished = run.jobs.filter((j) => j.finishMs !== null);
  const from = run.jobs.length ? Math.min(...run.jobs.map((j) => j.submitMs)) : 0;
  const to = finished.length ? Math.max(...finished.map((j) => j.finishMs!)) : from;
  const slowdownOf = new Map(perJob.map((p) => [p.id, p.slowdown]));
  const clusters = names.map((name): MrClusterFigures => {
    const jobs = run.jobs.filter((j) => j.cluster === name);
    const count = (s: MrClusterSample) => s.clusters.find((c) => c.name === name);
    return {
      name,
      jobs: jobs.length,
      finished: jobs.filter((j) => j.state === 'succeeded').length,
      meanSlowdown: mean(
        jobs.map((j) => slowdownOf.get(j.id)).filter((x): x is number => x !== undefined && Number.isFinite(x)),
      ),
      meanNodes: timeWeighted(mr.samples, from, to, (s) => count(s)?.nodes ?? 0),
      maxNodes: Math.max(0, ...mr.samples.map((s) => count(s)?.nodes ?? 0)),
      meanWaitingJobs: timeWeighted(mr.samples, from, to, (s) => count(s)?.waitingJobs ?? 0),
      meanActiveJobs: timeWeighted(mr.samples, from, to, (s) => count(s)?.activeJobs ?? 0),
    };
  });
  const varD = mr.balance.map((b) => b.globalDiscrimination);
  const drainMs = mr.drains.map((d) => d.endMs - d.startMs);
  return {
    clusters,
    reconfigurations: mr.balance.filter((b) => b.reconfigured).length,
    intervals: mr.balance.length,
    meanGlobalDiscrimination: mean(varD),
    maxGlobalDiscrimination: varD.length ? Math.max(...varD) : Number.NaN,
    moves: mr.moves.length,
    drains: mr.drains.length,
    meanDrainMs: mean(drainMs),
    maxDrainMs: drainMs.length ? Math.max(...drainMs) : Number.NaN,
    copiedBytes: mr.copiedBytes,
    loadedBytes: mr.loadedBytes,
    savedBytes: mr.savedBytes,
    blocks: mr.blocks,
  };
}
