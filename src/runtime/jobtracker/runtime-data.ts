import {
  hasEnded,
  type AttemptMeasures,
  type AttemptRecord,
  type Books,
  type Effect,
  type EngineData,
  type JobPlan,
  type JobRecord,
  type SkewPlan,
  type TaskPlan,
  type TaskRecord,
  type WorkerRecord,
} from '../../books/index.js';
import type { Logger } from '../../log.js';
import {
  type DatanodeAddress,
  isExternalUri,
  type Namenode,
  type PendingPart,
  storeConfOf,
} from '../../storage/index.js';
import { newShuffleSecret } from '../../shuffle/index.js';
import {
  attemptShuffleOf,
  JOB_CONF_DEFAULTS,
  SKEW_CONF_DEFAULTS,
  TASK_OVERHEAD_MB,
  type AttemptShuffleSettings,
  type AttemptSpec,
  type AttemptSummary,
  type Counters,
  type JobStatus,
  type JobSubmission,
  type MapOutputAnnouncement,
  type MapOutputSummary,
  type ProfileUse,
  type TaskInput,
  type TaskKind,
} from '../wire/index.js';
import { jobModuleHash } from '../task/job-loader.js';
import type { JobTrackerToWorker, RpcPeer, Stub } from '../wire/index.js';

/**
 * What the JobTracker keeps beside the books (src/books, where job, task and attempt state and
 * every transition live): the submission a job came with, its counters, a task's
 * split, an attempt's counters and map output, a worker's connection.
 */
export interface RuntimeData extends EngineData {
  readonly job: SubmittedJob;
  readonly task: TaskInput;
  readonly attempt: AttemptReport;
  readonly worker: WorkerLink;
}

export type RuntimeJob = JobRecord<RuntimeData>;
export type RuntimeTask = TaskRecord<RuntimeData>;
export type RuntimeAttempt = AttemptRecord<RuntimeData>;
export type RuntimeWorker = WorkerRecord<RuntimeData>;

/** What the JobTracker lends the parts that act on its books beside it (recovery, MR-clusters). */
export interface BooksHost {
  readonly books: Books<RuntimeData>;
  readonly namenode: Namenode;
  readonly logger: Logger;
  clock(): number;
  /** Carries out effects as after any transition. */
  carryOut(effects: readonly Effect<RuntimeData>[]): Promise<void>;
}

export interface AttemptReport {
  counters: Counters;
  mapOutput?: MapOutputSummary;
  /** Its part of an output in another store, written but not yet committed (store-output.ts). */
  outputPart?: PendingPart;
}

export interface WorkerLink {
  readonly address: DatanodeAddress;
  readonly peer: RpcPeer;
  /** What the JobTracker tells the worker (JOBTRACKER_TO_WORKER), over `peer`. */
  readonly commands: Stub<JobTrackerToWorker>;
  readonly registeredAt: number;
  lastHeartbeat: number;
  /**
   * Attempts given up while the worker was silent (task expiry), until it lists them (they are then
   * killed there) or reports them ended (worker-service.ts).
   */
  staleAttempts?: Set<string>;
}

export interface TaskInputPlan {
  input: TaskInput;
  preferredWorkers: readonly string[];
  preferredRacks: readonly string[];
  inputBytes: number;
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

/** A submitted job's part that is the JobTracker's own: the submission, counters, commits. */
export class SubmittedJob {
  readonly submission: JobSubmission;
  /** The user who submitted the job: only they and the admin may kill it; its output is theirs. */
  readonly owner: string;
  /** Content hash of the job module, by which workers cache it. */
  readonly moduleHash: string;
  /** Given to the job's attempts only: proves a shuffle fetch belongs to the job (src/shuffle/shuffle-secret.ts). */
  readonly shuffleSecret = newShuffleSecret();
  /** Counters of succeeded attempts, summed. */
  readonly counters: Counters = {};
  /** Task output renames and the job's commit and clean-up, one after another. */
  commits: Promise<void> = Promise.resolve();
  /** The job has ended and its clean-up (output removal, workers told) is done. */
  settled = false;
  /** The other workers were asked to start a process for it (`warm-job`, at its first launch). */
  warmed = false;
  /** Whether its tasks were planned from the profile of its name (job-profile.ts). */
  profile: ProfileUse = { state: 'none' };

  constructor(submission: JobSubmission, owner: string) {
    this.submission = submission;
    this.owner = owner;
    this.moduleHash = jobModuleHash(submission.moduleSource);
  }

