import type { SerializedError } from '../errors.js';
import type { ReplicaCause } from '../metrics/index.js';
import type { MrClusterRecord, StoredBlock } from './mr-clusters.js';
import type { JobSkew, SkewPlan } from './skew.js';
import type {
  AttemptView,
  InputPlacement,
  JobStats,
  JobView,
  Locality,
  MrClusterState,
  PenaltyModel,
  TaskKind,
  TaskView,
  WorkerView,
} from '../scheduler/index.js';

/**
 * What an engine keeps beside the books on each record (the JobTracker: the submission, a task's
 * split, an attempt's counters; the simulator: a job's spec, an attempt's modelled run). The books
 * never read it: it rides on the record so an engine needs no side tables.
 */
export interface EngineData {
  readonly job: unknown;
  readonly task: unknown;
  readonly attempt: unknown;
  readonly worker: unknown;
}

/**
 * job:     pending -> running -> committing -> succeeded        (failed | killed from any of the first three)
 * task:    pending -> running -> succeeded                      (back to pending when an attempt fails and
 *                                                                 attempts remain, or a map's output is lost)
 *                             -> failed | killed                (the job ended)
 * attempt: running -> succeeded | failed | killed
 */
export type JobState = 'pending' | 'running' | 'committing' | 'succeeded' | 'failed' | 'killed';
export type TaskState = 'pending' | 'running' | 'succeeded' | 'failed' | 'killed';
export type AttemptState = 'running' | 'succeeded' | 'failed' | 'killed';

/** A worker as it registers: the fixed part of its `WorkerView`. */
export type WorkerRegistration = Pick<
  WorkerView,
  'id' | 'host' | 'rack' | 'mapSlots' | 'reduceSlots' | 'memoryMb' | 'diskMBps'
> & {
  /** MR-cluster (FAWKES); "default" when absent. */
  readonly cluster?: string;
};

export interface WorkerRecord<D extends EngineData = EngineData> {
  shape: WorkerRegistration;
  cluster: string;
  alive: boolean;
  usedMap: number;
  usedReduce: number;
  usedMem: number;
  readonly running: Set<AttemptRecord<D>>;
  data: D['worker'];
  /** @internal snapshot cache */
  view: WorkerView | null;
  /** @internal index in the current snapshot's worker list, -1 when not live */
  slot: number;
  /**
   * Since when the worker is suspect (connected but silent past the heartbeat timeout): it gets no
   * new attempts until it is heard from again. Absent: not suspect.
   */
  suspectSince?: number;
  /** Its running attempts were declared lost while it was suspect (task expiry); cleared when it is heard from. */
  tasksExpired?: boolean;
  /** Attempts that succeeded here: with its running attempts' progress, its total progress (speculation.ts). */
  attemptsSucceeded: number;
}

export interface TaskRecord<D extends EngineData = EngineData> {
  readonly id: string;
  readonly job: JobRecord<D>;
  readonly kind: TaskKind;
  readonly index: number;
  /** Ideal memory. */
  readonly memoryMb: number;
  readonly inputBytes: number;
  /** Estimated duration at ideal memory (TaskView.idealDurationMs); absent when unknown. */
  readonly idealDurationMs?: number;
  /** Absent: no profile, the task runs only with its ideal memory. */
  readonly penalty?: PenaltyModel;
  /** Replaced (never mutated) when a replica of the input lands. */
  preferredWorkers: readonly string[];
  preferredRacks: readonly string[];
  /** Replaced (never mutated) when an attempt fails on another worker. */
  failedOnWorkers: readonly string[];
  /**
   * Workers where an attempt of the task failed with EDISKFULL: the books launch it on none of them
   * while another live worker could run it (Hadoop's per-task node blacklist). Replaced, never mutated.
   */
  diskFullOnWorkers: readonly string[];
  /** Maps: replicas the input's upload still owes a policy may place (`InputPlacement`); 0 once the window closed. */
  unplacedReplicas: number;
  state: TaskState;
  attemptsMade: number;
  /** Failures of the task's own code: these count toward the job's `maxAttempts`. */
  failures: number;
  fetchFailures: number;
  /** Maps: the attempt whose output reducers read. Reduces and map-only maps: the committed attempt. */
  successfulAttempt: AttemptRecord<D> | null;
  readonly attempts: AttemptRecord<D>[];
  data: D['task'];
  /** @internal */
  view: TaskView | null;
}

