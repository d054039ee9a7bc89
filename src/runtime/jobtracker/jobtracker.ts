import { mkdir } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { join } from 'node:path';
import { WebSocketServer, type WebSocket } from 'ws';
import { Books, type Effect, type WorkerHealthOptions, type WorkerLimits } from '../../books/index.js';
import { MinimrError, serializeError, type SerializedError } from '../../errors.js';
import { createLogger, type Logger } from '../../log.js';
import type { ClusterSnapshot, Policy, PoolView, SchedulingTrigger } from '../../scheduler/index.js';
import { DEFAULT_BLOCK_SIZE, DEFAULT_REPLICATION, Namenode, computeSplits, validateUserName, type Caller, type DatanodeAddress, type FileStatus } from '../../storage/index.js';
import {
  attemptMeasures,
  attemptShuffleSettings,
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
import { JobHistory, historyEntry } from './job-history.js';
import { JobJournal } from './job-journal.js';
import { AttemptNumbering, JobRecovery, journaledSuccess, mapOutputsToDrop } from './job-recovery.js';
import { createUiRequestHandler } from '../../ui/index.js';
import { jobTrackerUiSource } from './ui-source.js';
import { isLoopbackAddress } from '../worker/advertised-host.js';
import { ClusterMetrics, PROMETHEUS_CONTENT_TYPE, formatPrometheus } from './prometheus.js';
import { attemptLogTokenId, fetchAttemptLog, isAttemptLogStream, type AttemptLogSlice } from '../worker/attempt-logs.js';
import { estimatesFor, observationsOf } from './job-profile.js';
import { inputFilesAt } from './input-files.js';
import { MrClusterRuntime } from './mr-cluster-runtime.js';
import { ProfileStore } from './profile-store.js';
import {
  MAX_FRAME_BYTES,
  NAMENODE_ARITY,
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
} from '../wire/protocol.js';
import { acceptPeer, type RpcPeer } from '../wire/rpc-peer.js';
import { lendSecretInProcess, loadOrCreateSecret, osUserName, readSecretFile, webPassword, webUser, withdrawSecretInProcess } from '../wire/auth.js';
import { validateSubmission } from '../wire/submission.js';
import { phaseTrace } from '../../util/index.js';

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
  /** The most slots and memory a worker may claim (default DEFAULT_WORKER_LIMITS). */
  workerLimits?: WorkerLimits;
  /** When a worker's failing or vanishing attempts exclude it (default DEFAULT_WORKER_HEALTH). */
  workerHealth?: WorkerHealthOptions;
  /** Ended jobs kept in memory at most (older ones retire to the history); default 100, as Hadoop 1's completeuserjobs.maximum. */
  retainedJobs?: number;
  /** An ended job retires to the history after this long in memory, ms; default 1 hour. */
  retainMs?: number;
  /** After a restart, how long recovered jobs wait for their workers to register again, ms; default max(10 s, the worker timeout). */
  recoveryWaitMs?: number;
  logger?: Logger;
  /** Time source; tests may pass their own. */
  clock?: () => number;
  /**
   * The cluster secret every connection must prove it knows (auth.ts). Default: `<dataDir>/secret`,
   * generated on first start; a file given here must exist.
   */
  secretFile?: string;
  /** The cluster's administrator, who may act on every job and path (default: the OS user running the JobTracker). */
  admin?: string;
  /** Serve wss:// (and https://) with this certificate and key (PEM). */
  tls?: { readonly cert: Buffer; readonly key: Buffer };
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
  private readonly options: Required<Omit<JobTrackerOptions, 'logger' | 'clock' | 'blockSize' | 'replication' | 'pools' | 'memoryStepMb' | 'secretFile' | 'admin' | 'tls' | 'workerLimits' | 'workerHealth'>>;
  /** Where the cluster secret is; workers of a local cluster are given this path. */
  readonly secretFile: string;
  /** A secret file given is never written; the default one is made on first start. */
  private readonly secretGiven: boolean;
  private secret?: Buffer;
  /** Derived from the secret once, at start (auth.ts's webPassword). */
  private webPasswordOfSecret?: string;
  /** The user who may act on every job and path. */
  readonly admin: string;
  private readonly tls?: { readonly cert: Buffer; readonly key: Buffer };
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
  /** MR-clusters (FAWKES): carries out the books' MR-cluster effects and scopes their blocks in the NameNode. */
  private readonly mrc: MrClusterRuntime;
  /** Profiles of recurring jobs, by job name: their tasks' ideal durations and penalty models. */
  readonly profiles: ProfileStore;
  /** Counters and histograms of `/metrics` (metrics.ts). */
  readonly metrics = new ClusterMetrics();
  /** Where each connection comes from: a worker that advertises loopback from elsewhere is warned about. */
  private readonly peerAddresses = new WeakMap<RpcPeer, string>();
  /** The web UI's pages (src/ui), served on the protocol's port. */
  private readonly ui: (req: IncomingMessage, res: ServerResponse) => boolean;
  private jobSeq = 0;
  private readonly jobIdPrefix: string;
  private httpServer?: Server;
  private wss?: WebSocketServer;
  private livenessTimer?: NodeJS.Timeout;
  /** When the liveness check last ran (performance.now()), to tell a stalled tracker from silent workers. */
  private lastLivenessCheck?: number;
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
      mrClusters: { engineBlocks: true, outputReplication: options.replication ?? DEFAULT_REPLICATION, blockBytes: options.blockSize ?? DEFAULT_BLOCK_SIZE },
      ...(options.memoryStepMb !== undefined ? { memoryStepMb: options.memoryStepMb } : {}),
      ...(options.workerLimits !== undefined ? { workerLimits: options.workerLimits } : {}),
      ...(options.workerHealth !== undefined ? { workerHealth: options.workerHealth } : {}),
    });
    this.clock = options.clock ?? Date.now;
    this.logger = options.logger ?? createLogger('jobtracker');
    this.secretFile = options.secretFile ?? join(options.dataDir, 'secret');
    this.secretGiven = options.secretFile !== undefined;
    this.admin = validateUserName(options.admin ?? osUserName(), 'admin user name');
    this.tls = options.tls;
    this.namenode = new Namenode({
      superuser: this.admin,
      dbPath: join(options.dataDir, 'namenode'),
      defaultBlockSize: options.blockSize,
      defaultReplication: options.replication,
      logger: this.logger,
    });
    this.copier = new InputCopier(this.namenode, this.books, this.logger, this.clock);
    this.mrc = new MrClusterRuntime({
      books: this.books,
      namenode: this.namenode,
      policy: this.policy,
      logger: this.logger,
      clock: () => this.clock(),
      carryOut: (effects) => this.carryOut(effects),
      snapshot: () => this.snapshot({ kind: 'tick' }),
      reschedule: () => setImmediate(() => this.schedule({ kind: 'tick' })),
    });
    this.namenode.setScope(this.mrc);
    this.profiles = new ProfileStore(join(options.dataDir, 'profiles'), this.logger);
    this.journal = new JobJournal(join(options.dataDir, 'jobs'));
    this.history = new JobHistory(this.books, this.journal, this.numbering, this.options, this.logger);
    this.ui = createUiRequestHandler(
      jobTrackerUiSource({
        books: this.books,
        namenode: this.namenode,
        policy: this.policy,
        clock: this.clock,
        heartbeatMs: this.options.heartbeatMs,
        startedAt: this.clock(),
        snapshot: (trigger) => this.snapshot(trigger),
        history: this.history,
        locateAttempt: (id) => this.locateAttempt(id),
        attemptLog: (id, stream, offset, length) => this.attemptLog(id, stream, offset, length),
      }),
    );
    const d = new Date();
    this.jobIdPrefix = `job_${d.getUTCFullYear()}${pad2(d.getUTCMonth() + 1)}${pad2(d.getUTCDate())}${pad2(d.getUTCHours())}${pad2(d.getUTCMinutes())}${pad2(d.getUTCSeconds())}`;
  }

  /** Every block copy of task input made during the run (`replicate` decisions, owed replicas completed), for data-movement figures. */
  get placementLog(): readonly PlacementLogEntry[] {
    return this.copier.log;
  }

  get url(): string {
    return `${this.tls ? 'wss' : 'ws'}://${this.options.host}:${this.port}`;
  }

  get heartbeatMs(): number {
    return this.options.heartbeatMs;
  }

  async start(): Promise<void> {
    await mkdir(this.options.dataDir, { recursive: true });
    this.secret = this.secretGiven ? await readSecretFile(this.secretFile) : await loadOrCreateSecret(this.secretFile);
    this.webPasswordOfSecret = webPassword(this.secret);
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
      this.admin,
    );
    const onRequest = (req: IncomingMessage, res: ServerResponse): void => this.onHttpRequest(req, res);
    this.httpServer = this.tls ? createTlsServer({ cert: this.tls.cert, key: this.tls.key }, onRequest) : createServer(onRequest);
    this.wss = new WebSocketServer({ server: this.httpServer, maxPayload: MAX_FRAME_BYTES, perMessageDeflate: false });
    this.wss.on('connection', (socket: WebSocket, req: IncomingMessage) => this.onConnection(socket, req.socket.remoteAddress));
    await new Promise<void>((resolve, reject) => {
      this.httpServer!.once('error', reject);
      this.httpServer!.listen(this.options.port, this.options.host, () => resolve());
    });
    const addr = this.httpServer.address();
    this.port = typeof addr === 'object' && addr ? addr.port : this.options.port;
    this.livenessTimer = setInterval(() => this.checkLiveness(), this.livenessIntervalMs());
    lendSecretInProcess(this.url, this.secret);
    this.logger.info({ url: this.url, web: this.url.replace(/^ws/, 'http') + '/', policy: this.policy.name, admin: this.admin, secretFile: this.secretFile }, 'JobTracker listening (web pages: any user name, the password `minimr web-password` prints)');
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
    withdrawSecretInProcess(this.url);
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

  // ---- HTTP: metrics and the web UI -----------------------------------------------------------

  /** The password of the web pages and /metrics (any user name): see auth.ts's webPassword. */
  get webPassword(): string {
    if (this.webPasswordOfSecret === undefined) throw new MinimrError('EINTERNAL', 'the JobTracker has not started: it has no secret yet');
    return this.webPasswordOfSecret;
  }

  private onHttpRequest(req: IncomingMessage, res: ServerResponse): void {
    // The pages show every job, path and log of the cluster: like the RPC port, nothing without the secret.
    if (webUser(req.headers.authorization, this.webPassword) === undefined) {
      res
        .writeHead(401, { 'www-authenticate': 'Basic realm="minimr", charset="UTF-8"', 'content-type': 'text/plain; charset=utf-8' })
        .end('minimr JobTracker: sign in with any user name and the web password, which `minimr web-password` prints\n');
      return;
    }
    const path = new URL(req.url ?? '/', 'http://jobtracker').pathname;
    if (path === '/metrics' && (req.method === 'GET' || req.method === 'HEAD')) {
      res.writeHead(200, { 'content-type': PROMETHEUS_CONTENT_TYPE }).end(req.method === 'HEAD' ? undefined : this.metricsText());
      return;
    }
    if (this.ui(req, res)) return;
    res.writeHead(426, { 'content-type': 'text/plain' }).end('minimr JobTracker: connect with the minimr protocol over WebSocket\n');
  }

  /** `/metrics`: the counters kept as effects are carried out, and gauges read from the books now. */
  metricsText(): string {
    const usage = this.namenode.usage();
    return formatPrometheus(
      this.metrics.families({
        jobs: [...this.books.jobs()],
        workers: this.books.liveWorkers().map((w) => ({
          id: w.shape.id,
          mapSlots: w.shape.mapSlots,
          reduceSlots: w.shape.reduceSlots,
          memoryMb: w.shape.memoryMb,
          lastHeartbeat: w.data.lastHeartbeat,
          running: [...w.running].map((a) => ({ kind: a.task.kind, memoryMb: a.memoryMb, elastic: a.elastic })),
        })),
        now: this.clock(),
        heartbeatMs: this.options.heartbeatMs,
        blockStore: usage,
      }),
    );
  }

  // ---- connections ---------------------------------------------------------------------------

  private onConnection(socket: WebSocket, remoteAddress: string | undefined): void {
    const peer = acceptPeer(socket, this.secret!, (message, p) => this.onMessage(message, p), this.logger);
    if (remoteAddress) this.peerAddresses.set(peer, remoteAddress);
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
        phaseTrace('jt-finished', { attempt: message.attemptId });
        return this.onAttemptFinished(message, peer);
      case 'block-replicated': {
        if (!this.workerFor(peer, message.workerId)) return undefined;
        for (const target of message.targets) {
          if (typeof target === 'string' && this.books.worker(target)?.alive) {
            this.namenode.blockReceived(target, message.blockId);
            this.copier.arrived(message.blockId, target);
            this.mrc.copyLanded(message.blockId, target);
          }
        }
        return undefined;
      }
      case 'replica-corrupt': {
        // Only the holder's own finding counts: a message naming another worker's replica is ignored.
        if (!this.workerFor(peer, message.workerId)) return undefined;
        this.logger.warn({ worker: message.workerId, blockId: message.blockId, reason: message.reason }, 'worker found its replica corrupt');
        this.namenode.replicaCorrupt(message.workerId, message.blockId);
        return undefined;
      }
      case 'get-job-module': {
        const job = this.requireJob(message.jobId);
        // A job's code is for the workers that run it, its owner and the admin.
        if (!this.isWorkerPeer(peer)) this.requireJobAccess(job, peer.user, 'read the module of');
        return { source: job.data.submission.moduleSource, name: job.data.submission.moduleName };
      }
      case 'submit-job':
        return this.submitJob(message.job, peer.user);
      case 'job-status':
        return this.history.record(message.jobId).then((r) => r.status);
      case 'list-jobs':
        return this.history.list(message.all === true);
      case 'job-attempts':
        return this.history.record(message.jobId).then((r) => r.attempts);
      case 'kill-job':
        return this.killJob(message.jobId, peer.user);
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
      case 'attempt-log': {
        // A task's output may hold its job's data: its owner's and the admin's to read.
        return this.locateAttempt(message.attemptId).then((origin) => {
          if (origin) this.requireOwnerAccess(origin.jobId, origin.owner, peer.user, 'read the logs of');
          return this.attemptLog(message.attemptId, message.stream, message.offset ?? undefined, message.length ?? undefined);
        });
      }
      case 'mrc':
        return this.mrClusterCall(message.op, message.args, peer.user);
      case 'fsck':
        return this.namenode.fsck(message.path ?? '/');
      case 'fs':
        return this.namenodeCall(message.op, message.args, this.fsCaller(peer, message.jobId));
      default:
        throw new MinimrError('EPROTOCOL', `a JobTracker does not accept "${message.type}" messages`);
    }
  }

  /** Listing is anyone's; activating and deactivating an MR-cluster reshapes the whole pool: the admin's. */
  private mrClusterCall(op: string, args: unknown[], user: string): unknown {
    if ((op === 'activate' || op === 'deactivate') && user !== this.admin) {
      throw new MinimrError('EPERM', `permission denied: only the admin (${this.admin}) may ${op} an MR-cluster; user ${user} may list them`);
    }
    switch (op) {
      case 'activate':
        return this.mrc.activate(args[0], args[1], args[2]);
      case 'list':
        return this.mrc.list();
      case 'deactivate':
        return this.mrc.deactivate(args[0]);
      default:
        throw new MinimrError('EPROTOCOL', `unknown MR-cluster operation "${op}" (activate, list, deactivate)`);
    }
  }

  private namenodeCall(op: NamenodeOp, args: unknown[], caller: Caller): Promise<unknown> {
    if (!Object.hasOwn(NAMENODE_ARITY, op)) {
      throw new MinimrError('EPROTOCOL', `unknown file system operation "${op}"`);
    }
    // The operation's own arguments, then the caller: a peer cannot pass a caller of its choosing.
    const own = Array.from({ length: NAMENODE_ARITY[op] }, (_, i) => args[i] ?? undefined);
    const fn = this.namenode[op] as (...a: unknown[]) => Promise<unknown>;
    return fn.apply(this.namenode, [...own, caller]);
  }

  /** Who a file system call acts as: a worker's call for a task acts as the task's job's owner, any other as its connection's user. */
  private fsCaller(peer: RpcPeer, jobId: string | undefined): Caller {
    if (typeof jobId === 'string' && this.isWorkerPeer(peer)) {
      const job = this.books.job(jobId);
      if (!job) throw new MinimrError('ENOJOB', `no job ${jobId} on this JobTracker`, { jobId });
      return this.namenode.callerFor(job.data.owner);
    }
    return this.namenode.callerFor(peer.user);
  }

  private isWorkerPeer(peer: RpcPeer): boolean {
    return peer.label !== '' && this.books.worker(peer.label)?.data.peer === peer;
  }

  /** Only a job's owner and the admin may act on it. */
  private requireJobAccess(job: RuntimeJob, user: string, action: string): void {
    this.requireOwnerAccess(job.id, job.data.owner, user, action);
  }

  /** A job, in memory or retired, is its owner's and the admin's to act on. */
  private requireOwnerAccess(jobId: string, owner: string, user: string, action: string): void {
    if (user === owner || user === this.admin) return;
    throw new MinimrError('EPERM', `permission denied: job ${jobId} belongs to ${owner}; user ${user} may not ${action} it`, { jobId });
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
    this.books.checkWorkerClaim({ id: w.workerId, mapSlots: w.mapSlots, reduceSlots: w.reduceSlots, memoryMb: w.memoryMb });
    const previous = this.books.worker(w.workerId);
    if (previous?.alive) {
      // An id is not proof of being that worker: while the live one is still connected, the newcomer is refused.
      if (previous.data.peer !== peer && previous.data.peer.isOpen) {
        this.logger.warn({ worker: w.workerId, host: w.host }, 'refused a registration with the id of a live, connected worker');
        throw new MinimrError('EBADCONF', `worker id ${w.workerId} belongs to a live worker that is still connected; give this worker another --id, or stop the other one first`, {
          workerId: w.workerId,
        });
      }
      this.workerLost(previous, 'it registered again');
    }
    const address: DatanodeAddress = { workerId: w.workerId, host: String(w.host), dataPort: w.dataPort, rack: String(w.rack || '/default-rack') };
    const from = this.peerAddresses.get(peer);
    if (from && isLoopbackAddress(address.host) && !isLoopbackAddress(from)) {
      this.logger.warn({ worker: w.workerId, advertised: address.host, from }, `worker ${w.workerId} connects from ${from} but advertises the loopback address ${address.host} for its data port: other workers cannot fetch its map outputs (start it with --host set to an address they reach)`);
    }
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
    return { heartbeatMs: this.options.heartbeatMs, orphanBlocks, orphanMapOutputs, blockKey: this.namenode.blockKey.toString() };
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
    this.metrics.heartbeat(worker.shape.id, now);
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
        void this.carryOut(this.books.attemptWorkerFault(attempt, error, now));
      }
    }
    const deletions = this.namenode.takeBlockDeletions(worker.shape.id);
    if (deletions.length > 0) peer.send({ type: 'delete-blocks', blockIds: deletions });
    const verifications = this.namenode.takeVerifications(worker.shape.id);
    if (verifications.length > 0) peer.send({ type: 'verify-blocks', blocks: verifications });
    for (const work of this.namenode.takeReplicationWork(worker.shape.id)) {
      peer.send({ type: 'replicate-block', blockId: work.blockId, targets: [...work.targets], token: work.token });
    }
    this.schedule({ kind: 'heartbeat', workerId: worker.shape.id });
  }

  private livenessIntervalMs(): number {
    return Math.max(50, Math.floor(this.options.heartbeatMs / 2));
  }

  /**
   * Whether this tick of the liveness check came late enough that the tracker itself was stalled
   * (CPU starvation, a long GC, a synchronous step). Node runs due timers before it reads sockets,
   * so after a stall the check would see every worker's last heartbeat as old while their fresh
   * heartbeats still wait unread: a stalled tracker would declare its whole cluster lost at once.
   * Such a tick passes no verdict; the next one, on time, judges with the heartbeats read.
   */
  private livenessTickLate(): boolean {
    const tick = performance.now();
    const previous = this.lastLivenessCheck;
    this.lastLivenessCheck = tick;
    return previous !== undefined && tick - previous > 2 * this.livenessIntervalMs();
  }

  private checkLiveness(): void {
    const now = this.clock();
    this.history.retire(now);
    if (this.recovery) this.schedule({ kind: 'tick' });
    if (this.livenessTickLate()) {
      this.logger.debug('liveness check came late (the JobTracker was stalled): no worker judged on this tick');
    } else {
      for (const worker of this.books.liveWorkers()) {
        if (now - worker.data.lastHeartbeat > this.options.workerTimeoutMs) {
          this.workerLost(worker, `no heartbeat for ${now - worker.data.lastHeartbeat} ms`);
          worker.data.peer.terminate();
        }
      }
    }
    for (const job of this.books.jobs()) {
      const placement = job.inputPlacement;
      if (!placement || !job.placementOpen) continue;
      if (this.books.isActive(job) && now - job.submitTime < placement.windowMs) continue;
      void this.carryOut(this.books.closePlacementWindow(job));
    }
    this.mrc.tick(now);
  }

  private workerLost(worker: RuntimeWorker, why: string): void {
    if (!worker.alive) return;
    const workerId = worker.shape.id;
    if (this.draining) this.logger.info({ worker: workerId, why }, 'worker left');
    else this.logger.warn({ worker: workerId, why }, 'worker lost');
    // While draining, the block map is about to be dropped; it is rebuilt from block reports at start.
    if (!this.draining) void this.namenode.datanodeLost(workerId);
    void this.carryOut(this.books.workerLost(workerId, this.clock(), why));
    this.metrics.workerLeft(workerId);
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

  /**
   * A slice of an attempt's stdout or stderr (default: its last 64 KiB), read from the worker that
   * ran it: the logs stay on the workers (attempt-logs.ts), only the JobTracker knows where.
   */
  async attemptLog(attemptId: string, stream: string, offset?: number, length?: number): Promise<AttemptLogSlice> {
    if (!isAttemptLogStream(stream)) throw new MinimrError('EBADREQUEST', `an attempt log is stdout or stderr, got ${JSON.stringify(stream)}`);
    const origin = await this.locateAttempt(attemptId);
    if (!origin) throw new MinimrError('ENOATTEMPT', `no attempt ${attemptId} on this JobTracker or in its history (see \`minimr job attempts JOB\`)`, { attemptId });
    const { jobId, workerId } = origin;
    // A worker that registered again since has a new data port: ask the one alive now.
    const worker = this.books.worker(workerId);
    if (!worker?.alive) {
      throw new MinimrError('EWORKERLOST', `attempt ${attemptId} ran on worker ${workerId}, which is not connected now; its log is on that machine under DIR/logs/${jobId}/${attemptId}/`, { attemptId, workerId });
    }
    const { host, dataPort } = worker.data.address;
    const dataUrl = `http://${host.includes(':') ? `[${host}]` : host}:${dataPort}`;
    const token = this.namenode.blockKey.issue(attemptLogTokenId(jobId, attemptId), 'read', Date.now() + 60_000);
    return fetchAttemptLog(dataUrl, { jobId, attemptId, workerId }, stream, token, offset, length);
  }

  /** The job, owner and worker of an attempt in memory, or of a retired job's from the history. */
  private async locateAttempt(attemptId: string): Promise<{ jobId: string; owner: string; workerId: string } | undefined> {
    const attempt = this.findAttempt(attemptId);
    if (attempt) return { jobId: attempt.task.job.id, owner: attempt.task.job.data.owner, workerId: attempt.worker.shape.id };
    const retired = await this.history.retiredAttempt(attemptId);
    return retired && { jobId: retired.jobId, owner: retired.owner, workerId: retired.attempt.workerId };
  }

  /** Any attempt the books hold, running or ended (the books index only running ones). */
  findAttempt(attemptId: string): RuntimeAttempt | undefined {
    const running = this.books.attempt(attemptId);
    if (running) return running;
    for (const job of this.books.jobs()) {
      for (const task of [...job.maps, ...job.reduces]) {
        const found = task.attempts.find((a) => a.id === attemptId);
        if (found) return found;
      }
    }
    return undefined;
  }

  // ---- jobs ------------------------------------------------------------------------------------

  private requireJob(jobId: string): RuntimeJob {
    const job = this.books.job(jobId);
    if (!job) throw new MinimrError('ENOJOB', `no job ${jobId} on this JobTracker (see \`minimr job list --all\`)`, { jobId });
    return job;
  }

  /** Submits a job for `user` (default: the admin): its input must be readable and its output writable by that user. */
  async submitJob(raw: JobSubmission, user: string = this.admin): Promise<{ jobId: string }> {
    const submission = validateSubmission(raw);
    this.mrc.checkSubmission(submission);
    const caller = this.namenode.callerFor(user);
    const allSplits = await this.planInput(submission, caller);
    const maxMaps = submission.conf?.['job.maxMaps'];
    const splits = maxMaps !== undefined ? allSplits.slice(0, maxMaps) : allSplits;
    await this.prepareOutput(submission, caller);
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
      user,
      splits,
      ...(verdict.estimates ? { estimates: verdict.estimates } : {}),
      maxAttempts,
      profile: verdict.use,
      submitTime,
    });
    let admitted: ReturnType<Books<RuntimeData>['submit']>;
    try {
      admitted = this.books.submit(jobPlan(jobId, submission, user, splits, maxAttempts, verdict.estimates), submitTime);
    } catch (err) {
      await this.journal.forget(jobId);
      throw err;
    }
    const { job, effects } = admitted;
    job.data.profile = verdict.use;
    if (job.skew?.plansAtSubmission) this.logger.info({ job: jobId, row: job.skew.row, ms: job.skew.assignmentMs }, 'count-min sketch assignment made');
    this.logger.info({ job: jobId, name: submission.name, user, maps: job.maps.length, reduces: job.reduces.length }, 'job submitted');
    this.metrics.jobSubmitted();
    if (effects.length > 0) await this.carryOut(effects);
    else setImmediate(() => this.schedule({ kind: 'job-submitted', jobId }));
    return { jobId };
  }

  private async planInput(submission: JobSubmission, caller: Caller): Promise<TaskInputPlan[]> {
    if (submission.input.kind === 'generated') {
      return submission.input.splits.map((value) => ({ input: { kind: 'generated', value }, preferredWorkers: [], preferredRacks: [], inputBytes: 0 }));
    }
    if (submission.inputPaths.length === 0) {
      throw new MinimrError('ENOINPUT', 'the job reads files but no input path was given (--input PATH)');
    }
    const files: FileStatus[] = [];
    for (const path of submission.inputPaths) files.push(...(await inputFilesAt(this.namenode, path, caller)));
    const plans: TaskInputPlan[] = [];
    for (const file of files) {
      const blocks = await this.namenode.getBlocks(file.path, undefined, caller);
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

  private async prepareOutput(submission: JobSubmission, caller: Caller): Promise<void> {
    const out = submission.outputPath;
    let exists = true;
    try {
      await this.namenode.stat(out, caller);
    } catch (err) {
      if (!(err instanceof MinimrError && err.code === 'ENOENT')) throw err;
      exists = false;
    }
    if (exists) {
      if (!submission.overwrite) {
        throw new MinimrError('EOUTPUTEXISTS', `output path ${out} already exists; remove it (\`minimr fs rm -r ${out}\`) or submit with --overwrite`, { path: out });
      }
      await this.namenode.remove(out, { recursive: true }, caller);
    }
    await this.namenode.mkdir(`${out}/_temporary`, { parents: true }, caller);
  }

  /** Kills a job on behalf of `user` (default: the admin): its owner or the admin only. */
  async killJob(jobId: string, user: string = this.admin): Promise<JobStatus> {
    if (!this.books.job(jobId)) return (await this.history.record(jobId)).status;
    const job = this.requireJob(jobId);
    this.requireJobAccess(job, user, 'kill');
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
          this.metrics.attemptLaunched(a.task.kind);
          this.logger.debug({ attempt: a.id, worker: a.worker.shape.id, locality: a.locality }, 'attempt launched');
          phaseTrace('jt-launch', { attempt: a.id, worker: a.worker.shape.id });
          a.worker.data.peer.send({ type: 'launch', attempt: this.attemptSpec(a) });
          break;
        }
        case 'attempt-ended': {
          const a = e.attempt;
          if (e.tellWorker && a.worker.alive) a.worker.data.peer.send({ type: 'kill', attemptId: a.id, reason: a.error?.message ?? 'killed' });
          this.logger.debug({ attempt: a.id, state: a.state, ms: (a.finishTime ?? a.startTime) - a.startTime }, 'attempt finished');
          this.metrics.attemptEnded(a.task.kind, a.state, a.data.counters);
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
          this.mrc.effect(e);
          break;
        case 'mr-cluster':
        case 'load-input':
        case 'replicate-block':
        case 'save-output':
          this.mrc.effect(e);
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
      // The marker belongs to the job's owner, like the rest of its output.
      const owner = this.namenode.callerFor(job.data.owner);
      await this.namenode.create(`${out}/_SUCCESS`, { overwrite: true, replication: 1 }, owner);
      await this.namenode.complete(`${out}/_SUCCESS`, owner);
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
    const entry = historyEntry(job);
    const status = entry.status;
    // Written before the client hears of the end: an ended job never runs again after a restart.
    await this.journal.jobEnded(entry).catch((err: Error) => this.journalFailed(err));
    this.metrics.jobEnded(job.state);
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
    const unproven = message.state === 'succeeded' ? this.unprovenSuccess(attempt, message) : undefined;
    if (unproven) {
      this.logger.warn({ attempt: attempt.id, worker: worker.shape.id, why: unproven }, 'success report refused');
      effects = this.books.attemptWorkerFault(attempt, { code: 'EPROTOCOL', message: `worker ${worker.shape.id} reported ${attempt.id} succeeded, but ${unproven}` }, now);
    } else if (message.state === 'succeeded') {
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

  /**
   * Why a map's success report cannot be taken (undefined: it can): a map whose job has reduces
   * must describe the output it stores, partition by partition, or its reducers would take it for
   * empty and the job would succeed without its data.
   */
  private unprovenSuccess(attempt: RuntimeAttempt, message: AttemptFinished): string | undefined {
    const task = attempt.task;
    const job = task.job;
    if (task.kind !== 'map' || job.reduces.length === 0) return undefined;
    const partitions = job.skew?.partitions ?? job.reduces.length;
    const out = message.mapOutput;
    const wellFormed = (list: unknown): boolean => Array.isArray(list) && list.length === partitions && list.every((n) => Number.isInteger(n) && n >= 0);
    if (!out || !wellFormed(out.partitionBytes) || !wellFormed(out.partitionRecords)) {
      return `its report does not describe the map output of ${partitions} partitions`;
    }
    return undefined;
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
        // MR-clusters are balanced, and idle ones deactivated, with no job in the system too.
        if ((snap.jobs.length === 0 && !snap.mrClusters?.length) || snap.workers.length === 0) break;
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
      shuffleSecret: job.data.shuffleSecret,
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
      outputReplication: s.conf?.['job.outputReplication'],
    };
  }
}

function pad2(n: number): string {
  return String(n).padStart(2, '0');
}
