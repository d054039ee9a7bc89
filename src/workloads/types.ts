/**
 * A workload (jobs with per-task work, memory and penalty model) and a cluster shape (workers with
 * rack, slots, memory and disk rate): what the simulator (src/sim) runs, and what the real-cluster
 * runner (src/experiments) submits to a local cluster of that shape.
 */
import type { InputPlacement, PenaltyModel, PoolView } from '../scheduler/index.js';
import type { SkewSpec } from './skew-spec.js';

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
  /**
   * Its map output keys are skewed and its partitions assigned by a skew strategy
   * (skew-spec.ts; the simulator's model of it: src/sim/skew-model.ts).
   */
  readonly skew?: SkewSpec;
  /** Its runtime on a static reference cluster, when known (FAWKES's JS weight reads it). */
  readonly referenceMs?: number;
  /** Speculative execution for this job (Hadoop's job.speculative); default the simulator's `speculation`. */
  readonly speculative?: boolean;
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