export interface AttemptRecord<D extends EngineData = EngineData> {
  readonly id: string;
  readonly task: TaskRecord<D>;
  readonly worker: WorkerRecord<D>;
  readonly startTime: number;
  /** Memory granted. */
  readonly memoryMb: number;
  /** Granted less than its task's ideal memory (YARN-ME). */
  readonly elastic: boolean;
  readonly locality: Locality;
  /** The job's partition when it was launched (Tyrex). */
  readonly partition: number;
  /** Reduces: the map output partitions it reads (the job's skew assignment). */
  readonly reducePartitions?: readonly number[];
  /** A backup of a slow attempt of its task (speculative execution, speculation.ts). */
  readonly speculative?: boolean;
  /** Maps that succeeded: bytes of each map output partition, as measured. */
  partitionBytes?: readonly number[];
  state: AttemptState;
  finishTime?: number;
  /** 0..1, as last reported. */
  progress: number;
  error?: SerializedError;
  data: D['attempt'];
  /** @internal */
  view: AttemptView | null;
}

export interface RunTotals {
  count: number;
  totalMs: number;
}

export interface MigrationRecord {
  readonly timeMs: number;
  readonly from: number;
  readonly to: number;
  readonly partialSizeMs?: number;
  readonly timerMs?: number;
}

export interface JobRecord<D extends EngineData = EngineData> {
  readonly id: string;
  readonly name: string;
  readonly pool: string;
  readonly weight: number;
  readonly cluster: string;
  readonly submitTime: number;
  readonly referenceMs?: number;
  readonly maxAttempts: number;
  /** Fraction of the maps that must be done before reduces may launch (Hadoop's slow start). */
  readonly reduceSlowStart: number;
  /** Slow attempts of its tasks get backups (speculation.ts); Hadoop's mapreduce.map/reduce.speculative. */
  readonly speculative: boolean;
  /** Runs of its tasks' successful attempts, maps and reduces: how many and their total ms (speculation.ts). */
  readonly doneRuns: { readonly map: RunTotals; readonly reduce: RunTotals };
  readonly inputPlacement?: InputPlacement;
  placementOpen: boolean;
  state: JobState;
  startTime?: number;
  finishTime?: number;
  error?: SerializedError;
  partition: number;
  readonly migrations: MigrationRecord[];
  /** Which partitions each reduce reads; null for a job without reduces or a plan. */
  readonly skew: JobSkew | null;
  readonly maps: TaskRecord<D>[];
  readonly reduces: TaskRecord<D>[];
  /** Pending tasks in index order. */
  readonly pendingMaps: TaskRecord<D>[];
  readonly pendingReduces: TaskRecord<D>[];
  mapsDone: number;
  reducesDone: number;
  readonly running: AttemptRecord<D>[];
  /**
   * The same attempts by task (maps, then reduces, by index; a task's attempts in launch order): the order of
   * JobView.runningAttempts, kept so no view sorts them.
   */
  readonly runningByTask: AttemptRecord<D>[];
  failedAttempts: number;
  killedAttempts: number;
  stats: JobStats;
  data: D['job'];
  /** @internal */
  view: JobView | null;
  /** @internal */
  pendingView: readonly TaskView[] | null;
  /** @internal */
  runningView: readonly AttemptView[] | null;
  /** @internal */
  statsView: JobStats | null;
}

export type { ReplicaCause };

/**
 * What the engine must carry out after a transition, in order. The books have already changed
 * their own state; an effect is the part that needs the world (a socket, a file, an event queue).
 */
