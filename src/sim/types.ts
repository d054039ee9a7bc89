/**
 * What the simulator runs: a workload (jobs with per-task work, memory and penalty model) on a
 * cluster shape (workers with rack, slots, memory and disk rate).
 */
import type { InputPlacement, PenaltyModel, PoolView } from '../scheduler/index.js';
import type { SkewSpec } from './skew-model.js';

/** How a task's duration grows with less than its ideal memory: the scheduler's model (one definition). */
export type { PenaltyModel } from '../scheduler/index.js';

export interface TaskSpec {
  /** Duration at full speed: ideal memory, input on the node. */
  readonly workMs: number;
  /** Ideal memory (what the task asks for). */
  readonly memoryMb: number;
  readonly penalty?: PenaltyModel;
  /** Maps: split length; reduces: 0 (their input is the shuffle). */
  readonly inputBytes?: number;
  /** Maps: map output bytes (improved FAIR's lambda = output / input). */
  readonly outputBytes?: number;
  /**
   * Maps: workers holding the input block. Absent: the simulator places `replication` replicas
   * (HDFS-like, seeded). Empty: the map has no stored input (generated input, e.g. Pi).
   */
  readonly replicas?: readonly string[];
}

export interface JobSpec {
  /** Unique; like the JobTracker's ids ("job_0001"), task ids are derived from it. */
  readonly id: string;
  readonly name: string;
  /** wordcount, sort, grep, pi, terasort, ... */
  readonly app: string;
  readonly pool?: string;
  readonly weight?: number;
  /** MR-cluster (FAWKES); "default" when absent. */
  readonly cluster?: string;
  readonly submitMs: number;
  /** Pipelines: submitted once this job has finished (at the later of that and `submitMs`). */
  readonly after?: string;
  readonly maps: readonly TaskSpec[];
  readonly reduces: readonly TaskSpec[];
  /** The generator's size class (Tyrex: tiny, short, medium, large), for reports. */
  readonly sizeClass?: string;
  /** Its input is a private data set arriving with it, some replicas still owed (improved FAIR's scenario). */
  readonly inputPlacement?: InputPlacement;
  /** Its map output keys are skewed and its partitions assigned by a skew strategy (skew-model.ts). */
  readonly skew?: SkewSpec;
  /** Its runtime on a static reference cluster, when known (FAWKES's JS weight reads it). */
  readonly referenceMs?: number;
}

/**
 * An MR-cluster a workload's jobs run in (FAWKES): requested when its first job arrives (again
 * after it was deactivated), with its minimum share of core nodes and the input data set it loads.
 */
export interface MrClusterSpec {
  readonly name: string;
  readonly minNodes: number;
  /** Bytes of its input data set, written with `replication` replicas onto its core nodes at activation. */
  readonly inputBytes?: number;
}

export interface Workload {
  readonly name: string;
  readonly jobs: readonly JobSpec[];
  /** Pools the snapshots list (FAIR minimum shares and weights). */
  readonly pools?: readonly PoolView[];
  /** MR-clusters (FAWKES): a job naming one runs there once it is active, on its nodes only. */
  readonly mrClusters?: readonly MrClusterSpec[];
  /** Generator settings and figures (seed, load, CV^2 ...), carried into reports. */
  readonly meta?: Readonly<Record<string, string | number | boolean>>;
}

export interface WorkerShape {
  readonly id: string;
  readonly rack: string;
  readonly host?: string;
  readonly mapSlots: number;
  readonly reduceSlots: number;
  readonly memoryMb: number;
  readonly diskMBps: number;
  /** Initial MR-cluster (FAWKES); "default" when absent. */
  readonly cluster?: string;
  /** Work takes this many times as long as on other workers (a real worker's `--cpu-throttle F`); default 1. */
  readonly cpuThrottle?: number;
}

export interface HostShape {
  /** Cores the attempts of all the host's workers share; may be fractional (a host shared with other work). */
  readonly cores: number;
}

export interface ClusterShape {
  readonly name: string;
  readonly workers: readonly WorkerShape[];
  /**
   * CPU sharing: the hosts (a worker's `host`, else its id) whose cores their running attempts
   * share by processor sharing, n attempts doing work on c cores each at min(1, c / n) of full
   * speed. Attempts on hosts not listed, and every attempt when this is absent, run at full speed.
   */
  readonly hosts?: Readonly<Record<string, HostShape>>;
}

