/**
 * The discrete-event simulator. It keeps its jobs, tasks, attempts and workers in the same books as
 * the JobTracker (src/books), so every rule (retries, lost workers, slow start, owed replicas,
 * decision checks, snapshots) is the JobTracker's; what is its own is time: an event queue, a model
 * of each attempt's run (work, memory penalty, remote reads, chance failures) and the run's records.
 * Attempt progress is what the worker reported at its last heartbeat, computed from the heartbeat
 * phase when the policy is consulted, so heartbeats need no per-worker work otherwise.
 */
import {
  Books,
  DEFAULT_WORKER_LIMITS,
  type AttemptMeasures,
  type AttemptRecord,
  type Effect,
  type JobPlan,
  type JobRecord,
  type JobSkew,
  type SkewPlan,
  type TaskPlan,
  type WorkerRecord,
  type WorkerRegistration,
} from '../books/index.js';
import { MinimrError } from '../errors.js';
import type {
  AttemptRunRecord,
  JobRunRecord,
  ReplicationRunRecord,
  RunRecord,
  UtilizationSample,
} from '../metrics/index.js';
import type { Consultation, Decision, Policy, SchedulingTrigger, TaskKind } from '../scheduler/index.js';
import { ProcessorSharing, type ProjectedEnd } from './cpu-sharing.js';
import { MrClusterSim, type MrClusterIo, type MrClusterSimEvent } from './mr-clusters.js';
import { EventHeap, streamFor } from '../util/index.js';
import { partitionShares, sketchOf } from './skew-model.js';
import { RackIndex, misestimatedPenalty, placeReplicas, transferMs } from './model.js';
import { askPolicy, penalizedMs, policyFaultText } from '../scheduler/index.js';
import { DEFAULT_SIM_SETTINGS, type FailureSettings, type PolicyCallMode, type SimSettings } from './types.js';
import {
  parseSkewSpec,
  type ClusterShape,
  type JobSpec,
  type SkewSpec,
  type TaskSpec,
  type Workload,
  type WorkerShape,
} from '../workloads/index.js';

/** The call mode that consults a policy when it declares it must be consulted (`Policy.consultWhen`). */
const CALL_MODE_OF: Readonly<Record<Consultation, Exclude<PolicyCallMode, 'auto'>>> = {
  'every-event': 'every-event',
  'after-change': 'when-changed',
  'after-change-if-a-task-fits': 'when-useful',
  'at-heartbeats': 'every-event',
};

export interface DecisionRecord {
  readonly timeMs: number;
  readonly trigger: SchedulingTrigger['kind'];
  readonly decision: Decision;
}

export interface SimulationProgress {
  readonly simMs: number;
  readonly events: number;
  readonly jobsDone: number;
  readonly jobsTotal: number;
}

export interface SimulationOptions extends Partial<SimSettings> {
  readonly workload: Workload;
  readonly cluster: ClusterShape;
  readonly policy: Policy;
  readonly failures?: FailureSettings;
  /** Freeze every view handed to the policy, so a policy that writes to a snapshot throws (tests). */
  readonly freeze?: boolean;
  /** Keep the decision log (default true). */
  readonly recordDecisions?: boolean;
  /**
   * Keep a record of every attempt in the run record (default true); a 30,000-job run without them needs a fraction of
   * the memory.
   */
  readonly recordAttempts?: boolean;
  /** Stop at this simulated time even if work is left (jobs then count as unfinished). */
  readonly maxSimMs?: number;
  /** Stop when nothing runs and nothing but heartbeats is due for this long (default 1 day). */
  readonly stallMs?: number;
  readonly onProgress?: (p: SimulationProgress) => void;
  /**
   * Elastic grants are whole multiples of this, MB (the books' default, 100, unless given): as the real JobTracker's
   * `memoryStepMb`.
   */
  readonly memoryStepMb?: number;
}

export interface SimulationStats {
  readonly events: number;
  readonly policyCalls: number;
  readonly decisions: number;
  readonly launches: number;
  readonly simulatedMs: number;
  readonly policyCallMode: Exclude<PolicyCallMode, 'auto'>;
  readonly heartbeatMs: number;
}

export interface SimulationResult {
  readonly run: RunRecord;
  readonly decisions: readonly DecisionRecord[];
  readonly stats: SimulationStats;
}

/** What the simulator keeps beside the books on each record. */
interface SimData {
  readonly job: SimJob;
  readonly task: TaskSpec;
  readonly attempt: ModelledRun;
  readonly worker: SimWorker;
}

type Job = JobRecord<SimData>;
type Attempt = AttemptRecord<SimData>;
type Worker = WorkerRecord<SimData>;

/** A job of the workload, before and after the books admit it. */
interface SimJob {
  readonly spec: JobSpec;
  /** In the books from its admission until it ends (then retired from them, `ended` kept). */
  record: Job | null;
  ended: JobSummary | null;
  submitMs: number;
  finishMs: number | null;
  mapRequestMs: number | null;
  mapFirstStart: number | null;
  mapEnd: number | null;
  reduceRequestMs: number | null;
  reduceFirstStart: number | null;
  reduceEnd: number | null;
  /** Skewed jobs: each map output partition's share of the output, once its partitioner is known. */
  partitionShares: Float64Array | null;
}

/** What the run record reports of a job the books hold or held. */
interface JobSummary {
  readonly state: Job['state'];
  readonly mapsTotal: number;
  readonly reducesTotal: number;
  readonly mapsDone: number;
  readonly reducesDone: number;
  readonly partition: number;
  readonly migrations: Job['migrations'];
}

function summaryOf(job: Job): JobSummary {
  const { state, mapsDone, reducesDone, partition, migrations } = job;
  return {
    state,
    mapsTotal: job.maps.length,
    reducesTotal: job.reduces.length,
    mapsDone,
    reducesDone,
    partition,
    migrations,
  };
}

interface SimWorker {
  /** Position in the cluster shape: sets the heartbeat phase. */
  readonly order: number;
  joinMs: number;
  epoch: number;
  /** Heartbeat time the progress of this worker's attempts was computed at. */
  progressStamp: number;
  heartbeatQueued: boolean;
  /** When its last heartbeat was handled (-1: never). */
  beatMs: number;
  /** WorkerShape.cpuThrottle: its attempts' work takes this many times as long. */
  readonly cpuThrottle: number;
}

