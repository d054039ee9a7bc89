/**
 * The figures every policy comparison reports (docs/specs/metrics-and-workloads.md), computed from a run record
 * and each job's runtime alone. Nothing here knows whether the run was simulated or real.
 */
import type { TaskKind } from '../scheduler/index.js';
import { mrClusterMetrics, type MrClusterMetrics } from './mr-clusters.js';
import { mean, timeWeighted } from './stats.js';
import type { AttemptRunRecord, JobRunRecord, RunRecord } from './types.js';

/**
 * Empirical quantile by nearest rank: F^-1(q) is the smallest observed x with F(x) >= q/100, i.e.
 * sorted[ceil(q/100 * n) - 1] (sorted[0] for q = 0). No interpolation: every reported quantile is
 * a slowdown some job really had. The median of an even-sized sample is therefore its lower middle.
 */
export function quantile(sortedAscending: readonly number[], q: number): number {
  const n = sortedAscending.length;
  if (n === 0) return Number.NaN;
  if (!(q >= 0 && q <= 100)) throw new RangeError(`quantile: q must be within 0..100, got ${q}`);
  const rank = Math.max(1, Math.ceil((q / 100) * n - 1e-9));
  return sortedAscending[Math.min(n, rank) - 1]!;
}

/** V_F(q) = F^-1(q) / F^-1(50) on the empirical distribution (quantile definition above). */
export function variability(sortedAscending: readonly number[], q: number): number {
  return quantile(sortedAscending, q) / quantile(sortedAscending, 50);
}

export interface SlowdownSummary {
  readonly count: number;
  readonly mean: number;
  readonly median: number;
  readonly p95: number;
  readonly p99: number;
  readonly max: number;
  /** V_F(95), "the variability". */
  readonly vf95: number;
  readonly vf90: number;
  readonly vf99: number;
}

export interface DataMovement {
  /** Bytes of map input read from a replica on another node (other racks included). */
  readonly remoteNodeBytes: number;
  /** Of those, bytes read from another rack. */
  readonly remoteRackBytes: number;
  /** Input bytes the killed attempts had read: they are read again by the re-run. */
  readonly rereadBytes: number;
  /** Slot-seconds the killed attempts had run: work thrown away. */
  readonly killedSlotSeconds: number;
  readonly killedAttempts: number;
  /** Slot-seconds of attempts that failed (task errors, lost workers). */
  readonly failedSlotSeconds: number;
  readonly failedAttempts: number;
  /** Bytes of extra copies (replicate decisions beyond the input's replication), and of those, copies across racks. */
  readonly replicatedBytes: number;
  readonly replicatedCrossRackBytes: number;
  /**
   * Bytes of replicas an input's upload owed, written during the run: where a policy placed them,
   * and by default when the placement window closed. The upload writes them under any policy, so
   * they are not in `networkBytes`.
   */
  readonly placedBytes: number;
  readonly completedBytes: number;
  /** remoteNodeBytes + replicatedBytes: everything that crossed the network to feed maps. */
  readonly networkBytes: number;
}

export interface PartitionFigures {
  readonly partition: number;
  /** Jobs that finished in this partition, and their share of all finished jobs. */
  readonly jobsFinished: number;
  readonly fraction: number;
  /** Slot-seconds used by attempts launched for jobs in this partition. */
  readonly slotSeconds: number;
  /**
   * slotSeconds / (capacity fraction * all slots * makespan) when capacities were given,
   * else the partition's share of all busy slot-seconds.
   */
  readonly utilization: number;
}

export interface JobFigures {
  readonly id: string;
  readonly app: string;
  readonly submitMs: number;
  readonly responseMs: number;
  readonly aloneMs: number;
  readonly slowdown: number;
  readonly partition: number;
}

export interface PolicyMetrics {
  readonly jobs: number;
  readonly finished: number;
  readonly failed: number;
  readonly unfinished: number;
  readonly slowdown: SlowdownSummary;
  readonly avgJctMs: number;
  /** Last finish - first submission. */
  readonly makespanMs: number;
  readonly avgMapPhaseMs: number;
  readonly avgReducePhaseMs: number;
  /** Time-weighted means over [first submission, last finish]. */
  readonly utilization: {
    readonly mapSlots: number;
    readonly reduceSlots: number;
    readonly slots: number;
    readonly memory: number;
    readonly elasticAttempts: number;
  };
  readonly dataMovement: DataMovement;
  readonly partitions: readonly PartitionFigures[];
  readonly perJob: readonly JobFigures[];
  /** Runs on MR-clusters (FAWKES) only. */
  readonly mrClusters?: MrClusterMetrics;
}

export interface MetricsOptions {
  /** Capacity fraction of each partition (Tyrex C_k), for partition utilization. */
  readonly partitionCapacity?: readonly number[];
}

