import { mkdir } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { WebSocketServer, type WebSocket } from 'ws';
import { MinimrError, serializeError, type SerializedError } from '../errors.js';
import { createLogger, type Logger } from '../log.js';
import type { ClusterSnapshot, Decision, JobView, Policy, PoolView, SchedulingTrigger, WorkerView } from '../scheduler/index.js';
import type { ReplicaCause } from '../metrics/index.js';
import { Namenode, computeSplits, owedReplicaTarget, type DatanodeAddress, type FileStatus } from '../storage/index.js';
import { JobInProgress, attemptShuffleSettings, partFileName, type AttemptRecord, type TaskInputPlan, type TaskRecord } from './job-in-progress.js';
import { WorkerSpeedBook, planReducerSlots, type ReducerSlot } from './job-skew.js';
import {
  MAX_FRAME_BYTES,
  NAMENODE_OPS,
  type AttemptFinished,
  type AttemptSpec,
  type ClusterInfoResult,
  type Heartbeat,
  type JobStatus,
  type JobSubmission,
  type Message,
  type NamenodeOp,
  type RegisterResult,
  type RegisterWorker,
} from './protocol.js';
import { RpcPeer } from './rpc-peer.js';
import { validateSubmission } from './submission.js';

export interface JobTrackerOptions {
  /** Directory for the NameNode's metadata. */
  dataDir: string;
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  policy: Policy;
  /** Pools with their minimum shares and weights, as the policy sees them (`ClusterSnapshot.pools`). */
  pools?: readonly PoolView[];
  heartbeatMs?: number;
  /** A worker silent for this long is declared lost (default 5 heartbeats). */
  workerTimeoutMs?: number;
  blockSize?: number;
  replication?: number;
  maxAttempts?: number;
  logger?: Logger;
  /** Time source; tests and the simulator may pass their own. */
  clock?: () => number;
}

interface WorkerRecord {
  readonly address: DatanodeAddress;
  readonly mapSlots: number;
  readonly reduceSlots: number;
  readonly memoryMb: number;
  readonly diskMBps: number;
  /** MR-cluster the worker is in (FAWKES `move-node`). */
  cluster: string;
  readonly peer: RpcPeer;
  readonly registeredAt: number;
  lastHeartbeat: number;
  readonly running: Map<string, AttemptRecord>;
}

/** Attempts a worker does not list for this long after launch are taken as lost. */
const LAUNCH_GRACE_HEARTBEATS = 3;
/** A reduce that keeps failing to fetch is eventually counted as failing itself. */
const MAX_FETCH_FAILURES_PER_REDUCE = 8;

/**
 * The master: NameNode of the block store, keeper of jobs and their tasks, and the only place that
 * acts on scheduling decisions. The policy decides; the JobTracker checks each decision against its
 * own books before acting on it, so a buggy policy cannot double-book a slot.
 */
export class JobTracker {
  readonly namenode: Namenode;
  readonly logger: Logger;
  private readonly options: Required<Omit<JobTrackerOptions, 'logger' | 'clock' | 'blockSize' | 'replication' | 'pools'>>;
  private readonly clock: () => number;
  private readonly policy: Policy;
  private readonly pools: readonly PoolView[];
  /** Every block copy of task input made during the run (`replicate` decisions, owed replicas completed), for data-movement figures. */
  readonly placementLog: { time: number; jobId: string; taskId: string; workerId: string; blockId: string; bytes: number; crossRack: boolean; cause: ReplicaCause }[] = [];
  /** Jobs whose `inputPlacement` window has closed (their owed replicas were completed). */
  private readonly placementClosed = new Set<string>();
  /** Input copies asked for by `replicate` decisions, by block id, until the target confirms. */
  private readonly placements = new Map<string, { task: TaskRecord; workerId: string; waiting: Set<string> }[]>();
  private readonly workers = new Map<string, WorkerRecord>();
  private readonly jobs = new Map<string, JobInProgress>();
  private readonly attempts = new Map<string, AttemptRecord>();
  private jobSeq = 0;
  private readonly jobIdPrefix: string;
  private httpServer?: Server;
  private wss?: WebSocketServer;
  private livenessTimer?: NodeJS.Timeout;
  private scheduling = false;
  private rescheduleQueued: SchedulingTrigger | null = null;
  private stopped = false;
  /** Set while the whole cluster is being shut down: workers leaving is expected then. */
  private draining = false;
  private readonly jobWaiters = new Map<string, Array<(status: JobStatus) => void>>();
  private readonly workerWaiters: Array<() => void> = [];
  /** Measured processing rates of workers (kept across re-registrations), for skew assignments. */
  private readonly workerSpeeds = new WorkerSpeedBook();
  port = 0;

  constructor(options: JobTrackerOptions) {
    const heartbeatMs = options.heartbeatMs ?? 1000;
    this.options = {
      dataDir: options.dataDir,
      host: options.host ?? '127.0.0.1',
      port: options.port ?? 0,
      policy: options.policy,
      heartbeatMs,
      workerTimeoutMs: options.workerTimeoutMs ?? heartbeatMs * 5,
      maxAttempts: options.maxAttempts ?? 4,
    };
    this.policy = options.policy;
    this.pools = options.pools ?? [];
    this.clock = options.clock ?? Date.now;
    this.logger = options.logger ?? createLogger('jobtracker');
    this.namenode = new Namenode({
      dbPath: join(options.dataDir, 'namenode'),
      defaultBlockSize: options.blockSize,
      defaultReplication: options.replication,
      logger: this.logger,
    });
    const d = new Date();
    this.jobIdPrefix = `job_${d.getUTCFullYear()}${pad2(d.getUTCMonth() + 1)}${pad2(d.getUTCDate())}${pad2(d.getUTCHours())}${pad2(d.getUTCMinutes())}${pad2(d.getUTCSeconds())}`;
  }