/** An attempt's run as the model predicts it. */
interface ModelledRun {
  /** When it ends (earlier than start + fullMs when it fails part-way); infinite while it waits for maps. */
  endMs: number;
  /** Its whole run; progress is measured against it. */
  readonly fullMs: number;
  /** When its work began: the launch, or for a reduce launched early, its job's last map. */
  workStartMs: number;
  /** A reduce launched before its job's last map: the run it starts once the maps are done; otherwise null. */
  waitingRunMs: number | null;
  readonly failure: 'none' | 'task-error';
  readonly remote: 'none' | 'rack' | 'off-rack';
  /**
   * Counts the end events pushed for this run: under CPU sharing a rate change re-projects the end, and only the latest
   * event counts.
   */
  endVersion: number;
  /** On an MR-cluster: its remote I/O on the core disks. */
  readonly io: MrClusterIo | null;
}

type SimEvent =
  | { readonly kind: 'submit'; readonly job: SimJob }
  | { readonly kind: 'placement-closed'; readonly job: Job }
  | { readonly kind: 'end'; readonly attempt: Attempt; readonly version: number }
  | { readonly kind: 'lost'; readonly worker: Worker; readonly backAtMs?: number }
  | { readonly kind: 'join'; readonly worker: Worker }
  | { readonly kind: 'heartbeat'; readonly worker: Worker; readonly epoch: number }
  /** The books look for slow attempts to back up (speculation); like heartbeats, not work of its own. */
  | { readonly kind: 'speculate' }
  | { readonly kind: 'mr-cluster'; readonly event: MrClusterSimEvent };

/** Hadoop 1's heartbeat interval: 3 s, longer on big clusters so the master sees ~100 per second. */
export function defaultHeartbeatMs(workers: number): number {
  return Math.max(3000, Math.ceil(workers / 100) * 1000);
}

function bad(message: string, details: Record<string, string | number> = {}): never {
  throw new MinimrError('EBADCONF', message, details);
}

/** The metrics' outcome and cause of an attempt that ended in the books. */
function outcomeOf(a: Attempt): { outcome: AttemptRunRecord['outcome']; cause?: string } {
  if (a.state === 'succeeded') return { outcome: 'succeeded' };
  if (a.state === 'failed') return { outcome: 'failed', cause: a.data.failure };
  if (a.error?.code === 'EWORKERLOST') return { outcome: 'failed', cause: 'worker-lost' };
  if (a.error?.details?.jobEnded !== undefined) return { outcome: 'killed', cause: 'job-failed' };
  if (a.error?.details?.by === 'speculation') return { outcome: 'killed', cause: `speculation: ${a.error.message}` };
  return { outcome: 'killed', cause: `policy-kill: ${a.error?.message ?? ''}` };
}

export class Simulator {
  private readonly settings: SimSettings;
  private readonly heartbeatMs: number;
  private readonly policy: Policy;
  private readonly mode: Exclude<PolicyCallMode, 'auto'>;
  /** The policy allocates at node heartbeats: each heartbeat is consulted on its own (`at-heartbeats`). */
  private readonly heartbeatsApart: boolean;
  /** The policy reads no progress of attempts with a duration estimate (`Policy.readsProgress`): none is reported. */
  private readonly estimatedProgressUnread: boolean;
  private readonly recordDecisions: boolean;
  private readonly recordAttempts: boolean;
  private readonly maxSimMs: number;
  private readonly stallMs: number;
  private readonly failureProbability: number;
  private readonly onProgress?: (p: SimulationProgress) => void;
  private readonly workloadName: string;
  private readonly clusterName: string;
  private readonly rackIndex: RackIndex;
  private readonly books: Books<SimData>;
  /** The hosts whose attempts share their cores (ClusterShape.hosts); null: every attempt runs at full speed. */
  private readonly cpu: ProcessorSharing<Attempt> | null;
  /** The workload's MR-clusters (FAWKES): held jobs, activation, drains and their costs. */
  private readonly mrc: MrClusterSim<SimData, SimJob>;
  private readonly shapes: ReadonlyMap<string, WorkerShape>;

  private readonly heap = new EventHeap<SimEvent>();
  private readonly workerCount: number;
  private readonly jobs: SimJob[] = [];
  private readonly jobsById = new Map<string, SimJob>();
  private readonly dependents = new Map<string, SimJob[]>();
  private readonly busyWorkers = new Set<Worker>();
  /**
   * The workers by heartbeat phase (their heartbeat time modulo the interval), rebuilt after a worker joins; and their
   * phases.
   */
  private workersByPhase: Worker[] | null = null;
  private phases: number[] = [];
  /** When attempt progress was last refreshed. */
  private progressRefreshedMs = Number.NEGATIVE_INFINITY;

  private now = 0;
  private readonly usage = { map: 0, reduce: 0, mem: 0, mapTotal: 0, reduceTotal: 0, memTotal: 0, elastic: 0 };
  private readonly partitionSlots: number[] = [];
  private nextSampleMs = 0;
  private pendingRealEvents = 0;
  /** A 'speculate' event is in the queue. */
  private speculationQueued = false;
  private jobsDone = 0;

  private readonly attemptRecords: AttemptRunRecord[] = [];
  private readonly replicationRecords: ReplicationRunRecord[] = [];
  private readonly samples: UtilizationSample[] = [];
  private readonly decisionLog: DecisionRecord[] = [];
  /** Start delays (Decision.startDelayMs) of the launches being applied, by task id. */
  private readonly startDelays = new Map<string, number>();
  /** Set when the policy named jobs that can never run (Policy.stuckJobs): the run ended there. */
  private deadlock: RunRecord['deadlock'] = undefined;
  private lastStuckAskMs = Number.NEGATIVE_INFINITY;
  private events = 0;
  private calls = 0;
  private decisionCount = 0;
  private launches = 0;