export interface WorkerOutage {
  readonly workerId: string;
  readonly atMs: number;
  /** The worker re-joins (empty, same blocks) at this time; absent: it stays lost. */
  readonly backAtMs?: number;
}

export interface FailureSettings {
  readonly workers?: readonly WorkerOutage[];
  /** Each attempt fails (a task error, at a seeded point of its run) with this probability. */
  readonly attemptFailureProbability?: number;
}

/**
 * When the simulator consults the policy.
 * - 'every-event': after every event (batch), heartbeats included, as the JobTracker does.
 * - 'when-useful': only when capacity was freed, a task became runnable or a worker joined since
 *   the last call, and some task is pending. Exact for policies whose decisions depend on the
 *   snapshot alone and that fill every room they can in one call (FIFO): a call without such a
 *   change returns nothing. Heartbeats then cost nothing at all.
 * - 'when-changed': when capacity was freed, a task became runnable or a worker joined since the
 *   last call, whether or not a task fits at its ideal memory (a memory-elastic policy may grant
 *   less). Heartbeats cost nothing; YARN's per-node heartbeat allocation becomes an allocation at
 *   once wherever capacity was freed (the policy then visits every node with a free slot).
 * - 'auto': what the policy declares (`Policy.consultWhen`): 'every-event' for 'every-event',
 *   'when-changed' for 'after-change', 'when-useful' for 'after-change-if-a-task-fits'.
 */
export type PolicyCallMode = 'auto' | 'every-event' | 'when-useful' | 'when-changed';

/** Model settings shared by a run and its runtime-alone runs. */
export interface SimSettings {
  readonly seed: number;
  /** Default: Hadoop 1's rule, max(3 s, workers / 100 s). */
  readonly heartbeatMs?: number;
  readonly replication: number;
  /** Extra read rate for a rack-local map, MB/s (MB = 2^20 bytes). */
  readonly rackMBps: number;
  /** Extra read rate for an off-rack map, MB/s. */
  readonly offRackMBps: number;
  /** Mis-estimation: each attempt's real work is workMs * (1 + u), u uniform in [-noise, +noise]. */
  readonly noise: number;
  /**
   * Mis-estimation of memory (YARN-ME): a task's true ideal memory is memoryMb * (1 + u), u uniform
   * in [-memoryNoise, +memoryNoise] per task, while policies see memoryMb. As in the paper's
   * simulator it changes elastic runs only: an elastic grant at or above the true ideal runs
   * unpenalized, one below it is penalized against the true ideal; a regular grant (what the task
   * asks for) runs as estimated.
   */
  readonly memoryNoise: number;
  /**
   * Mis-estimation of the penalty (YARN-ME): policies see each task's penalty off by (1 + u), u
   * uniform in [-penaltyNoise, +penaltyNoise] per task (a step model's factor, at least 1; a spill
   * model's extra time, through its disk rate), while runs follow the true model.
   */
  readonly penaltyNoise: number;
  readonly maxAttempts: number;
  /** Utilization sample period. */
  readonly sampleEveryMs: number;
  readonly policyCalls: PolicyCallMode;
  /** Events at the same time go to the policy as one call (trigger: the first event's). */
  readonly batchSameTime: boolean;
  /**
   * Fraction of a job's maps that must be done before its reduces may launch (Hadoop's
   * mapreduce.job.reduce.slowstart.completedmaps, 0.05 in Hadoop 1). A reduce launched before the
   * last map is done holds its slot and starts its work only then. Default 1: reduces launch after
   * the last map, as minimr's JobTracker does.
   */
  readonly reduceSlowStart: number;
  /** Replicas of each MR-cluster output block (FAWKES); default: `replication`. */
  readonly outputReplication?: number;
}

export const DEFAULT_SIM_SETTINGS: SimSettings = {
  seed: 1,
  replication: 3,
  rackMBps: 100,
  offRackMBps: 40,
  noise: 0,
  memoryNoise: 0,
  penaltyNoise: 0,
  maxAttempts: 4,
  sampleEveryMs: 10_000,
  policyCalls: 'auto',
  batchSameTime: true,
  reduceSlowStart: 1,
};
