/**
 * The scheduler seam. A policy is a pure object: it gets a read-only snapshot of the cluster, with the
 * current time in it, and returns decisions. It never does I/O, never sets timers, never reads a clock,
 * so the JobTracker and the discrete-event simulator can drive the very same policy object and be
 * compared decision by decision. Whatever state a policy keeps between calls (delay-scheduling waits,
 * partitions, timers) must be derived from snapshots only.
 */

export type TaskKind = 'map' | 'reduce';
export type Locality = 'node' | 'rack' | 'any';

/**
 * A node's role in its MR-cluster (FAWKES): a core node runs tasks and stores the cluster's input
 * and output blocks; a transient node runs tasks and stores nothing; a transient-core node runs
 * tasks and stores only the output it produces.
 */
export type NodeKind = 'core' | 'transient' | 'transient-core';

/**
 * How a task's duration grows when it is granted less memory than its ideal (YARN-ME, docs/specs/yarn-me.md;
 * the functions are in penalty.ts). Below `minFraction` of its ideal memory (10% when the model
 * names none) a task cannot run at all: the books refuse such a grant.
 */
export type PenaltyModel =
  /** Insensitive to memory. */
  | { readonly kind: 'none'; readonly minFraction?: number }
  /** Any under-sized grant takes `factor` times as long (mappers; the YARN-ME simulator's 1.5x / 3x). */
  | { readonly kind: 'step'; readonly factor: number; readonly minFraction: number }
  /** (ideal / granted) ^ exponent times as long (the paper's simulator's POWER1, POWER2 and SQUAREROOT). */
  | { readonly kind: 'power'; readonly exponent: number; readonly minFraction: number }
  /**
   * T(m) = T + spilledBytes(m) / diskRate, the YARN-ME model. The buffer is the grant minus
   * `overheadMb`. rule 'map': any spill means one extra pass over all of `bufferBytes` (a step);
   * rule 'reduce': every full buffer is spilled, buffer * (ceil(bytes / buffer) - 1), a sawtooth.
   * diskRate is `diskMBps` if given, else the worker's measured disk rate.
   */
  | {
      readonly kind: 'spill';
      readonly rule: 'map' | 'reduce';
      readonly bufferBytes: number;
      readonly overheadMb: number;
      readonly minFraction: number;
      readonly diskMBps?: number;
    };

export interface WorkerView {
  readonly id: string;
  readonly host: string;
  readonly rack: string;
  readonly mapSlots: number;
  readonly reduceSlots: number;
  readonly memoryMb: number;
  readonly freeMapSlots: number;
  readonly freeReduceSlots: number;
  readonly freeMemoryMb: number;
  /** Measured by the worker at start-up, MB/s; 0 when unknown. */
  readonly diskMBps: number;
  /**
   * The MR-cluster the worker currently belongs to (FAWKES moves workers between clusters with
   * `move-node`); "default" on a cluster that is not split.
   */
  readonly cluster: string;
  /** Its kind in its MR-cluster; absent outside MR-clusters (see `MrClusterView`). */
  readonly nodeKind?: NodeKind;
  /** Bytes of MR-cluster output blocks it stores; absent outside MR-clusters. */
  readonly storedBytes?: number;
  /**
   * Set while the worker drains out of its MR-cluster on its way to this cluster: the blocks a
   * shrink must copy off it are being copied. It takes no launches meanwhile.
   */
  readonly leavingFor?: string;
}

export interface AttemptView {
  readonly id: string;
  readonly taskId: string;
  readonly jobId: string;
  readonly kind: TaskKind;
  readonly workerId: string;
  readonly startTime: number;
  /** 0..1 */
  readonly progress: number;
  /** Memory granted to the attempt. */
  readonly memoryMb: number;
  /** Its task's ideal memory; an elastic attempt was granted less. */
  readonly idealMemoryMb: number;
  /** Launched with less than its ideal memory (YARN-ME): it spills, and runs longer by its penalty model. */
  readonly elastic: boolean;
  /** Its task's estimated duration at ideal memory, ms; absent when unknown (see TaskView). */
  readonly idealDurationMs?: number;
  /** Its task's penalty model; absent when unknown. */
  readonly penalty?: PenaltyModel;
  /** Where the input the attempt reads sits, relative to its worker: 'node' = on that worker. */
  readonly locality: Locality;
  /** Workers holding a replica of the attempt's input (maps only). */
  readonly inputWorkers: readonly string[];
  /** Input bytes the attempt reads (maps: split length; reduces: 0). */
  readonly inputBytes: number;
}

