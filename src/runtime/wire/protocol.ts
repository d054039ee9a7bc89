/**
 * The wire protocol between JobTracker, workers (TaskTrackers), task processes and clients.
 * Every frame is one msgpack-encoded object `{ v: PROTOCOL_VERSION, type, ... }` in a binary
 * WebSocket message. Requests carry an `id`; the answer is a `reply` with `re` = that id.
 * Every message type is declared here once; `MESSAGE_SHAPES` (frame-codec.ts) checks them at runtime.
 */
import type { JsonObject, JsonValue } from '../../api/json.js';
import type { SerializedError } from '../../errors.js';
import type { BlockInfo, BlockVerification, DatanodeAddress } from '../../storage/index.js';
import type { MapOutputLocation } from '../../shuffle/index.js';
import type { SkewStatus } from '../../books/index.js';
import type { SketchWire, SkewStrategy } from '../../skew/index.js';
import type { InputPlacement, PenaltyModel } from '../../scheduler/index.js';

export const PROTOCOL_VERSION = 1;
/** Control frames are small; bulk data goes over the workers' HTTP data ports. */
export const MAX_FRAME_BYTES = 16 * 1024 * 1024;

export type TaskKind = 'map' | 'reduce';
export type Counters = Record<string, number>;

export type SerializedInputFormat =
  | { kind: 'text' }
  | { kind: 'fixed'; recordLength: number }
  | { kind: 'generated'; splits: JsonValue[] };

export type SerializedOutputFormat = { kind: 'text'; separator: string } | { kind: 'records' };

/**
 * Per-job settings, Hadoop-style keys. Shuffle buffers are the ideal sizes; a scheduler that grants
 * an attempt less memory than ideal shrinks that attempt's buffer (and it spills more).
 */
export interface JobConf {
  /** Map-side sort buffer (data + record metadata), bytes. Default 64 MiB. */
  'shuffle.map.bufferBytes'?: number;
  /** Fraction of the map buffer that triggers a spill. Default 0.8. */
  'shuffle.map.spillPercent'?: number;
  /**
   * Fraction of the map buffer given to the combining hash table of a job with a combiner (the sort
   * buffer gets the rest); 0 combines at spills only. Default 0.5.
   */
  'shuffle.map.hashCombinePercent'?: number;
  /** Reduce-side shuffle buffer, bytes of decompressed map output. Default 64 MiB. */
  'shuffle.reduce.bufferBytes'?: number;
  /** Most runs merged at once (map-side spills and reduce-side runs). Default 10. */
  'shuffle.merge.factor'?: number;
  /**
   * Most sorted runs per partition in a map's output, 1 or 2: with 2, a map whose output took two
   * generations of its sort buffer publishes both unmerged, and the reduces merge them. Default 2.
   */
  'shuffle.map.outputRuns'?: number;
  /** Frame codec of map outputs and the reduce side's runs (map-side spills are uncompressed). Default lz4. */
  'shuffle.compress'?: 'lz4' | 'none';
  /** Map outputs a reducer fetches at once. Default 5. */
  'shuffle.parallelCopies'?: number;
  /** Run only the first N map tasks (for profiling a job on a sample of its input). */
  'job.maxMaps'?: number;
  /** Replicas of each block of the job's output (Hadoop's dfs.replication for the job; Sort writes 1). Default: the JobTracker's replication. */
  'job.outputReplication'?: number;
  /**
   * Fraction of the maps that must be done before the job's reduces may launch (Hadoop's
   * mapreduce.job.reduce.slowstart.completedmaps): a reduce launched early fetches each map output
   * as its map finishes, so the shuffle overlaps the map phase. In [0, 1]; the books' rule
   * (src/books), the same the simulator runs. 'simple' skew jobs always wait for every map.
   */
  'job.reduceSlowStart'?: number;
  /**
   * How map output partitions are given to reducers (see src/skew): 'hash' (partition p to reducer
   * p mod R, today's partitioning), 'simple' (largest partitions first onto the reducer expected to
   * finish first, sizes measured by the maps), 'cms' (count-min sketch of a sample of the input: the
   * best of its rows' hashes and Simple assignments). Default 'hash'.
   */
  'skew.strategy'?: SkewStrategy;
  /** Virtual partitions per reducer: maps write P = factor x R partitions. Default 1. */
  'skew.partitionFactor'?: number;
  /** 'cms': rows of the sketch (independent hashes to choose from). Default 4. */
  'skew.sketchDepth'?: number;
  /** 'cms': input records the client samples (and runs `map` on) to build the sketch. Default 20000. */
  'skew.sampleRecords'?: number;
  /** 'cms': input splits the sample is taken from, evenly spread. Default 10. */
  'skew.sampleSplits'?: number;
}