  get url(): string {
    return `ws://${this.options.host}:${this.port}`;
  }

  get heartbeatMs(): number {
    return this.options.heartbeatMs;
  }

  async start(): Promise<void> {
    await mkdir(this.options.dataDir, { recursive: true });
    await this.namenode.open();
    this.httpServer = createServer((_req, res) => {
      res.writeHead(426, { 'content-type': 'text/plain' }).end('minimr JobTracker: connect with the minimr protocol over WebSocket\n');
    });
    this.wss = new WebSocketServer({ server: this.httpServer, maxPayload: MAX_FRAME_BYTES, perMessageDeflate: false });
    this.wss.on('connection', (socket: WebSocket) => this.onConnection(socket));
    await new Promise<void>((resolve, reject) => {
      this.httpServer!.once('error', reject);
      this.httpServer!.listen(this.options.port, this.options.host, () => resolve());
    });
    const addr = this.httpServer.address();
    this.port = typeof addr === 'object' && addr ? addr.port : this.options.port;
    this.livenessTimer = setInterval(() => this.checkLiveness(), Math.max(50, Math.floor(this.options.heartbeatMs / 2)));
    this.logger.info({ url: this.url, policy: this.policy.name }, 'JobTracker listening');
  }

  /** Announces an orderly shutdown, so that workers leaving is not reported as a failure. */
  drain(): void {
    this.draining = true;
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.draining = true;
    this.stopped = true;
    if (this.livenessTimer) clearInterval(this.livenessTimer);
    for (const w of this.workers.values()) w.peer.close(1001, 'JobTracker shutting down');
    if (this.wss) {
      for (const client of this.wss.clients) client.terminate();
      await new Promise<void>((resolve) => this.wss!.close(() => resolve()));
    }
    if (this.httpServer) await new Promise<void>((resolve) => this.httpServer!.close(() => resolve()));
    await this.namenode.close();
  }

  // ---- connections ---------------------------------------------------------------------------

  private onConnection(socket: WebSocket): void {
    const peer = new RpcPeer(socket, (message, p) => this.onMessage(message, p), this.logger);
    void peer.closed.then(() => {
      if (peer.label) {
        const worker = this.workers.get(peer.label);
        if (worker && worker.peer === peer) this.workerLost(worker, 'its connection closed');
      }
    });
  }

  private onMessage(message: Message, peer: RpcPeer): unknown {
    switch (message.type) {
      case 'register':
        return this.registerWorker(message, peer);
      case 'heartbeat':
        return this.onHeartbeat(message, peer);
      case 'attempt-finished':
        return this.onAttemptFinished(message, peer);
      case 'block-replicated': {
        if (!this.workerFor(peer, message.workerId)) return undefined;
        for (const target of message.targets) {
          if (typeof target === 'string' && this.workers.has(target)) {
            this.namenode.blockReceived(target, message.blockId);
            this.placementArrived(message.blockId, target);
          }
        }
        return undefined;
      }
      case 'get-job-module': {
        const job = this.requireJob(message.jobId);
        return { source: job.submission.moduleSource, name: job.submission.moduleName };
      }
      case 'submit-job':
        return this.submitJob(message.job);
      case 'job-status':
        return this.requireJob(message.jobId).status();
      case 'list-jobs':
        return [...this.jobs.values()].map((j) => j.status());
      case 'job-attempts':
        return this.requireJob(message.jobId).attemptSummaries();
      case 'kill-job':
        return this.killJob(message.jobId);
      case 'cluster-info':
        return this.clusterInfo();
      case 'fs':
        return this.namenodeCall(message.op, message.args);
      default:
        throw new MinimrError('EPROTOCOL', `a JobTracker does not accept "${message.type}" messages`);
    }
  }

  private namenodeCall(op: NamenodeOp, args: unknown[]): Promise<unknown> {
    if (!(NAMENODE_OPS as readonly string[]).includes(op)) {
      throw new MinimrError('EPROTOCOL', `unknown file system operation "${op}"`);
    }
    const fn = this.namenode[op] as (...a: unknown[]) => Promise<unknown>;
    return fn.apply(this.namenode, args);
  }

  // ---- workers ---------------------------------------------------------------------------------

  private async registerWorker(message: RegisterWorker, peer: RpcPeer): Promise<RegisterResult> {
    const w = message.worker;
    if (typeof w.workerId !== 'string' || !/^[A-Za-z0-9_.:-]{1,128}$/.test(w.workerId)) {
      throw new MinimrError('EPROTOCOL', 'register: workerId must be 1-128 characters of [A-Za-z0-9_.:-]');
    }
    for (const field of ['mapSlots', 'reduceSlots', 'memoryMb', 'dataPort'] as const) {
      if (!Number.isInteger(w[field]) || w[field] < 0) throw new MinimrError('EPROTOCOL', `register: ${field} must be a non-negative integer`);
    }
    const previous = this.workers.get(w.workerId);
    if (previous) this.workerLost(previous, 'it registered again');
    const address: DatanodeAddress = { workerId: w.workerId, host: String(w.host), dataPort: w.dataPort, rack: String(w.rack || '/default-rack') };
    const now = this.clock();
    const record: WorkerRecord = {
      address,
      mapSlots: w.mapSlots,
      reduceSlots: w.reduceSlots,
      memoryMb: w.memoryMb,
      diskMBps: typeof w.diskMBps === 'number' && Number.isFinite(w.diskMBps) && w.diskMBps > 0 ? w.diskMBps : 0,
      cluster: 'default',
      peer,
      registeredAt: now,
      lastHeartbeat: now,
      running: new Map(),
    };
    peer.label = w.workerId;
    this.workers.set(w.workerId, record);
    const blockIds = Array.isArray(message.blockIds) ? message.blockIds.filter((b): b is string => typeof b === 'string') : [];
    const orphanBlocks = await this.namenode.registerDatanode(address, blockIds);
    this.logger.info({ worker: w.workerId, rack: address.rack, mapSlots: w.mapSlots, reduceSlots: w.reduceSlots, blocks: blockIds.length }, 'worker registered');
    for (const wake of this.workerWaiters.splice(0)) wake();
    setImmediate(() => this.schedule({ kind: 'worker-joined', workerId: w.workerId }));
    return { heartbeatMs: this.options.heartbeatMs, orphanBlocks };
  }