  constructor(options: SimulationOptions) {
    const defined = Object.fromEntries(
      Object.entries(options).filter(([, v]) => v !== undefined),
    ) as Partial<SimSettings>;
    this.settings = { ...DEFAULT_SIM_SETTINGS, ...pickSettings(defined) };
    const { workload, cluster, policy } = options;
    if (cluster.workers.length === 0) bad(`cluster "${cluster.name}" has no workers`);
    this.heartbeatMs = this.settings.heartbeatMs ?? defaultHeartbeatMs(cluster.workers.length);
    if (!(this.heartbeatMs > 0)) bad(`heartbeatMs must be positive, got ${this.heartbeatMs}`);
    if (!(this.settings.sampleEveryMs > 0)) bad(`sampleEveryMs must be positive, got ${this.settings.sampleEveryMs}`);
    for (const field of ['noise', 'memoryNoise', 'penaltyNoise'] as const) {
      const v = this.settings[field];
      if (!(v >= 0 && v < 1)) bad(`${field} must be a fraction in [0, 1), e.g. 0.15 for +-15%, got ${v}`, { field });
    }
    const slowStart = this.settings.reduceSlowStart;
    if (!(slowStart >= 0 && slowStart <= 1))
      bad(`reduceSlowStart must be a fraction of the maps in [0, 1], got ${slowStart}`);
    this.policy = policy;
    const mode = this.settings.policyCalls;
    this.mode = mode === 'auto' ? CALL_MODE_OF[policy.consultWhen] : mode;
    this.heartbeatsApart = policy.consultWhen === 'at-heartbeats';
    this.estimatedProgressUnread = policy.readsProgress === 'unestimated';
    this.recordDecisions = options.recordDecisions ?? true;
    this.recordAttempts = options.recordAttempts ?? true;
    this.maxSimMs = options.maxSimMs ?? Number.POSITIVE_INFINITY;
    this.stallMs = options.stallMs ?? 24 * 3600 * 1000;
    this.failureProbability = options.failures?.attemptFailureProbability ?? 0;
    this.onProgress = options.onProgress;
    this.workloadName = workload.name;
    this.clusterName = cluster.name;
    this.rackIndex = new RackIndex(cluster.workers);
    this.books = new Books<SimData>({
      freeze: options.freeze ?? false,
      pools: workload.pools ?? [],
      maxAttempts: this.settings.maxAttempts,
      reduceSlowStart: slowStart,
      speculation: { enabled: this.settings.speculation },
      mrClusters: { outputReplication: this.settings.outputReplication ?? this.settings.replication },
      ...(options.memoryStepMb !== undefined ? { memoryStepMb: options.memoryStepMb } : {}),
      // The limits guard a JobTracker against a worker's claims; a simulated cluster's shape is the
      // experiment's own, and a pooled one (YARN-ME's meganode: 100 nodes' slots in one) is above them.
      workerLimits: {
        maxMapSlots: Math.max(DEFAULT_WORKER_LIMITS.maxMapSlots, ...cluster.workers.map((w) => w.mapSlots)),
        maxReduceSlots: Math.max(DEFAULT_WORKER_LIMITS.maxReduceSlots, ...cluster.workers.map((w) => w.reduceSlots)),
        maxMemoryMb: Math.max(DEFAULT_WORKER_LIMITS.maxMemoryMb, ...cluster.workers.map((w) => w.memoryMb)),
      },
    });
    this.shapes = new Map(cluster.workers.map((w) => [w.id, w]));
    this.mrc = new MrClusterSim<SimData, SimJob>(
      {
        books: this.books,
        now: () => this.now,
        push: (time, event) => this.push(time, { kind: 'mr-cluster', event }),
        carryOut: (effects) => this.carryOut(effects),
        admit: (job) => {
          this.admit(job);
        },
        started: (job) => job.mapFirstStart !== null || job.reduceFirstStart !== null,
      },
      workload.mrClusters ?? [],
      this.settings,
    );

    const seen = new Set<string>();
    cluster.workers.forEach((shape, order) => {
      if (seen.has(shape.id)) bad(`cluster "${cluster.name}": worker "${shape.id}" is listed twice`);
      seen.add(shape.id);
      for (const field of ['mapSlots', 'reduceSlots', 'memoryMb'] as const) {
        if (!Number.isInteger(shape[field]) || shape[field] < 0)
          bad(`cluster "${cluster.name}": worker "${shape.id}": ${field} must be a non-negative integer`);
      }
      this.books.workerJoined(
        this.shapeOf(shape),
        {
          order,
          joinMs: 0,
          epoch: 0,
          progressStamp: -1,
          heartbeatQueued: false,
          beatMs: -1,
          cpuThrottle: shape.cpuThrottle ?? 1,
        },
        0,
      );
    });
    this.workerCount = cluster.workers.length;
    for (const w of this.books.allWorkers) this.addCapacity(w, 1);
    this.cpu = cluster.hosts === undefined ? null : new ProcessorSharing(this.coresByHost(cluster), this.heartbeatMs);

    for (const spec of workload.jobs) this.addJob(spec);
    for (const job of this.jobs) {
      if (job.spec.after === undefined) this.push(job.spec.submitMs, { kind: 'submit', job });
    }
    this.books.recomputeFit();
    for (const outage of options.failures?.workers ?? []) {
      const worker = this.books.worker(outage.workerId) ?? bad(`failures: unknown worker "${outage.workerId}"`);
      if (!(outage.atMs >= 0)) bad(`failures: worker "${outage.workerId}": atMs must be >= 0`);
      if (outage.backAtMs !== undefined && !(outage.backAtMs > outage.atMs))
        bad(`failures: worker "${outage.workerId}": backAtMs must be after atMs`);
      this.push(outage.atMs, { kind: 'lost', worker, backAtMs: outage.backAtMs });
    }
  }

  private coresByHost(cluster: ClusterShape): Map<string, number> {
    const hosts = new Set(cluster.workers.map((w) => w.host ?? w.id));
    const cores = new Map<string, number>();
    for (const [host, shape] of Object.entries(cluster.hosts ?? {})) {
      if (!hosts.has(host))
        bad(`cluster "${cluster.name}": hosts: "${host}" is the host of no worker`, { field: 'hosts', host });
      if (!(typeof shape?.cores === 'number' && shape.cores > 0 && Number.isFinite(shape.cores)))
        bad(`cluster "${cluster.name}": hosts: "${host}": cores must be a positive number`, { field: 'cores', host });
      cores.set(host, shape.cores);
    }
    return cores;
  }

  private shapeOf(s: WorkerShape): WorkerRegistration {
    return {
      id: s.id,
      host: s.host ?? s.id,
      rack: s.rack,
      mapSlots: s.mapSlots,
      reduceSlots: s.reduceSlots,
      memoryMb: s.memoryMb,
      diskMBps: s.diskMBps,
      ...(s.cluster !== undefined ? { cluster: s.cluster } : {}),
    };
  }

  private push(time: number, event: SimEvent): void {
    if (event.kind !== 'heartbeat' && event.kind !== 'speculate') this.pendingRealEvents++;
    this.heap.push(time, event);
  }