export const SKEW_CONF_DEFAULTS = {
  'skew.strategy': 'hash',
  'skew.partitionFactor': 1,
  'skew.sketchDepth': 4,
  'skew.sampleRecords': 20_000,
  'skew.sampleSplits': 10,
} as const;

/** The count-min sketch a client built from a sample of the input, for 'cms' jobs. */
export interface SkewSample {
  sketch: SketchWire;
  /** Client time spent sampling the input, running `map` on it and building the sketch. */
  sampleMs: number;
  /** Input records sampled and map output records they gave. */
  inputRecords: number;
  outputRecords: number;
}


export const JOB_CONF_DEFAULTS = {
  'shuffle.map.bufferBytes': 64 * 1024 * 1024,
  'shuffle.map.spillPercent': 0.8,
  'shuffle.map.hashCombinePercent': 0.5,
  'shuffle.reduce.bufferBytes': 64 * 1024 * 1024,
  'shuffle.merge.factor': 10,
  'shuffle.map.outputRuns': 2,
  'shuffle.compress': 'lz4',
  'shuffle.parallelCopies': 5,
  'job.reduceSlowStart': 1,
} as const;

/** Memory a task process needs besides its shuffle buffer (Node itself, code, I/O buffers), MiB. */
export const TASK_OVERHEAD_MB = 100;

/** The shuffle settings of one attempt, after the scheduler's memory grant. */
export interface AttemptShuffleSettings {
  mapBufferBytes: number;
  spillPercent: number;
  /** Share of mapBufferBytes for the combining hash table (jobs with a combiner). */
  hashCombinePercent: number;
  reduceBufferBytes: number;
  mergeFactor: number;
  mapOutputRuns: number;
  codec: 'lz4' | 'none';
  parallelCopies: number;
}

export interface JobSubmission {
  name: string;
  /** File name the module came from (for messages) and its JavaScript source. */
  moduleName: string;
  moduleSource: string;
  inputPaths: string[];
  outputPath: string;
  overwrite: boolean;
  reducers: number;
  params: Record<string, JsonValue>;
  shared: JsonObject;
  input: SerializedInputFormat;
  output: SerializedOutputFormat;
  pool?: string;
  /** Share of the job inside its pool relative to the pool's other jobs (FAIR); default 1. */
  weight?: number;
  /** The MR-cluster (FAWKES) the job runs on; its input and output live under /mrc/NAME/. */
  mrCluster?: string;
  maxAttempts?: number;
  mapMemoryMb?: number;
  reduceMemoryMb?: number;
  conf?: JobConf;
  /** 'cms' jobs: the sketch of a sample of the map output, built by the client. */
  skewSample?: SkewSample;
  /** The input is a private data set still owed replicas a policy may place (improved FAIR). */
  inputPlacement?: InputPlacement;
}

/** A file input split (storage) or a generated one (split value). */
export type TaskInput =
  | { kind: 'file'; path: string; start: number; length: number; fileLength: number }
  | { kind: 'generated'; value: JsonValue }
  | { kind: 'none' };

export interface AttemptSpec {
  jobId: string;
  jobName: string;
  /** The job's shuffle secret: its maps' worker serves their output only to fetches hashed with it; its reduces hash with it. */
  shuffleSecret: string;
  /** Content hash of the job module (`jobModuleHash`): workers cache modules, and reuse task processes, by it. */
  moduleHash: string;
  taskId: string;
  attemptId: string;
  kind: TaskKind;
  index: number;
  input: TaskInput;
  inputFormat: SerializedInputFormat;
  outputFormat: SerializedOutputFormat;
  /** Where a map-only map or a reduce writes its part file before commit. */
  outputTempPath: string;
  reducers: number;
  params: Record<string, JsonValue>;
  shared: JsonObject;
  /**
   * Reduces: where the maps' outputs are, those done at launch; a reduce launched before the last
   * map (slow start) is told of the others as they finish (`MapOutputsChanged`).
   */
  mapOutputs: MapOutputAnnouncement[];
  /** Reduces: the job's map count, i.e. how many map outputs the reduce reads. */
  mapsTotal: number;
  /** Memory granted; below `idealMemoryMb` the attempt is elastic and `shuffle` has the smaller buffer it implies. */
  memoryMb: number;
  idealMemoryMb: number;
  elastic: boolean;
  shuffle: AttemptShuffleSettings;
  /** Maps: partitions to write (P = partitionFactor x reducers); absent means `reducers`. */
  mapPartitions?: number;
  /** Maps of 'cms' jobs: partition with murmur3 under this seed (the chosen sketch row), not the default. */
  partitionSeed?: number;
  /** Reduces: the partitions this reduce reads and merges; absent means [index]. */
  reducePartitions?: number[];
  /** Replicas of each output block (`job.outputReplication`); absent: the JobTracker's default. */
  outputReplication?: number;
}