export interface TaskView {
  readonly id: string;
  readonly jobId: string;
  readonly kind: TaskKind;
  readonly index: number;
  /** Workers holding a replica of the task's input (maps only; empty when it has no input). */
  readonly preferredWorkers: readonly string[];
  /** Racks of those workers. */
  readonly preferredRacks: readonly string[];
  /** Memory the task asks for at its ideal size. */
  readonly memoryMb: number;
  /** Input bytes (maps: split length; reduces: 0 until known). */
  readonly inputBytes: number;
  /**
   * Estimated duration at ideal memory, ms (from a profile or the workload); absent when unknown.
   * Memory-elastic policies (YARN-ME) predict durations from it and `penalty`.
   */
  readonly idealDurationMs?: number;
  /**
   * How the task's duration grows with less memory than ideal; absent when the task has no
   * profile: it then runs only with its ideal memory (the books refuse an elastic grant).
   */
  readonly penalty?: PenaltyModel;
  /** Workers on which an attempt of this task already failed: avoid them when another will do. */
  readonly failedOnWorkers: readonly string[];
  /**
   * Maps: replicas of the input its upload still owes and a policy may place now (see
   * `InputPlacement`). A `replicate` for such a task writes an owed replica where the policy
   * chooses; for any other task it makes an extra copy. Absent: 0.
   */
  readonly unplacedReplicas?: number;
}

/**
 * A job whose input is a user's private data set that arrives with it (improved FAIR's scenario):
 * the upload has written some replicas of each block and owes the rest up to `replication`. For
 * `windowMs` after the job's submission a policy may choose where the owed replicas go
 * (`replicate`); when the window closes, the rest are written on a rack-mate of an existing
 * replica, as a store's default placement keeps a second replica near the first.
 */
export interface InputPlacement {
  readonly replication: number;
  readonly windowMs: number;
}

/**
 * What a job's finished work has measured so far: policies derive job character (improved FAIR),
 * partial sizes (Tyrex) and task-time estimates from these running totals, never from clocks.
 */
export interface JobStats {
  /** Sum of the runtimes (ms) of the job's successful map attempts. */
  readonly completedMapMs: number;
  /** Sum of the runtimes (ms) of the job's successful reduce attempts. */
  readonly completedReduceMs: number;
  /** Input bytes read by the successful map attempts. */
  readonly mapInputBytes: number;
  /** Map output bytes (serialized, before compression) written by the successful map attempts. */
  readonly mapOutputBytes: number;
}

export interface JobView {
  readonly id: string;
  readonly name: string;
  /** Pool (queue) the job was submitted to; "default" when none was given. */
  readonly pool: string;
  /** Weight of the job inside its pool (FAIR shares by weight); 1 unless the submitter said. */
  readonly weight: number;
  /**
   * Partition the job is scheduled in (Tyrex); 0 until a policy migrates it. The runtime only
   * stores it and records migrations: what a partition means is the policy's business.
   */
  readonly partition: number;
  /** MR-cluster the job runs in (FAWKES); "default" on a cluster that is not split. */
  readonly cluster: string;
  readonly submitTime: number;
  /** Its runtime on a static reference cluster, when the submitter knows it (FAWKES's JS weight). */
  readonly referenceMs?: number;
  readonly mapsTotal: number;
  readonly mapsCompleted: number;
  readonly reducesTotal: number;
  readonly reducesCompleted: number;
  /** Tasks ready to run now, in task-index order (reduces appear only once all maps are done). */
  readonly pendingTasks: readonly TaskView[];
  readonly runningAttempts: readonly AttemptView[];
  readonly stats: JobStats;
}

/**
 * A pool (queue) of jobs with its configured share. Jobs of pools not listed belong to a pool with
 * no minimum share, weight 1 and fair sharing inside.
 */
export interface PoolView {
  readonly name: string;
  /** Minimum share in map slots and in reduce slots (FAIR preempts to give it). */
  readonly minMapSlots: number;
  readonly minReduceSlots: number;
  /** Share of the capacity left after minimum shares, relative to the other pools. */
  readonly weight: number;
  /** How the pool's slots are shared among its own jobs. */
  readonly mode: 'fair' | 'fifo';
}

export type SchedulingTrigger =
  | { readonly kind: 'heartbeat'; readonly workerId: string }
  | { readonly kind: 'job-submitted'; readonly jobId: string }
  | { readonly kind: 'attempt-finished'; readonly attemptId: string; readonly jobId: string }
  | { readonly kind: 'worker-joined'; readonly workerId: string }
  | { readonly kind: 'worker-lost'; readonly workerId: string }
  | { readonly kind: 'tick' };

