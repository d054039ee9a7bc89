import { realpathSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join, resolve as resolvePath } from 'node:path';
import { Books, type Effect } from '../../books/index.js';
import { MinimrError, serializeError } from '../../errors.js';
import { createLogger, type Logger } from '../../log.js';
import {
  askPolicy,
  policyFaultText,
  type ClusterSnapshot,
  type Policy,
  type PolicyFault,
  type SchedulingTrigger,
} from '../../scheduler/index.js';
import {
  DEFAULT_BLOCK_KEY_ROLL_MS,
  DEFAULT_BLOCK_SIZE,
  DEFAULT_BLOCK_TOKEN_LIFETIME_MS,
  DEFAULT_REPLICATION,
  isExternalUri,
  Namenode,
  trustClusterAuthority,
  validateUserName,
} from '../../storage/index.js';
import { phaseTrace, registerPrivateDir, unregisterPrivateDir } from '../../util/index.js';
import {
  ClusterAuthority,
  isLoopbackHost,
  lendAuthorityInProcess,
  namesOfListenHost,
  withdrawAuthorityInProcess,
  type TlsIdentity,
  lendSecretInProcess,
  loadOrCreateSecret,
  osUserName,
  readSecretFile,
  webPassword,
  withdrawSecretInProcess,
  type JobStatus,
  type AttemptSpec,
} from '../wire/index.js';
import { ClientService } from './client-service.js';
import type { JobTrackerOptions } from './options.js';
import type { TrackerCore } from './core.js';
import { AuditLog, auditEntryOf } from './audit-log.js';
import { TrackerEndpoint } from './endpoint.js';
import { WebHdfsServer } from './webhdfs-server.js';
import { InputCopier, type PlacementLogEntry } from './input-copier.js';
import { JobHistory } from './job-history.js';
import {
  attemptSpec,
  jobStatus,
  mapOutputAnnouncement,
  type RuntimeAttempt,
  type RuntimeData,
  type RuntimeJob,
  type RuntimeWorker,
} from './runtime-data.js';
import { JobJournal } from './job-journal.js';
import { AttemptNumbering, JobRecovery } from './job-recovery.js';
import { JobCompletion } from './job-completion.js';
import { AttemptStops } from './attempt-stops.js';
import { writesToStore } from './store-output.js';
import { Liveness } from './liveness.js';
import { MrClusterRuntime } from './mr-cluster-runtime.js';
import { ProfileStore } from './profile-store.js';
import { UserAccounts, UserStore } from './user-store.js';
import { JobTokens } from './job-tokens.js';
import { PrometheusMetrics, prometheusText } from './prometheus.js';
import { jobTrackerWebSource } from './web-source.js';
import { WorkerService } from './worker-service.js';

/**
 * The master: NameNode of the block store, transport to workers and clients, and the hand that
 * carries out what the books decide. Job, task and attempt state and every rule of how it changes
 * live in the books (src/books), shared with the simulator; the JobTracker turns what its workers
 * report into book events, consults the policy on a snapshot of the books, has the books check the
 * decisions, and carries out the effects the books return (launch and kill messages, block copies,
 * output commits).
 */
export type { JobTrackerOptions };

