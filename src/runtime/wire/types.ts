/**
 * What crosses the wire between JobTracker, workers, task processes and clients: each type is
 * declared once, as a schema (schema.ts) from which its TypeScript type is derived, so that the
 * validator, the type and the API documentation cannot drift apart. Results that are built by the
 * JobTracker from other folders' types (a file's status, a job's skew report) are declared with
 * those types and described loosely, for the documentation only.
 */
import type { AttemptState, JobState, SkewStatus } from '../../books/index.js';
import type { TaskKind } from '../../scheduler/index.js';
import type { BlockInfo, FileStatus } from '../../storage/index.js';
import {
  AmountSchema,
  CountSchema,
  CountersSchema,
  IdSchema,
  JsonObjectSchema,
  JsonValueSchema,
  PathSchema,
  SerializedErrorSchema,
  Type,
  type Static,
  type TSchema,
} from './schema.js';

export type { AttemptState, TaskKind };
export type Counters = Record<string, number>;

/** The state a job is reported in: the books' `committing` shows as `running` until the commit is done. */
export type ReportedJobState = Exclude<JobState, 'committing'>;

export const TaskKindSchema = Type.Unsafe<TaskKind>(Type.Union([Type.Literal('map'), Type.Literal('reduce')]));

// ---- jobs as submitted ---------------------------------------------------------------------

export const SerializedInputFormatSchema = Type.Union([
  Type.Object({ kind: Type.Literal('text') }),
  Type.Object({ kind: Type.Literal('fixed'), recordLength: Type.Integer({ minimum: 1 }) }),
  Type.Object({ kind: Type.Literal('generated'), splits: Type.Array(JsonValueSchema) }),
]);
export type SerializedInputFormat = Static<typeof SerializedInputFormatSchema>;

export const SerializedOutputFormatSchema = Type.Union([
  Type.Object({ kind: Type.Literal('text'), separator: Type.String({ maxLength: 64 }) }),
  Type.Object({ kind: Type.Literal('records') }),
]);
export type SerializedOutputFormat = Static<typeof SerializedOutputFormatSchema>;

const fraction = (description: string) => Type.Number({ minimum: 0, maximum: 1, description });

/**
 * Per-job settings, Hadoop-style keys. Shuffle buffers are the ideal sizes; a scheduler that grants
 * an attempt less memory than ideal shrinks that attempt's buffer (and it spills more). The ranges
 * and the rules between settings are validateJobConf's (submission.ts), which names the setting.
 */
/**
 * Settings of the stores a job reads or writes outside the block store (src/storage/stores): plain
 * strings, never credentials (S3's come from the AWS SDK's standard chain on each machine, WebHDFS's
 * as a delegation token).
 */
const storeSetting = (description: string) => Type.Optional(Type.String({ maxLength: 4096, description }));
export const STORE_SETTINGS = {
  's3.endpoint': storeSetting('URL of an S3-compatible store (default: AWS S3)'),
  's3.region': storeSetting('S3 region; default us-east-1'),
  's3.pathStyle': storeSetting('true: path-style addressing (default true when s3.endpoint is set)'),
  's3.maxAttempts': storeSetting('attempts of an S3 request; default 3'),
  's3.partSize': storeSetting('bytes of a multipart upload part; default 8 MiB'),
  'webhdfs.user': storeSetting('user name sent to WebHDFS; default the local user'),
  'webhdfs.token': storeSetting('a WebHDFS delegation token (GETDELEGATIONTOKEN)'),
  'webhdfs.tls': storeSetting('true: https'),
  'webhdfs.ca': storeSetting("a CA file for the WebHDFS server's certificate"),
};