export type Effect<D extends EngineData = EngineData> =
  /** Start this attempt on its worker. */
  | { readonly kind: 'launch'; readonly attempt: AttemptRecord<D> }
  /** The attempt has ended in the books (its `state`, `error`); with `tellWorker`, the worker must kill it. */
  | { readonly kind: 'attempt-ended'; readonly attempt: AttemptRecord<D>; readonly tellWorker: boolean }
  /** The attempt's output is the task's: move it into the job's output (reduces and map-only maps). */
  | { readonly kind: 'commit-task'; readonly attempt: AttemptRecord<D> }
  /** A finished map must run again: the output `lostAttempt` wrote is gone (`why`). */
  | {
      readonly kind: 'map-rerun';
      readonly task: TaskRecord<D>;
      readonly lostAttempt: AttemptRecord<D>;
      readonly why: string;
    }
  /** Every map of the job is done (a reduce launched early has been told of every map output). */
  | { readonly kind: 'maps-done'; readonly job: JobRecord<D> }
  /** Every task succeeded: write the job's success marker, then call `jobCommitted`. */
  | { readonly kind: 'commit-job'; readonly job: JobRecord<D> }
  /** The job reached `succeeded`, `failed` or `killed` (its `error` says why). */
  | { readonly kind: 'job-ended'; readonly job: JobRecord<D> }
  /** A job killed or failed while its commit was being written: remove what the commit wrote. */
  | { readonly kind: 'discard-output'; readonly job: JobRecord<D> }
  /** Copy the input of `task` onto `workerId`, then call `replicaLanded` (or `replicaFailed`). */
  | {
      readonly kind: 'replicate';
      readonly task: TaskRecord<D>;
      readonly workerId: string;
      readonly cause: ReplicaCause;
      readonly crossRack: boolean;
    }
  | { readonly kind: 'migrated'; readonly job: JobRecord<D>; readonly migration: MigrationRecord }
  | { readonly kind: 'worker-moved'; readonly worker: WorkerRecord<D>; readonly from: string }
  /** An MR-cluster changed state ('new': just requested; 'released': deactivated, its nodes back in the pool). */
  | {
      readonly kind: 'mr-cluster';
      readonly cluster: MrClusterRecord;
      readonly from: MrClusterState | 'new';
      readonly to: MrClusterState | 'released';
    }
  /** Load the cluster's input onto its core nodes, then call `mrClusters.inputLoaded`. */
  | {
      readonly kind: 'load-input';
      readonly cluster: MrClusterRecord;
      readonly bytes: number;
      readonly workerIds: readonly string[];
    }
  /**
   * Copy an output block off a node leaving its MR-cluster ('drain': delayed preemption restores
   * its replication; 'last-replica': the node held the only one), then call `mrClusters.blockCopied`
   * (or `blockCopyFailed`). The node leaves once its last copy has landed.
   */
  | {
      readonly kind: 'replicate-block';
      readonly block: StoredBlock;
      readonly fromWorkerId: string;
      readonly toWorkerId: string;
      readonly cause: 'drain' | 'last-replica';
    }
  /** Save the deactivating cluster's output to persistent storage, then call `mrClusters.outputSaved`. */
  | { readonly kind: 'save-output'; readonly cluster: MrClusterRecord; readonly bytes: number };

/** A job as an engine hands it to the books. */
export interface JobPlan<D extends EngineData = EngineData> {
  readonly id: string;
  readonly name: string;
  readonly pool?: string;
  readonly weight?: number;
  readonly cluster?: string;
  /** Its runtime on a static reference cluster, when known (FAWKES's JS weight reads it). */
  readonly referenceMs?: number;
  readonly maxAttempts?: number;
  readonly reduceSlowStart?: number;
  /** Slow attempts get backups; default the books' `speculation.enabled`. */
  readonly speculative?: boolean;
  readonly inputPlacement?: InputPlacement;
  /** How its map output is partitioned among its reduces; absent: one partition per reduce, by hash. */
  readonly skew?: SkewPlan;
  readonly maps: readonly TaskPlan<D>[];
  readonly reduces: readonly TaskPlan<D>[];
  readonly data: D['job'];
}

export interface TaskPlan<D extends EngineData = EngineData> {
  /** Ideal memory: what a regular (not elastic) launch grants. */
  readonly memoryMb: number;
  readonly inputBytes: number;
  /** Estimated duration at ideal memory, ms, for memory-elastic policies; absent when unknown. */
  readonly idealDurationMs?: number;
  /** How the task slows with less memory; absent: it runs only with its ideal memory. */
  readonly penalty?: PenaltyModel;
  /** Workers holding the input (maps); empty when it has none stored. */
  readonly preferredWorkers: readonly string[];
  /** Their racks; derived from the workers the books know when absent. */
  readonly preferredRacks?: readonly string[];
  readonly data: D['task'];
}

/** What a successful attempt measured, for the job's running totals (`JobView.stats`). */
export interface AttemptMeasures {
  /** Maps: split bytes read; reduces: shuffle bytes read. */
  readonly inputBytes: number;
  readonly outputBytes: number;
  /** The attempt's own working time (without process start-up); default finish - start. */
  readonly taskMs?: number;
  /** Maps: bytes of each output partition, for the job's skew assignment. */
  readonly partitionBytes?: readonly number[];
}