export function summarizeSlowdowns(values: readonly number[]): SlowdownSummary {
  const sorted = [...values].sort((a, b) => a - b);
  const median = quantile(sorted, 50);
  return {
    count: sorted.length,
    mean: mean(sorted),
    median,
    p95: quantile(sorted, 95),
    p99: quantile(sorted, 99),
    max: sorted.length ? sorted[sorted.length - 1]! : Number.NaN,
    vf95: quantile(sorted, 95) / median,
    vf90: quantile(sorted, 90) / median,
    vf99: quantile(sorted, 99) / median,
  };
}

function phaseDuration(job: JobRunRecord, which: 'mapPhase' | 'reducePhase'): number | null {
  const p = job[which];
  if (!p || p.endMs === null) return null;
  return p.endMs - p.requestMs;
}

function ratio(a: number, b: number): number {
  return b > 0 ? a / b : 0;
}

export function computeMetrics(
  run: RunRecord,
  runtimeAloneMs: ReadonlyMap<string, number> | Readonly<Record<string, number>>,
  options: MetricsOptions = {},
): PolicyMetrics {
  const alone = (id: string): number | undefined =>
    runtimeAloneMs instanceof Map ? runtimeAloneMs.get(id) : (runtimeAloneMs as Record<string, number>)[id];
  const finishedJobs = run.jobs.filter((j) => j.state === 'succeeded' && j.finishMs !== null);
  const perJob: JobFigures[] = [];
  for (const j of finishedJobs) {
    const a = alone(j.id);
    const responseMs = j.finishMs! - j.submitMs;
    perJob.push({
      id: j.id,
      app: j.app,
      submitMs: j.submitMs,
      responseMs,
      aloneMs: a ?? Number.NaN,
      slowdown: a !== undefined && a > 0 ? responseMs / a : Number.NaN,
      partition: j.partition,
    });
  }
  const slowdowns = perJob.map((p) => p.slowdown).filter((s) => Number.isFinite(s));
  const firstSubmit = run.jobs.length ? Math.min(...run.jobs.map((j) => j.submitMs)) : 0;
  const lastFinish = finishedJobs.length ? Math.max(...finishedJobs.map((j) => j.finishMs!)) : firstSubmit;
  const mapPhases = run.jobs.map((j) => phaseDuration(j, 'mapPhase')).filter((d): d is number => d !== null);
  const reducePhases = run.jobs.map((j) => phaseDuration(j, 'reducePhase')).filter((d): d is number => d !== null);

  let remoteNodeBytes = 0;
  let remoteRackBytes = 0;
  let rereadBytes = 0;
  let killedMs = 0;
  let killedAttempts = 0;
  let failedMs = 0;
  let failedAttempts = 0;
  const partitionMs: number[] = [];
  for (const a of run.attempts) {
    remoteNodeBytes += a.remoteNodeBytes;
    remoteRackBytes += a.remoteRackBytes;
    const ms = a.endMs - a.startMs;
    partitionMs[a.partition] = (partitionMs[a.partition] ?? 0) + ms;
    if (a.outcome === 'killed') {
      killedAttempts++;
      killedMs += ms;
      rereadBytes += a.bytesRead;
    } else if (a.outcome === 'failed') {
      failedAttempts++;
      failedMs += ms;
    }
  }
  let replicatedBytes = 0;
  let replicatedCrossRackBytes = 0;
  let placedBytes = 0;
  let completedBytes = 0;
  for (const r of run.replications) {
    if (r.cause === 'placed') placedBytes += r.bytes;
    else if (r.cause === 'completed') completedBytes += r.bytes;
    else {
      replicatedBytes += r.bytes;
      if (r.crossRack) replicatedCrossRackBytes += r.bytes;
    }
  }

  const s = run.utilization;
  const span: [number, number] = [firstSubmit, lastFinish];
  const utilization = {
    mapSlots: timeWeighted(s, ...span, (x) => ratio(x.mapSlotsUsed, x.mapSlots)),
    reduceSlots: timeWeighted(s, ...span, (x) => ratio(x.reduceSlotsUsed, x.reduceSlots)),
    slots: timeWeighted(s, ...span, (x) => ratio(x.mapSlotsUsed + x.reduceSlotsUsed, x.mapSlots + x.reduceSlots)),
    memory: timeWeighted(s, ...span, (x) => ratio(x.memoryUsedMb, x.memoryMb)),
    elasticAttempts: timeWeighted(s, ...span, (x) => x.elasticAttempts),
  };

  const partitionCount = Math.max(
    partitionMs.length,
    ...finishedJobs.map((j) => j.partition + 1),
    options.partitionCapacity?.length ?? 0,
    1,
  );
  const busyMs = partitionMs.reduce((sum, v) => sum + (v ?? 0), 0);
  const meanSlots = timeWeighted(s, ...span, (x) => x.mapSlots + x.reduceSlots);
  const partitions: PartitionFigures[] = [];
  for (let p = 0; p < partitionCount; p++) {
    const jobsFinished = finishedJobs.filter((j) => j.partition === p).length;
    const ms = partitionMs[p] ?? 0;
    const capacity = options.partitionCapacity?.[p];
    partitions.push({
      partition: p,
      jobsFinished,
      fraction: ratio(jobsFinished, finishedJobs.length),
      slotSeconds: ms / 1000,
      utilization:
        capacity !== undefined ? ratio(ms, capacity * meanSlots * (lastFinish - firstSubmit)) : ratio(ms, busyMs),
    });
  }

  return {
    jobs: run.jobs.length,
    finished: finishedJobs.length,
    failed: run.jobs.filter((j) => j.state === 'failed').length,
    unfinished: run.jobs.filter((j) => j.state === 'unfinished').length,
    slowdown: summarizeSlowdowns(slowdowns),
    avgJctMs: mean(perJob.map((p) => p.responseMs)),
    makespanMs: lastFinish - firstSubmit,
    avgMapPhaseMs: mean(mapPhases),
    avgReducePhaseMs: mean(reducePhases),
    utilization,
    dataMovement: {
      remoteNodeBytes,
      remoteRackBytes,
      rereadBytes,
      killedSlotSeconds: killedMs / 1000,
      killedAttempts,
      failedSlotSeconds: failedMs / 1000,
      failedAttempts,
      replicatedBytes,
      placedBytes,
      completedBytes,
      replicatedCrossRackBytes,
      networkBytes: remoteNodeBytes + replicatedBytes,
    },
    partitions,
    perJob,
    ...(run.mrClusters ? { mrClusters: mrClusterMetrics(run, perJob)! } : {}),
  };
}