export const JobConfSchema = Type.Object(
  {
    'shuffle.map.bufferBytes': Type.Optional(
      CountSchema('map-side sort buffer (data + record metadata), bytes; default 64 MiB'),
    ),
    'shuffle.map.spillPercent': Type.Optional(
      fraction('fraction of the map buffer that triggers a spill; default 0.8'),
    ),
    'shuffle.map.hashCombinePercent': Type.Optional(
      fraction(
        'fraction of the map buffer given to the combining hash table ' +
          'of a job with a combiner; 0 combines at spills only; default ' +
          '0.5',
      ),
    ),
    'shuffle.reduce.bufferBytes': Type.Optional(
      CountSchema('reduce-side shuffle buffer, bytes of decompressed map output; default 64 MiB'),
    ),
    'shuffle.merge.factor': Type.Optional(CountSchema('most runs merged at once; default 10')),
    'shuffle.map.outputRuns': Type.Optional(
      CountSchema(
        'most sorted runs per partition in a map output, 1 or 2 (two buffer generations published unmerged); default 2',
      ),
    ),
    'shuffle.compress': Type.Optional(
      Type.Union([Type.Literal('lz4'), Type.Literal('none')], {
        description: 'frame codec of map outputs; default lz4',
      }),
    ),
    'shuffle.parallelCopies': Type.Optional(CountSchema('map outputs a reducer fetches at once; default 5')),
    'job.maxMaps': Type.Optional(
      CountSchema('run only the first N map tasks (profiling a job on a sample of its input)'),
    ),
    'job.outputReplication': Type.Optional(
      CountSchema("replicas of each output block; default: the JobTracker's replication"),
    ),
    'job.reduceSlowStart': Type.Optional(
      fraction(
        "fraction of the maps done before the job's reduces may launch " +
          '(mapreduce.job.reduce.slowstart.completedmaps); default 1',
      ),
    ),
    'job.speculative': Type.Optional(
      Type.Boolean({
        description:
          "backups of slow attempts on fast workers (Hadoop's LATE; mapreduce.map/reduce.speculative); default true",
      }),
    ),
    'skew.strategy': Type.Optional(
      Type.Union([Type.Literal('hash'), Type.Literal('simple'), Type.Literal('cms')], {
        description: 'how partitions are given to reducers (src/skew); default hash',
      }),
    ),
    'skew.partitionFactor': Type.Optional(CountSchema('virtual partitions per reducer; default 1')),
    'skew.sketchDepth': Type.Optional(CountSchema("'cms': rows of the sketch; default 4")),
    'skew.sampleRecords': Type.Optional(CountSchema("'cms': input records the client samples; default 20000")),
    'skew.sampleSplits': Type.Optional(CountSchema("'cms': input splits the sample is taken from; default 10")),
    ...STORE_SETTINGS,
  },
  { additionalProperties: false, description: 'job settings' },
);
export type JobConf = Static<typeof JobConfSchema>;

export const SKEW_CONF_DEFAULTS = {
  'skew.strategy': 'hash',
  'skew.partitionFactor': 1,
  'skew.sketchDepth': 4,
  'skew.sampleRecords': 20_000,
  'skew.sampleSplits': 10,
} as const;

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

/** The count-min sketch a client built from a sample of the input, for 'cms' jobs (src/skew). */
export const SkewSampleSchema = Type.Object({
  sketch: Type.Object({
    depth: Type.Integer({ minimum: 1, maximum: 64 }),
    width: Type.Integer({ minimum: 1 }),
    seeds: Type.Array(Type.Integer()),
    records: Type.Uint8Array(),
    bytes: Type.Uint8Array(),
  }),
  /** Client time spent sampling the input, running `map` on it and building the sketch. */
  sampleMs: AmountSchema(),
  inputRecords: AmountSchema(),
  outputRecords: AmountSchema(),
});
export type SkewSample = Static<typeof SkewSampleSchema>;

/** The most bytes a streaming job's shipped files (`--file`) may hold together. */
export const MAX_STREAMING_FILES_BYTES = 8 * 1024 * 1024;