/**
 * queued: waiting in the global FIFO queue for its minimum share to fit; activating: admitted,
 * gathering its minimum share of core nodes and loading its input; active: running jobs;
 * deactivating: its output is being saved before its nodes are released.
 */
export type MrClusterState = 'queued' | 'activating' | 'active' | 'deactivating';

/** An MR-cluster (FAWKES) as the books keep it; its nodes are the workers naming it. */
export interface MrClusterView {
  readonly name: string;
  readonly state: MrClusterState;
  /** Minimum share: core nodes it keeps while it has jobs. */
  readonly minNodes: number;
  readonly requestedAt: number;
  /** When it became active; absent before. */
  readonly activeSince?: number;
  /** Jobs and tasks of the cluster completed since it was requested. */
  readonly jobsCompleted: number;
  readonly tasksCompleted: number;
  /** Bytes of output blocks it stores (each block counted once), and what its storing nodes can hold. */
  readonly storedBytes: number;
  readonly storageBytes: number;
}

export interface ClusterSnapshot {
  /** Milliseconds; wall clock on the real cluster, simulated time in the simulator. */
  readonly now: number;
  readonly trigger: SchedulingTrigger;
  /** Live workers only. */
  readonly workers: readonly WorkerView[];
  /** Active jobs in submission order. */
  readonly jobs: readonly JobView[];
  /** Configured pools, in configuration order. */
  readonly pools: readonly PoolView[];
  /** MR-clusters (FAWKES) in request order: the queued, then the admitted; absent when none was ever requested. */
  readonly mrClusters?: readonly MrClusterView[];
  /**
   * Elastic grants (below a task's ideal memory) are whole multiples of this, MB; absent:
   * DEFAULT_MEMORY_STEP_MB (100, as in the YARN-ME paper's simulator). See memory.ts.
   */
  readonly memoryStepMb?: number;
}

export type Decision =
  | {
      readonly kind: 'launch';
      readonly taskId: string;
      readonly jobId: string;
      readonly workerId: string;
      /**
       * Memory granted; defaults to the task's `memoryMb` (its ideal). Less than ideal is an
       * elastic grant: at least the task's minimum (10% of ideal unless its penalty model says),
       * a whole number of memory steps, and only for a task with a penalty model.
       */
      readonly memoryMb?: number;
      /** Whether the grant is elastic; defaults to `memoryMb` < ideal, and must agree with it. */
      readonly elastic?: boolean;
      readonly locality: Locality;
      /**
       * The grant is held from now, but the task's work starts this much later (ms, default 0): YARN
       * launches a container the RM allocated only through its ApplicationMaster's next heartbeat. The
       * simulator models the wait; the JobTracker, which has no ApplicationMaster, starts at once.
       */
      readonly startDelayMs?: number;
    }
  | { readonly kind: 'kill'; readonly attemptId: string; readonly reason: string }
  /**
   * Moves a job to another partition (Tyrex). Work-conserving: the runtime keeps every completed
   * output and lets running attempts finish; only where its remaining tasks run changes, and that
   * is the policy's to decide. The runtime records the migration with the figures given here.
   */
  | {
      readonly kind: 'migrate';
      readonly jobId: string;
      readonly toPartition: number;
      /** The job's partial size (ms of completed task time in its old partition) that triggered it. */
      readonly partialSizeMs?: number;
      /** The timer (static or dynamic) the partial size passed. */
      readonly timerMs?: number;
    }
  /**
   * Places one more replica of a pending map task's input on a worker (improved FAIR's private data
   * placement: the node freed by a kill gets the starved job's data, so its tasks run data-local).
   * Takes effect for later snapshots; the copy counts as data moved.
   */
  | { readonly kind: 'replicate'; readonly taskId: string; readonly jobId: string; readonly workerId: string }
  /**
   * Moves a worker to another MR-cluster (FAWKES). Outside MR-clusters its running attempts finish
   * where they are. A node leaving an MR-cluster is shrunk by `preemption` (default 'instant'): its
   * running attempts are killed and re-run elsewhere in that cluster (not counted as failures);
   * 'instant' moves it at once unless it holds the last replica of a block (those are copied
   * first), 'delayed' first copies every block it holds onto the cluster's remaining nodes. In the
   * new MR-cluster it is a `nodeKind` node (default: core while the cluster is below its minimum
   * share, else transient).
   */
  | {
      readonly kind: 'move-node';
      readonly workerId: string;
      readonly toCluster: string;
      readonly nodeKind?: NodeKind;
      readonly preemption?: 'instant' | 'delayed';
    }
  /** Deactivates an idle MR-cluster: its output is saved, then its nodes are released. */
  | { readonly kind: 'deactivate-cluster'; readonly cluster: string };