  private addJob(spec: JobSpec): void {
    if (typeof spec.id !== 'string' || spec.id === '') bad('workload: a job has no id');
    if (this.jobsById.has(spec.id)) bad(`workload: job "${spec.id}" is listed twice`, { jobId: spec.id });
    if (!(spec.submitMs >= 0)) bad(`workload: job "${spec.id}": submitMs must be >= 0`, { jobId: spec.id });
    const job: SimJob = {
      spec,
      record: null,
      ended: null,
      submitMs: spec.submitMs,
      finishMs: null,
      mapRequestMs: null,
      mapFirstStart: null,
      mapEnd: null,
      reduceRequestMs: null,
      reduceFirstStart: null,
      reduceEnd: null,
      partitionShares: null,
    };
    if (spec.skew !== undefined) parseSkewSpec(spec.skew, `workload: job "${spec.id}"`);
    const check = (kind: TaskKind, index: number, taskSpec: TaskSpec): void => {
      if (!(taskSpec.workMs >= 0) || !(taskSpec.memoryMb > 0)) {
        bad(`workload: job "${spec.id}": ${kind} ${index}: workMs must be >= 0 and memoryMb > 0`, { jobId: spec.id });
      }
    };
    spec.maps.forEach((t, i) => check('map', i, t));
    spec.reduces.forEach((t, i) => check('reduce', i, t));
    if (spec.after !== undefined) {
      if (!this.jobsById.has(spec.after))
        bad(`workload: job "${spec.id}" runs after "${spec.after}", which is not listed before it`, { jobId: spec.id });
      const list = this.dependents.get(spec.after) ?? [];
      list.push(job);
      this.dependents.set(spec.after, list);
    }
    this.jobs.push(job);
    this.jobsById.set(spec.id, job);
  }

  // ---- capacity and usage ----------------------------------------------------------------------

  private addCapacity(w: Worker, sign: 1 | -1): void {
    this.usage.mapTotal += sign * w.shape.mapSlots;
    this.usage.reduceTotal += sign * w.shape.reduceSlots;
    this.usage.memTotal += sign * w.shape.memoryMb;
  }

  private sampleUntil(t: number): void {
    while (this.nextSampleMs <= t) {
      this.pushSample(this.nextSampleMs);
      this.nextSampleMs += this.settings.sampleEveryMs;
    }
  }

  private pushSample(timeMs: number): void {
    const u = this.usage;
    this.samples.push({
      timeMs,
      mapSlotsUsed: u.map,
      reduceSlotsUsed: u.reduce,
      memoryUsedMb: u.mem,
      mapSlots: u.mapTotal,
      reduceSlots: u.reduceTotal,
      memoryMb: u.memTotal,
      elasticAttempts: u.elastic,
      partitionSlotsUsed: [...this.partitionSlots].map((v) => v ?? 0),
      workers: this.books.liveWorkerCount,
    });
    if (this.books.mrClusters.inUse)
      this.mrc.sample(
        timeMs,
        this.books.active.map((job) => ({ cluster: job.cluster, job: job.data })),
      );
  }

  // ---- events ----------------------------------------------------------------------------------

  private heartbeatBase(w: Worker): number {
    return w.data.joinMs + Math.floor((w.data.order * this.heartbeatMs) / this.workerCount);
  }

  private lastHeartbeat(w: Worker, t: number): number {
    const base = this.heartbeatBase(w);
    if (t < base) return -1;
    return base + Math.floor((t - base) / this.heartbeatMs) * this.heartbeatMs;
  }

  private queueHeartbeats(): void {
    if (this.mode !== 'every-event') return;
    for (const w of this.books.allWorkers) {
      if (!w.alive || w.data.heartbeatQueued) continue;
      const last = this.lastHeartbeat(w, this.now);
      // A policy that allocates at heartbeats gets a heartbeat falling at this very time, after the
      // event that brought the work (a node of DSS or YARN heartbeats whether or not work waits).
      const beatsNow = this.heartbeatsApart && last === this.now && w.data.beatMs !== this.now;
      const next = last < 0 ? this.heartbeatBase(w) : beatsNow ? last : last + this.heartbeatMs;
      w.data.heartbeatQueued = true;
      this.push(next, { kind: 'heartbeat', worker: w, epoch: w.data.epoch });
    }
  }

  private process(ev: SimEvent): SchedulingTrigger | null {
    if (ev.kind !== 'heartbeat' && ev.kind !== 'speculate') this.pendingRealEvents--;
    switch (ev.kind) {
      case 'submit':
        ev.job.submitMs = this.now;
        if (this.mrc.hold(ev.job, ev.job.spec.cluster)) {
          this.queueHeartbeats();
          return { kind: 'tick' };
        }
        return this.admit(ev.job);
      case 'mr-cluster':
        this.mrc.process(ev.event);
        return { kind: 'tick' };
      case 'placement-closed':
        this.carryOut(this.books.closePlacementWindow(ev.job));
        return null;
      case 'end': {
        const a = ev.attempt;
        if (a.state !== 'running' || ev.version !== a.data.endVersion) return null;
        if (a.data.failure === 'none') {
          this.carryOut(this.books.attemptSucceeded(a, this.now, this.measuresOf(a)));
        } else {
          this.carryOut(this.books.attemptFailed(a, { code: 'ETASK', message: a.data.failure }, this.now));
        }
        return { kind: 'attempt-finished', attemptId: a.id, jobId: a.task.job.id };
      }
      case 'lost':
        return this.loseWorker(ev.worker, ev.backAtMs);
      case 'join':
        return this.joinWorker(ev.worker);
      case 'heartbeat': {
        const w = ev.worker;
        if (!w.alive || w.data.epoch !== ev.epoch) return null;
        w.data.beatMs = this.now;
        if (!this.hasWork()) {
          w.data.heartbeatQueued = false;
          return null;
        }
        this.heap.push(this.now + this.heartbeatMs, { kind: 'heartbeat', worker: w, epoch: w.data.epoch });
        return { kind: 'heartbeat', workerId: w.shape.id };
      }
      case 'speculate':
        this.speculationQueued = false;
        if (!this.hasWork()) return null;
        this.speculate();
        this.queueSpeculation();
        return null;
    }
  }

  /** Backups of slow attempts (Books.speculate), when the books would look: at intervals and when a slot frees. */
  private speculate(): void {
    if (this.books.runningAttemptCount === 0 || !this.books.speculationDue(this.now)) return;
    // Progress as each worker last reported it, whatever the policy reads (Policy.readsProgress).
    for (const w of this.busyWorkers) this.refreshWorkerProgress(w);
    this.carryOut(this.books.speculate(this.now));
  }

  /** The books' next look for slow attempts (Books.speculate), while attempts run. */
  private queueSpeculation(): void {
    if (this.speculationQueued) return;
    this.speculationQueued = true;
    this.push(this.now + this.books.speculation.intervalMs, { kind: 'speculate' });
  }