/** A file a streaming job ships (`--file`): it sits in its tasks' working directory under its base name. */
export const StreamingFileSchema = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 255, pattern: '^(?!\\.\\.?$)[^/\\0]+$' }),
  data: Type.Uint8Array(),
  /** The file's execute bit where it came from: shipped scripts stay runnable as `./mapper.py`. */
  executable: Type.Boolean(),
});
export type StreamingFile = Static<typeof StreamingFileSchema>;

/**
 * What makes a job a streaming job (Hadoop Streaming): its commands run in child processes, so the
 * JobTracker runs it with the engine's built-in streaming module, whatever module the client sent.
 */
export const StreamingSubmissionSchema = Type.Object(
  { files: Type.Array(StreamingFileSchema, { maxItems: 256 }) },
  { additionalProperties: false },
);
export type StreamingSubmission = Static<typeof StreamingSubmissionSchema>;

/** A job as the client sends it; submission.ts adds the rules between fields (output not under an input...). */
export const JobSubmissionSchema = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    /** File name the module came from (for messages) and its JavaScript source. */
    moduleName: Type.String({ maxLength: 4096 }),
    moduleSource: Type.String({ minLength: 1 }),
    inputPaths: Type.Array(PathSchema()),
    outputPath: PathSchema(),
    overwrite: Type.Boolean(),
    reducers: Type.Integer({ minimum: 0, maximum: 100_000 }),
    params: Type.Record(Type.String(), JsonValueSchema),
    shared: JsonObjectSchema,
    input: SerializedInputFormatSchema,
    output: SerializedOutputFormatSchema,
    pool: Type.Optional(Type.String({ maxLength: 256 })),
    /** Share of the job inside its pool relative to the pool's other jobs (FAIR); default 1. */
    weight: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    /** The MR-cluster (FAWKES) the job runs on; its input and output live under /mrc/NAME/. */
    mrCluster: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 128 }), Type.Null()])),
    maxAttempts: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
    mapMemoryMb: Type.Optional(Type.Integer({ minimum: 1 })),
    reduceMemoryMb: Type.Optional(Type.Integer({ minimum: 1 })),
    conf: Type.Optional(JobConfSchema),
    /** 'cms' jobs: the sketch of a sample of the map output, built by the client. */
    skewSample: Type.Optional(SkewSampleSchema),
    /** A streaming job (`minimr streaming`): its shipped files; the engine's streaming module runs it. */
    streaming: Type.Optional(StreamingSubmissionSchema),
    /** The input is a private data set still owed replicas a policy may place (improved FAIR). */
    inputPlacement: Type.Optional(
      Type.Object({ replication: Type.Integer({ minimum: 1, maximum: 16 }), windowMs: AmountSchema() }),
    ),
  },
  { 'x-minimr-error-code': 'EBADJOB', description: 'a job: its module, input, output and settings' },
);
type SubmissionFields = Static<typeof JobSubmissionSchema>;
/** A checked submission: an MR-cluster is named or absent. */
export type JobSubmission = Omit<SubmissionFields, 'mrCluster'> & { mrCluster?: string };

// ---- attempts as launched ------------------------------------------------------------------

/** A store's settings as a job gives them (its s3.* and webhdfs.* --conf keys). */
function StoreSettingsSchema() {
  return Type.Record(Type.String({ maxLength: 100 }), Type.String({ maxLength: 4096 }));
}

/** A file input split (storage) or a generated one (split value). */
export const TaskInputSchema = Type.Union([
  Type.Object({
    kind: Type.Literal('file'),
    /** A block-store path, or the URI of a file in another store (src/storage/stores). */
    path: PathSchema(),
    start: CountSchema(),
    length: CountSchema(),
    fileLength: CountSchema(),
    /** Another store's file: the version listed when the job was planned (a changed file fails the job). */
    version: Type.Optional(Type.String({ maxLength: 1024 })),
    /** Another store's file: its settings (the job's s3.* and webhdfs.* settings). */
    store: Type.Optional(StoreSettingsSchema()),
  }),
  Type.Object({ kind: Type.Literal('generated'), value: JsonValueSchema }),
  Type.Object({ kind: Type.Literal('none') }),
]);
export type TaskInput = Static<typeof TaskInputSchema>;