  private workerFor(peer: RpcPeer, workerId: string): WorkerRecord | undefined {
    const worker = this.workers.get(workerId);
    if (!worker || worker.peer !== peer) {
      this.logger.warn({ workerId }, 'message from an unregistered or replaced worker ignored');
      return undefined;
    }
    return worker;
  }

  private onHeartbeat(message: Heartbeat, peer: RpcPeer): void {
    const worker = this.workerFor(peer, message.workerId);
    if (!worker) return;
    const now = this.clock();
    worker.lastHeartbeat = now;
    const reported = new Set<string>();
    for (const p of message.attempts) {
      if (!p || typeof p.attemptId !== 'string') continue;
      reported.add(p.attemptId);
      const attempt = worker.running.get(p.attemptId);
      if (!attempt) continue;
      if (typeof p.progress === 'number') attempt.progress = Math.min(1, Math.max(0, p.progress));
      if (p.counters && typeof p.counters === 'object') attempt.counters = p.counters;
    }
    // A launch the worker never heard of (lost frame, worker restarted) must not hold a slot forever.
    for (const attempt of [...worker.running.values()]) {
      if (!reported.has(attempt.id) && now - attempt.startTime > LAUNCH_GRACE_HEARTBEATS * this.options.heartbeatMs) {
        this.finishAttempt(attempt, 'killed', {}, { code: 'EWORKERLOST', message: `worker ${worker.address.workerId} does not know attempt ${attempt.id}` });
      }
    }
    const deletions = this.namenode.takeBlockDeletions(worker.address.workerId);
    if (deletions.length > 0) peer.send({ type: 'delete-blocks', blockIds: deletions });
    for (const work of this.namenode.takeReplicationWork(worker.address.workerId)) {
      peer.send({ type: 'replicate-block', blockId: work.blockId, targets: [...work.targets] });
    }
    this.schedule({ kind: 'heartbeat', workerId: worker.address.workerId });
  }

  private checkLiveness(): void {
    const now = this.clock();
    for (const worker of [...this.workers.values()]) {
      if (now - worker.lastHeartbeat > this.options.workerTimeoutMs) {
        this.workerLost(worker, `no heartbeat for ${now - worker.lastHeartbeat} ms`);
        worker.peer.terminate();
      }
    }
    this.closePlacementWindows(now);
  }

  /**
   * An `inputPlacement` window that has run out, or whose job has ended: the owed replicas no
   * policy placed are written on a rack-mate of an existing replica (`owedReplicaTarget`, as the
   * simulator does), so the data set ends with its full replication under every policy.
   */
  private closePlacementWindows(now: number): void {
    for (const job of this.jobs.values()) {
      const placement = job.submission.inputPlacement;
      if (!placement || this.placementClosed.has(job.id) || (job.isActive && now - job.submitTime < placement.windowMs)) continue;
      this.placementClosed.add(job.id);
      const live = [...this.workers.values()].map((w) => ({ id: w.address.workerId, rack: w.address.rack }));
      for (const task of job.maps) {
        const holders = [...task.preferredWorkers];
        for (const list of this.placements.values()) for (const p of list) if (p.task === task && !holders.includes(p.workerId)) holders.push(p.workerId);
        for (; task.unplacedReplicas > 0; task.unplacedReplicas--) {
          const target = owedReplicaTarget(holders, live, task.index);
          if (target === undefined) break;
          holders.push(target);
          void this.replicateInput(job.id, task.id, target, 'window-close');
        }
        task.unplacedReplicas = 0;
      }
    }
  }

  private workerLost(worker: WorkerRecord, why: string): void {
    const workerId = worker.address.workerId;
    if (this.workers.get(workerId) !== worker) return;
    this.workers.delete(workerId);
    if (this.draining) this.logger.info({ worker: workerId, why }, 'worker left');
    else this.logger.warn({ worker: workerId, why }, 'worker lost');
    // While draining, the block map is about to be dropped; it is rebuilt from block reports at start.
    if (!this.draining) void this.namenode.datanodeLost(workerId);
    for (const attempt of [...worker.running.values()]) {
      this.finishAttempt(attempt, 'killed', {}, { code: 'EWORKERLOST', message: `worker ${workerId} was lost (${why})` }, false);
    }
    // Copies on their way to it will never be confirmed.
    this.dropPlacements((p) => p.workerId === workerId);
    // Map outputs live on the map worker's disk: those still needed by unfinished reduces are redone.
    for (const job of this.jobs.values()) {
      if (!job.isActive || job.mapOnly || job.reduces.every((r) => r.state === 'succeeded')) continue;
      for (const task of job.maps) {
        if (task.state === 'succeeded' && task.successfulAttempt?.workerId === workerId) {
          this.logger.info({ task: task.id, worker: workerId }, 'map output lost with its worker: re-running the map');
          task.state = 'pending';
          task.successfulAttempt = undefined;
        }
      }
    }
    this.schedule({ kind: 'worker-lost', workerId });
  }

