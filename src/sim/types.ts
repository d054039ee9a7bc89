/**
 * How the simulator runs a workload on a cluster shape (src/workloads): its model settings, the
 * failures it injects, and when it consults the policy.
 */
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
  /**
   * Speculative execution (LATE, src/books/speculation.ts) for jobs that do not say (`JobSpec.speculative`).
   * Off by default here, unlike the JobTracker: the papers' simulations (DSS, the Tyrex, FAIR and FAWKES
   * setups) ran none, and a YARN-ME trace's penalized attempts would otherwise read as slow ones.
   */
  readonly speculation: boolean;
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
  speculation: false,
};