/** The shuffle settings of one attempt, after the scheduler's memory grant. */
export const AttemptShuffleSettingsSchema = Type.Object({
  mapBufferBytes: CountSchema(),
  spillPercent: Type.Number({ exclusiveMinimum: 0, maximum: 1 }),
  /** Share of mapBufferBytes for the combining hash table (jobs with a combiner). */
  hashCombinePercent: Type.Number({ minimum: 0, exclusiveMaximum: 1 }),
  reduceBufferBytes: CountSchema(),
  mergeFactor: Type.Integer({ minimum: 2 }),
  mapOutputRuns: Type.Integer({ minimum: 1, maximum: 2 }),
  codec: Type.Union([Type.Literal('lz4'), Type.Literal('none')]),
  parallelCopies: Type.Integer({ minimum: 1 }),
});
export type AttemptShuffleSettings = Static<typeof AttemptShuffleSettingsSchema>;

/**
 * An attempt's shuffle settings from its job's conf (the defaults where it says nothing); `buffers`,
 * the attempt's own buffer sizes where its memory grant made them smaller than the conf's.
 */
export function attemptShuffleOf(
  jobConf: JobConf | undefined,
  buffers: { readonly map?: number; readonly reduce?: number } = {},
): AttemptShuffleSettings {
  const conf = { ...JOB_CONF_DEFAULTS, ...jobConf };
  return {
    mapBufferBytes: buffers.map ?? conf['shuffle.map.bufferBytes'],
    spillPercent: conf['shuffle.map.spillPercent'],
    hashCombinePercent: conf['shuffle.map.hashCombinePercent'],
    reduceBufferBytes: buffers.reduce ?? conf['shuffle.reduce.bufferBytes'],
    mergeFactor: conf['shuffle.merge.factor'],
    mapOutputRuns: conf['shuffle.map.outputRuns'],
    codec: conf['shuffle.compress'],
    parallelCopies: conf['shuffle.parallelCopies'],
  };
}

/** A map output a reduce may fetch, with its records in the reduce's partitions (for progress). */
export const MapOutputAnnouncementSchema = Type.Object({
  mapIndex: CountSchema(),
  attemptId: IdSchema('the map attempt'),
  workerId: IdSchema('the worker holding the output'),
  host: Type.String({ maxLength: 1024 }),
  dataPort: Type.Integer({ minimum: 0, maximum: 65535 }),
  records: CountSchema(),
});
export type MapOutputAnnouncement = Static<typeof MapOutputAnnouncementSchema>;

/** A map output that is gone: the attempt that wrote it no longer holds it. */
export const LostMapOutputSchema = Type.Object({ mapIndex: CountSchema(), attemptId: IdSchema('the map attempt') });
export type LostMapOutput = Static<typeof LostMapOutputSchema>;

/** Map outputs a running reduce has to know of, in the order they came and went (`map-outputs`). */
export const MapOutputsChangedSchema = Type.Object(
  {
    attemptId: IdSchema('the reduce attempt'),
    available: Type.Array(MapOutputAnnouncementSchema),
    lost: Type.Array(LostMapOutputSchema),
  },
  { additionalProperties: false },
);