export type JobState = 'pending' | 'running' | 'succeeded' | 'failed' | 'killed';
export type AttemptState = 'running' | 'succeeded' | 'failed' | 'killed';

export interface JobStatus {
  jobId: string;
  name: string;
  /** The user who submitted it. */
  user: string;
  pool: string;
  state: JobState;
  submitTime: number;
  startTime?: number;
  finishTime?: number;
  mapsTotal: number;
  mapsCompleted: number;
  reducesTotal: number;
  reducesCompleted: number;
  /** 0..1, including running attempts' progress. */
  mapProgress: number;
  reduceProgress: number;
  counters: Counters;
  outputPath: string;
  error?: SerializedError;
  failedAttempts: number;
  killedAttempts: number;
  /** Partition the job is in now and its moves between partitions (Tyrex), oldest first. */
  partition: number;
  migrations: { time: number; from: number; to: number; partialSizeMs?: number; timerMs?: number }[];
  /** Partition assignment (virtual partitions, skew strategy); absent for map-only jobs. */
  skew?: SkewStatus;
  /** The profile the job's tasks were planned with (YARN-ME): their ideal durations and penalty models come from it. */
  profile: ProfileUse;
  /** Attempts launched with less than their task's ideal memory. */
  elasticAttempts: number;
}

/**
 * Whether a job's tasks got ideal durations and penalty models from the profile of its name:
 * 'none' (no profile: the job runs regular), 'rejected' (absurd: it runs regular, `reason` says
 * why), 'used' (with the fit of each phase the profile has).
 */
export type ProfileUse =
  | { readonly state: 'none' }
  | { readonly state: 'rejected'; readonly reason: string }
  | { readonly state: 'used'; readonly map?: PhaseFitSummary; readonly reduce?: PhaseFitSummary };

/** A phase's fit, summed up. */
export interface PhaseFitSummary {
  /** Attempts the profile holds for the phase. */
  readonly attempts: number;
  /** Ideal duration of a task of the job's mean input, ms. */
  readonly idealDurationMs: number;
  /** Memory with which such a task does not spill: the buffer it needs + the task overhead, MB. */
  readonly neededMemoryMb: number;
  /** Fitted disk rate, MB/s; absent when none was fitted (no under-sized run was slower): the worker's own is used. */
  readonly diskMBps?: number;
  /** The penalty model's kind: 'spill', or 'none' for tasks that buffer nothing (map-only maps). */
  readonly penalty: PenaltyModel['kind'];
}

/** Attempts of one phase of a job that ran with the same shuffle buffer; every figure but `bufferMiB` is a sum over them. */
export interface BufferBucket {
  readonly bufferMiB: number;
  readonly attempts: number;
  readonly taskMs: number;
  /** Input bytes the attempts stand for (maps: their splits; reduces: the job's input / reducers). */
  readonly inputBytes: number;
  /** Buffer bytes with which each would not have spilled. */
  readonly needBytes: number;
  readonly spilledBytes: number;
}

/** What the JobTracker keeps of a recurring job (src/runtime/job-profile.ts). */
export interface JobProfile {
  /** The job name (`defineJob({ name })`): runs of the same name are one recurring job. */
  readonly job: string;
  readonly updatedAt: number;
  /** Successful runs recorded, and `minimr profile` results imported. */
  readonly runs: number;
  readonly imports: number;
  readonly map: readonly BufferBucket[];
  readonly reduce: readonly BufferBucket[];
}

/** One attempt as `minimr job attempts` and the profiler see it. */
export interface AttemptSummary {
  attemptId: string;
  taskId: string;
  kind: TaskKind;
  workerId: string;
  state: AttemptState;
  startTime: number;
  finishTime?: number;
  /** Memory granted. */
  memoryMb: number;
  /** The task's ideal memory: `memoryMb` below it means an elastic (under-sized) attempt. */
  idealMemoryMb: number;
  elastic: boolean;
  /** Where the attempt's input was relative to its worker when it was launched. */
  locality: 'node' | 'rack' | 'any';
  /** Input bytes of the task (maps: split length; reduces: 0). */
  inputBytes: number;
  counters: Counters;
  error?: SerializedError;
}