/**
 * Where finished jobs' response time went, as means over the finished jobs: waiting for
 * a first map slot, the map phase, the gap until the first reduce launched, the reduce phase, and the
 * tail from the last task to the job's finish (commit, bookkeeping). A job without a phase counts 0
 * for it, so the segments' means add up to the mean response time. Beside them, the mean successful
 * attempt time per kind: when the same tasks take longer in one run than in another, they were
 * slowed (contention), not queued.
 */
export interface ResponseBreakdown {
  readonly jobs: number;
  readonly responseMs: number;
  readonly queuedMs: number;
  readonly mapPhaseMs: number;
  readonly betweenPhasesMs: number;
  readonly reducePhaseMs: number;
  readonly tailMs: number;
  readonly mapAttemptMs: number;
  readonly reduceAttemptMs: number;
}

/** Mean duration of the successful attempts of one kind (NaN when there are none). */
export function meanAttemptMs(attempts: readonly AttemptRunRecord[], kind: TaskKind): number {
  return mean(attempts.filter((a) => a.kind === kind && a.outcome === 'succeeded').map((a) => a.endMs - a.startMs));
}

export function responseBreakdown(run: RunRecord): ResponseBreakdown {
  const queued: number[] = [];
  const maps: number[] = [];
  const between: number[] = [];
  const reduces: number[] = [];
  const tail: number[] = [];
  const response: number[] = [];
  for (const j of run.jobs) {
    if (j.state !== 'succeeded' || j.finishMs === null) continue;
    const m =
      j.mapPhase?.firstStartMs != null && j.mapPhase.endMs !== null
        ? { start: j.mapPhase.firstStartMs, end: j.mapPhase.endMs }
        : null;
    const r =
      j.reducePhase?.firstStartMs != null && j.reducePhase.endMs !== null
        ? { start: j.reducePhase.firstStartMs, end: j.reducePhase.endMs }
        : null;
    const firstStart = m?.start ?? r?.start ?? j.finishMs;
    const lastEnd = r?.end ?? m?.end ?? firstStart;
    response.push(j.finishMs - j.submitMs);
    queued.push(firstStart - j.submitMs);
    maps.push(m ? m.end - m.start : 0);
    between.push(m && r ? r.start - m.end : 0);
    reduces.push(r ? r.end - r.start : 0);
    tail.push(j.finishMs - lastEnd);
  }
  return {
    jobs: response.length,
    responseMs: mean(response),
    queuedMs: mean(queued),
    mapPhaseMs: mean(maps),
    betweenPhasesMs: mean(between),
    reducePhaseMs: mean(reduces),
    tailMs: mean(tail),
    mapAttemptMs: meanAttemptMs(run.attempts, 'map'),
    reduceAttemptMs: meanAttemptMs(run.attempts, 'reduce'),
  };
}