export const AttemptSpecSchema = Type.Object({
  jobId: IdSchema('the job'),
  jobName: Type.String(),
  /** The job's owner: a worker running as root runs the tasks as this account when the host has it (sandbox.ts). */
  owner: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  /** The job's shuffle secret: its maps' worker serves their output only to fetches hashed with it. */
  shuffleSecret: Type.String({ minLength: 1, maxLength: 256 }),
  /** Content hash of the job module: workers cache modules, and reuse task processes, by it. */
  moduleHash: Type.String({ pattern: '^[0-9a-f]{8,128}$' }),
  taskId: IdSchema('the task'),
  attemptId: IdSchema('the attempt'),
  kind: TaskKindSchema,
  index: CountSchema(),
  input: TaskInputSchema,
  inputFormat: SerializedInputFormatSchema,
  outputFormat: SerializedOutputFormatSchema,
  /** Where a map-only map or a reduce writes its part file before commit (its name is the part's). */
  outputTempPath: PathSchema(),
  /**
   * A job whose output is in another store (file://, s3://, webhdfs://): its output URI and the job's
   * store settings. The attempt writes its part through that store's committer, which keeps it
   * invisible until the job commits, and reports the part (PendingPart) when it is done.
   */
  outputStore: Type.Optional(Type.Object({ uri: Type.String({ maxLength: 4096 }), settings: StoreSettingsSchema() })),
  reducers: CountSchema(),
  params: Type.Record(Type.String(), JsonValueSchema),
  shared: JsonObjectSchema,
  /** Reduces: the map outputs done at launch; a reduce launched early is told of the others (`map-outputs`). */
  mapOutputs: Type.Array(MapOutputAnnouncementSchema),
  /** Reduces: the job's map count, i.e. how many map outputs the reduce reads. */
  mapsTotal: CountSchema(),
  /** Memory granted; below `idealMemoryMb` the attempt is elastic and `shuffle` has the smaller buffer it implies. */
  memoryMb: CountSchema(),
  idealMemoryMb: CountSchema(),
  elastic: Type.Boolean(),
  shuffle: AttemptShuffleSettingsSchema,
  /** Maps: partitions to write (P = partitionFactor x reducers); absent means `reducers`. */
  mapPartitions: Type.Optional(CountSchema()),
  /** Maps of 'cms' jobs: partition with murmur3 under this seed (the chosen sketch row). */
  partitionSeed: Type.Optional(Type.Integer()),
  /** Reduces: the partitions this reduce reads and merges; absent means [index]. */
  reducePartitions: Type.Optional(Type.Array(CountSchema())),
  /** Replicas of each output block (`job.outputReplication`); absent: the JobTracker's default. */
  outputReplication: Type.Optional(Type.Integer({ minimum: 1 })),
  /**
   * A streaming job: the worker runs the engine's own streaming module in a process allowed to start
   * child processes, with the job's shipped files in its working directory (`get-job-files`).
   */
  streaming: Type.Optional(Type.Boolean()),
  /** What the attempt's file system calls present to act as the job's owner (job-tokens.ts). */
  jobToken: Type.String({ minLength: 1, maxLength: 1024 }),
});
export type AttemptSpec = Static<typeof AttemptSpecSchema>;

// ---- what workers report -------------------------------------------------------------------

export const AttemptProgressSchema = Type.Object({
  attemptId: IdSchema('the attempt'),
  /** 0..1; the books clamp what lies outside. */
  progress: Type.Number(),
  counters: CountersSchema,
});
export type AttemptProgress = Static<typeof AttemptProgressSchema>;

/** What a map attempt tells of its output, partition by partition (sizes drive skew handling). */
export const MapOutputSummarySchema = Type.Object({
  partitionBytes: Type.Array(CountSchema()),
  partitionRecords: Type.Array(CountSchema()),
});
export type MapOutputSummary = Static<typeof MapOutputSummarySchema>;

/**
 * A part an attempt wrote through another store's committer, not yet visible (storage's PendingPart):
 * what the job commit needs to make it so. The JobTracker takes it only for the attempt's own part name,
 * and the committer checks that `commit` points into this job's staging (a report cannot commit other data).
 */
export const PendingPartSchema = Type.Object({
  name: Type.String({ pattern: '^part-[mr]-[0-9]{5,}$' }),
  bytes: CountSchema(),
  commit: JsonValueSchema,
});

