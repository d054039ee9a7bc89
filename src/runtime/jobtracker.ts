import { mkdir } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { WebSocketServer, type WebSocket } from 'ws';
import { Books, type Effect } from '../books/index.js';
import { MinimrError, serializeError, type SerializedError } from '../errors.js';
import { createLogger, type Logger } from '../log.js';
import type { ClusterSnapshot, Policy, PoolView, SchedulingTrigger } from '../scheduler/index.js';
import { Namenode, computeSplits, type DatanodeAddress, type FileStatus } from '../storage/index.js';
import {
  attemptMeasures,
  attemptShuffleSettings,
  attemptSummaries,
  jobMemoryMb,
  jobPlan,
  jobStatus,
  mapOutputAnnouncement,
  partFileName,
  type RuntimeAttempt,
  type RuntimeData,
  type RuntimeJob,
  type RuntimeTask,
  type RuntimeWorker,
  type TaskInputPlan,
  type WorkerLink,
} from './job-in-progress.js';
import { InputCopier, type PlacementLogEntry } from './input-copier.js';
import { JobHistory } from './job-history.js';
import { JobJournal } from './job-journal.js';
import { AttemptNumbering, JobRecovery, journaledSuccess, mapOutputsToDrop } from './job-recovery.js';
import { estimatesFor, observationsOf } from './job-profile.js';
import { ProfileStore } from './profile-store.js';
import {
  MAX_FRAME_BYTES,
  NAMENODE_OPS,
  type AttemptFinished,
  type AttemptSpec,
  type ClusterInfoResult,
  type Heartbeat,
  type JobStatus,
  type JobSubmission,
  type MapOutputsChanged,
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
  /** Elastic grants are whole multiples of this, MB (default 100, the YARN-ME paper's step). */
  memoryStepMb?: number;
  /** Ended jobs kept in memory at most (older ones retire to the history); default 100, as Hadoop 1's completeuserjobs.maximum. */
  retainedJobs?: number;
  /** An ended job retires to the history after this long in memory, ms; default 1 hour. */
  retainMs?: number;
  /** After a restart, how long recovered jobs wait for their workers to register again, ms; default max(10 s, the worker timeout). */
  recoveryWaitMs?: number;
  logger?: Logger;
  /** Time source; tests may pass their own. */
  clock?: () => number;
}

/** Attempts a worker does not list for this long after launch are taken as lost. */
const LAUNCH_GRACE_HEARTBEATS = 3;

/**
 * The master: NameNode of the block store, transport to workers and clients, and the hand that
 * carries out what the books decide. Job, task and attempt state and every rule of how it changes
 * live in the books (src/books), shared with the simulator; the JobTracker turns what its workers
 * report into book events, consults the policy on a snapshot of the books, has the books check the
 * decisions, and carries out the effects the books return (launch and kill messages, block copies,
 * output commits).
 */