  /** Resolves once at least `count` workers are registered. */
  async waitForWorkers(count: number, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.workers.size < count) {
      const left = deadline - Date.now();
      if (left <= 0) throw new MinimrError('ETIMEOUT', `only ${this.workers.size} of ${count} workers registered within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(left, 200));
        this.workerWaiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  clusterInfo(): ClusterInfoResult {
    return {
      policy: this.policy.name,
      heartbeatMs: this.options.heartbeatMs,
      workers: [...this.workers.values()].map((w) => ({
        workerId: w.address.workerId,
        host: w.address.host,
        dataPort: w.address.dataPort,
        rack: w.address.rack,
        mapSlots: w.mapSlots,
        reduceSlots: w.reduceSlots,
        memoryMb: w.memoryMb,
        runningAttempts: w.running.size,
        lastHeartbeat: w.lastHeartbeat,
      })),
    };
  }

  // ---- jobs ------------------------------------------------------------------------------------

  private requireJob(jobId: string): JobInProgress {
    const job = this.jobs.get(jobId);
    if (!job) throw new MinimrError('ENOJOB', `no job ${jobId} on this JobTracker (see \`minimr job list\`)`, { jobId });
    return job;
  }

  async submitJob(raw: JobSubmission): Promise<{ jobId: string }> {
    const submission = validateSubmission(raw);
    const allSplits = await this.planInput(submission);
    const maxMaps = submission.conf?.['job.maxMaps'];
    const splits = maxMaps !== undefined ? allSplits.slice(0, maxMaps) : allSplits;
    await this.prepareOutput(submission);
    const jobId = `${this.jobIdPrefix}_${String(++this.jobSeq).padStart(4, '0')}`;
    const job = new JobInProgress(jobId, submission, splits, this.clock(), submission.maxAttempts ?? this.options.maxAttempts);
    this.jobs.set(jobId, job);
    this.planSkewAtSubmission(job);
    this.logger.info({ job: jobId, name: submission.name, maps: job.maps.length, reduces: job.reduces.length }, 'job submitted');
    if (job.maps.length === 0 && job.reduces.length === 0) await this.commitJob(job);
    else setImmediate(() => this.schedule({ kind: 'job-submitted', jobId }));
    return { jobId };
  }

  private async planInput(submission: JobSubmission): Promise<TaskInputPlan[]> {
    if (submission.input.kind === 'generated') {
      return submission.input.splits.map((value) => ({ input: { kind: 'generated', value }, preferredWorkers: [], preferredRacks: [], inputBytes: 0 }));
    }
    if (submission.inputPaths.length === 0) {
      throw new MinimrError('ENOINPUT', 'the job reads files but no input path was given (--input PATH)');
    }
    const files: FileStatus[] = [];
    for (const path of submission.inputPaths) {
      let status: FileStatus;
      try {
        status = await this.namenode.stat(path);
      } catch (err) {
        if (err instanceof MinimrError && err.code === 'ENOENT') {
          throw new MinimrError('ENOINPUT', `input path ${path} does not exist (put data there with \`minimr fs put LOCAL ${path}\`)`, { path });
        }
        throw err;
      }
      if (status.type === 'file') files.push(status);
      else {
        // Like Hadoop's FileInputFormat: names starting with _ or . (e.g. _SUCCESS) are not input.
        const children = (await this.namenode.list(path)).filter((c) => c.type === 'file' && !/^[_.]/.test(c.path.split('/').pop() ?? ''));
        if (children.length === 0) throw new MinimrError('ENOINPUT', `input directory ${path} has no files`, { path });
        files.push(...children);
      }
    }
    const plans: TaskInputPlan[] = [];
    for (const file of files) {
      const blocks = await this.namenode.getBlocks(file.path);
      for (const split of computeSplits(file.path, blocks)) {
        plans.push({
          input: { kind: 'file', path: split.path, start: split.start, length: split.length, fileLength: split.fileLength },
          preferredWorkers: split.preferredWorkers,
          preferredRacks: split.preferredRacks,
          inputBytes: split.length,
        });
      }
    }
    return plans;
  }

  private async prepareOutput(submission: JobSubmission): Promise<void> {
    const out = submission.outputPath;
    let exists = true;
    try {
      await this.namenode.stat(out);
    } catch (err) {
      if (!(err instanceof MinimrError && err.code === 'ENOENT')) throw err;
      exists = false;
    }
    if (exists) {
      if (!submission.overwrite) {
        throw new MinimrError('EOUTPUTEXISTS', `output path ${out} already exists; remove it (\`minimr fs rm -r ${out}\`) or submit with --overwrite`, { path: out });
      }
      await this.namenode.remove(out, { recursive: true });
    }
    await this.namenode.mkdir(`${out}/_temporary`, { parents: true });
  }

  async killJob(jobId: string): Promise<JobStatus> {
    const job = this.requireJob(jobId);
    if (job.isActive) {
      await this.endJob(job, 'killed', { code: 'EJOBKILLED', message: `job ${jobId} was killed on request` });
    }
    return job.status();
  }

  /** Resolves with the job's final status. */
  waitForJob(jobId: string): Promise<JobStatus> {
    const job = this.requireJob(jobId);
    if (!job.isActive) return Promise.resolve(job.status());
    return new Promise((resolve) => {
      const list = this.jobWaiters.get(jobId) ?? [];
      list.push(resolve);
      this.jobWaiters.set(jobId, list);
    });
  }

  private async endJob(job: JobInProgress, state: 'failed' | 'killed' | 'succeeded', error?: SerializedError): Promise<void> {
    if (!job.isActive) return;
    job.state = state;
    job.finishTime = this.clock();
    job.error = error;
    for (const attempt of [...job.runningAttempts()]) this.killAttempt(attempt, `job ${state}`);
    for (const task of [...job.maps, ...job.reduces]) {
      if (task.state === 'pending' || task.state === 'running') task.state = state === 'succeeded' ? task.state : state;
    }
    for (const worker of this.workers.values()) worker.peer.send({ type: 'cleanup-job', jobId: job.id });
    this.dropPlacements((p) => p.task.job === job);
    const out = job.submission.outputPath;
    try {
      if (state === 'succeeded') await this.namenode.remove(`${out}/_temporary`, { recursive: true });
      // A failed or killed job's partial output is of no use and would block a re-run.
      else await this.namenode.remove(out, { recursive: true });
    } catch (err) {
      this.logger.warn({ job: job.id, err: (err as Error).message }, 'output cleanup failed');
    }
    this.logger.info({ job: job.id, state, error: error?.message }, 'job finished');
    for (const resolve of this.jobWaiters.get(job.id) ?? []) resolve(job.status());
    this.jobWaiters.delete(job.id);
  }

  private async commitJob(job: JobInProgress): Promise<void> {
    const out = job.submission.outputPath;
    try {
      await this.namenode.create(`${out}/_SUCCESS`, { overwrite: true, replication: 1 });
      await this.namenode.complete(`${out}/_SUCCESS`);
    } catch (err) {
      await this.endJob(job, 'failed', { code: 'EJOBFAILED', message: `cannot commit job output: ${(err as Error).message}` });
      return;
    }
    await this.endJob(job, 'succeeded');
  }

  // ---- attempts --------------------------------------------------------------------------------

  private onAttemptFinished(message: AttemptFinished, peer: RpcPeer): void {
    const worker = this.workerFor(peer, message.workerId);
    if (!worker) return;
    const attempt = worker.running.get(message.attemptId);
    if (!attempt) return;
    const state = message.state === 'succeeded' || message.state === 'failed' ? message.state : 'killed';
    if (message.mapOutput) attempt.mapOutput = message.mapOutput;
    this.finishAttempt(attempt, state, message.counters ?? {}, message.error);
  }

  private finishAttempt(
    attempt: AttemptRecord,
    state: 'succeeded' | 'failed' | 'killed',
    counters: Record<string, number>,
    error?: SerializedError,
    reschedule = true,
  ): void {
    if (attempt.state !== 'running') return;
    const task = attempt.task;
    const job = task.job;
    attempt.state = state;
    attempt.finishTime = this.clock();
    attempt.counters = counters;
    attempt.error = error;
    this.attempts.delete(attempt.id);
    this.workers.get(attempt.workerId)?.running.delete(attempt.id);
    this.logger.debug({ attempt: attempt.id, state, ms: attempt.finishTime - attempt.startTime }, 'attempt finished');

    if (!job.isActive) return;
    if (state === 'succeeded') {
      attempt.progress = 1;
      void this.attemptSucceeded(attempt);
    } else {
      if (state === 'failed') job.failedAttempts++;
      else job.killedAttempts++;
      void this.removeAttemptOutput(attempt);
      if (task.state === 'running') this.attemptUnsuccessful(attempt, state, error);
    }
    if (reschedule) this.schedule({ kind: 'attempt-finished', attemptId: attempt.id, jobId: job.id });
  }

  private attemptUnsuccessful(attempt: AttemptRecord, state: 'failed' | 'killed', error?: SerializedError): void {
    const task = attempt.task;
    const job = task.job;
    this.logger.warn({ attempt: attempt.id, worker: attempt.workerId, state, code: error?.code, err: error?.message }, 'attempt did not succeed');
    if (state === 'killed') {
      task.state = 'pending';
      return;
    }
    if (error?.code === 'EFETCH' && task.kind === 'reduce' && task.fetchFailures < MAX_FETCH_FAILURES_PER_REDUCE) {
      task.fetchFailures++;
      const mapIndex = Number(error.details?.mapIndex);
      const map = job.maps[mapIndex];
      if (map && map.state === 'succeeded' && (error.details?.attemptId === undefined || map.successfulAttempt?.id === error.details.attemptId)) {
        this.logger.warn({ map: map.id, reduce: task.id }, 'map output cannot be fetched: re-running the map');
        map.state = 'pending';
        map.successfulAttempt = undefined;
      }
      task.state = 'pending';
      return;
    }
    task.failures++;
    task.failedOnWorkers.add(attempt.workerId);
    if (task.failures >= job.maxAttempts) {
      const message = `task ${task.id} failed ${task.failures} times; last attempt ${attempt.id} on ${attempt.workerId}: ${error?.message ?? 'unknown error'}`;
      task.state = 'failed';
      void this.endJob(job, 'failed', { code: 'EJOBFAILED', message, details: { jobId: job.id, taskId: task.id, attemptId: attempt.id, cause: error?.code } });
      return;
    }
    task.state = 'pending';
  }

  private async attemptSucceeded(attempt: AttemptRecord): Promise<void> {
    const task = attempt.task;
    const job = task.job;
    if (task.state !== 'running') return; // a duplicate attempt finished after the task was done
    task.state = 'succeeded';
    task.successfulAttempt = attempt;
    job.addCounters(attempt.counters);
    job.recordSuccess(attempt);
    this.skewTaskSucceeded(attempt);
    const writesOutput = task.kind === 'reduce' || job.mapOnly;
    if (writesOutput) {
      const out = job.submission.outputPath;
      const part = partFileName(task.kind, task.index);
      try {
        await this.namenode.rename(`${out}/_temporary/${attempt.id}/${part}`, `${out}/${part}`);
      } catch (err) {
        await this.endJob(job, 'failed', { code: 'EJOBFAILED', message: `cannot commit the output of ${attempt.id}: ${(err as Error).message}` });
        return;
      }
    }
    if (job.isActive && job.allTasksSucceeded()) await this.commitJob(job);
  }

  private async removeAttemptOutput(attempt: AttemptRecord): Promise<void> {
    const job = attempt.task.job;
    if (attempt.task.kind === 'map' && !job.mapOnly) return; // the worker removes its own map output
    try {
      await this.namenode.remove(`${job.submission.outputPath}/_temporary/${attempt.id}`, { recursive: true });
    } catch (err) {
      if (!(err instanceof MinimrError && err.code === 'ENOENT')) this.logger.warn({ attempt: attempt.id, err: (err as Error).message }, 'cannot remove attempt output');
    }
  }

  private killAttempt(attempt: AttemptRecord, reason: string): void {
    const worker = this.workers.get(attempt.workerId);
    worker?.peer.send({ type: 'kill', attemptId: attempt.id, reason });
    this.finishAttempt(attempt, 'killed', attempt.counters, { code: 'EKILLED', message: reason }, false);
  }

  // ---- scheduling ------------------------------------------------------------------------------

  /** Builds the policy's read-only view of the cluster. */
  snapshot(trigger: SchedulingTrigger): ClusterSnapshot {
    const workers: WorkerView[] = [...this.workers.values()]
      .sort((a, b) => (a.address.workerId < b.address.workerId ? -1 : 1))
      .map((w) => {
        let maps = 0;
        let reduces = 0;
        let memory = 0;
        for (const a of w.running.values()) {
          if (a.task.kind === 'map') maps++;
          else reduces++;
          memory += a.memoryMb;
        }
        return {
          id: w.address.workerId,
          host: w.address.host,
          rack: w.address.rack,
          mapSlots: w.mapSlots,
          reduceSlots: w.reduceSlots,
          memoryMb: w.memoryMb,
          freeMapSlots: Math.max(0, w.mapSlots - maps),
          freeReduceSlots: Math.max(0, w.reduceSlots - reduces),
          freeMemoryMb: Math.max(0, w.memoryMb - memory),
          diskMBps: w.diskMBps,
          cluster: w.cluster,
        };
      });
    const jobs: JobView[] = [...this.jobs.values()]
      .filter((j) => j.isActive)
      .map((j) => {
        return {
          id: j.id,
          name: j.submission.name,
          pool: j.submission.pool ?? 'default',
          weight: j.submission.weight ?? 1,
          partition: j.partition,
          cluster: j.cluster,
          submitTime: j.submitTime,
          mapsTotal: j.maps.length,
          mapsCompleted: j.completed('map'),
          reducesTotal: j.reduces.length,
          reducesCompleted: j.completed('reduce'),
          pendingTasks: j.runnableTasks().map((t) => ({
            id: t.id,
            jobId: j.id,
            kind: t.kind,
            index: t.index,
            preferredWorkers: t.preferredWorkers,
            preferredRacks: t.preferredRacks,
            memoryMb: t.memoryMb,
            inputBytes: t.inputBytes,
            failedOnWorkers: [...t.failedOnWorkers],
            ...(t.unplacedReplicas > 0 ? { unplacedReplicas: t.unplacedReplicas } : {}),
          })),
          runningAttempts: [...j.runningAttempts()].map((a) => ({
            id: a.id,
            taskId: a.task.id,
            jobId: j.id,
            kind: a.task.kind,
            workerId: a.workerId,
            startTime: a.startTime,
            progress: a.progress,
            memoryMb: a.memoryMb,
            locality: a.locality,
            inputWorkers: a.task.preferredWorkers,
            inputBytes: a.task.inputBytes,
          })),
          stats: { ...j.stats },
        };
      });
    return { now: this.clock(), trigger, workers, jobs, pools: this.pools };
  }

  /** Consults the policy and carries out its decisions; re-entrant calls are folded into one rerun. */
  private schedule(trigger: SchedulingTrigger): void {
    if (this.stopped) return;
    if (this.scheduling) {
      this.rescheduleQueued = trigger;
      return;
    }
    this.scheduling = true;
    try {
      let next: SchedulingTrigger | null = trigger;
      while (next) {
        this.rescheduleQueued = null;
        const snap = this.snapshot(next);
        if (snap.jobs.length === 0 || snap.workers.length === 0) break;
        const decisions = this.policy.schedule(snap);
        for (const d of decisions) this.apply(d);
        next = this.rescheduleQueued;
      }
    } catch (err) {
      this.logger.error({ err: serializeError(err) }, 'scheduling policy failed');
    } finally {
      this.scheduling = false;
    }
  }

  private apply(decision: Decision): void {
    if (decision.kind === 'kill') {
      const attempt = this.attempts.get(decision.attemptId);
      if (attempt) this.killAttempt(attempt, decision.reason);
      return;
    }
    if (decision.kind === 'migrate') {
      const job = this.jobs.get(decision.jobId);
      if (!job?.isActive || !Number.isInteger(decision.toPartition) || decision.toPartition < 0) {
        this.logger.error({ decision }, 'policy migrated an unknown or finished job, or to a bad partition: ignored');
        return;
      }
      // Work-conserving by construction: nothing is killed or reset, only the label the policy reads.
      const record = { time: this.clock(), jobId: job.id, from: job.partition, to: decision.toPartition, partialSizeMs: decision.partialSizeMs, timerMs: decision.timerMs };
      job.migrations.push(record);
      job.partition = decision.toPartition;
      this.logger.info(record, 'job migrated');
      return;
    }
    if (decision.kind === 'replicate') {
      void this.replicateInput(decision.jobId, decision.taskId, decision.workerId, 'policy');
      return;
    }
    if (decision.kind === 'move-node') {
      const worker = this.workers.get(decision.workerId);
      if (!worker || typeof decision.toCluster !== 'string' || decision.toCluster === '') {
        this.logger.error({ decision }, 'policy moved an unknown worker or to a bad cluster: ignored');
        return;
      }
      this.logger.info({ worker: decision.workerId, from: worker.cluster, to: decision.toCluster }, 'worker moved');
      worker.cluster = decision.toCluster;
      return;
    }
    const job = this.jobs.get(decision.jobId);
    const task = job?.findTask(decision.taskId);
    const worker = this.workers.get(decision.workerId);
    if (!job || !task || !worker || !job.isRunnable(task)) {
      this.logger.error({ decision }, 'policy launched a task that is not runnable or on an unknown worker: ignored');
      return;
    }
    let slotsUsed = 0;
    let memoryUsed = 0;
    for (const a of worker.running.values()) {
      if (a.task.kind === task.kind) slotsUsed++;
      memoryUsed += a.memoryMb;
    }
    const memoryMb = decision.memoryMb ?? task.memoryMb;
    const slots = task.kind === 'map' ? worker.mapSlots : worker.reduceSlots;
    if (slotsUsed >= slots || memoryUsed + memoryMb > worker.memoryMb) {
      this.logger.error({ decision }, 'policy over-allocated a worker: decision ignored');
      return;
    }
    const attempt = job.newAttempt(task, worker.address.workerId, this.clock(), memoryMb, decision.locality);
    this.attempts.set(attempt.id, attempt);
    worker.running.set(attempt.id, attempt);
    this.logger.debug({ attempt: attempt.id, worker: worker.address.workerId, locality: decision.locality }, 'attempt launched');
    worker.peer.send({ type: 'launch', attempt: this.attemptSpec(job, task, attempt) });
  }

  /**
   * Copies the blocks of a pending map's input split onto `workerId` (improved FAIR's private data
   * placement). A holder of each block sends it, as in re-replication; once every block has arrived
   * the worker joins the task's preferred workers, so later snapshots show the task as local there.
   */
  private async replicateInput(jobId: string, taskId: string, workerId: string, origin: 'policy' | 'window-close'): Promise<void> {
    const job = this.jobs.get(jobId);
    const task = job?.findTask(taskId);
    const target = this.workers.get(workerId);
    // Owed replicas belong to the data set, not the job: they are completed after it ended, too.
    if (!job || (!job.isActive && origin === 'policy') || !task || task.kind !== 'map' || task.input.kind !== 'file' || !target) {
      this.logger.error({ jobId, taskId, workerId }, 'policy asked to replicate the input of an unknown task or onto an unknown worker: ignored');
      return;
    }
    if (task.preferredWorkers.includes(workerId)) return;
    // A policy's copy of an owed replica counts as placed when asked for (before the await below),
    // so the next snapshot no longer offers it and the window's close does not write it again.
    let cause: ReplicaCause = 'completed';
    if (origin === 'policy') {
      cause = task.unplacedReplicas > 0 ? 'placed' : 'extra';
      if (cause === 'placed') task.unplacedReplicas--;
    }
    const { path, start, length } = task.input;
    let blocks;
    try {
      blocks = await this.namenode.getBlocks(path);
    } catch (err) {
      this.logger.warn({ taskId, path, err: (err as Error).message }, 'cannot replicate task input');
      if (cause === 'placed' && !this.placementClosed.has(jobId)) task.unplacedReplicas++;
      return;
    }
    const needed = blocks.filter((b) => b.offset < start + length && b.offset + b.length > start && !b.locations.some((l) => l.workerId === workerId));
    const placement = { task, workerId, waiting: new Set<string>() };
    let unsourced = 0;
    for (const block of needed) {
      const source = block.locations.map((l) => this.workers.get(l.workerId)).find((w) => w !== undefined);
      if (!source) {
        unsourced++;
        continue;
      }
      placement.waiting.add(block.blockId);
      const list = this.placements.get(block.blockId) ?? [];
      list.push(placement);
      this.placements.set(block.blockId, list);
      if (cause !== 'completed') job.addCounters({ PLACEMENT_BYTES: block.length });
      this.placementLog.push({ time: this.clock(), jobId, taskId, workerId, blockId: block.blockId, bytes: block.length, crossRack: source.address.rack !== target.address.rack, cause });
      source.peer.send({ type: 'replicate-block', blockId: block.blockId, targets: [target.address] });
    }
    if (unsourced > 0) {
      // No live worker holds some block: the task must not show as local there, and an owed
      // replica stays owed (the window's close retries it).
      this.logger.warn({ taskId, workerId, blocks: unsourced }, 'no live replica to copy task input from');
      this.dropPlacements((p) => p === placement);
      if (cause === 'placed' && !this.placementClosed.has(jobId)) task.unplacedReplicas++;
    } else if (placement.waiting.size === 0) this.placementDone(placement);
    else this.logger.info({ taskId, workerId, blocks: placement.waiting.size }, 'replicating task input for placement');
  }

  private placementArrived(blockId: string, workerId: string): void {
    const list = this.placements.get(blockId);
    if (!list) return;
    for (const placement of list.filter((p) => p.workerId === workerId)) {
      placement.waiting.delete(blockId);
      if (placement.waiting.size === 0) this.placementDone(placement);
    }
    const rest = list.filter((p) => p.workerId !== workerId);
    if (rest.length > 0) this.placements.set(blockId, rest);
    else this.placements.delete(blockId);
  }

  /** Forgets the placements `drop` selects, whatever blocks they still wait for. */
  private dropPlacements(drop: (placement: { task: TaskRecord; workerId: string }) => boolean): void {
    for (const [blockId, list] of this.placements) {
      const rest = list.filter((p) => !drop(p));
      if (rest.length === 0) this.placements.delete(blockId);
      else if (rest.length < list.length) this.placements.set(blockId, rest);
    }
  }

  private placementDone(placement: { task: TaskRecord; workerId: string }): void {
    const { task, workerId } = placement;
    const rack = this.workers.get(workerId)?.address.rack;
    if (!task.preferredWorkers.includes(workerId)) task.preferredWorkers = [...task.preferredWorkers, workerId];
    if (rack !== undefined && !task.preferredRacks.includes(rack)) task.preferredRacks = [...task.preferredRacks, rack];
  }

  private attemptSpec(job: JobInProgress, task: TaskRecord, attempt: AttemptRecord): AttemptSpec {
    const s = job.submission;
    const reducePartitions = task.kind === 'reduce' ? this.skewPartitionsFor(job, task, attempt) : undefined;
    const mapOutputs =
      task.kind === 'reduce'
        ? job.maps.map((m) => {
            const a = m.successfulAttempt!;
            const w = this.workers.get(a.workerId);
            return { mapIndex: m.index, attemptId: a.id, workerId: a.workerId, host: w?.address.host ?? '', dataPort: w?.address.dataPort ?? 0 };
          })
        : [];
    return {
      jobId: job.id,
      jobName: s.name,
      taskId: task.id,
      attemptId: attempt.id,
      kind: task.kind,
      index: task.index,
      input: task.input,
      inputFormat: s.input.kind === 'generated' ? { kind: 'generated', splits: [] } : s.input,
      outputFormat: s.output,
      outputTempPath: `${s.outputPath}/_temporary/${attempt.id}/${partFileName(task.kind, task.index)}`,
      reducers: job.reduces.length,
      params: s.params,
      shared: s.shared,
      mapOutputs,
      memoryMb: attempt.memoryMb,
      shuffle: attemptShuffleSettings(s, task.kind, attempt.memoryMb),
      expectedInputRecords: reducePartitions
        ? job.maps.reduce((sum, m) => sum + reducePartitions.reduce((n, p) => n + (m.successfulAttempt?.mapOutput?.partitionRecords[p] ?? 0), 0), 0)
        : 0,
      mapPartitions: task.kind === 'map' && !job.mapOnly ? job.skew.partitions : undefined,
      partitionSeed: task.kind === 'map' && job.skew.strategy === 'cms' && job.skew.isPlanned ? job.skew.seed : undefined,
      reducePartitions,
    };
  }

  // ---- skew: virtual partitions and their assignment (see job-skew.ts) -------------------------

  /** The reducers' planned workers and relative speeds, from the live workers. */
  private reducerSlots(reducers: number): ReducerSlot[] {
    const workers = [...this.workers.values()].map((w) => ({ workerId: w.address.workerId, reduceSlots: w.reduceSlots }));
    const speeds = this.workerSpeeds.relativeSpeeds(workers.map((w) => w.workerId));
    return planReducerSlots(workers, reducers, (id) => speeds.get(id) ?? 1);
  }

  /** 'cms' jobs are assigned before their maps run: the maps partition with the chosen row's hash. */
  private planSkewAtSubmission(job: JobInProgress): void {
    if (!job.skew.plansAtSubmission(job.submission)) return;
    job.skew.planFromSketch(job.submission, this.reducerSlots(job.reduces.length));
    this.logger.info({ job: job.id, row: job.skew.row, ms: job.skew.assignmentMs }, 'count-min sketch assignment made');
  }

  /** The partitions a reduce attempt reads; 'hash' and 'simple' jobs are assigned at their first reduce. */
  private skewPartitionsFor(job: JobInProgress, task: TaskRecord, attempt: AttemptRecord): number[] {
    const skew = job.skew;
    if (!skew.isPlanned) {
      const sizes = new Array<number>(skew.partitions).fill(0);
      for (const m of job.maps) m.successfulAttempt?.mapOutput?.partitionBytes.forEach((b, p) => (sizes[p] = (sizes[p] ?? 0) + b));
      skew.planFromMapOutputs(sizes, this.reducerSlots(job.reduces.length));
    }
    skew.reduceLaunched(attempt.startTime);
    const ids = [...this.workers.keys()];
    const speeds = this.workerSpeeds.relativeSpeeds(ids.includes(attempt.workerId) ? ids : [...ids, attempt.workerId]);
    return [...skew.partitionsFor(task.index, attempt.workerId, (id) => speeds.get(id) ?? 1)];
  }

  /** Worker speeds from every successful attempt; the reduce phase ends with the last reduce. */
  private skewTaskSucceeded(attempt: AttemptRecord): void {
    const task = attempt.task;
    const c = attempt.counters;
    const bytes = task.kind === 'reduce' ? c.REDUCE_INPUT_BYTES : (c.MAP_INPUT_BYTES ?? task.inputBytes);
    this.workerSpeeds.record(attempt.workerId, task.kind, bytes ?? 0, c.TASK_MS ?? (attempt.finishTime ?? attempt.startTime) - attempt.startTime);
    const job = task.job;
    if (task.kind === 'reduce' && job.reduces.every((r) => r.state === 'succeeded')) job.addCounters(job.skew.reducesDone(this.clock()));
  }
}

function pad2(n: number): string {
  return String(n).padStart(2, '0');
}