/** A map attempt's output a worker holds on its disk. */
export const HeldMapOutputSchema = Type.Object({ jobId: IdSchema('the job'), attemptId: IdSchema('the map attempt') });
export type HeldMapOutput = Static<typeof HeldMapOutputSchema>;

export const WorkerClaimSchema = Type.Object({
  workerId: Type.String({ pattern: '^[A-Za-z0-9_.:-]{1,128}$', description: '1-128 characters of [A-Za-z0-9_.:-]' }),
  host: Type.String({ minLength: 1, maxLength: 1024 }),
  dataPort: Type.Integer({ minimum: 0, maximum: 65535 }),
  rack: Type.String({ maxLength: 1024 }),
  mapSlots: CountSchema(),
  reduceSlots: CountSchema(),
  memoryMb: CountSchema(),
  diskMBps: AmountSchema('measured disk write rate, MB/s; 0 when unknown'),
});
export type WorkerClaim = Static<typeof WorkerClaimSchema>;

export const RegisterResultSchema = Type.Object({
  heartbeatMs: CountSchema(),
  /**
   * The NameNode's block token keys (current and previous, BlockTokenKey's text form): the worker's
   * data port checks block access tokens with them; `block-keys` brings the next ones.
   */
  blockKey: Type.String(),
  /** In a TLS cluster: the certificate (PEM) for the worker's `tlsPublicKey` and advertised host. */
  tlsCertificate: Type.Optional(Type.String({ maxLength: 20_000 })),
  /** In a TLS cluster: the cluster authority's certificate (PEM), which every data port client trusts. */
  clusterAuthority: Type.Optional(Type.String({ maxLength: 20_000 })),
  /** Blocks the NameNode does not know: the worker deletes them. */
  orphanBlocks: Type.Array(IdSchema('a block')),
  /** Map outputs no job needs: the worker deletes them. */
  orphanMapOutputs: Type.Optional(Type.Array(HeldMapOutputSchema)),
});
export type RegisterResult = Static<typeof RegisterResultSchema>;

// ---- what clients are told -----------------------------------------------------------------