  /** Jobs in the books, or held for an MR-cluster that is not active yet. */
  private hasWork(): boolean {
    return this.books.active.length > 0 || this.mrc.waiting > 0;
  }

  /** Hands an arrived job to the books. */
  private admit(sim: SimJob): SchedulingTrigger | null {
    const spec = sim.spec;
    const rand = streamFor(this.settings.seed, `place:${spec.id}`);
    const holders = this.mrc.inputHolders(spec.cluster, this.shapes) ?? this.rackIndex;
    const plan: JobPlan<SimData> = {
      id: spec.id,
      name: spec.name,
      ...(spec.pool !== undefined ? { pool: spec.pool } : {}),
      ...(spec.weight !== undefined ? { weight: spec.weight } : {}),
      ...(spec.cluster !== undefined ? { cluster: spec.cluster } : {}),
      ...(spec.inputPlacement ? { inputPlacement: spec.inputPlacement } : {}),
      ...(spec.skew ? { skew: skewPlanOf(spec.skew, spec.reduces.length) } : {}),
      ...(spec.referenceMs !== undefined ? { referenceMs: spec.referenceMs } : {}),
      ...(spec.speculative !== undefined ? { speculative: spec.speculative } : {}),
      maps: spec.maps.map((t, i) => ({
        ...this.taskPlan(t, `${spec.id}:m${i}`),
        preferredWorkers: t.replicas ?? placeReplicas(holders, this.settings.replication, rand),
      })),
      reduces: spec.reduces.map((t, i) => ({ ...this.taskPlan(t, `${spec.id}:r${i}`), preferredWorkers: [] })),
      data: sim,
    };
    const { job, effects } = this.books.submit(plan, this.now);
    sim.record = job;
    if (spec.inputPlacement) this.push(this.now + spec.inputPlacement.windowMs, { kind: 'placement-closed', job });
    if (job.maps.length > 0) sim.mapRequestMs = this.now;
    else if (job.reduces.length > 0) sim.reduceRequestMs = this.now;
    this.carryOut(effects);
    if (!this.books.isActive(job)) return null;
    this.queueHeartbeats();
    if (job.speculative) this.queueSpeculation();
    return { kind: 'job-submitted', jobId: job.id };
  }

  /**
   * What the books know of a task: its ideal memory and duration and its penalty model, the last
   * as estimated (`penaltyNoise`, drawn per task from its own stream `key`).
   */
  private taskPlan(t: TaskSpec, key: string): Omit<TaskPlan<SimData>, 'preferredWorkers'> {
    const noise = this.settings.penaltyNoise;
    const penalty =
      t.penalty && noise > 0
        ? misestimatedPenalty(t.penalty, 1 + noise * (2 * streamFor(this.settings.seed, `penalty:${key}`)() - 1))
        : t.penalty;
    return {
      memoryMb: t.memoryMb,
      inputBytes: t.inputBytes ?? 0,
      idealDurationMs: t.workMs,
      ...(penalty !== undefined ? { penalty } : {}),
      data: t,
    };
  }

  /** The task's true ideal memory (`memoryNoise`), drawn per task so every attempt of it agrees. */
  private trueIdealMemoryMb(a: Attempt): number {
    const spec = a.task.data;
    const noise = this.settings.memoryNoise;
    if (noise <= 0) return spec.memoryMb;
    return spec.memoryMb * (1 + noise * (2 * streamFor(this.settings.seed, `memory:${a.task.id}`)() - 1));
  }

  private loseWorker(w: Worker, backAtMs: number | undefined): SchedulingTrigger | null {
    if (!w.alive) return null;
    this.carryOut(this.books.workerLost(w.shape.id, this.now, 'outage'));
    w.data.epoch++;
    w.data.heartbeatQueued = false;
    this.addCapacity(w, -1);
    if (backAtMs !== undefined) this.push(backAtMs, { kind: 'join', worker: w });
    return { kind: 'worker-lost', workerId: w.shape.id };
  }

  private joinWorker(w: Worker): SchedulingTrigger | null {
    if (w.alive) return null;
    w.data.joinMs = this.now;
    w.data.progressStamp = -1;
    this.workersByPhase = null;
    this.carryOut(this.books.workerJoined(w.shape, w.data, this.now));
    this.addCapacity(w, 1);
    if (this.hasWork()) this.queueHeartbeats();
    return { kind: 'worker-joined', workerId: w.shape.id };
  }

  /** What the books' transitions leave to the engine: here, the model of time and the run's records. */
  private carryOut(effects: readonly Effect<SimData>[]): void {
    for (const e of effects) {
      switch (e.kind) {
        case 'launch':
          this.started(e.attempt);
          break;
        case 'attempt-ended':
          this.ended(e.attempt);
          break;
        case 'maps-done':
          this.releaseWaitingReduces(e.job);
          break;
        case 'commit-job':
          this.carryOut(this.books.jobCommitted(e.job, this.now));
          break;
        case 'job-ended':
          this.jobEnded(e.job);
          break;
        case 'replicate':
          this.replicationRecords.push({
            timeMs: this.now,
            jobId: e.task.job.id,
            taskId: e.task.id,
            workerId: e.workerId,
            bytes: e.task.data.inputBytes ?? 0,
            crossRack: e.crossRack,
            cause: e.cause,
          });
          this.books.replicaLanded(e.task, e.workerId);
          break;
        case 'mr-cluster':
        case 'load-input':
        case 'replicate-block':
        case 'save-output':
        case 'worker-moved':
          this.mrc.effect(e);
          break;
        case 'commit-task':
        case 'map-rerun':
        case 'discard-output':
        case 'migrated':
          break;
      }
    }
  }