  /** Job counters sum the attempts' counters, except PEAK_* ones, which keep the largest. */
  addCounters(counters: Counters): void {
    for (const [name, value] of Object.entries(counters)) {
      if (typeof value !== 'number' || !Number.isFinite(value)) continue;
      const prev = this.counters[name] ?? 0;
      this.counters[name] = name.startsWith('PEAK_') ? Math.max(prev, value) : prev + value;
    }
  }
}

/** What a task's plan takes from its job's profile (job-profile.ts): absent fields, a regular task. */
export type TaskEstimates = Pick<TaskPlan<RuntimeData>, 'idealDurationMs' | 'penalty'>;

/** The ideal memory of the job's maps and reduces: the shuffle buffers + overhead, unless the submission says. */
export function jobMemoryMb(submission: JobSubmission): { readonly map: number; readonly reduce: number } {
  return {
    map: submission.mapMemoryMb ?? idealMemoryMb(submission, 'map'),
    reduce: submission.reduceMemoryMb ?? idealMemoryMb(submission, 'reduce'),
  };
}

/**
 * The job as the books take it: one map per split, `reducers` reduces, memory from the shuffle
 * buffers, and each task's ideal duration and penalty model from the job's profile when it has one.
 */
export function jobPlan(
  id: string,
  submission: JobSubmission,
  owner: string,
  splits: readonly TaskInputPlan[],
  maxAttempts: number,
  estimates?: { readonly maps: readonly TaskEstimates[]; readonly reduce: TaskEstimates },
): JobPlan<RuntimeData> {
  const memory = jobMemoryMb(submission);
  const maps: TaskPlan<RuntimeData>[] = splits.map((s, i) => ({
    ...estimates?.maps[i],
    memoryMb: memory.map,
    inputBytes: s.inputBytes,
    preferredWorkers: s.preferredWorkers,
    preferredRacks: s.preferredRacks,
    data: s.input,
  }));
  const reduces: TaskPlan<RuntimeData>[] = Array.from({ length: submission.reducers }, () => ({
    ...estimates?.reduce,
    memoryMb: memory.reduce,
    inputBytes: 0,
    preferredWorkers: [],
    preferredRacks: [],
    data: { kind: 'none' },
  }));
  return {
    id,
    name: submission.name,
    pool: submission.pool ?? 'default',
    weight: submission.weight ?? 1,
    ...(submission.mrCluster !== undefined ? { cluster: submission.mrCluster } : {}),
    maxAttempts,
    reduceSlowStart: reduceSlowStartOf(submission),
    ...(submission.conf?.['job.speculative'] !== undefined ? { speculative: submission.conf['job.speculative'] } : {}),
    ...(submission.inputPlacement ? { inputPlacement: submission.inputPlacement } : {}),
    skew: skewPlan(submission),
    maps,
    reduces,
    data: new SubmittedJob(submission, owner),
  };
}

/** The submission's skew settings (`skew.*` conf) and the sketch its client built, for the books. */
function skewPlan(submission: JobSubmission): SkewPlan {
  const conf = { ...SKEW_CONF_DEFAULTS, ...submission.conf };
  const sample = submission.skewSample;
  return {
    strategy: conf['skew.strategy'],
    partitionFactor: conf['skew.partitionFactor'],
    ...(sample ? { sketch: sample.sketch, sampleMs: sample.sampleMs, sampledRecords: sample.inputRecords } : {}),
  };
}

/**
 * The fraction of maps done before the job's reduces may launch (`job.reduceSlowStart`), the rule
 * the books apply (they hold a 'simple' skew job's reduces until its last map whatever this says).
 */
export function reduceSlowStartOf(submission: JobSubmission): number {
  return { ...JOB_CONF_DEFAULTS, ...submission.conf }['job.reduceSlowStart'];
}

/** What a successful attempt measured, as the books take it (its counters and map output say). */
export function attemptMeasures(task: RuntimeTask, report: AttemptReport): AttemptMeasures {
  const counters = report.counters;
  return {
    inputBytes: (task.kind === 'map' ? counters.MAP_INPUT_BYTES : counters.REDUCE_INPUT_BYTES) ?? task.inputBytes,
    outputBytes: counters.MAP_OUTPUT_BYTES ?? 0,
    ...(counters.TASK_MS !== undefined ? { taskMs: counters.TASK_MS } : {}),
    ...(report.mapOutput ? { partitionBytes: report.mapOutput.partitionBytes } : {}),
  };
}

/** Where a successful map attempt's output is, for a reduce reading `partitions` of it. */
export function mapOutputAnnouncement(
  mapAttempt: RuntimeAttempt,
  partitions: readonly number[],
): MapOutputAnnouncement {
  const w = mapAttempt.worker;
  const records = mapAttempt.data.mapOutput?.partitionRecords;
  return {
    mapIndex: mapAttempt.task.index,
    attemptId: mapAttempt.id,
    workerId: w.shape.id,
    // A lost worker's outputs are being re-run; the reduce is told when they are (or fails to fetch and says so).
    host: w.alive ? w.data.address.host : '',
    dataPort: w.alive ? w.data.address.dataPort : 0,
    records: records ? partitions.reduce((n, p) => n + (records[p] ?? 0), 0) : 0,
  };
}

export function attemptSummaries(job: RuntimeJob): AttemptSummary[] {
  const out: AttemptSummary[] = [];
  for (const task of [...job.maps, ...job.reduces]) {
    for (const a of task.attempts) {
      out.push({
        attemptId: a.id,
        taskId: task.id,
        kind: task.kind,
        workerId: a.worker.shape.id,
        state: a.state,
        startTime: a.startTime,
        finishTime: a.finishTime,
        memoryMb: a.memoryMb,
        idealMemoryMb: task.memoryMb,
        elastic: a.elastic,
        ...(a.speculative ? { speculative: true } : {}),
        locality: a.locality,
        inputBytes: task.inputBytes,
        counters: a.data.counters,
        error: a.error,
      });
    }
  }
  return out;
}

export function jobStatus(job: RuntimeJob): JobStatus {
  const allMapsDone = job.mapsDone === job.maps.length;
  const progressOf = (tasks: readonly RuntimeTask[]) => {
    if (tasks.length === 0) return job.state === 'succeeded' || allMapsDone ? 1 : 0;
    let sum = 0;
    for (const t of tasks) {
      if (t.state === 'succeeded') sum += 1;
      else if (t.state === 'running')
        sum += Math.max(0, ...t.attempts.filter((a) => a.state === 'running').map((a) => a.progress));
    }
    return sum / tasks.length;
  };
  const submission = job.data.submission;
  return {
    jobId: job.id,
    name: submission.name,
    user: job.data.owner,
    pool: job.pool,
    // A client sees the end only once the clean-up is done (as Hadoop's job goes through its abort
    // or commit before FAILED or SUCCEEDED): a re-run of the same command must find no output left.
    state: job.state === 'committing' || (hasEnded(job) && !job.data.settled) ? 'running' : job.state,
    submitTime: job.submitTime,
    startTime: job.startTime,
    finishTime: job.finishTime,
    mapsTotal: job.maps.length,
    mapsCompleted: job.mapsDone,
    reducesTotal: job.reduces.length,
    reducesCompleted: job.reducesDone,
    mapProgress: progressOf(job.maps),
    reduceProgress: job.reduces.length === 0 ? (job.state === 'succeeded' ? 1 : 0) : progressOf(job.reduces),
    counters: { ...job.data.counters, ...job.skew?.counters },
    outputPath: submission.outputPath,
    error: job.error,
    failedAttempts: job.failedAttempts,
    killedAttempts: job.killedAttempts,
    partition: job.partition,
    migrations: job.migrations.map((m) => ({
      time: m.timeMs,
      from: m.from,
      to: m.to,
      ...(m.partialSizeMs !== undefined ? { partialSizeMs: m.partialSizeMs } : {}),
      ...(m.timerMs !== undefined ? { timerMs: m.timerMs } : {}),
    })),
    profile: job.data.profile,
    elasticAttempts: [...job.maps, ...job.reduces].reduce((n, t) => n + t.attempts.filter((a) => a.elastic).length, 0),
    skew:
      job.skew === null
        ? undefined
        : job.skew.status(
            job.reduces.map((r) => ({
              index: r.index,
              ...(r.successfulAttempt
                ? {
                    successfulAttempt: {
                      workerId: r.successfulAttempt.worker.shape.id,
                      counters: r.successfulAttempt.data.counters,
                    },
                  }
                : {}),
            })),
          ),
  };
}

const MiB = 1024 * 1024;

/** A task's ideal memory: its whole shuffle buffer plus the process's fixed overhead. */
export function idealMemoryMb(submission: JobSubmission, kind: TaskKind): number {
  const conf = { ...JOB_CONF_DEFAULTS, ...submission.conf };
  const buffer = kind === 'map' ? conf['shuffle.map.bufferBytes'] : conf['shuffle.reduce.bufferBytes'];
  return Math.ceil(buffer / MiB) + TASK_OVERHEAD_MB;
}

/**
 * The shuffle settings of an attempt. Granted less memory than ideal (an elastic allocation), the
 * attempt gets a proportionally smaller buffer and spills more: the allocation is real.
 */
export function attemptShuffleSettings(
  submission: JobSubmission,
  kind: TaskKind,
  grantedMb: number,
): AttemptShuffleSettings {
  const conf = { ...JOB_CONF_DEFAULTS, ...submission.conf };
  const ideal = idealMemoryMb(submission, kind);
  const scale = (bytes: number) => {
    if (grantedMb >= ideal) return bytes;
    return Math.max(MIN_ELASTIC_BUFFER_BYTES, Math.min(bytes, (grantedMb - TASK_OVERHEAD_MB) * MiB));
  };
  return attemptShuffleOf(
    submission.conf,
    kind === 'map'
      ? { map: scale(conf['shuffle.map.bufferBytes']) }
      : { reduce: scale(conf['shuffle.reduce.bufferBytes']) },
  );
}

/** Below this a buffer is useless; an allocation under overhead + this still gets this much. */
export const MIN_ELASTIC_BUFFER_BYTES = 1024 * 1024;

export function partFileName(kind: TaskKind, index: number): string {
  return `part-${kind === 'map' ? 'm' : 'r'}-${pad(index, 5)}`;
}

/**
 * Where a job's attempts write (under `_temporary`) and its tasks commit their part files: its
 * output directory, or, for a job submitted with `--overwrite`, a staging directory beside it
 * (`.NAME.overwrite-JOBID`) that replaces the output in one NameNode step when the job commits
 * (job-completion.ts). Until then the previous output stays whole, and a job that fails or is
 * killed leaves it as it was. A dot name, so that a job reading the parent directory skips it.
 */
export function outputWorkDir(jobId: string, submission: Pick<JobSubmission, 'outputPath' | 'overwrite'>): string {
  const out = submission.outputPath;
  if (!submission.overwrite) return out;
  const slash = out.lastIndexOf('/');
  return `${out.slice(0, slash)}/.${out.slice(slash + 1)}.overwrite-${jobId}`;
}

/** What a worker is told to run for `attempt`: the `launch` operation's argument. */
export function attemptSpec(attempt: RuntimeAttempt, jobToken: string): AttemptSpec {
  const task = attempt.task;
  const job = task.job;
  const s = job.data.submission;
  const reducePartitions = attempt.reducePartitions;
  // A reduce launched before the last map (slow start) learns of the other outputs as their maps finish.
  const mapOutputs = reducePartitions
    ? job.maps.flatMap((m) =>
        m.successfulAttempt ? [mapOutputAnnouncement(m.successfulAttempt, reducePartitions)] : [],
      )
    : [];
  return {
    jobId: job.id,
    jobName: s.name,
    owner: job.data.owner,
    shuffleSecret: job.data.shuffleSecret,
    moduleHash: job.data.moduleHash,
    taskId: task.id,
    attemptId: attempt.id,
    kind: task.kind,
    index: task.index,
    input: task.data,
    inputFormat: s.input.kind === 'generated' ? { kind: 'generated', splits: [] } : s.input,
    outputFormat: s.output,
    outputTempPath: `${outputWorkDir(job.id, s)}/_temporary/${attempt.id}/${partFileName(task.kind, task.index)}`,
    ...(isExternalUri(s.outputPath) ? { outputStore: { uri: s.outputPath, settings: storeConfOf(s.conf ?? {}) } } : {}),
    reducers: job.reduces.length,
    params: s.params,
    shared: s.shared,
    mapOutputs,
    mapsTotal: job.maps.length,
    memoryMb: attempt.memoryMb,
    idealMemoryMb: task.memoryMb,
    elastic: attempt.elastic,
    shuffle: attemptShuffleSettings(s, task.kind, attempt.memoryMb),
    mapPartitions: task.kind === 'map' ? job.skew?.partitions : undefined,
    partitionSeed:
      task.kind === 'map' && job.skew?.strategy === 'cms' && job.skew.isPlanned ? job.skew.seed : undefined,
    reducePartitions: reducePartitions ? [...reducePartitions] : undefined,
    ...(s.streaming ? { streaming: true } : {}),
    outputReplication: s.conf?.['job.outputReplication'],
    jobToken,
  };
}