export interface WorkerStatus {
  workerId: string;
  host: string;
  dataPort: number;
  rack: string;
  mapSlots: number;
  reduceSlots: number;
  memoryMb: number;
  runningAttempts: number;
  lastHeartbeat: number;
}

export interface AttemptProgress {
  attemptId: string;
  progress: number;
  counters: Counters;
}

/** A map output a reduce may fetch, with its records in the reduce's partitions (for progress). */
export interface MapOutputAnnouncement extends MapOutputLocation {
  records: number;
}

/** A map output that is gone: the attempt that wrote it no longer holds it. */
export interface LostMapOutput {
  mapIndex: number;
  attemptId: string;
}

/** What a map attempt tells the JobTracker about its output (sizes drive later skew handling). */
export interface MapOutputSummary {
  partitionBytes: number[];
  partitionRecords: number[];
}

/**
 * The NameNode operations a connection may call, with how many arguments each takes: the JobTracker
 * passes that many of those sent, then the caller it authenticated (never one the peer sent).
 */
export const NAMENODE_ARITY = {
  mkdir: 2,
  stat: 1,
  list: 1,
  remove: 2,
  rename: 2,
  create: 2,
  allocateBlock: 2,
  commitBlock: 2,
  complete: 1,
  abandon: 1,
  getBlocks: 2,
  reportBadReplica: 2,
  chmod: 2,
  chown: 4,
} as const;
export const NAMENODE_OPS = Object.keys(NAMENODE_ARITY) as (keyof typeof NAMENODE_ARITY)[];
export type NamenodeOp = keyof typeof NAMENODE_ARITY;

// ---- messages ---------------------------------------------------------------------------------

interface Frame<T extends string> {
  v: number;
  type: T;
}
interface Request<T extends string> extends Frame<T> {
  id: number;
}

/**
 * JT -> any peer, first frame of every connection: the challenge (src/runtime/auth.ts). Nothing
 * but `auth` is accepted before the answer.
 */
export interface Hello extends Frame<'hello'> {
  nonce: string;
}
/** any peer -> JT: proof of the cluster secret for `user`; answered with `AuthResult`. */
export interface Authenticate extends Request<'auth'> {
  user: string;
  nonce: string;
  proof: string;
}

/** worker -> JT */
export interface RegisterWorker extends Request<'register'> {
  worker: DatanodeAddress & { mapSlots: number; reduceSlots: number; memoryMb: number; diskMBps: number };
  blockIds: string[];
  /** Map outputs on the worker's disk (a JobTracker restarted meanwhile may keep them); absent from older workers. */
  mapOutputs?: HeldMapOutput[];
}
/** A map attempt's output a worker holds on its disk. */
export interface HeldMapOutput {
  jobId: string;
  attemptId: string;
}
export interface Heartbeat extends Frame<'heartbeat'> {
  workerId: string;
  attempts: AttemptProgress[];
}
export interface AttemptFinished extends Frame<'attempt-finished'> {
  workerId: string;
  attemptId: string;
  state: 'succeeded' | 'failed' | 'killed';
  counters: Counters;
  error?: SerializedError;
  mapOutput?: MapOutputSummary;
}
/** A block this worker was asked to copy now has replicas on these workers. */
export interface BlockReplicated extends Frame<'block-replicated'> {
  workerId: string;
  blockId: string;
  targets: string[];
}
/** A replica the NameNode asked this worker to verify does not match the NameNode's checksum (or is gone). */
export interface ReplicaCorrupt extends Frame<'replica-corrupt'> {
  workerId: string;
  blockId: string;
  reason: string;
}
export interface GetJobModule extends Request<'get-job-module'> {
  jobId: string;
}

/** JT -> worker */
export interface LaunchAttempt extends Frame<'launch'> {
  attempt: AttemptSpec;
}
export interface KillAttempt extends Frame<'kill'> {
  attemptId: string;
  reason: string;
}
export interface DeleteBlocks extends Frame<'delete-blocks'> {
  blockIds: string[];
}
/** Replicas a reader reported bad: the worker reads each and answers `replica-corrupt` if it does not match. */
export interface VerifyBlocks extends Frame<'verify-blocks'> {
  blocks: BlockVerification[];
}
export interface ReplicateBlock extends Frame<'replicate-block'> {
  blockId: string;
  targets: DatanodeAddress[];
  /** Write token for the targets, issued by the NameNode. */
  token: string;
}
export interface CleanupJob extends Frame<'cleanup-job'> {
  jobId: string;
}
/**
 * Map outputs a running reduce attempt has to know of: those that became available (a map finished,
 * or finished again after its output was lost) and those lost (the map runs again). Sent in the
 * order they happened, after the attempt's `launch`.
 */