export class JobTracker implements TrackerCore {
  readonly namenode: Namenode;
  readonly webhdfs: WebHdfsServer;
  readonly logger: Logger;
  private readonly options: Required<
    Omit<
      JobTrackerOptions,
      | 'logger'
      | 'clock'
      | 'blockSize'
      | 'replication'
      | 'pools'
      | 'memoryStepMb'
      | 'secretFile'
      | 'admin'
      | 'tls'
      | 'workerLimits'
      | 'workerHealth'
      | 'speculation'
      | 'webPages'
      | 'auditLog'
      | 'maxUnauthenticatedPerAddress'
      | 'insecurePlaintext'
      | 'blockKeyRollMs'
    >
  >;
  /** Where the cluster secret is; workers of a local cluster are given this path. */
  readonly secretFile: string;
  /** A secret file given is never written; the default one is made on first start. */
  private readonly secretGiven: boolean;
  private secret?: Buffer;
  /** Derived from the secret once, at start (auth.ts's webPassword). */
  private webPasswordOfSecret?: string;
  /** The user who may act on every job and path. */
  readonly admin: string;
  /** What the JobTracker's port serves TLS with: given, or made at start from the cluster authority; none: plain. */
  private tls?: TlsIdentity;
  /**
   * The cluster's certificate authority (tls.ts), in a TLS cluster: it certifies the workers' data
   * ports, and every data port client trusts it.
   */
  clusterAuthority: ClusterAuthority | undefined;
  private blockKeyTimer?: NodeJS.Timeout;
  private readonly blockKeyRollMs: number;
  private readonly insecurePlaintext: boolean;
  /** Submissions, task successes and ended jobs' history, for restart recovery and `job list --all`. */
  readonly journal: JobJournal;
  private readonly numbering = new AttemptNumbering();
  /** Recovered jobs waiting for their workers to register again; nothing is scheduled meanwhile. */
  recovery: JobRecovery | null = null;
  /** Ended jobs in memory until they retire, then in the journal's history. */
  readonly history: JobHistory;
  readonly clock: () => number;
  readonly policy: Policy;
  readonly books: Books<RuntimeData>;
  readonly copier: InputCopier;
  /** MR-clusters (FAWKES): carries out the books' MR-cluster effects and scopes their blocks in the NameNode. */
  readonly mrc: MrClusterRuntime;
  /** Profiles of recurring jobs, by job name: their tasks' ideal durations and penalty models. */
  readonly profiles: ProfileStore;
  /** Counters and histograms of `/metrics` (prometheus.ts). */
  readonly metrics = new PrometheusMetrics();
  /** The worker link's side here: registration, heartbeats, reports (worker-service.ts). */
  private readonly workers: WorkerService;
  private readonly users: UserAccounts;
  readonly jobTokens: JobTokens;
  /** The client link's side here: submission, status, logs, profiles, the file system (client-service.ts). */
  private readonly clients: ClientService;
  private readonly liveness: Liveness;
  /** Output commits and the end of a job (job-completion.ts). */
  private readonly completion = new JobCompletion(this);
  /** Killed attempts of jobs writing to another store, until their workers confirm them stopped. */
  readonly attemptStops = new AttemptStops();
  /** The port: WebSocket links, the JSON API, /metrics and the web pages (endpoint.ts). */
  private readonly endpoint: TrackerEndpoint;
  /** Where the audit lines go, once started; none when the options say so. */
  readonly auditFile: string | undefined;
  private auditLog?: AuditLog;
  private scheduling = false;
  /** Set when the policy broke its contract: why no new work is scheduled (stopScheduling). */
  schedulingStopped: string | undefined;
  private rescheduleQueued: SchedulingTrigger | null = null;
  private stopped = false;
  /** Set while the whole cluster is being shut down: workers leaving is expected then. */
  draining = false;
  private readonly jobWaiters = new Map<string, Array<(status: JobStatus) => void>>();
  private readonly workerWaiters: Array<() => void> = [];