/** A phase's fit, summed up. */
export interface PhaseFitSummary {
  /** Attempts the profile holds for the phase. */
  readonly attempts: number;
  /** Ideal duration of a task of the job's mean input, ms. */
  readonly idealDurationMs: number;
  /** Memory with which such a task does not spill: the buffer it needs + the task overhead, MB. */
  readonly neededMemoryMb: number;
  /** Fitted disk rate, MB/s; absent when none was fitted: the worker's own is used. */
  readonly diskMBps?: number;
  /** The penalty model's kind: 'spill', or 'none' for tasks that buffer nothing (map-only maps). */
  readonly penalty: 'none' | 'step' | 'power' | 'spill';
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

/** A job's migration between Tyrex partitions. */
export interface Migration {
  time: number;
  from: number;
  to: number;
  partialSizeMs?: number;
  timerMs?: number;
}

export interface JobStatus {
  jobId: string;
  name: string;
  /** The user who submitted it. */
  user: string;
  pool: string;
  state: ReportedJobState;
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
  error?: Static<typeof SerializedErrorSchema>;
  failedAttempts: number;
  killedAttempts: number;
  /** Partition the job is in now and its moves between partitions (Tyrex), oldest first. */
  partition: number;
  migrations: Migration[];
  /** Partition assignment (virtual partitions, skew strategy); absent for map-only jobs. */
  skew?: SkewStatus;
  /** The profile the job's tasks were planned with (YARN-ME). */
  profile: ProfileUse;
  /** Attempts launched with less than their task's ideal memory. */
  elasticAttempts: number;
  /** While the job is active: why the JobTracker schedules no new work (its policy broke the contract). */
  schedulingStopped?: string;
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
  /** A backup of a slow attempt of its task (speculative execution). */
  speculative?: boolean;
  /** Where the attempt's input was relative to its worker when it was launched. */
  locality: 'node' | 'rack' | 'any';
  /** Input bytes of the task (maps: split length; reduces: 0). */
  inputBytes: number;
  counters: Counters;
  error?: Static<typeof SerializedErrorSchema>;
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

export interface ClusterInfoResult {
  workers: WorkerStatus[];
  policy: string;
  heartbeatMs: number;
  /** Why the JobTracker schedules no new work: its policy broke the contract (the rule, what it did). */
  schedulingStopped?: string;
}

/**
 * Attempts of one phase of a job that ran with the same shuffle buffer; every figure but `bufferMiB` is a sum over
 * them.
 */
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

/** What the JobTracker keeps of a recurring job (src/runtime/jobtracker/job-profile.ts). */
export interface JobProfile {
  /** The job name (`defineJob({ name })`): runs of the same name are one recurring job. */
  readonly job: string;
  /**
   * The user whose jobs (or import) made the profile: they and the admin may change it; absent in profiles older than
   * owners.
   */
  readonly owner?: string;
  readonly updatedAt: number;
  /** Successful runs recorded, and `minimr profile` results imported. */
  readonly runs: number;
  readonly imports: number;
  readonly map: readonly BufferBucket[];
  readonly reduce: readonly BufferBucket[];
}

/** Where a page of ended jobs stops: the next page starts after this job. */
export interface FinishedCursor {
  readonly finishTime: number;
  readonly jobId: string;
}

/** One page of the ended jobs, newest first. */
export interface FinishedJobsPage {
  readonly jobs: readonly JobStatus[];
  /** Ended jobs in the history, all pages. */
  readonly total: number;
  /** Where the next (older) page starts; absent on the last page. */
  readonly older?: FinishedCursor;
}

export const ATTEMPT_LOG_STREAMS = ['stdout', 'stderr'] as const;
export type AttemptLogStream = (typeof ATTEMPT_LOG_STREAMS)[number];
/** The most of a log one read returns, and what it returns by default (the tail). */
export const MAX_LOG_READ_BYTES = 1024 * 1024;
export const DEFAULT_LOG_READ_BYTES = 64 * 1024;

export function isAttemptLogStream(s: unknown): s is AttemptLogStream {
  return typeof s === 'string' && (ATTEMPT_LOG_STREAMS as readonly string[]).includes(s);
}

/** A slice of an attempt's stdout or stderr. */
export interface AttemptLogSlice {
  readonly attemptId: string;
  readonly workerId: string;
  readonly stream: AttemptLogStream;
  /** Size of the whole file, bytes. */
  readonly size: number;
  /** Where `text` starts in the file. */
  readonly offset: number;
  readonly text: string;
}

/**
 * Result schemas for the documentation: a type declared above (or in another folder) with a JSON
 * Schema that describes it for `/api/v1/openapi.json`. test/runtime/api-v1 checks real results
 * against them, so the description stays true.
 */
function described<T>(schema: TSchema): TSchema & { static: T } {
  return Type.Unsafe<T>(schema);
}

const looseObject = (description: string) => Type.Object({}, { additionalProperties: true, description });

export const JobStatusResult = described<JobStatus>(
  Type.Object(
    {
      jobId: Type.String(),
      name: Type.String(),
      user: Type.String(),
      pool: Type.String(),
      state: Type.Union(['pending', 'running', 'succeeded', 'failed', 'killed'].map((s) => Type.Literal(s))),
      submitTime: Type.Number(),
      startTime: Type.Optional(Type.Number()),
      finishTime: Type.Optional(Type.Number()),
      mapsTotal: Type.Integer(),
      mapsCompleted: Type.Integer(),
      reducesTotal: Type.Integer(),
      reducesCompleted: Type.Integer(),
      mapProgress: Type.Number(),
      reduceProgress: Type.Number(),
      counters: CountersSchema,
      outputPath: Type.String(),
      error: Type.Optional(SerializedErrorSchema),
      failedAttempts: Type.Integer(),
      killedAttempts: Type.Integer(),
      partition: Type.Integer(),
      migrations: Type.Array(looseObject('a move between Tyrex partitions')),
      skew: Type.Optional(looseObject('partition assignment (src/skew)')),
      profile: looseObject('whether the job was planned from a profile (YARN-ME)'),
      elasticAttempts: Type.Integer(),
      schedulingStopped: Type.Optional(Type.String()),
    },
    { description: "a job's status" },
  ),
);

export const AttemptSummaryResult = described<AttemptSummary>(
  Type.Object({
    attemptId: Type.String(),
    taskId: Type.String(),
    kind: TaskKindSchema,
    workerId: Type.String(),
    state: Type.Union(['running', 'succeeded', 'failed', 'killed'].map((s) => Type.Literal(s))),
    startTime: Type.Number(),
    finishTime: Type.Optional(Type.Number()),
    memoryMb: Type.Number(),
    idealMemoryMb: Type.Number(),
    elastic: Type.Boolean(),
    speculative: Type.Optional(Type.Boolean()),
    locality: Type.Union([Type.Literal('node'), Type.Literal('rack'), Type.Literal('any')]),
    inputBytes: Type.Number(),
    counters: CountersSchema,
    error: Type.Optional(SerializedErrorSchema),
  }),
);

export const ClusterInfoResultSchema = described<ClusterInfoResult>(
  Type.Object({
    policy: Type.String(),
    heartbeatMs: Type.Number(),
    schedulingStopped: Type.Optional(Type.String()),
    workers: Type.Array(
      Type.Object({
        workerId: Type.String(),
        host: Type.String(),
        dataPort: Type.Integer(),
        rack: Type.String(),
        mapSlots: Type.Integer(),
        reduceSlots: Type.Integer(),
        memoryMb: Type.Number(),
        runningAttempts: Type.Integer(),
        lastHeartbeat: Type.Number(),
      }),
    ),
  }),
);

const BufferBucketResult = Type.Object({
  bufferMiB: Type.Number(),
  attempts: Type.Integer(),
  taskMs: Type.Number(),
  inputBytes: Type.Number(),
  needBytes: Type.Number(),
  spilledBytes: Type.Number(),
});

export const JobProfileResult = described<JobProfile>(
  Type.Object({
    job: Type.String(),
    owner: Type.Optional(Type.String()),
    updatedAt: Type.Number(),
    runs: Type.Integer(),
    imports: Type.Integer(),
    map: Type.Array(BufferBucketResult),
    reduce: Type.Array(BufferBucketResult),
  }),
);

export const FileStatusResult = described<FileStatus>(
  Type.Object({
    path: Type.String(),
    type: Type.Union([Type.Literal('file'), Type.Literal('dir')]),
    length: Type.Number(),
    replication: Type.Integer(),
    blockSize: Type.Number(),
    mtime: Type.Number(),
    owner: Type.String(),
    group: Type.String(),
    mode: Type.Integer(),
  }),
);

export const DatanodeAddressSchema = Type.Object({
  workerId: IdSchema('the worker'),
  host: Type.String({ maxLength: 1024 }),
  dataPort: Type.Integer({ minimum: 0, maximum: 65535 }),
  rack: Type.String({ maxLength: 1024 }),
});

export const BlockInfoResult = described<BlockInfo>(
  Type.Object({
    blockId: Type.String(),
    offset: Type.Number(),
    length: Type.Number(),
    crc32: Type.Integer(),
    locations: Type.Array(DatanodeAddressSchema),
    token: Type.String(),
  }),
);

export const AttemptLogSliceResult = described<AttemptLogSlice>(
  Type.Object({
    attemptId: Type.String(),
    workerId: Type.String(),
    stream: Type.Union([Type.Literal('stdout'), Type.Literal('stderr')]),
    size: Type.Integer(),
    offset: Type.Integer(),
    text: Type.String(),
  }),
);

export { described, looseObject };