export interface MapOutputsChanged extends Frame<'map-outputs'> {
  /** The reduce attempt told. */
  attemptId: string;
  available: MapOutputAnnouncement[];
  lost: LostMapOutput[];
}

/** clients (CLI, task processes) -> JT */
export interface SubmitJob extends Request<'submit-job'> {
  job: JobSubmission;
}
export interface GetJobStatus extends Request<'job-status'> {
  jobId: string;
}
/** Jobs in the JobTracker's memory (running, queued, recently ended); with `all`, the retired ones from its history too. */
export interface ListJobs extends Request<'list-jobs'> {
  all?: boolean;
}
export interface GetJobAttempts extends Request<'job-attempts'> {
  jobId: string;
}
export interface KillJob extends Request<'kill-job'> {
  jobId: string;
}
/** Answered with the job's final `JobStatus` once it has ended and its clean-up is done (no polling). */
export interface WaitForJob extends Request<'wait-job'> {
  jobId: string;
}
export interface ClusterInfo extends Request<'cluster-info'> {}
/** The profiles of recurring jobs: all, or the one of `job`. */
export interface GetProfiles extends Request<'job-profiles'> {
  job?: string;
}
/** Adds a `minimr profile` result to the profile of `job`. */
export interface ImportProfile extends Request<'import-profile'> {
  job: string;
  profile: JsonObject;
}
export interface RemoveProfile extends Request<'remove-profile'> {
  job: string;
}
/** A slice of an attempt's stdout or stderr, which the JobTracker reads from the worker that ran it (attempt-logs.ts). */
export interface GetAttemptLog extends Request<'attempt-log'> {
  attemptId: string;
  /** 'stdout' or 'stderr'. */
  stream: string;
  /** Default: the tail. */
  offset?: number;
  /** Default 64 KiB, at most 1 MiB. */
  length?: number;
}
/** MR-cluster operations (`minimr mrc`): activate [name, minNodes, inputPath?], list [], deactivate [name]. */
export interface MrClusterCall extends Request<'mrc'> {
  op: 'activate' | 'list' | 'deactivate';
  args: unknown[];
}
/** `minimr fs fsck [PATH]`: the block report of the files under `path` (default /). */
export interface FsckCall extends Request<'fsck'> {
  path?: string;
}
export interface NamenodeCall extends Request<'fs'> {
  op: NamenodeOp;
  args: unknown[];
  /** From a worker, for a task: the job it runs for, whose owner the call acts as. */
  jobId?: string;
}

/** Answer to any request. */
export type Reply =
  | (Frame<'reply'> & { re: number; ok: true; result: unknown })
  | (Frame<'reply'> & { re: number; ok: false; error: SerializedError });

export type Message =
  | Hello
  | Authenticate
  | RegisterWorker
  | Heartbeat
  | AttemptFinished
  | BlockReplicated
  | GetJobModule
  | LaunchAttempt
  | KillAttempt
  | DeleteBlocks
  | VerifyBlocks
  | ReplicaCorrupt
  | ReplicateBlock
  | CleanupJob
  | MapOutputsChanged
  | SubmitJob
  | GetJobStatus
  | ListJobs
  | GetJobAttempts
  | KillJob
  | WaitForJob
  | ClusterInfo
  | GetProfiles
  | ImportProfile
  | RemoveProfile
  | GetAttemptLog
  | MrClusterCall
  | FsckCall
  | NamenodeCall
  | Reply;

export type MessageType = Message['type'];
export type MessageOf<T extends MessageType> = Extract<Message, { type: T }>;
/** A message as the sender writes it: version and request id are filled in by the peer. */
export type Outgoing<M extends Message> = M extends Request<string> ? Omit<M, 'v' | 'id'> : Omit<M, 'v'>;

export interface AuthResult {
  /** The JobTracker's proof that it knows the secret too. */
  proof: string;
  user: string;
}

export interface RegisterResult {
  heartbeatMs: number;
  /** The NameNode's block token key (base64url): the worker's data port checks block access tokens with it. */
  blockKey: string;
  /** Blocks the NameNode does not know: the worker deletes them. */
  orphanBlocks: string[];
  /** Map outputs no job needs (its job ended or is unknown, or another attempt's output replaced it): the worker deletes them. */
  orphanMapOutputs?: HeldMapOutput[];
}

export interface ClusterInfoResult {
  workers: WorkerStatus[];
  policy: string;
  heartbeatMs: number;
}

export type { BlockInfo };