  /** A launched attempt: how long it runs, whether it fails, and what it reads, from the model. */
  private started(a: Attempt): void {
    const task = a.task;
    const job = task.job;
    const spec = task.data;
    const w = a.worker;
    const memoryMb = a.memoryMb;
    const rand = streamFor(this.settings.seed, a.id);
    const noise = 1 + this.settings.noise * (2 * rand() - 1);
    const failsByChance = rand() < this.failureProbability;
    const failPoint = rand();
    const input = spec.inputBytes ?? 0;
    const stored = task.kind === 'map' && task.preferredWorkers.length > 0 && input > 0;
    const remote: ModelledRun['remote'] =
      !stored || a.locality === 'node' ? 'none' : a.locality === 'rack' ? 'rack' : 'off-rack';
    const netMBps = remote === 'rack' ? this.settings.rackMBps : this.settings.offRackMBps;
    const commits = task.kind === 'reduce' || job.reduces.length === 0;
    const io = this.mrc.ioOf(a, remote === 'none' ? 0 : input, netMBps, commits ? (spec.outputBytes ?? 0) : 0);
    const readMs = io ? io.readMs + io.writeMs : remote === 'none' ? 0 : transferMs(input, netMBps);
    // Only an elastic run meets the truth about its memory: a regular grant is what the task asked for.
    const idealMemoryMb = a.elastic ? this.trueIdealMemoryMb(a) : spec.memoryMb;
    const workMs = spec.workMs * this.reduceWorkScale(a) * w.data.cpuThrottle;
    const fullMs = Math.max(
      1,
      Math.round(penalizedMs(idealMemoryMb, spec.penalty, workMs * noise, memoryMb, w.shape.diskMBps) + readMs),
    );
    const failure: ModelledRun['failure'] = failsByChance ? 'task-error' : 'none';
    const runMs = failsByChance ? Math.max(1, Math.round(fullMs * failPoint)) : fullMs;
    // A reduce launched before its job's last map holds the slot and works only once the maps are done.
    const waits = task.kind === 'reduce' && job.mapsDone < job.maps.length;
    // Held from now, working from the launch the policy asked to wait for (Decision.startDelayMs).
    const delayMs = waits ? 0 : (this.startDelays.get(task.id) ?? 0);
    const endMs = waits ? Number.POSITIVE_INFINITY : this.now + delayMs + runMs;
    a.data = {
      endMs,
      fullMs,
      workStartMs: this.now + delayMs,
      waitingRunMs: waits ? runMs : null,
      failure,
      remote,
      endVersion: 0,
      io,
    };
    this.launches++;
    if (task.kind === 'map') job.data.mapFirstStart ??= this.now;
    else job.data.reduceFirstStart ??= this.now;
    this.busyWorkers.add(w);
    if (task.kind === 'map') this.usage.map++;
    else this.usage.reduce++;
    this.usage.mem += memoryMb;
    if (a.elastic) this.usage.elastic++;
    this.partitionSlots[a.partition] = (this.partitionSlots[a.partition] ?? 0) + 1;
    if (!waits) this.beginWork(a, runMs, delayMs);
  }

  /** What a successful attempt measured: its input, its output and, for a skewed job's maps, each partition's bytes. */
  private measuresOf(a: Attempt): AttemptMeasures {
    const spec = a.task.data;
    const job = a.task.job;
    if (job.skew === null) return { inputBytes: spec.inputBytes ?? 0, outputBytes: spec.outputBytes ?? 0 };
    const shares = this.partitionSharesOf(job, job.skew);
    if (a.task.kind === 'map') {
      const out = spec.outputBytes ?? spec.inputBytes ?? 0;
      return {
        inputBytes: spec.inputBytes ?? 0,
        outputBytes: spec.outputBytes ?? 0,
        partitionBytes: Array.from(shares, (s) => s * out),
      };
    }
    let mapOutput = 0;
    for (const m of job.maps) mapOutput += m.data.outputBytes ?? m.data.inputBytes ?? 0;
    return { inputBytes: this.shareOf(shares, a.reducePartitions) * mapOutput, outputBytes: spec.outputBytes ?? 0 };
  }

  /** A skewed job's reduce works on its share of the output: R x share of its task's work (1 when even). */
  private reduceWorkScale(a: Attempt): number {
    const job = a.task.job;
    if (a.task.kind !== 'reduce' || job.skew === null) return 1;
    return job.reduces.length * this.shareOf(this.partitionSharesOf(job, job.skew), a.reducePartitions);
  }

  private shareOf(shares: Float64Array, partitions: readonly number[] | undefined): number {
    let sum = 0;
    for (const p of partitions ?? []) sum += shares[p] ?? 0;
    return sum;
  }

  /** Known once the job's maps partition: at submission for 'cms' (its sketch row's seed), seed 0 otherwise. */
  private partitionSharesOf(job: Job, skew: JobSkew): Float64Array {
    job.data.partitionShares ??= partitionShares(job.data.spec.skew!, skew.partitions, skew.seed);
    return job.data.partitionShares;
  }

  /**
   * The attempt starts its `runMs` of work now (its whole run, or up to its failure point). Under
   * CPU sharing the read of remote input and the memory penalty's spill are work like the rest,
   * slowed alike by the host's other runs: a simplification, as a remote read waits on the network.
   */
  private beginWork(a: Attempt, runMs: number, delayMs = 0): void {
    if (this.cpu === null || runMs === 0 || !this.cpu.shares(a.worker.shape.host)) {
      a.data.endMs = this.now + delayMs + runMs;
      this.push(a.data.endMs, { kind: 'end', attempt: a, version: a.data.endVersion });
      return;
    }
    // Shared cores: the wait is counted as work (start delays come from YARN-shaped policies, whose
    // clusters do not share cores).
    this.scheduleEnds(this.cpu.start(a, a.worker.shape.host, runMs + delayMs, this.now));
  }

  private scheduleEnds(ends: readonly ProjectedEnd<Attempt>[]): void {
    for (const { key: a, endMs } of ends) {
      a.data.endMs = endMs;
      a.data.endVersion++;
      this.push(endMs, { kind: 'end', attempt: a, version: a.data.endVersion });
    }
  }

  /** Work the attempt had done by `t`: the time since its work began, unless it shares its host's cores. */
  private workDoneMs(a: Attempt, t: number): number {
    return this.cpu?.isRunning(a) ? this.cpu.workDoneMs(a, t) : t - a.data.workStartMs;
  }

  private ended(a: Attempt): void {
    const now = this.now;
    const task = a.task;
    const job = task.job;
    const w = a.worker;
    // Computed before the host's share is given back: it needs the rates the attempt ran at.
    const doneMs = this.recordAttempts ? this.workDoneMs(a, now) : 0;
    // Its share of the host's cores goes to the host's other runs from now on.
    if (this.cpu !== null) this.scheduleEnds(this.cpu.stop(a, now));
    if (w.running.size === 0) this.busyWorkers.delete(w);
    if (task.kind === 'map') this.usage.map--;
    else this.usage.reduce--;
    this.usage.mem -= a.memoryMb;
    if (a.elastic) this.usage.elastic--;
    this.partitionSlots[a.partition]!--;
    this.mrc.ioDone(a.data.io);

    this.recordAttempt(a, doneMs);
    if (task.successfulAttempt !== a) return;
    const sim = job.data;
    if (task.kind === 'map') {
      sim.mapEnd = Math.max(sim.mapEnd ?? now, now);
      if (job.reduces.length > 0 && this.books.reducesOpen(job)) sim.reduceRequestMs ??= now;
    } else {
      sim.reduceEnd = now;
    }
  }