  constructor(options: JobTrackerOptions) {
    const heartbeatMs = options.heartbeatMs ?? 1000;
    this.options = {
      dataDir: options.dataDir,
      host: options.host ?? '127.0.0.1',
      port: options.port ?? 0,
      policy: options.policy,
      fileRoots: (options.fileRoots ?? []).map(realRoot),
      fileOutputRoots: (options.fileOutputRoots ?? []).map(realRoot),
      heartbeatMs,
      workerTimeoutMs: options.workerTimeoutMs ?? heartbeatMs * 5,
      taskExpiryMs: options.taskExpiryMs ?? DEFAULT_TASK_EXPIRY_MS,
      datanodeExpiryMs: options.datanodeExpiryMs ?? DEFAULT_DATANODE_EXPIRY_MS,
      maxAttempts: options.maxAttempts ?? 4,
      retainedJobs: options.retainedJobs ?? 100,
      retainMs: options.retainMs ?? 3_600_000,
      recoveryWaitMs: options.recoveryWaitMs ?? Math.max(10_000, options.workerTimeoutMs ?? heartbeatMs * 5),
    };
    for (const [name, value] of [
      ['retainedJobs', this.options.retainedJobs],
      ['retainMs', this.options.retainMs],
      ['recoveryWaitMs', this.options.recoveryWaitMs],
      ['taskExpiryMs', this.options.taskExpiryMs],
      ['datanodeExpiryMs', this.options.datanodeExpiryMs],
    ] as const) {
      if (!Number.isInteger(value) || value < 0)
        throw new MinimrError('EBADCONF', `${name} must be a whole number >= 0, got ${value}`);
    }
    this.policy = options.policy;
    this.books = new Books<RuntimeData>({
      pools: options.pools ?? [],
      maxAttempts: this.options.maxAttempts,
      stopwatch: () => performance.now(),
      attemptId: (taskId, n) => this.numbering.attemptId(taskId, n),
      mrClusters: {
        engineBlocks: true,
        outputReplication: options.replication ?? DEFAULT_REPLICATION,
        blockBytes: options.blockSize ?? DEFAULT_BLOCK_SIZE,
      },
      ...(options.memoryStepMb !== undefined ? { memoryStepMb: options.memoryStepMb } : {}),
      ...(options.workerLimits !== undefined ? { workerLimits: options.workerLimits } : {}),
      ...(options.workerHealth !== undefined ? { workerHealth: options.workerHealth } : {}),
      ...(options.speculation !== undefined ? { speculation: options.speculation } : {}),
    });
    this.clock = options.clock ?? Date.now;
    this.logger = options.logger ?? createLogger('jobtracker');
    this.secretFile = options.secretFile ?? join(options.dataDir, 'secret');
    this.secretGiven = options.secretFile !== undefined;
    this.admin = validateUserName(options.admin ?? osUserName(), 'admin user name');
    this.tls = options.tls;
    this.insecurePlaintext = options.insecurePlaintext ?? false;
    this.blockKeyRollMs = options.blockKeyRollMs ?? DEFAULT_BLOCK_KEY_ROLL_MS;
    if (!(Number.isInteger(this.blockKeyRollMs) && this.blockKeyRollMs >= 100))
      throw new MinimrError(
        'EBADCONF',
        `the block key roll period must be at least 100 ms, got ${this.blockKeyRollMs}`,
      );
    this.namenode = new Namenode({
      // A token lives no longer than its key is accepted: the current key's period plus the previous one's.
      blockTokenLifetimeMs: Math.min(DEFAULT_BLOCK_TOKEN_LIFETIME_MS, this.blockKeyRollMs),
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
    this.jobTokens = new JobTokens(() => this.clock());
    this.users = new UserAccounts(
      new UserStore(options.dataDir),
      () => this.clock(),
      this.logger,
      (user) =>
        // Bound to the credential the user signs in with, as a token issued over HTTP is (endpoint.ts).
        this.webhdfs.delegationTokenFor(user, this.users.store.keyOf(user)?.toString('base64url') ?? this.webPassword),
    );
    this.webhdfs = new WebHdfsServer({
      namenode: this.namenode,
      logger: this.logger,
      audit: (record, address) => {
        const entry = this.auditLog && auditEntryOf(record, address, new Date(this.clock()));
        if (entry) this.auditLog!.record(entry);
      },
    });
    this.workers = new WorkerService(this);
    this.clients = new ClientService(
      this,
      jobIdPrefix(new Date()),
      this.options.maxAttempts,
      this.options.fileRoots,
      this.options.fileOutputRoots,
    );
    this.liveness = new Liveness(this, this.options);
    const webSource = jobTrackerWebSource({
      books: this.books,
      namenode: this.namenode,
      policy: this.policy,
      clock: this.clock,
      heartbeatMs: this.options.heartbeatMs,
      startedAt: this.clock(),
      snapshot: (trigger) => this.snapshot(trigger),
      history: this.history,
      locateAttempt: (id) => this.clients.locateAttempt(id),
      attemptLog: (id, stream, offset, length) => this.clients.attemptLog(id, stream, offset, length),
    });
    this.endpoint = new TrackerEndpoint({
      logger: this.logger,
      authority: this.clients,
      clientHandlers: { ...this.clients.handlers(), ...this.users.handlers() },
      workerHandlers: this.workers.handlers(),
      isWorkerPeer: (peer) => this.workers.isWorkerPeer(peer),
      connected: (peer, from) => {
        this.users.connected(peer);
        this.workers.connected(peer, from);
      },
      metricsText: () => this.metricsText(),
      ...(options.webPages ? { pages: options.webPages(webSource) } : {}),
      webhdfs: this.webhdfs,
      audit: (record, address) => {
        const entry = this.auditLog && auditEntryOf(record, address, new Date(this.clock()));
        if (entry) this.auditLog!.record(entry);
      },
      ...(options.maxUnauthenticatedPerAddress !== undefined
        ? { maxUnauthenticatedPerAddress: options.maxUnauthenticatedPerAddress }
        : {}),
    });
    this.auditFile = options.auditLog === false ? undefined : (options.auditLog ?? join(options.dataDir, 'audit.log'));
  }

  /**
   * Every block copy of task input made during the run (`replicate` decisions, owed replicas completed), for
   * data-movement figures.
   */
  get placementLog(): readonly PlacementLogEntry[] {
    return this.copier.log;
  }

  get port(): number {
    return this.endpoint.port;
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
    await this.users.store.open();
    await this.jobTokens.open(join(this.options.dataDir, 'job-token-key'));
    await this.journal.open();
    if (this.journal.damaged.length > 0)
      this.logger.error(
        { records: this.journal.damaged },
        'damaged job journal records left out: their jobs (or tasks) are not recovered (or re-run)',
      );
    this.clients.resumeNumbering(await this.journal.jobIds());
    this.recovery = await JobRecovery.begin(
      {
        books: this.books,
        namenode: this.namenode,
        logger: this.logger,
        numbering: this.numbering,
        clock: this.clock,
        carryOut: (effects) => this.carryOut(effects),
      },
      this.journal.activeJobs(),
      this.options.recoveryWaitMs,
      this.admin,
    );
    if (this.auditFile) this.auditLog = new AuditLog(this.auditFile, this.logger);
    registerPrivateDir(resolvePath(this.options.dataDir), "the JobTracker's directory");
    const keys = { secret: this.secret, userKey: (user: string) => this.users.store.keyOf(user) };
    await this.setUpTls();
    await this.endpoint.listen(this.options.host, this.options.port, keys, this.webPasswordOfSecret, this.tls);
    this.liveness.start();
    lendSecretInProcess(this.url, this.secret);
    if (this.clusterAuthority) lendAuthorityInProcess(this.url, this.clusterAuthority.certificate);
    this.blockKeyTimer = setInterval(() => this.rollBlockKeys(), this.blockKeyRollMs);
    this.blockKeyTimer.unref();
    this.logger.info(
      {
        url: this.url,
        web: this.url.replace(/^ws/, 'http') + '/',
        policy: this.policy.name,
        admin: this.admin,
        secretFile: this.secretFile,
      },
      'JobTracker listening (web pages and /api/v1: any user name, the password `minimr web-password` prints)',
    );
  }

  /**
   * TLS by default beyond loopback (issue 34): a JobTracker whose host is not loopback makes (or
   * reuses) the cluster authority and its own certificate in its directory, unless it was given a
   * certificate or told `insecurePlaintext`. A TLS JobTracker certifies its workers' data ports and
   * reaches them (attempt logs) trusting that authority only.
   */
  private async setUpTls(): Promise<void> {
    const host = this.options.host;
    if (this.tls === undefined && (isLoopbackHost(host) || this.insecurePlaintext)) {
      if (!isLoopbackHost(host))
        this.logger.warn(
          { host },
          `--insecure-plaintext: the JobTracker listens on ${host} without TLS: block keys, shuffle secrets, job ` +
            'code and data cross the network in clear text, readable and alterable by anyone on the path',
        );
      return;
    }
    this.clusterAuthority = await ClusterAuthority.loadOrCreate(this.options.dataDir);
    this.tls ??= await this.clusterAuthority.serverIdentity(this.options.dataDir, [
      ...namesOfListenHost(host),
      ...(isLoopbackHost(host) ? [] : ['127.0.0.1']),
    ]);
    trustClusterAuthority(this.clusterAuthority.certificate);
  }

  /** A new block token key, sent to every live worker (over its TLS link, in a TLS cluster). */
  private rollBlockKeys(): void {
    this.namenode.blockKey.roll();
    const blockKey = this.namenode.blockKey.toString();
    for (const w of this.books.liveWorkers()) w.data.commands['block-keys']({ blockKey });
    this.logger.info({ keyId: this.namenode.blockKey.currentKeyId }, 'block token key rolled');
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
    this.liveness.stop();
    if (this.blockKeyTimer) clearInterval(this.blockKeyTimer);
    withdrawSecretInProcess(this.url);
    withdrawAuthorityInProcess(this.url);
    for (const w of this.books.liveWorkers()) w.data.peer.close(1001, 'JobTracker shutting down');
    await this.endpoint.close();
    await this.auditLog?.close();
    unregisterPrivateDir(resolvePath(this.options.dataDir));
    await this.namenode.close();
    await this.profiles.close();
    await this.journal.close();
  }

  /** The password of the web pages, the API and /metrics (any user name): see auth.ts's webPassword. */
  get webPassword(): string {
    if (this.webPasswordOfSecret === undefined)
      throw new MinimrError('EINTERNAL', 'the JobTracker has not started: it has no secret yet');
    return this.webPasswordOfSecret;
  }

  /** `/metrics`: the counters kept as effects are carried out, and gauges read from the books now. */
  metricsText(): string {
    return prometheusText(this.metrics, this.books, this.namenode.usage(), this.clock(), this.options.heartbeatMs);
  }

  /** Submits a job for `user` (default: the admin), as the client link's `submit-job` does. */
  submitJob(raw: unknown, user: string = this.admin): Promise<{ jobId: string }> {
    return this.clients.submitJob(raw, user);
  }

  workerRegistered(): void {
    for (const wake of this.workerWaiters.splice(0)) wake();
  }

  workerLost(worker: RuntimeWorker, why: string): void {
    if (!worker.alive) return;
    const workerId = worker.shape.id;
    if (this.draining) this.logger.info({ worker: workerId, why }, 'worker left');
    else this.logger.warn({ worker: workerId, why }, 'worker lost');
    // While draining, the block map is about to be dropped; it is rebuilt from block reports at start.
    if (!this.draining) void this.namenode.datanodeLost(workerId);
    void this.carryOut(this.books.workerLost(workerId, this.clock(), why));
    this.attemptStops.workerGone(workerId);
    this.metrics.workerLeft(workerId);
    this.copier.workerLost(workerId);
    this.schedule({ kind: 'worker-lost', workerId });
  }

  workerSuspect(worker: RuntimeWorker, silentMs: number): void {
    const workerId = worker.shape.id;
    if (!worker.alive || this.books.isSuspect(workerId)) return;
    this.logger.warn(
      { worker: workerId, silentMs },
      'worker suspect: connected but silent; no new work until it is heard from (its blocks are kept)',
    );
    this.books.workerSuspect(workerId, this.clock());
    this.namenode.datanodeSuspect(workerId);
  }

  workerTasksExpired(worker: RuntimeWorker, silentMs: number): void {
    const workerId = worker.shape.id;
    const { effects, expired } = this.books.workerTasksExpired(
      workerId,
      this.clock(),
      `no heartbeat for ${silentMs} ms, past the task expiry of ${this.options.taskExpiryMs} ms`,
    );
    if (effects.length === 0) return;
    this.logger.warn(
      { worker: workerId, silentMs, attempts: expired.map((a) => a.id) },
      'worker silent past the task expiry: its attempts run again elsewhere',
    );
    if (expired.length > 0) {
      const stale = (worker.data.staleAttempts ??= new Set());
      for (const a of expired) {
        stale.add(a.id);
        // Its process may still be writing to its job's store, now or once the worker resumes: the job's
        // abort or clean-up waits until the worker reports it ended (it is killed when the worker is
        // back) or is lost, as for an attempt it was told to kill. Registered now, not at that kill: the
        // job may end (its tasks run again elsewhere) while the worker is still silent.
        if (writesToStore(a.task.job.data.submission)) this.attemptStops.told(a.id, a.task.job.id, workerId);
      }
    }
    void this.carryOut(effects);
    this.schedule({ kind: 'tick' });
  }

  workerHeard(worker: RuntimeWorker, silentMs: number): void {
    const workerId = worker.shape.id;
    if (!this.books.workerHeard(workerId, this.clock())) return;
    this.logger.info({ worker: workerId, silentMs }, 'suspect worker heard from again: it takes work again');
    this.namenode.datanodeHeard(workerId);
  }

  /** Resolves once at least `count` workers are registered. */
  async waitForWorkers(count: number, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.books.liveWorkerCount < count) {
      const left = deadline - Date.now();
      if (left <= 0)
        throw new MinimrError(
          'ETIMEOUT',
          `only ${this.books.liveWorkerCount} of ${count} workers registered within ${timeoutMs} ms`,
        );
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(left, 200));
        this.workerWaiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /**
   * At a job's first launch, asks other live workers to start a task process for it
   * (`warm-job`): a job's processes are its own, so each worker's first attempt of a job would
   * otherwise wait for one to start. Only for jobs whose attempts read and write nothing outside the
   * block store and run no commands (a process's file access is fixed at its start: see sandbox.ts),
   * and to no more workers than the job has other tasks (the first such workers, not those the
   * policy will choose: that is not known yet).
   */
  private warmOtherWorkers(first: RuntimeAttempt, spec: AttemptSpec): void {
    const job = first.task.job;
    if (job.data.warmed) return;
    job.data.warmed = true;
    const ownStore = spec.input.kind === 'file' && isExternalUri(spec.input.path);
    if (ownStore || spec.outputStore !== undefined || spec.streaming === true) return;
    const warm = {
      jobId: job.id,
      owner: spec.owner,
      moduleHash: spec.moduleHash,
      kind: spec.kind,
      shuffle: spec.shuffle,
    };
    // No more workers than the job has other tasks: a tiny job on a large cluster starts a few
    // processes, not one per worker.
    const others = this.books.liveWorkers().filter((w) => w !== first.worker);
    for (const worker of others.slice(0, job.maps.length + job.reduces.length - 1))
      worker.data.commands['warm-job']({ job: warm });
  }

  /** Resolves with the job's final status. */
  async waitForJob(jobId: string): Promise<JobStatus> {
    if (!this.books.job(jobId)) return (await this.history.record(jobId)).status;
    const job = this.books.job(jobId)!;
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
  carryOut(effects: readonly Effect<RuntimeData>[]): Promise<void> {
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
          const spec = attemptSpec(
            a,
            this.jobTokens.issue({ jobId: a.task.job.id, attemptId: a.id, owner: a.task.job.data.owner }),
          );
          a.worker.data.commands.launch({ attempt: spec });
          this.warmOtherWorkers(a, spec);
          break;
        }
        case 'attempt-ended': {
          const a = e.attempt;
          if (e.tellWorker && a.worker.alive) {
            a.worker.data.commands.kill({ attemptId: a.id, reason: a.error?.message ?? 'killed' });
            // Its job's store output is aborted or cleaned up once the worker says the attempt stopped.
            if (writesToStore(a.task.job.data.submission))
              this.attemptStops.told(a.id, a.task.job.id, a.worker.shape.id);
          }
          this.logger.debug(
            { attempt: a.id, state: a.state, ms: (a.finishTime ?? a.startTime) - a.startTime },
            'attempt finished',
          );
          this.metrics.attemptEnded(a.task.kind, a.state, a.data.counters);
          if (a.state === 'succeeded') break;
          if (a.error?.details?.by === 'speculation')
            this.logger.info(
              { attempt: a.id, winner: a.error.details.winner },
              'speculative race lost: attempt killed',
            );
          else if (a.error?.details?.jobEnded === undefined) {
            this.logger.warn(
              { attempt: a.id, worker: a.worker.shape.id, state: a.state, code: a.error?.code, err: a.error?.message },
              'attempt did not succeed',
            );
          }
          waits.push(this.completion.removeAttemptOutput(a));
          break;
        }
        case 'commit-task':
          later(e.attempt.task.job, () => this.completion.commitTaskOutput(e.attempt));
          break;
        case 'map-rerun':
          this.logger.info({ task: e.task.id, why: e.why }, 'map output lost: re-running the map');
          this.journaled(this.journal.taskLost(e.task.job.id, e.task.id));
          this.tellRunningReduces(e.task.job, e.lostAttempt, 'lost');
          break;
        case 'commit-job':
          later(e.job, () => this.completion.commitJob(e.job));
          break;
        case 'job-ended':
          later(e.job, () => this.completion.jobEnded(e.job));
          break;
        case 'discard-output':
          later(e.job, () => this.completion.discardOutput(e.job));
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

  jobSettled(jobId: string, status: JobStatus): void {
    for (const resolve of this.jobWaiters.get(jobId) ?? []) resolve(status);
    this.jobWaiters.delete(jobId);
  }

  journaled(write: Promise<void>): void {
    write.catch((err: Error) => this.journalFailed(err));
  }

  private journalFailed(err: Error): void {
    this.logger.error(
      { err: err.message },
      'cannot write the job journal: a restart may not recover the latest job state',
    );
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
  schedule(trigger: SchedulingTrigger): void {
    if (this.stopped || this.schedulingStopped !== undefined) return;
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
        const answer = askPolicy(this.policy, snap, (d) => this.books.check(snap, d));
        if ('fault' in answer) {
          this.stopScheduling(answer.fault, next);
          return;
        }
        void this.carryOut(this.books.apply(answer.decisions, snap.now));
        next = this.rescheduleQueued;
      }
      // Backups of slow attempts take the slots the policy left free (the books look every second).
      void this.carryOut(this.books.speculate(this.clock()));
    } catch (err) {
      this.logger.error({ err: serializeError(err) }, 'scheduling round failed');
    } finally {
      this.scheduling = false;
    }
  }

  /**
   * The policy broke its contract (it threw, or answered with malformed or invalid decisions): no new
   * work is scheduled from now on (no launch, no backup), while running attempts go on, report and
   * commit, and every active job's status and the cluster's info say why. Only a restart with a
   * policy that keeps the contract schedules again: a broken policy asked again would most likely
   * break again, and half-applied decisions are worse than none.
   */
  private stopScheduling(fault: PolicyFault, trigger: SchedulingTrigger): void {
    this.schedulingStopped = `${policyFaultText(this.policy.name, fault)}; no new work is scheduled until the JobTracker restarts with a policy that keeps the contract`;
    this.logger.error(
      { policy: this.policy.name, rule: fault.rule, trigger: trigger.kind, decision: fault.decision },
      this.schedulingStopped,
    );
  }

  /**
   * Tells the job's running reduces that a map output became available or was lost: a reduce
   * launched before the last map (slow start) fetches each output as its map finishes, and waits
   * for a lost one's re-run (see src/shuffle/map-output-directory.ts).
   */
  tellRunningReduces(job: RuntimeJob, mapAttempt: RuntimeAttempt, change: 'available' | 'lost'): void {
    for (const a of job.running) {
      const partitions = a.reducePartitions;
      if (a.task.kind !== 'reduce' || !partitions || !a.worker.alive) continue;
      a.worker.data.commands['map-outputs']({
        attemptId: a.id,
        available: change === 'available' ? [mapOutputAnnouncement(mapAttempt, partitions)] : [],
        lost: change === 'lost' ? [{ mapIndex: mapAttempt.task.index, attemptId: mapAttempt.id }] : [],
      });
    }
  }
}

/** Hadoop's TaskTracker expiry (mapred.tasktracker.expiry.interval). */
const DEFAULT_TASK_EXPIRY_MS = 60_000;
/** About HDFS's DataNode expiry (10.5 minutes with its defaults). */
const DEFAULT_DATANODE_EXPIRY_MS = 10 * 60_000;

/** Job ids are `job_<start time>_NNNN`, as Hadoop's. */
function jobIdPrefix(d: Date): string {
  const pad2 = (n: number) => String(n).padStart(2, '0');
  return `job_${d.getUTCFullYear()}${pad2(d.getUTCMonth() + 1)}${pad2(d.getUTCDate())}${pad2(d.getUTCHours())}${pad2(d.getUTCMinutes())}${pad2(d.getUTCSeconds())}`;
}

/** A --file-root as jobs' paths are compared with it: absolute, its symbolic links resolved when it exists. */
function realRoot(root: string): string {
  try {
    return realpathSync(resolvePath(root));
  } catch {
    return resolvePath(root);
  }
}