/** What a policy that balances MR-clusters measured at the end of one interval (FAWKES). */
export interface BalanceSample {
  readonly timeMs: number;
  /** Per active MR-cluster: its weight, its mean share of the nodes over the interval and its discrimination D_i. */
  readonly clusters: readonly {
    readonly name: string;
    readonly weight: number;
    readonly share: number;
    readonly discrimination: number;
  }[];
  /** Var(D) = E[D^2]. */
  readonly globalDiscrimination: number;
  /** Whether allocations were changed toward the weights (Var(D) above the threshold). */
  readonly reconfigured: boolean;
}

/** One table of a policy's own state, as the web UI shows it. */
export interface PolicyStateTable {
  readonly title: string;
  readonly columns: readonly string[];
  readonly rows: ReadonlyArray<ReadonlyArray<string | number>>;
}

/** What a policy keeps between decisions and how it sees the cluster now, for people (`describeState`). */
export interface PolicyState {
  /** Settings and facts in a sentence each. */
  readonly notes: readonly string[];
  readonly tables: readonly PolicyStateTable[];
}

/**
 * When an engine must consult a policy for its decisions to come out as if it had been consulted at
 * every event. An engine may always consult more often (the JobTracker consults at every trigger);
 * a simulator of thousands of nodes consults as seldom as the policy allows, as heartbeats are most
 * of its events.
 */
export type Consultation =
  /**
   * Time alone may change its decisions (a locality wait or a starvation timeout running out, an
   * interval ending, a running attempt's remaining work shrinking): consult it at every event,
   * heartbeats included. The safe choice, and the slowest.
   */
  | 'every-event'
  /**
   * Its decisions depend on the snapshot's capacity, runnable tasks and workers, and one call does
   * all it can: consult it only after capacity was freed, a task became runnable or a worker joined
   * since the last call. YARN and YARN-ME declare it: their heartbeat-by-heartbeat allocation then
   * becomes one allocation wherever capacity was freed, which the paper-scale sweeps need.
   */
  | 'after-change'
  /**
   * As 'after-change', and it launches only tasks that fit a worker at their ideal memory (FIFO
   * without a locality wait): consult it only after such a change, and only when some runnable task
   * fits some worker's free slot and memory. A call it skips would have decided nothing.
   */
  | 'after-change-if-a-task-fits'
  /**
   * It allocates on the node whose heartbeat it is (YARN's way; YARN-shaped policies with allocation at
   * heartbeats): consult it at every node heartbeat, each heartbeat a call of its own even when events
   * fall at the same time, and at every other event.
   */
  | 'at-heartbeats';

/** A job that can never run, as a policy explains it (`Policy.stuckJobs`). */
export interface StuckJob {
  readonly jobId: string;
  /** One sentence: what it waits for and what holds it. */
  readonly reason: string;
}

export interface Policy {
  readonly name: string;
  /** When the engine must consult it (see `Consultation`); engines read this, never the policy's class. */
  readonly consultWhen: Consultation;
  /**
   * Whose progress it reads: 'all' attempts' (the default), or only that of attempts whose task has
   * no duration estimate ('unestimated': it predicts the others' ends from their estimates). An
   * engine may leave the other attempts' progress as last reported: the simulator then makes no
   * progress reports for them, most of its work on large clusters.
   */
  readonly readsProgress?: 'all' | 'unestimated';
  schedule(snapshot: ClusterSnapshot): readonly Decision[];
  /**
   * Its own state (FAIR's shares, Tyrex's partitions and timers, YARN-ME's memory and elastic
   * attempts, FAWKES' MR-clusters and weights) over a snapshot, for the web UI. Pure like
   * `schedule`, and changes nothing: calling it never alters a later decision.
   */
  describeState?(snapshot: ClusterSnapshot): PolicyState;
  /**
   * Asked by an engine when nothing runs, no job or worker is due to arrive and nothing has changed for
   * two heartbeat intervals: the jobs that can never run from here and why (a deadlock), or an empty
   * list when the policy still has something under way (an ApplicationMaster about to start). An engine
   * ends the run on a non-empty answer instead of waiting out its stall limit. Pure like `schedule`.
   */
  stuckJobs?(snapshot: ClusterSnapshot): readonly StuckJob[];
  /** Policies that balance MR-clusters report each interval here; engines copy it into the run record. */
  readonly balanceHistory?: readonly BalanceSample[];
  /**
   * The options it runs with, by name, every one it takes filled in (given or default): a policy
   * `createPolicy` makes without options holds here the defaults `policyHelp()` lists. Absent for a
   * policy that takes none.
   */
  readonly options?: Readonly<Record<string, unknown>>;
}