export class JobTracker {
  readonly namenode: Namenode;
  readonly logger: Logger;
  private readonly options: Required<Omit<JobTrackerOptions, 'logger' | 'clock' | 'blockSize' | 'replication' | 'pools' | 'memoryStepMb'>>;
  /** Submissions, task successes and ended jobs' history, for restart recovery and `job list --all`. */
  private readonly journal: JobJournal;
  private readonly numbering = new AttemptNumbering();
  /** Recovered jobs waiting for their workers to register again; nothing is scheduled meanwhile. */
  private recovery: JobRecovery | null = null;
  /** Ended jobs in memory until they retire, then in the journal's history. */
  private readonly history: JobHistory;
  private readonly clock: () => number;
  private readonly policy: Policy;
  private readonly books: Books<RuntimeData>;
  private readonly copier: InputCopier;
  /** Profiles of recurring jobs, by job name: their tasks' ideal durations and penalty models. */
  readonly profiles: ProfileStore;
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
  /** Reducer plans from the live workers and their measured speeds (kept across re-registrations). */
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
      retainedJobs: options.retainedJobs ?? 100,
      retainMs: options.retainMs ?? 3_600_000,
      recoveryWaitMs: options.recoveryWaitMs ?? Math.max(10_000, options.workerTimeoutMs ?? heartbeatMs * 5),
    };
    for (const [name, value] of [['retainedJobs', this.options.retainedJobs], ['retainMs', this.options.retainMs], ['recoveryWaitMs', this.options.recoveryWaitMs]] as const) {
      if (!Number.isInteger(value) || value < 0) throw new MinimrError('EBADCONF', `${name} must be a whole number >= 0, got ${value}`);
    }
    this.policy = options.policy;
    this.books = new Books<RuntimeData>({
      pools: options.pools ?? [],
      maxAttempts: this.options.maxAttempts,
      stopwatch: () => performance.now(),
      attemptId: (taskId, n) => this.numbering.attemptId(taskId, n),
      ...(options.memoryStepMb !== undefined ? { memoryStepMb: options.memoryStepMb } : {}),
    });
    this.clock = options.clock ?? Date.now;
    this.logger = options.logger ?? createLogger('jobtracker');
    this.namenode = new Namenode({
      dbPath: join(options.dataDir, 'namenode'),
      defaultBlockSize: options.blockSize,
      defaultReplication: options.replication,
      logger: this.logger,
    });
    this.copier = new InputCopier(this.namenode, this.books, this.logger, this.clock);
    this.profiles = new ProfileStore(join(options.dataDir, 'profiles'), this.logger);
    this.journal = new JobJournal(join(options.dataDir, 'jobs'));
    this.history = new JobHistory(this.books, this.journal, this.numbering, this.options, this.logger);
    const d = new Date();
    this.jobIdPrefix = `job_${d.getUTCFullYear()}${pad2(d.getUTCMonth() + 1)}${pad2(d.getUTCDate())}${pad2(d.getUTCHours())}${pad2(d.getUTCMinutes())}${pad2(d.getUTCSeconds())}`;
  }

  /** Every block copy of task input made during the run (`replicate` decisions, owed replicas completed), for data-movement figures. */
  get placementLog(): readonly PlacementLogEntry[] {
    return this.copier.log;
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
    await this.profiles.open();
    await this.journal.open();
    if (this.journal.damaged.length > 0) this.logger.error({ records: this.journal.damaged }, 'damaged job journal records left out: their jobs (or tasks) are not recovered (or re-run)');
    for (const id of await this.journal.jobIds()) {
      if (id.startsWith(`${this.jobIdPrefix}_`)) this.jobSeq = Math.max(this.jobSeq, Number(id.slice(this.jobIdPrefix.length + 1)) || 0);
    }
    this.recovery = await JobRecovery.begin(
      { books: this.books, namenode: this.namenode, logger: this.logger, numbering: this.numbering, clock: this.clock, carryOut: (effects) => this.carryOut(effects) },
      this.journal.activeJobs(),
      this.options.recoveryWaitMs,
    );
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
    this.journal.freeze();
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.draining = true;
    this.journal.freeze();
    this.stopped = true;
    if (this.livenessTimer) clearInterval(this.livenessTimer);
    for (const w of this.books.liveWorkers()) w.data.peer.close(1001, 'JobTracker shutting down');
    if (this.wss) {
      for (const client of this.wss.clients) client.terminate();
      await new Promise<void>((resolve) => this.wss!.close(() => resolve()));
    }
    if (this.httpServer) await new Promise<void>((resolve) => this.httpServer!.close(() => resolve()));
    await this.namenode.close();
    await this.profiles.close();
    await this.journal.close();
  }

  // ---- connections ---------------------------------------------------------------------------

  private onConnection(socket: WebSocket): void {
    const peer = new RpcPeer(socket, (message, p) => this.onMessage(message, p), this.logger);
    void peer.closed.then(() => {
      if (peer.label) {
        const worker = this.books.worker(peer.label);
        if (worker?.alive && worker.data.peer === peer) this.workerLost(worker, 'its connection closed');
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
          if (typeof target === 'string' && this.books.worker(target)?.alive) {
            this.namenode.blockReceived(target, message.blockId);
            this.copier.arrived(message.blockId, target);
          }
        }
        return undefined;
      }
      case 'get-job-module': {
        const job = this.requireJob(message.jobId);
        return { source: job.data.submission.moduleSource, name: job.data.submission.moduleName };
      }
      case 'submit-job':
        return this.submitJob(message.job);
      case 'job-status':
        return this.history.record(message.jobId).then((r) => r.status);
      case 'list-jobs':
        return this.history.list(message.all === true);
      case 'job-attempts':
        return this.history.record(message.jobId).then((r) => r.attempts);
      case 'kill-job':
        return this.killJob(message.jobId);
      case 'wait-job':
        return this.waitForJob(message.jobId);
      case 'cluster-info':
        return this.clusterInfo();
      case 'job-profiles':
        return message.job === undefined || message.job === null ? this.profiles.list() : [this.profiles.get(message.job)].filter((p) => p !== undefined);
      case 'import-profile':
        return this.profiles.import(message.job, message.profile, this.clock());
      case 'remove-profile':
        return this.profiles.remove(message.job);
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
    const previous = this.books.worker(w.workerId);
    if (previous?.alive) this.workerLost(previous, 'it registered again');
    const address: DatanodeAddress = { workerId: w.workerId, host: String(w.host), dataPort: w.dataPort, rack: String(w.rack || '/default-rack') };
    const now = this.clock();
    const link: WorkerLink = { address, peer, registeredAt: now, lastHeartbeat: now };
    const diskMBps = typeof w.diskMBps === 'number' && Number.isFinite(w.diskMBps) && w.diskMBps > 0 ? w.diskMBps : 0;
    const shape = { id: w.workerId, host: address.host, rack: address.rack, mapSlots: w.mapSlots, reduceSlots: w.reduceSlots, memoryMb: w.memoryMb, diskMBps };
    void this.carryOut(this.books.workerJoined(shape, link, now));
    peer.label = w.workerId;
    const blockIds = Array.isArray(message.blockIds) ? message.blockIds.filter((b): b is string => typeof b === 'string') : [];
    const orphanBlocks = await this.namenode.registerDatanode(address, blockIds);
    const mapOutputs = Array.isArray(message.mapOutputs) ? message.mapOutputs.filter((o) => typeof o?.jobId === 'string' && typeof o.attemptId === 'string') : [];
    const orphanMapOutputs = mapOutputsToDrop(this.books, this.recovery, w.workerId, mapOutputs);
    this.recovery?.workerRegistered(w.workerId, mapOutputs);
    this.logger.info({ worker: w.workerId, rack: address.rack, mapSlots: w.mapSlots, reduceSlots: w.reduceSlots, blocks: blockIds.length, mapOutputs: mapOutputs.length, orphanMapOutputs: orphanMapOutputs.length }, 'worker registered');
    for (const wake of this.workerWaiters.splice(0)) wake();
    setImmediate(() => this.schedule({ kind: 'worker-joined', workerId: w.workerId }));
    return { heartbeatMs: this.options.heartbeatMs, orphanBlocks, orphanMapOutputs };
  }

  private workerFor(peer: RpcPeer, workerId: string): RuntimeWorker | undefined {
    const worker = this.books.worker(workerId);
    if (!worker?.alive || worker.data.peer !== peer) {
      this.logger.warn({ workerId }, 'message from an unregistered or replaced worker ignored');
      return undefined;
    }
    return worker;
  }

  private onHeartbeat(message: Heartbeat, peer: RpcPeer): void {
    const worker = this.workerFor(peer, message.workerId);
    if (!worker) return;
    const now = this.clock();
    worker.data.lastHeartbeat = now;
    const reported = new Set<string>();
    for (const p of message.attempts) {
      if (!p || typeof p.attemptId !== 'string') continue;
      reported.add(p.attemptId);
      const attempt = this.books.attempt(p.attemptId);
      if (!attempt || attempt.worker !== worker) continue;
      if (typeof p.progress === 'number') this.books.reportProgress(attempt, p.progress);
      if (p.counters && typeof p.counters === 'object') attempt.data.counters = p.counters;
    }
    // A launch the worker never heard of (lost frame, worker restarted) must not hold a slot forever.
    for (const attempt of [...worker.running]) {
      if (!reported.has(attempt.id) && now - attempt.startTime > LAUNCH_GRACE_HEARTBEATS * this.options.heartbeatMs) {
        const error = { code: 'EWORKERLOST', message: `worker ${worker.shape.id} does not know attempt ${attempt.id}` };
        void this.carryOut(this.books.attemptKilled(attempt, error, now, false));
      }
    }
    const deletions = this.namenode.takeBlockDeletions(worker.shape.id);
    if (deletions.length > 0) peer.send({ type: 'delete-blocks', blockIds: deletions });
    for (const work of this.namenode.takeReplicationWork(worker.shape.id)) {
      peer.send({ type: 'replicate-block', blockId: work.blockId, targets: [...work.targets] });
    }
    this.schedule({ kind: 'heartbeat', workerId: worker.shape.id });
  }

  private checkLiveness(): void {
    const now = this.clock();
    this.history.retire(now);
    if (this.recovery) this.schedule({ kind: 'tick' });
    for (const worker of this.books.liveWorkers()) {
      if (now - worker.data.lastHeartbeat > this.options.workerTimeoutMs) {
        this.workerLost(worker, `no heartbeat for ${now - worker.data.lastHeartbeat} ms`);
        worker.data.peer.terminate();
      }
    }
    for (const job of this.books.jobs()) {
      const placement = job.inputPlacement;
      if (!placement || !job.placementOpen) continue;
      if (this.books.isActive(job) && now - job.submitTime < placement.windowMs) continue;
      void this.carryOut(this.books.closePlacementWindow(job));
    }
  }

  private workerLost(worker: RuntimeWorker, why: string): void {
    if (!worker.alive) return;
    const workerId = worker.shape.id;
    if (this.draining) this.logger.info({ worker: workerId, why }, 'worker left');
    else this.logger.warn({ worker: workerId, why }, 'worker lost');
    // While draining, the block map is about to be dropped; it is rebuilt from block reports at start.
    if (!this.draining) void this.namenode.datanodeLost(workerId);
    void this.carryOut(this.books.workerLost(workerId, this.clock(), why));
    this.copier.workerLost(workerId);
    this.schedule({ kind: 'worker-lost', workerId });
  }

  /** Resolves once at least `count` workers are registered. */
  async waitForWorkers(count: number, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.books.liveWorkerCount < count) {
      const left = deadline - Date.now();
      if (left <= 0) throw new MinimrError('ETIMEOUT', `only ${this.books.liveWorkerCount} of ${count} workers registered within ${timeoutMs} ms`);
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
      workers: this.books.liveWorkers().map((w) => ({
        workerId: w.shape.id,
        host: w.data.address.host,
        dataPort: w.data.address.dataPort,
        rack: w.data.address.rack,
        mapSlots: w.shape.mapSlots,
        reduceSlots: w.shape.reduceSlots,
        memoryMb: w.shape.memoryMb,
        runningAttempts: w.running.size,
        lastHeartbeat: w.data.lastHeartbeat,
      })),
    };
  }

  // ---- jobs ------------------------------------------------------------------------------------

  private requireJob(jobId: string): RuntimeJob {
    const job = this.books.job(jobId);
    if (!job) throw new MinimrError('ENOJOB', `no job ${jobId} on this JobTracker (see \`minimr job list --all\`)`, { jobId });
    return job;
  }

  async submitJob(raw: JobSubmission): Promise<{ jobId: string }> {
    const submission = validateSubmission(raw);
    const allSplits = await this.planInput(submission);
    const maxMaps = submission.conf?.['job.maxMaps'];
    const splits = maxMaps !== undefined ? allSplits.slice(0, maxMaps) : allSplits;
    await this.prepareOutput(submission);
    const jobId = `${this.jobIdPrefix}_${String(++this.jobSeq).padStart(4, '0')}`;
    const memory = jobMemoryMb(submission);
    const verdict = estimatesFor(
      this.profiles.get(submission.name),
      { conf: submission.conf, mapInputBytes: splits.map((s) => s.inputBytes), reducers: submission.reducers, mapMemoryMb: memory.map, reduceMemoryMb: memory.reduce },
      Math.max(0, ...this.books.liveWorkers().map((w) => w.shape.memoryMb)),
    );
    if (verdict.use.state === 'rejected') this.logger.warn({ job: jobId, name: submission.name, why: verdict.use.reason }, 'profile not usable: the job runs regular');
    else if (verdict.use.state === 'none') this.logger.info({ job: jobId, name: submission.name }, 'no profile of this job yet: it runs regular');
    const maxAttempts = submission.maxAttempts ?? this.options.maxAttempts;
    const submitTime = this.clock();
    // Journaled before it is admitted: a client holding its id holds a job that survives a restart.
    await this.journal.jobSubmitted({
      jobId,
      submission,
      splits,
      ...(verdict.estimates ? { estimates: verdict.estimates } : {}),
      maxAttempts,
      profile: verdict.use,
      submitTime,
    });
    let admitted: ReturnType<Books<RuntimeData>['submit']>;
    try {
      admitted = this.books.submit(jobPlan(jobId, submission, splits, maxAttempts, verdict.estimates), submitTime);
    } catch (err) {
      await this.journal.forget(jobId);
      throw err;
    }
    const { job, effects } = admitted;
    job.data.profile = verdict.use;
    if (job.skew?.plansAtSubmission) this.logger.info({ job: jobId, row: job.skew.row, ms: job.skew.assignmentMs }, 'count-min sketch assignment made');
    this.logger.info({ job: jobId, name: submission.name, maps: job.maps.length, reduces: job.reduces.length }, 'job submitted');
    if (effects.length > 0) await this.carryOut(effects);
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
    if (!this.books.job(jobId)) return (await this.history.record(jobId)).status;
    const job = this.requireJob(jobId);
    await this.carryOut(this.books.killJob(job, this.clock(), { code: 'EJOBKILLED', message: `job ${jobId} was killed on request` }));
    return jobStatus(job);
  }

  /** Resolves with the job's final status. */
  async waitForJob(jobId: string): Promise<JobStatus> {
    if (!this.books.job(jobId)) return (await this.history.record(jobId)).status;
    const job = this.requireJob(jobId);
    if (job.data.settled) return Promise.resolve(jobStatus(job));
    return new Promise((resolve) => {
      const list = this.jobWaiters.get(jobId) ?? [];
      list.push(resolve);
      this.jobWaiters.set(jobId, list);
    });
  }

  // ---- carrying out the books' effects ----------------------------------------------------------

  /**
   * Does what the books' transitions leave to the world, in order. Output renames, the job's
   * commit and its clean-up run one after another on the job's own chain, so the success marker is
   * written only after every task's output is in place. Resolves when all of it is done.
   */
  private carryOut(effects: readonly Effect<RuntimeData>[]): Promise<void> {
    const waits: Promise<void>[] = [];
    const later = (job: RuntimeJob, step: () => Promise<void>): void => {
      const next = job.data.commits.then(step);
      job.data.commits = next.catch(() => undefined);
      waits.push(next);
    };
    for (const e of effects) {
      switch (e.kind) {
        case 'launch': {
          const a = e.attempt;
          a.data = { counters: {} };
          this.journaled(this.journal.attemptLaunched(a.task.job.id, a.task.id, a.id));
          this.logger.debug({ attempt: a.id, worker: a.worker.shape.id, locality: a.locality }, 'attempt launched');
          a.worker.data.peer.send({ type: 'launch', attempt: this.attemptSpec(a) });
          break;
        }
        case 'attempt-ended': {
          const a = e.attempt;
          if (e.tellWorker && a.worker.alive) a.worker.data.peer.send({ type: 'kill', attemptId: a.id, reason: a.error?.message ?? 'killed' });
          this.logger.debug({ attempt: a.id, state: a.state, ms: (a.finishTime ?? a.startTime) - a.startTime }, 'attempt finished');
          if (a.state === 'succeeded') break;
          if (a.error?.details?.jobEnded === undefined) {
            this.logger.warn({ attempt: a.id, worker: a.worker.shape.id, state: a.state, code: a.error?.code, err: a.error?.message }, 'attempt did not succeed');
          }
          waits.push(this.removeAttemptOutput(a));
          break;
        }
        case 'commit-task':
          later(e.attempt.task.job, () => this.commitTaskOutput(e.attempt));
          break;
        case 'map-rerun':
          this.logger.info({ task: e.task.id, why: e.why }, 'map output lost: re-running the map');
          this.journaled(this.journal.taskLost(e.task.job.id, e.task.id));
          this.tellRunningReduces(e.task.job, e.lostAttempt, 'lost');
          break;
        case 'commit-job':
          later(e.job, () => this.commitJob(e.job));
          break;
        case 'job-ended':
          later(e.job, () => this.jobEnded(e.job));
          break;
        case 'discard-output':
          later(e.job, () => this.removeOutput(e.job, e.job.data.submission.outputPath));
          break;
        case 'replicate':
          void this.copier.copy(e.task, e.workerId, e.cause);
          break;
        case 'migrated':
          this.logger.info({ jobId: e.job.id, ...e.migration }, 'job migrated');
          break;
        case 'worker-moved':
          this.logger.info({ worker: e.worker.shape.id, from: e.from, to: e.worker.cluster }, 'worker moved');
          break;
        case 'maps-done':
          break;
      }
    }
    return Promise.all(waits).then(() => undefined);
  }

  private async commitTaskOutput(attempt: RuntimeAttempt): Promise<void> {
    const task = attempt.task;
    const job = task.job;
    if (job.state !== 'running' && job.state !== 'committing') return;
    const out = job.data.submission.outputPath;
    const part = partFileName(task.kind, task.index);
    try {
      await this.namenode.rename(`${out}/_temporary/${attempt.id}/${part}`, `${out}/${part}`);
      this.journaled(this.journal.taskSucceeded(job.id, task.id, journaledSuccess(attempt, true)));
    } catch (err) {
      // Not awaited: the failure's clean-up runs on this same chain, after this step.
      void this.carryOut(this.books.failJob(job, this.clock(), { code: 'EJOBFAILED', message: `cannot commit the output of ${attempt.id}: ${(err as Error).message}` }));
    }
  }

  private async commitJob(job: RuntimeJob): Promise<void> {
    if (job.state !== 'committing') return;
    const out = job.data.submission.outputPath;
    try {
      await this.namenode.create(`${out}/_SUCCESS`, { overwrite: true, replication: 1 });
      await this.namenode.complete(`${out}/_SUCCESS`);
    } catch (err) {
      void this.carryOut(this.books.failJob(job, this.clock(), { code: 'EJOBFAILED', message: `cannot commit job output: ${(err as Error).message}` }));
      return;
    }
    void this.carryOut(this.books.jobCommitted(job, this.clock()));
  }

  private async jobEnded(job: RuntimeJob): Promise<void> {
    const ended = job.state === 'succeeded' ? { state: job.state } : { state: job.state as 'failed' | 'killed', ...(job.error ? { error: job.error } : {}) };
    await this.journal.jobEnding(job.id, ended).catch((err: Error) => this.journalFailed(err));
    for (const worker of this.books.liveWorkers()) worker.data.peer.send({ type: 'cleanup-job', jobId: job.id });
    // Before the job is reported done: a client that runs the same job again right away finds its profile.
    if (job.state === 'succeeded') await this.recordProfile(job);
    this.copier.jobEnded(job.id);
    const out = job.data.submission.outputPath;
    // A failed or killed job's partial output is of no use and would block a re-run.
    await this.removeOutput(job, job.state === 'succeeded' ? `${out}/_temporary` : out);
    job.data.settled = true;
    const status = jobStatus(job);
    // Written before the client hears of the end: an ended job never runs again after a restart.
    await this.journal.jobEnded({ status, attempts: attemptSummaries(job) }).catch((err: Error) => this.journalFailed(err));
    this.logger.info({ job: job.id, state: job.state, error: job.error?.message }, 'job finished');
    for (const resolve of this.jobWaiters.get(job.id) ?? []) resolve(status);
    this.jobWaiters.delete(job.id);
    this.history.settled(job, this.clock());
  }

  private journaled(write: Promise<void>): void {
    write.catch((err: Error) => this.journalFailed(err));
  }

  private journalFailed(err: Error): void {
    this.logger.error({ err: err.message }, 'cannot write the job journal: a restart may not recover the latest job state');
  }

  /** What the job's successful attempts measured joins the profile of its name; a failure to store it is only logged. */
  private async recordProfile(job: RuntimeJob): Promise<void> {
    try {
      const profile = await this.profiles.record(job.name, observationsOf(job), this.clock());
      this.logger.debug({ job: job.id, name: job.name, runs: profile.runs }, 'profile updated');
    } catch (err) {
      this.logger.warn({ job: job.id, name: job.name, err: (err as Error).message }, 'cannot store the job\'s profile');
    }
  }

  private async removeOutput(job: RuntimeJob, path: string): Promise<void> {
    try {
      await this.namenode.remove(path, { recursive: true });
    } catch (err) {
      if (!(err instanceof MinimrError && err.code === 'ENOENT')) this.logger.warn({ job: job.id, err: (err as Error).message }, 'output cleanup failed');
    }
  }

  // ---- attempts --------------------------------------------------------------------------------

  private onAttemptFinished(message: AttemptFinished, peer: RpcPeer): void {
    const worker = this.workerFor(peer, message.workerId);
    if (!worker) return;
    const attempt = this.books.attempt(message.attemptId);
    if (!attempt || attempt.worker !== worker) return;
    const now = this.clock();
    const counters = message.counters ?? {};
    attempt.data.counters = counters;
    if (message.mapOutput) attempt.data.mapOutput = message.mapOutput;
    const error: SerializedError = message.error ?? { code: 'EUNKNOWN', message: 'unknown error' };
    let effects: Effect<RuntimeData>[];
    if (message.state === 'succeeded') {
      const task = attempt.task;
      effects = this.books.attemptSucceeded(attempt, now, attemptMeasures(task, attempt.data));
      if (task.successfulAttempt === attempt) {
        task.job.data.addCounters(counters);
        if (task.kind === 'map') this.tellRunningReduces(task.job, attempt, 'available');
        // Its output is on its worker's disk; a reduce's (or a map-only map's) is journaled once committed.
        if (task.kind === 'map' && task.job.reduces.length > 0) this.journaled(this.journal.taskSucceeded(task.job.id, task.id, journaledSuccess(attempt, false)));
      }
    } else if (message.state === 'failed') {
      effects = this.books.attemptFailed(attempt, error, now);
    } else {
      effects = this.books.attemptKilled(attempt, error, now, false);
    }
    void this.carryOut(effects);
    this.schedule({ kind: 'attempt-finished', attemptId: attempt.id, jobId: attempt.task.job.id });
  }

  private async removeAttemptOutput(attempt: RuntimeAttempt): Promise<void> {
    const job = attempt.task.job;
    if (attempt.task.kind === 'map' && job.reduces.length > 0) return; // the worker removes its own map output
    try {
      await this.namenode.remove(`${job.data.submission.outputPath}/_temporary/${attempt.id}`, { recursive: true });
    } catch (err) {
      if (!(err instanceof MinimrError && err.code === 'ENOENT')) this.logger.warn({ attempt: attempt.id, err: (err as Error).message }, 'cannot remove attempt output');
    }
  }

  // ---- scheduling ------------------------------------------------------------------------------

  /** The policy's read-only view of the cluster. */
  snapshot(trigger: SchedulingTrigger): ClusterSnapshot {
    return this.books.snapshot(trigger, this.clock());
  }

  /**
   * Consults the policy, has the books check its decisions, and carries them out; re-entrant calls
   * are folded into one rerun. A list with any invalid decision is refused whole, as the simulator
   * refuses it: a policy bug shows instead of being half applied.
   */
  private schedule(trigger: SchedulingTrigger): void {
    if (this.stopped) return;
    if (this.recovery) {
      if (!this.recovery.ready) return;
      // Its replay runs through the books at once; what it leaves pending is scheduled below.
      const resumed = this.recovery.finish();
      this.recovery = null;
      resumed.catch((err: unknown) => this.logger.error({ err: serializeError(err) }, 'job recovery failed'));
    }
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
        const problems = this.books.check(snap, decisions);
        if (problems.length > 0) {
          this.logger.error({ policy: this.policy.name, trigger: next.kind, problems }, 'policy made invalid decisions: none of them applied');
          break;
        }
        void this.carryOut(this.books.apply(decisions, snap.now));
        next = this.rescheduleQueued;
      }
    } catch (err) {
      this.logger.error({ err: serializeError(err) }, 'scheduling policy failed');
    } finally {
      this.scheduling = false;
    }
  }

  /**
   * Tells the job's running reduces that a map output became available or was lost: a reduce
   * launched before the last map (slow start) fetches each output as its map finishes, and waits
   * for a lost one's re-run (see src/shuffle/map-output-directory.ts).
   */
  private tellRunningReduces(job: RuntimeJob, mapAttempt: RuntimeAttempt, change: 'available' | 'lost'): void {
    for (const a of job.running) {
      const partitions = a.reducePartitions;
      if (a.task.kind !== 'reduce' || !partitions || !a.worker.alive) continue;
      a.worker.data.peer.send<MapOutputsChanged>({
        type: 'map-outputs',
        attemptId: a.id,
        available: change === 'available' ? [mapOutputAnnouncement(mapAttempt, partitions)] : [],
        lost: change === 'lost' ? [{ mapIndex: mapAttempt.task.index, attemptId: mapAttempt.id }] : [],
      });
    }
  }

  private attemptSpec(attempt: RuntimeAttempt): AttemptSpec {
    const task = attempt.task;
    const job = task.job;
    const s = job.data.submission;
    const reducePartitions = attempt.reducePartitions;
    // A reduce launched before the last map (slow start) learns of the other outputs as their maps finish.
    const mapOutputs = reducePartitions ? job.maps.flatMap((m) => (m.successfulAttempt ? [mapOutputAnnouncement(m.successfulAttempt, reducePartitions)] : [])) : [];
    return {
      jobId: job.id,
      jobName: s.name,
      moduleHash: job.data.moduleHash,
      taskId: task.id,
      attemptId: attempt.id,
      kind: task.kind,
      index: task.index,
      input: task.data,
      inputFormat: s.input.kind === 'generated' ? { kind: 'generated', splits: [] } : s.input,
      outputFormat: s.output,
      outputTempPath: `${s.outputPath}/_temporary/${attempt.id}/${partFileName(task.kind, task.index)}`,
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
      partitionSeed: task.kind === 'map' && job.skew?.strategy === 'cms' && job.skew.isPlanned ? job.skew.seed : undefined,
      reducePartitions: reducePartitions ? [...reducePartitions] : undefined,
    };
  }
}

function pad2(n: number): string {
  return String(n).padStart(2, '0');
}