  private recordAttempt(a: Attempt, doneMs: number): void {
    if (!this.recordAttempts) return;
    const now = this.now;
    const task = a.task;
    const job = task.job;
    const w = a.worker;
    const input = task.data.inputBytes ?? 0;
    const run = a.data;
    const { outcome, cause } = outcomeOf(a);
    const bytesRead =
      outcome === 'succeeded' ? input : run.fullMs > 0 ? input * Math.max(0, Math.min(1, doneMs / run.fullMs)) : 0;
    this.attemptRecords.push({
      id: a.id,
      ...(a.speculative ? { speculative: true } : {}),
      jobId: job.id,
      taskId: task.id,
      kind: task.kind,
      workerId: w.shape.id,
      startMs: a.startTime,
      endMs: now,
      outcome,
      ...(cause !== undefined ? { cause } : {}),
      locality: a.locality,
      partition: a.partition,
      inputBytes: input,
      bytesRead,
      remoteNodeBytes: run.remote === 'none' ? 0 : bytesRead,
      remoteRackBytes: run.remote === 'off-rack' ? bytesRead : 0,
      memoryMb: a.memoryMb,
      idealMemoryMb: task.memoryMb,
    });
  }

  private jobEnded(job: Job): void {
    const sim = job.data;
    sim.finishMs = job.state === 'succeeded' ? this.now : null;
    sim.ended = summaryOf(job);
    sim.record = null;
    this.books.retire(job);
    this.jobsDone++;
    for (const next of this.dependents.get(job.id) ?? [])
      this.push(Math.max(next.spec.submitMs, this.now), { kind: 'submit', job: next });
  }

  /** The job's last map is done: its early reduces start their work now. */
  private releaseWaitingReduces(job: Job): void {
    for (const a of job.running) {
      const run = a.data;
      if (run.waitingRunMs === null) continue;
      const runMs = run.waitingRunMs;
      run.workStartMs = this.now;
      run.waitingRunMs = null;
      this.books.reportProgress(a, 0);
      this.beginWork(a, runMs);
    }
  }

  // ---- the policy ------------------------------------------------------------------------------

  /**
   * Attempt progress is what the worker reported at its last heartbeat. Only workers with a
   * heartbeat since the last refresh can have news: on 3000 workers a call looks at the few whose
   * phase the clock passed, not at every busy worker. (A worker busy since then has only attempts
   * started after its last heartbeat, still at progress 0.)
   */
  private refreshProgress(): void {
    // Every simulated task carries its workload's duration as its estimate (taskPlan): a policy that
    // reads only unestimated attempts' progress reads none here.
    if (this.estimatedProgressUnread) return;
    const since = this.progressRefreshedMs;
    this.progressRefreshedMs = this.now;
    if (this.now - since >= this.heartbeatMs) {
      for (const w of this.busyWorkers) this.refreshWorkerProgress(w);
      return;
    }
    if (this.now === since) return;
    const ring = this.phaseRing();
    const from = since % this.heartbeatMs;
    const to = this.now % this.heartbeatMs;
    // Phases in (from, to], wrapping past the end of the interval.
    const visit = (lo: number, hi: number): void => {
      for (let i = this.firstPhaseAbove(lo); i < ring.length && this.phases[i]! <= hi; i++) {
        const w = ring[i]!;
        if (this.busyWorkers.has(w)) this.refreshWorkerProgress(w);
      }
    };
    if (from < to) visit(from, to);
    else {
      visit(from, Number.POSITIVE_INFINITY);
      visit(Number.NEGATIVE_INFINITY, to);
    }
  }

  private phaseRing(): Worker[] {
    if (this.workersByPhase === null) {
      const phaseOf = (w: Worker): number =>
        ((this.heartbeatBase(w) % this.heartbeatMs) + this.heartbeatMs) % this.heartbeatMs;
      this.workersByPhase = [...this.books.allWorkers].sort((a, b) => phaseOf(a) - phaseOf(b));
      this.phases = this.workersByPhase.map(phaseOf);
    }
    return this.workersByPhase;
  }

  /** The first place in the ring whose phase is above `phase`. */
  private firstPhaseAbove(phase: number): number {
    let lo = 0;
    let hi = this.phases.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.phases[mid]! <= phase) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private refreshWorkerProgress(w: Worker): void {
    const stamp = this.lastHeartbeat(w, this.now);
    if (stamp === w.data.progressStamp) return;
    w.data.progressStamp = stamp;
    for (const a of w.running) {
      const run = a.data;
      const progress =
        run.waitingRunMs !== null || stamp <= run.workStartMs || run.fullMs <= 0
          ? 0
          : Math.min(1, this.workDoneMs(a, stamp) / run.fullMs);
      this.books.reportProgress(a, progress);
    }
  }

  private consult(trigger: SchedulingTrigger): void {
    if (!this.hasWork() || this.books.liveWorkerCount === 0) return;
    if (this.mode === 'when-useful' && (!this.books.hasChanged || !this.books.somethingFits())) return;
    if (this.mode === 'when-changed' && !this.books.hasChanged) return;
    this.books.takeChanged();
    this.refreshProgress();
    const snapshot = this.books.snapshot(trigger, this.now);
    this.calls++;
    const answer = askPolicy(this.policy, snapshot, (d) => this.books.check(snapshot, d));
    if ('fault' in answer) {
      throw new MinimrError(
        'EPOLICY',
        `${policyFaultText(this.policy.name, answer.fault)} (at t=${this.now} ms, trigger ${trigger.kind})`,
        { policy: this.policy.name, rule: answer.fault.rule, timeMs: this.now },
      );
    }
    if (answer.decisions.length > 0) this.applyAll(trigger, answer.decisions);
    this.speculate();
    if (this.mode === 'when-useful') this.books.recomputeFit();
  }

  /** Carries out decisions `askPolicy` checked against the snapshot they answer. */
  private applyAll(trigger: SchedulingTrigger, decisions: readonly Decision[]): void {
    for (const d of decisions) {
      this.decisionCount++;
      if (this.recordDecisions) this.decisionLog.push({ timeMs: this.now, trigger: trigger.kind, decision: d });
      if (d.kind === 'launch' && d.startDelayMs) this.startDelays.set(d.taskId, d.startDelayMs);
    }
    this.carryOut(this.books.apply(decisions, this.now));
    this.startDelays.clear();
  }

  // ---- the loop --------------------------------------------------------------------------------

  run(): SimulationResult {
    const batch = this.settings.batchSameTime;
    while (this.heap.size > 0) {
      const t = this.heap.peek()!.time;
      if (t > this.maxSimMs) break;
      // Only heartbeats left and nothing running: a policy that will never launch again.
      if (this.pendingRealEvents === 0 && this.books.runningAttemptCount === 0) {
        if (t - this.books.lastChange > this.stallMs) break;
        if (this.isDeadlocked(t)) break;
      }
      this.sampleUntil(t);
      this.now = t;
      let trigger: SchedulingTrigger | null = null;
      do {
        const ev = this.heap.pop()!;
        this.events++;
        const tr = this.process(ev.value);
        if (tr?.kind === 'heartbeat' && this.heartbeatsApart) {
          // Each node's heartbeat is a call of its own: a policy allocating at heartbeats visits that node.
          if (trigger) this.consult(trigger);
          this.consult(tr);
          trigger = null;
          continue;
        }
        trigger ??= tr;
        if (this.onProgress && (this.events & 0xffff) === 0) {
          this.onProgress({
            simMs: this.now,
            events: this.events,
            jobsDone: this.jobsDone,
            jobsTotal: this.jobs.length,
          });
        }
      } while (batch && this.heap.size > 0 && this.heap.peek()!.time === t);
      if (trigger) this.consult(trigger);
    }
    // No event left at all (a policy consulted only after changes needs no heartbeats): jobs still
    // active with nothing running can never run either.
    if (this.heap.size === 0 && this.books.runningAttemptCount === 0) this.isDeadlocked(Number.POSITIVE_INFINITY);
    this.pushSample(this.now);
    return { run: this.record(), decisions: this.decisionLog, stats: this.statsNow() };
  }

  /**
   * Nothing runs, nothing is due but heartbeats, and nothing changed for two heartbeat intervals (every
   * node was offered to the policy since): a policy that can say which jobs can never run ends the run
   * here, with its reasons in the run record, instead of the run idling out its stall limit.
   */
  private isDeadlocked(t: number): boolean {
    if (this.deadlock || !this.policy.stuckJobs || !this.hasWork()) return false;
    if (t - this.books.lastChange <= 2 * this.heartbeatMs) return false;
    if (t - this.lastStuckAskMs < this.heartbeatMs) return false;
    this.lastStuckAskMs = t;
    this.refreshProgress();
    const stuck = this.policy.stuckJobs(this.books.snapshot({ kind: 'tick' }, this.now));
    if (stuck.length === 0) return false;
    // Found at the next event (time t), or when none was left (the last one's).
    const atMs = Number.isFinite(t) ? t : this.now;
    this.deadlock = { atMs, jobs: stuck.map((s) => ({ jobId: s.jobId, reason: s.reason })) };
    return true;
  }

  private statsNow(): SimulationStats {
    return {
      events: this.events,
      policyCalls: this.calls,
      decisions: this.decisionCount,
      launches: this.launches,
      simulatedMs: this.now,
      policyCallMode: this.mode,
      heartbeatMs: this.heartbeatMs,
    };
  }

  private record(): RunRecord {
    const jobs: JobRunRecord[] = this.jobs.map((j) => {
      const r = j.ended ?? (j.record ? summaryOf(j.record) : null);
      const mapsTotal = r?.mapsTotal ?? 0;
      const reducesTotal = r?.reducesTotal ?? 0;
      const phase = (request: number | null, first: number | null, end: number | null, count: number, done: number) =>
        count === 0 || request === null
          ? null
          : { requestMs: request, firstStartMs: first, endMs: done === count ? end : null };
      return {
        id: j.spec.id,
        name: j.spec.name,
        app: j.spec.app,
        pool: j.spec.pool ?? 'default',
        cluster: j.spec.cluster ?? 'default',
        submitMs: j.submitMs,
        finishMs: j.finishMs,
        state: r?.state === 'succeeded' ? 'succeeded' : r?.state === 'failed' ? 'failed' : 'unfinished',
        mapsTotal,
        reducesTotal,
        mapPhase: phase(j.mapRequestMs, j.mapFirstStart, j.mapEnd, mapsTotal, r?.mapsDone ?? 0),
        reducePhase: phase(j.reduceRequestMs, j.reduceFirstStart, j.reduceEnd, reducesTotal, r?.reducesDone ?? 0),
        partition: r?.partition ?? 0,
        migrations: r?.migrations ?? [],
      };
    });
    return {
      policy: this.policy.name,
      workload: this.workloadName,
      cluster: this.clusterName,
      seed: this.settings.seed,
      endMs: this.now,
      jobs,
      attempts: this.attemptRecords,
      replications: this.replicationRecords,
      utilization: this.samples,
      ...(this.books.mrClusters.inUse ? { mrClusters: this.mrc.record(this.policy.balanceHistory) } : {}),
      ...(this.deadlock ? { deadlock: this.deadlock } : {}),
    };
  }
}

/** The simulator's settings among `o`'s fields (other options ride along in the same objects). */
export function pickSettings(o: Partial<SimSettings>): Partial<SimSettings> {
  const keys: Array<keyof SimSettings> = [
    'seed',
    'heartbeatMs',
    'replication',
    'rackMBps',
    'offRackMBps',
    'noise',
    'memoryNoise',
    'penaltyNoise',
    'maxAttempts',
    'sampleEveryMs',
    'policyCalls',
    'batchSameTime',
    'reduceSlowStart',
    'outputReplication',
    'speculation',
  ];
  const out: Record<string, unknown> = {};
  for (const k of keys) if (o[k] !== undefined) out[k] = o[k];
  return out as Partial<SimSettings>;
}

/** Runs a workload on a cluster under a policy and returns the run record and decision log. */
export function simulate(options: SimulationOptions): SimulationResult {
  return new Simulator(options).run();
}

/** A skewed job as the books plan it: its strategy and factor, and for 'cms' the sketch a client would send. */
function skewPlanOf(spec: SkewSpec, reduces: number): SkewPlan {
  const partitionFactor = spec.partitionFactor ?? 1;
  return {
    strategy: spec.strategy,
    partitionFactor,
    ...(spec.strategy === 'cms' ? { sketch: sketchOf(spec, reduces * partitionFactor) } : {}),
  };
}
