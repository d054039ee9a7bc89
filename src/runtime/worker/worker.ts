import { fork, type ChildProcess } from 'node:child_process';
import { lchown, lstat, mkdir, rm, statfs, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { hostname } from 'node:os';
import { join, posix, resolve as resolvePath } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MinimrError, serializeError, type SerializedError } from '../../errors.js';
import { createLogger, type Logger } from '../../log.js';
import { CommandMemoryWatch, killTaskProcess } from './process-tree.js';
import {
  createShuffleRequestHandler,
  listMapOutputs,
  mapOutputPaths,
  reduceWorkDir,
  removeAllMapOutputs,
  removeAttemptMapOutput,
  removeJobMapOutputs,
} from '../../shuffle/index.js';
import {
  BlockScanner,
  BlockTokenKey,
  DEFAULT_BLOCK_SCAN_BYTES_PER_SECOND,
  DEFAULT_BLOCK_SCAN_INTERVAL_MS,
  LocalDiskBlockStore,
  type DatanodeSpace,
  checkLocalReplica,
  createDataRequestHandler,
  createWebHdfsDatanodeHandler,
  isExternalUri,
  parseStoreUri,
  type PendingPart,
  attemptsDirOf,
  stagingDirOf,
  replicateBlock,
  trustClusterAuthority,
} from '../../storage/index.js';
import {
  jobModuleHash,
  storeJobModule,
  streamingModuleSource,
  taskProcessEntry,
  THROTTLE_BASES,
  type TaskProcessConfig,
  type ThrottleBasis,
} from '../task/index.js';
import {
  Dispatcher,
  IpcLink,
  JOBTRACKER_TO_WORKER,
  TASK_TO_WORKER,
  WORKER_TO_JOBTRACKER,
  WORKER_TO_TASK,
  authorityToTrust,
  connectPeer,
  newKeyPair,
  stubOf,
  type ArgsOf,
  type AttemptSpec,
  type Caller,
  type Counters,
  type Handlers,
  type JobTrackerToWorker,
  type MapOutputSummary,
  type MapOutputsChanged,
  type PeerSecurity,
  type RpcPeer,
  type Stub,
  type TaskToWorker,
  type WarmJob,
  JOB_CONF_DEFAULTS,
  type WorkerToTask,
} from '../wire/index.js';
import { measureDiskMBps } from './disk-rate.js';
import { hostOfUrl, localAddressToward, loopbackAdvertisedWarning } from './advertised-host.js';
import {
  AttemptLog,
  DEFAULT_ATTEMPT_LOG_MAX_BYTES,
  DEFAULT_LOG_RETAIN_HOURS,
  TaskOutputRouter,
  createAttemptLogRequestHandler,
  pruneAttemptLogs,
} from './attempt-logs.js';
import { phaseTrace, publicError, registerPrivateDir, unregisterPrivateDir } from '../../util/index.js';
import {
  sandboxedEnv,
  type StorePaths,
  type StreamingSandboxOptions,
  TaskSandboxes,
  type JobSandbox,
} from './sandbox.js';

export interface WorkerOptions {
  jobTrackerUrl: string;
  dataDir: string;
  workerId?: string;
  /**
   * Address other workers and clients use to reach this worker's data port; default: this machine's address on the
   * route to the JobTracker.
   */
  host?: string;
  /** Address the data port binds to (default: `host`). */
  bindHost?: string;
  /** 0 picks a free port. */
  dataPort?: number;
  rack?: string;
  mapSlots?: number;
  reduceSlots?: number;
  memoryMb?: number;
  /** Disk rate to report, MB/s; measured at start-up when not given (see `measureDiskMBps`). */
  diskMBps?: number;
  /**
   * Slows this worker's tasks down on purpose (experiments with heterogeneous workers): each task
   * process sleeps (F - 1) x the time it worked, at points of its record loop, so it takes about F
   * times as long (see cpu-throttle.ts). Default 1: full speed.
   */
  cpuThrottle?: number;
  /**
   * What the throttle stretches: 'working' time (default; a worker F times slower than the others)
   * or 'cpu' time (workers each with a core of their own, F times slower); see cpu-throttle.ts.
   */
  cpuThrottleBasis?: ThrottleBasis;
  /** How to authenticate to the JobTracker (auth.ts). */
  security?: PeerSecurity;
  /** Bytes of stdout and of stderr kept per attempt (attempt-logs.ts; default 16 MiB). */
  attemptLogMaxBytes?: number;
  /** Attempt logs of a job are removed this long after its last attempt here started (default 24 h). */
  logRetainHours?: number;
  /** Time between two full block reports to the NameNode (one is also sent at registration); default 10 minutes. */
  blockReportMs?: number;
  /** Rate of the background block scanner, bytes/s (default 1 MiB/s); 0 turns it off. */
  blockScanBytesPerSecond?: number;
  /** Least time from the start of one block scan pass to the next (default 10 minutes). */
  blockScanIntervalMs?: number;
  /**
   * A worker running as root runs a job's tasks as its owner's account when this host has one (uid
   * 1000 or more), else as this account (default `nobody`); see sandbox.ts.
   */
  taskUser?: string;
  /**
   * Keep a spare task process (default true): started before any job, in a sandbox of its own, it
   * becomes the process of the next job launched here without one, so that job does not wait for a
   * fork (~150 ms; sandbox.ts). It costs one idle process's memory (~50 MiB).
   */
  spareProcess?: boolean;
  logger?: Logger;
}

/** Default time between two block reports of a worker. */
export const DEFAULT_BLOCK_REPORT_MS = 10 * 60_000;

/** How long a launch waits for a settling process of its job (`settling`) before it forks one. */
const SETTLING_WAIT_MS = 200;

interface RunningAttempt {
  readonly spec: AttemptSpec;
  child?: ChildProcess;
  /** What the worker tells the attempt's task process, once it has one (WORKER_TO_TASK). */
  link?: Stub<WorkerToTask>;
  /** Map output changes for a reduce that arrived before its task process was given the attempt. */
  readonly mapOutputChanges: MapOutputsChanged[];
  /** Time spent getting the job module (0 when it was cached). */
  moduleWaitMs: number;
  /** Runs in a process that ran an attempt of the same job before. */
  warm?: boolean;
  /** Whether it runs in the spare process its launch adopted (WorkerOptions.spareProcess). */
  spare?: boolean;
  /** The job's sandbox, once the attempt has a process (sandbox.ts). */
  sandbox?: JobSandbox;
  progress: number;
  counters: Counters;
  killReason?: string;
  finished: boolean;
  /** Where the attempt's stdout and stderr go (attempt-logs.ts). */
  log?: AttemptLog;
  /** A streaming attempt's commands' memory (process-tree.ts). */
  commandMemory?: CommandMemoryWatch;
  /** Why the worker failed the attempt itself (its commands went beyond its memory). */
  failure?: SerializedError;
}

const mib = (bytes: number): number => Math.round(bytes / (1024 * 1024));

/** An attempt's shuffle buffer at or above this gets its task process on transparent huge pages. */
export const HUGE_PAGES_MIN_BUFFER_BYTES = 32 * 1024 * 1024;

/**
 * The environment of a task process forked for `attempt`.
 *
 * A task's memory is its shuffle buffer plus a fixed overhead (TASK_OVERHEAD_MB); the malloc
 * settings keep the overhead fixed: two malloc arenas (libuv's thread pool, used by compression and
 * file I/O, otherwise leaves per-thread arenas of freed memory), and glibc's mmap threshold held at
 * 512 KiB: by default it rises to the size of the largest block freed, after which 1 MiB I/O chunks
 * come from the heap and their memory stays with the process once freed (maps: ~4-9 MiB of peak
 * RSS). Not lower: at 128 KiB every 256 KiB frame is a fresh mmap, and a reduce took ~15% more CPU
 * in page faults.
 *
 * For an attempt with a buffer of at least HUGE_PAGES_MIN_BUFFER_BYTES, glibc.malloc.hugetlb=1 is
 * added to the user's GLIBC_TUNABLES (unless they set it): glibc then madvises its mmapped blocks
 * for transparent huge pages (Linux's THP in `madvise` mode, as Debian ships it), so the sort
 * buffer sits on 2 MiB pages. The spill copies records in key order from all over the buffer, and
 * with 4 KiB pages nearly every record was a TLB miss; and a page fault maps 2 MiB, not 4 KiB. Not
 * for smaller buffers: blocks partly used take whole 2 MiB pages, which cost a small
 * map peak RSS it cannot spare under its buffer + 100 MiB, and gained it nothing. Ignored where
 * glibc is older than 2.35 or THP is off. Figures: docs/performance-notes.md#task-processes-on-huge-pages.
 */
export function taskProcessEnv(env: NodeJS.ProcessEnv, attempt?: ProcessShape): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {
    ...env,
    MALLOC_ARENA_MAX: env.MALLOC_ARENA_MAX ?? '2',
    MALLOC_MMAP_THRESHOLD_: env.MALLOC_MMAP_THRESHOLD_ ?? '524288',
  };
  const buffer =
    attempt === undefined
      ? 0
      : attempt.kind === 'map'
        ? attempt.shuffle.mapBufferBytes
        : attempt.shuffle.reduceBufferBytes;
  const user = env.GLIBC_TUNABLES;
  if (buffer >= HUGE_PAGES_MIN_BUFFER_BYTES && !(user !== undefined && /(^|:)glibc\.malloc\.hugetlb=/.test(user))) {
    out.GLIBC_TUNABLES = user ? `${user}:glibc.malloc.hugetlb=1` : 'glibc.malloc.hugetlb=1';
  }
  return out;
}

/** What a task process's environment depends on: its first attempt's kind and buffers. */
export interface ProcessShape {
  readonly kind: AttemptSpec['kind'];
  readonly shuffle: Pick<AttemptSpec['shuffle'], 'mapBufferBytes' | 'reduceBufferBytes'>;
}

/** The first spare's shape: a map with the default buffers (huge pages), as most jobs' processes start. */
const DEFAULT_SPARE_SHAPE: ProcessShape = {
  kind: 'map',
  shuffle: {
    mapBufferBytes: JOB_CONF_DEFAULTS['shuffle.map.bufferBytes'],
    reduceBufferBytes: JOB_CONF_DEFAULTS['shuffle.reduce.bufferBytes'],
  },
};

/** How long a worker runs no attempt before it starts a new spare task process (WorkerOptions.spareProcess). */
const SPARE_IDLE_MS = 500;

/** The file forked for task processes, chosen at the first fork (task-process-entry.ts). */
let taskProcessFile: string | undefined;
/** Job modules a worker keeps on disk, by content hash. */
const MAX_CACHED_MODULES = 64;

/** The spare task process (WorkerOptions.spareProcess) and its sandbox. */
interface SpareProcess {
  readonly child: ChildProcess;
  readonly sandbox: JobSandbox;
  /** Its environment's GLIBC_TUNABLES: a job whose processes get other ones (huge pages) forks its own. */
  readonly tunables: string | undefined;
}

/** A task process kept after a successful attempt, for the next attempt of the same job. */
interface IdleProcess {
  readonly child: ChildProcess;
  readonly jobId: string;
}

function isUsable(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null && child.connected;
}

/**
 * A registration refused for what the worker is, not for when it asked: a wrong secret or credential,
 * another protocol version, a claim the JobTracker's schema or books refuse. An id still held by a
 * live connection (`connected`) frees itself when the old worker goes; ECONNECT and ETIMEOUT pass.
 */
function cannotEverRegister(err: unknown): err is MinimrError {
  if (!(err instanceof MinimrError)) return false;
  if (err.code === 'EBADCONF') return err.details.connected !== true;
  return err.code === 'EAUTH' || err.code === 'EVERSION' || err.code === 'EPROTOCOL' || err.code === 'EPERM';
}

/**
 * The worker (TaskTracker + DataNode): serves its blocks and map outputs over HTTP, keeps a
 * protocol connection to the JobTracker, and runs each task attempt in a child process: user code
 * never runs in the worker, so it cannot delay heartbeats, and a kill is a SIGKILL. A process
 * whose attempt succeeded and left it as clean as it started (task-process.ts) is kept for the
 * next attempt of the same job, so that a launch costs a message to a warm process; one whose
 * attempt failed or was killed is never reused. A process is forked for one job, in that job's
 * sandbox (sandbox.ts): it never runs another job's attempts.
 */
/** The callers of this worker's two endpoints: its JobTracker connection and its task processes. */
const JOBTRACKER_CALLER: Caller = { user: '', roles: new Set(['jobtracker']) };
const TASK_CALLER: Caller = { user: '', roles: new Set(['task']) };

export class Worker {
  readonly workerId: string;
  readonly logger: Logger;
  private readonly opts: Required<
    Omit<
      WorkerOptions,
      | 'logger'
      | 'workerId'
      | 'diskMBps'
      | 'cpuThrottle'
      | 'cpuThrottleBasis'
      | 'security'
      | 'attemptLogMaxBytes'
      | 'logRetainHours'
      | 'host'
      | 'bindHost'
      | 'blockReportMs'
      | 'blockScanBytesPerSecond'
      | 'blockScanIntervalMs'
      | 'taskUser'
      | 'spareProcess'
    >
  >;
  private security: PeerSecurity;
  /**
   * In a TLS cluster (a wss:// JobTracker): the data port's key pair, whose public half the
   * JobTracker certifies at registration; and the cluster authority every data port is checked against.
   */
  private readonly tlsKeys?: { readonly publicKey: string; readonly privateKey: string };
  private clusterAuthority?: string;
  /** Advertised and bound addresses of the data port: known at start when `host` is not given. */
  private host: string | undefined;
  private bindHost: string | undefined;
  private readonly cpuThrottle: number;
  private readonly cpuThrottleBasis: ThrottleBasis;
  private diskMBps: number | undefined;
  private readonly blockStore: LocalDiskBlockStore;
  private readonly shuffleRoot: string;
  private server?: Server | HttpsServer;
  private peer?: RpcPeer;
  /** What this worker tells and asks its JobTracker, over the current connection. */
  private readonly jobTracker: Stub<typeof WORKER_TO_JOBTRACKER> = stubOf(WORKER_TO_JOBTRACKER, () => {
    if (!this.peer) throw new MinimrError('ECONNECT', 'the worker is not connected to a JobTracker');
    return this.peer;
  });
  /** What the JobTracker may tell this worker: its one peer is the JobTracker. */
  private readonly commands = new Dispatcher<RpcPeer>('a worker', () => JOBTRACKER_CALLER).serve(
    JOBTRACKER_TO_WORKER,
    this.commandHandlers(),
  );
  private heartbeatTimer?: NodeJS.Timeout;
  private heartbeatMs = 1000;
  private readonly running = new Map<string, RunningAttempt>();
  /** Job modules stored under `modulesDir`, by content hash, least recently used first. */
  private readonly jobModules = new Map<string, Promise<string>>();
  /** The hashes of `jobModules` whose file is stored (their launches wait for nothing: MODULE_WAIT_MS 0). */
  private readonly modulesStored = new Set<string>();
  private readonly modulesDir: string;
  private streamingModuleFile: Promise<string> | undefined;
  /** The store paths (localStorePaths) each task process was started allowed to use, as JSON. */
  private readonly processStorePaths = new WeakMap<ChildProcess, string>();
  /** Task processes whose attempt succeeded and left them clean, by the job they ran; least recently idle first. */
  private readonly idle: IdleProcess[] = [];
  /** Jobs cleaned up here lately, so that a `warm-job` still under way starts nothing for them. */
  private readonly endedJobs = new Set<string>();
  /**
   * Per job, the processes whose attempt succeeded and that are cleaning up before they say `idle`
   * (each a promise settled then, or at their exit): a launch of the job waits for one briefly
   * rather than fork, since a process is forked per job (sandbox.ts) and a fork costs ~200 ms of
   * CPU (a job's reduce, launched the moment its map is done, would fork otherwise).
   */
  private readonly settling = new Map<string, Set<Promise<void>>>();
  /** The spare task process, once started (`startSpare`), until a job takes it. */
  private spare: SpareProcess | undefined;
  private spareStarting = false;
  /** The shape of the next spare (the last job's that took one), and the timer that starts it (`spareWanted`). */
  private spareShape: ProcessShape = DEFAULT_SPARE_SHAPE;
  private spareTimer: NodeJS.Timeout | undefined;
  /** Where task processes run and what they may touch (sandbox.ts). */
  private readonly sandboxes: TaskSandboxes;
  private stopping = false;
  /** From the JobTracker at registration: the data port serves nothing before it has one. */
  private blockKey: BlockTokenKey | undefined;
  /**
   * Shuffle secrets of the jobs whose attempts ran here, until their clean-up: the shuffle handler serves only these.
   */
  private readonly jobSecrets = new Map<string, string>();
  /** Attempt logs, `LOGS/JOB/ATTEMPT/{stdout,stderr}`. */
  readonly logRoot: string;
  private readonly attemptLogMaxBytes: number;
  private readonly logRetainHours: number;
  private readonly taskOutput = new TaskOutputRouter();
  private pruneTimer?: NodeJS.Timeout;
  private blockReportTimer?: NodeJS.Timeout;
  private readonly blockReportMs: number;
  private readonly blockScanner: BlockScanner;
  private readonly keepsSpare: boolean;
  dataPort = 0;

  constructor(options: WorkerOptions) {
    const mapSlots = options.mapSlots ?? 2;
    const reduceSlots = options.reduceSlots ?? 1;
    this.opts = {
      jobTrackerUrl: options.jobTrackerUrl,
      dataDir: options.dataDir,
      dataPort: options.dataPort ?? 0,
      rack: options.rack ?? '/default-rack',
      mapSlots,
      reduceSlots,
      memoryMb: options.memoryMb ?? (mapSlots + reduceSlots) * 512,
    };
    this.host = options.host;
    this.bindHost = options.bindHost;
    this.diskMBps = options.diskMBps;
    this.security = options.security ?? {};
    if (options.jobTrackerUrl.startsWith('wss:')) this.tlsKeys = newKeyPair();
    const throttle = options.cpuThrottle ?? 1;
    if (!(Number.isFinite(throttle) && throttle >= 1 && throttle <= 100)) {
      throw new MinimrError(
        'EBADCONF',
        `cpu throttle must be a number in 1..100 (1 = full speed, 2 = half speed), got ${throttle}`,
      );
    }
    this.cpuThrottle = throttle;
    const basis = options.cpuThrottleBasis ?? 'working';
    if (!THROTTLE_BASES.includes(basis)) {
      throw new MinimrError(
        'EBADCONF',
        `cpu throttle basis must be one of ${THROTTLE_BASES.join(', ')}, got ${String(basis)}`,
      );
    }
    this.cpuThrottleBasis = basis;
    this.keepsSpare = options.spareProcess ?? true;
    this.workerId = options.workerId ?? `${hostname()}-${process.pid}`;
    this.logger = options.logger ?? createLogger(`worker ${this.workerId}`);
    this.blockStore = new LocalDiskBlockStore({ dir: join(options.dataDir, 'blocks'), workerId: this.workerId });
    this.shuffleRoot = join(options.dataDir, 'shuffle');
    this.modulesDir = join(options.dataDir, 'jobs', 'modules');
    this.logRoot = join(options.dataDir, 'logs');
    this.sandboxes = new TaskSandboxes({
      dataDir: options.dataDir,
      shuffleRoot: this.shuffleRoot,
      taskUser: options.taskUser,
      logger: this.logger,
    });
    this.attemptLogMaxBytes = options.attemptLogMaxBytes ?? DEFAULT_ATTEMPT_LOG_MAX_BYTES;
    this.logRetainHours = options.logRetainHours ?? DEFAULT_LOG_RETAIN_HOURS;
    if (!(Number.isInteger(this.attemptLogMaxBytes) && this.attemptLogMaxBytes >= 0))
      throw new MinimrError(
        'EBADCONF',
        `attempt log size must be a non-negative number of bytes, got ${this.attemptLogMaxBytes}`,
      );
    if (!(this.logRetainHours > 0))
      throw new MinimrError('EBADCONF', `log retention must be a positive number of hours, got ${this.logRetainHours}`);
    this.blockReportMs = options.blockReportMs ?? DEFAULT_BLOCK_REPORT_MS;
    const scanRate = options.blockScanBytesPerSecond ?? DEFAULT_BLOCK_SCAN_BYTES_PER_SECOND;
    const scanInterval = options.blockScanIntervalMs ?? DEFAULT_BLOCK_SCAN_INTERVAL_MS;
    if (!(Number.isInteger(this.blockReportMs) && this.blockReportMs > 0))
      throw new MinimrError(
        'EBADCONF',
        `block report interval must be a positive number of ms, got ${this.blockReportMs}`,
      );
    if (!(Number.isFinite(scanRate) && scanRate >= 0))
      throw new MinimrError('EBADCONF', `block scan rate must be a non-negative number of bytes/s, got ${scanRate}`);
    if (!(Number.isFinite(scanInterval) && scanInterval >= 0))
      throw new MinimrError('EBADCONF', `block scan interval must be a non-negative number of ms, got ${scanInterval}`);
    this.blockScanner = new BlockScanner({
      store: this.blockStore,
      bytesPerSecond: scanRate,
      intervalMs: scanInterval,
      logger: this.logger,
      scanned: (replicas) => {
        if (this.peer) void this.jobTracker['blocks-scanned']({ workerId: this.workerId, replicas });
      },
      corrupt: (blockId, reason) => {
        if (this.peer) void this.jobTracker['replica-corrupt']({ workerId: this.workerId, blockId, reason });
      },
    });
  }

  async start(): Promise<void> {
    // Errors this worker sends out (data port, attempt reports) name its files: peers see a placeholder.
    registerPrivateDir(resolvePath(this.opts.dataDir), `${this.workerId}'s data directory`);
    // The module cache is indexed in memory: what a previous run left is of no use.
    await rm(this.modulesDir, { recursive: true, force: true });
    // So are its map outputs: a worker that starts registers as new, and its old outputs were re-run.
    await removeAllMapOutputs(this.shuffleRoot);
    await Promise.all([
      mkdir(this.shuffleRoot, { recursive: true }),
      mkdir(this.modulesDir, { recursive: true }),
      mkdir(this.logRoot, { recursive: true }),
      this.blockStore.open(),
    ]);
    await this.sandboxes.init();
    await this.pruneLogs();
    this.pruneTimer = setInterval(() => void this.pruneLogs(), 3600_000);
    this.pruneTimer.unref();
    const blocks = createDataRequestHandler(this.blockStore, this.workerId, {
      blockKey: () => this.blockKey,
      logError: (err) => this.logger.info({ err }, 'data port request refused or failed'),
    });
    const shuffle = createShuffleRequestHandler({
      rootDir: this.shuffleRoot,
      jobSecret: (jobId) => this.jobSecrets.get(jobId),
    });
    const logs = createAttemptLogRequestHandler(this.logRoot, { blockKey: () => this.blockKey });
    // A WebHDFS OPEN or CREATE the JobTracker redirected here, with its grant: it answers for the blocks.
    const webhdfs = createWebHdfsDatanodeHandler({
      store: this.blockStore,
      workerId: this.workerId,
      logger: this.logger,
      open: (args) => this.jobTracker['webhdfs-open'](args),
      create: (args) => this.jobTracker['webhdfs-create'](args),
      allocateBlock: (args) => this.jobTracker['webhdfs-allocate-block'](args),
      commitBlock: (args) => this.jobTracker['webhdfs-commit-block'](args),
      complete: (args) => this.jobTracker['webhdfs-complete'](args),
      abandon: (args) => this.jobTracker['webhdfs-abandon'](args),
    });
    const serve = (req: IncomingMessage, res: ServerResponse): void => {
      if (blocks(req, res) || shuffle(req, res) || logs(req, res) || webhdfs(req, res)) return;
      res
        .writeHead(404, { 'content-type': 'application/json' })
        .end(JSON.stringify({ code: 'ENOENT', message: `no such resource ${req.url}` }));
    };
    // In a TLS cluster, HTTPS only: the certificate comes with the registration (until then no handshake succeeds).
    this.server = this.tlsKeys ? createHttpsServer({}, serve) : createServer(serve);
    if (this.tlsKeys) await this.trustPinnedAuthority();
    const host = (this.host ??= await localAddressToward(this.opts.jobTrackerUrl));
    const warning = loopbackAdvertisedWarning(host, hostOfUrl(this.opts.jobTrackerUrl));
    if (warning) this.logger.warn({ host, jobTracker: this.opts.jobTrackerUrl }, warning);
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(this.opts.dataPort, this.bindHost ?? host, () => resolve());
    });
    const addr = this.server.address();
    this.dataPort = typeof addr === 'object' && addr ? addr.port : this.opts.dataPort;
    this.diskMBps ??= await measureDiskMBps(this.opts.dataDir);
    await this.connect(true);
    this.blockReportTimer = setInterval(() => void this.sendBlockReport(), this.blockReportMs);
    this.blockReportTimer.unref();
    this.blockScanner.start();
  }

  /** The block directory's file system, for the NameNode's placement; undefined when it cannot be read. */
  private async diskSpace(): Promise<DatanodeSpace | undefined> {
    try {
      const fs = await statfs(this.blockStore.dir);
      return { capacityBytes: fs.blocks * fs.bsize, freeBytes: fs.bavail * fs.bsize };
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'cannot read the free space of the block directory');
      return undefined;
    }
  }

  /** Every replica on the disk with its length: the NameNode reconciles its map with it. */
  private async sendBlockReport(): Promise<void> {
    if (!this.peer || this.stopping) return;
    try {
      const replicas = await this.blockStore.report();
      if (this.peer) await this.jobTracker['block-report']({ workerId: this.workerId, replicas });
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'block report failed');
    }
  }

  /**
   * A worker given the pin of the cluster authority (a join token) checks it against the JobTracker's
   * chain once, keeps the authority in its directory (`cluster-ca.pem`) and trusts only it from then on.
   */
  private async trustPinnedAuthority(): Promise<void> {
    const ca = await authorityToTrust(this.opts.jobTrackerUrl, this.security.tlsCa, this.security.tlsPin);
    if (ca === undefined || this.security.tlsPin === undefined) return;
    this.security = { ...this.security, tlsCa: ca };
    await writeFile(join(this.opts.dataDir, 'cluster-ca.pem'), ca);
  }

  /**
   * The certificate the JobTracker gave at registration: the data port serves it, and data ports are
   * checked against its authority.
   */
  private useCertificate(certificate: string | undefined, authority: string | undefined): void {
    if (!this.tlsKeys || !(this.server instanceof Object) || !('setSecureContext' in this.server)) return;
    if (certificate === undefined || authority === undefined) {
      throw new MinimrError(
        'EPROTOCOL',
        `the JobTracker at ${this.opts.jobTrackerUrl} serves TLS but gave no certificate for this worker's data port`,
      );
    }
    this.server.setSecureContext({ key: this.tlsKeys.privateKey, cert: `${certificate}${authority}` });
    this.clusterAuthority = authority;
    trustClusterAuthority(authority);
  }

  private async pruneLogs(): Promise<void> {
    const removed = await pruneAttemptLogs(this.logRoot, this.logRetainHours);
    if (removed > 0) this.logger.info({ jobs: removed, retainHours: this.logRetainHours }, 'old attempt logs removed');
  }

  async stop(): Promise<void> {
    this.stopping = true;
    unregisterPrivateDir(resolvePath(this.opts.dataDir));
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    clearTimeout(this.spareTimer);
    if (this.blockReportTimer) clearInterval(this.blockReportTimer);
    await this.blockScanner.stop();
    const exits: Promise<unknown>[] = [];
    for (const child of [
      ...[...this.running.values()].map((r) => r.child),
      ...this.idle.splice(0).map((p) => p.child),
      this.spare?.child,
    ]) {
      if (child && child.exitCode === null && child.signalCode === null) {
        exits.push(new Promise((resolve) => child.once('exit', resolve)));
        killTaskProcess(child, true);
      }
    }
    await Promise.all(exits);
    this.peer?.close(1000, 'worker stopping');
    if (this.server) {
      this.server.closeAllConnections();
      await new Promise<void>((resolve) => this.server!.close(() => resolve()));
    }
  }

  // ---- JobTracker connection -----------------------------------------------------------------

  private async connect(firstTime = false): Promise<void> {
    let delay = 250;
    for (;;) {
      let peer: RpcPeer | undefined;
      try {
        peer = await connectPeer(this.opts.jobTrackerUrl, this.commands, this.logger, undefined, this.security);
        const blockIds = await this.blockStore.list();
        // A JobTracker restarted since the last registration keeps the outputs its recovered jobs need.
        const mapOutputs = await listMapOutputs(this.shuffleRoot);
        const registering = peer;
        const register = stubOf(WORKER_TO_JOBTRACKER, () => registering).register;
        const result = await register(
          {
            worker: {
              workerId: this.workerId,
              host: this.host!,
              dataPort: this.dataPort,
              rack: this.opts.rack,
              mapSlots: this.opts.mapSlots,
              reduceSlots: this.opts.reduceSlots,
              memoryMb: this.opts.memoryMb,
              diskMBps: this.diskMBps ?? 0,
            },
            blockIds,
            mapOutputs,
            space: await this.diskSpace(),
            ...(this.tlsKeys ? { tlsPublicKey: this.tlsKeys.publicKey } : {}),
          },
          30_000,
        );
        this.useCertificate(result.tlsCertificate, result.clusterAuthority);
        this.blockKey = BlockTokenKey.parse(result.blockKey);
        this.peer = peer;
        this.heartbeatMs = result.heartbeatMs;
        for (const id of result.orphanBlocks) await this.blockStore.delete(id).catch(() => undefined);
        for (const o of result.orphanMapOutputs ?? []) await this.removeMapOutput(o.jobId, o.attemptId, true);
        if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
        this.heartbeatTimer = setInterval(() => this.heartbeat(), this.heartbeatMs);
        this.logger.info(
          {
            jobTracker: this.opts.jobTrackerUrl,
            dataPort: this.dataPort,
            blocks: blockIds.length,
            mapOutputs: mapOutputs.length,
            orphanMapOutputs: result.orphanMapOutputs?.length ?? 0,
          },
          'registered with the JobTracker',
        );
        void peer.closed.then(() => this.onDisconnect());
        // The registration listed the blocks; the report adds their lengths, so a truncated replica is found now.
        void this.sendBlockReport();
        // After the registration: a task process's config holds the cluster authority it gave.
        void this.startSpare();
        return;
      } catch (err) {
        // A registration the JobTracker took but whose answer came too late holds the id on this
        // connection: closed, it frees the id for the next try (the JobTracker refuses a live id).
        peer?.close(1000, 'registration failed');
        if (this.stopping) return;
        // A config the JobTracker can never take will not get better by retrying: at start-up, say so and stop.
        if (firstTime && cannotEverRegister(err))
          throw new MinimrError(
            err.code,
            `cannot register with the JobTracker at ${this.opts.jobTrackerUrl}: ${err.message}`,
            err.details,
          );
        this.logger.warn(
          { err: (err as Error).message, retryMs: delay },
          'cannot register with the JobTracker, retrying',
        );
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 5000);
      }
    }
  }

  private onDisconnect(): void {
    if (this.stopping) return;
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    this.logger.warn('lost the JobTracker connection: killing running attempts and registering again');
    // The JobTracker has already given these attempts up and will re-run them elsewhere.
    for (const attempt of this.running.values()) this.kill(attempt.spec.attemptId, 'JobTracker connection lost');
    // Started with the last registration's config; the next registration starts another.
    this.spare?.child.kill('SIGKILL');
    this.spare = undefined;
    void this.connect();
  }

  private heartbeat(): void {
    const attempts = [...this.running.values()]
      .filter((r) => !r.finished)
      .map((r) => ({ attemptId: r.spec.attemptId, progress: r.progress, counters: r.counters }));
    // With the disk's free space (statfs: microseconds), which the NameNode's placement weighs.
    void this.diskSpace().then((space) => {
      if (this.peer) void this.jobTracker.heartbeat({ workerId: this.workerId, attempts, space });
    });
  }

  /** How this worker carries out what the JobTracker tells it (JOBTRACKER_TO_WORKER). */
  private commandHandlers(): Handlers<JobTrackerToWorker, RpcPeer> {
    return {
      launch: ({ attempt }) => void this.launch(attempt),
      kill: ({ attemptId, reason }) => this.kill(attemptId, reason),
      'delete-blocks': ({ blockIds }) => {
        for (const id of blockIds)
          void this.blockStore
            .delete(id)
            .catch((err: Error) => this.logger.warn({ block: id, err: err.message }, 'block delete failed'));
      },
      'verify-blocks': ({ blocks }) => {
        for (const block of blocks) void this.verifyReplica(block);
      },
      'replicate-block': ({ blockId, targets, token }) => {
        void replicateBlock(this.blockStore, blockId, targets, token).then(
          (result) => {
            for (const f of result.failed)
              this.logger.warn({ block: blockId, target: f.workerId, err: f.message }, 'block replication failed');
            const full = result.failed.filter((f) => f.code === 'EDISKFULL').map((f) => f.workerId);
            if ((result.succeeded.length > 0 || full.length > 0) && this.peer)
              void this.jobTracker['block-replicated']({
                workerId: this.workerId,
                blockId,
                targets: [...result.succeeded],
                ...(full.length > 0 ? { full } : {}),
              });
          },
          (err: Error) => this.logger.warn({ block: blockId, err: err.message }, 'block replication failed'),
        );
      },
      'warm-job': ({ job }) => void this.warmJob(job),
      'cleanup-job': ({ jobId }) => void this.cleanupJob(jobId),
      'block-keys': ({ blockKey }) => {
        this.blockKey = BlockTokenKey.parse(blockKey);
      },
      'map-outputs': (message) => this.mapOutputsChanged({ type: 'map-outputs', ...message }),
    };
  }

  // ---- attempts --------------------------------------------------------------------------------

  /**
   * A task process for `attempt`, in its job's sandbox: it runs only that job's attempts (sandbox.ts).
   * Started for the launch at hand, ahead of a job's first launch here (`warm-job`), or as the spare.
   */
  private forkTaskProcess(
    attempt: ProcessShape,
    sandbox: JobSandbox,
    storePaths: StorePaths,
    startedAs: 'launch' | 'warm-job' | 'spare' = 'launch',
  ): ChildProcess {
    phaseTrace('w-fork', { spare: startedAs !== 'launch', running: this.running.size });
    const config: TaskProcessConfig = {
      workerId: this.workerId,
      rack: this.opts.rack,
      // A spare reaches its job's map outputs through its sandbox's links (sandbox.ts).
      shuffleRoot: sandbox.shuffleLinks ?? this.shuffleRoot,
      addonRoots: this.sandboxes.addonRoots(),
      cpuThrottle: this.cpuThrottle,
      cpuThrottleBasis: this.cpuThrottleBasis,
      ...(this.clusterAuthority !== undefined ? { clusterAuthority: this.clusterAuthority } : {}),
      // Only the spare has time before its job: it rehearses the engine's code paths (task-process.ts).
      ...(startedAs === 'spare' ? { rehearse: true } : {}),
    };
    taskProcessFile ??= taskProcessEntry(fileURLToPath(new URL('../task/', import.meta.url)));
    const account = sandbox.account;
    const child = fork(taskProcessFile, [], {
      // A task's memory is its shuffle buffer plus a fixed overhead (TASK_OVERHEAD_MB): malloc's
      // settings (taskProcessEnv) and a small young generation keep it fixed (tasks make short-lived
      // garbage at a high rate, and a 16 MiB semi-space held ~40 MiB for nothing).
      // --expose-gc: the shuffle paces full GCs (src/shuffle/gc-pacer.ts).
      env: {
        ...taskProcessEnv(sandboxedEnv(process.env, sandbox), attempt),
        MINIMR_TASK_CONFIG: JSON.stringify(config),
      },
      cwd: sandbox.workDir,
      ...(account ? { uid: account.uid, gid: account.gid } : {}),
      serialization: 'advanced',
      // Piped, to the log of the attempt the process runs (attempt-logs.ts).
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      // Node flags for task processes from whoever started the worker (e.g. --trace-gc). Not --cpu-prof:
      // Node 20's permission model (the sandbox) turns the inspector off, so no profile is ever written;
      // profile task code in one process instead (docs/performance-notes.md).
      execArgv: [
        '--max-semi-space-size=4',
        '--expose-gc',
        ...this.sandboxes.execArgv(sandbox, process.env, storePaths),
        ...(process.env.MINIMR_TASK_EXEC_ARGV ?? '').split(' ').filter(Boolean),
      ],
    });
    child.on('error', (err) => this.logger.warn({ err: err.message }, 'task process error'));
    this.processStorePaths.set(child, JSON.stringify(storePaths));
    this.taskOutput.attach(child);
    child.once('exit', () => {
      const i = this.idle.findIndex((p) => p.child === child);
      if (i >= 0) this.idle.splice(i, 1);
    });
    return child;
  }

  /**
   * Starts the spare task process (WorkerOptions.spareProcess) if there is none: in a sandbox of its
   * own, with the environment of the last job that took one (`spareShape`).
   */
  private async startSpare(): Promise<void> {
    const shape = this.spareShape;
    if (!this.keepsSpare || this.stopping || this.spare || this.spareStarting || !this.peer) return;
    this.spareStarting = true;
    try {
      const sandbox = await this.sandboxes.makeSpare();
      if (this.stopping || !this.peer) {
        await this.sandboxes.removeSpare(sandbox);
        return;
      }
      const spare: SpareProcess = {
        child: this.forkTaskProcess(shape, sandbox, NO_STORE_PATHS, 'spare'),
        sandbox,
        tunables: taskProcessEnv(process.env, shape).GLIBC_TUNABLES,
      };
      this.spare = spare;
      spare.child.once('exit', () => {
        if (this.spare === spare) this.spare = undefined;
        void this.sandboxes.removeSpare(sandbox).catch(() => undefined);
      });
    } catch (err) {
      // Nothing lost: jobs fork their processes as they would without it.
      this.logger.warn({ err: (err as Error).message }, 'could not start a spare task process');
    } finally {
      this.spareStarting = false;
    }
  }

  /**
   * A new spare is wanted (of `shape`): it is started once this worker has run no attempt for
   * SPARE_IDLE_MS, so that its fork (~150 ms of CPU) does not slow the job that took the last one.
   */
  private spareWanted(shape?: ProcessShape): void {
    if (!this.keepsSpare) return;
    if (shape) this.spareShape = shape;
    clearTimeout(this.spareTimer);
    if (this.running.size > 0 || this.spare || this.stopping) return;
    this.spareTimer = setTimeout(() => {
      if (this.running.size === 0) void this.startSpare();
    }, SPARE_IDLE_MS);
    this.spareTimer.unref();
  }

  /**
   * The spare, taken for a job that has no sandbox here yet and whose processes it can be: allowed no
   * store paths (`storePaths`: the attempt's), and started with the same environment.
   */
  private takeSpare(jobId: string, shape: ProcessShape, storePaths: StorePaths): SpareProcess | undefined {
    const spare = this.spare;
    if (!spare || !isUsable(spare.child) || this.sandboxes.has(jobId)) return undefined;
    if (storePaths.read.length > 0 || storePaths.write.length > 0) return undefined;
    this.spare = undefined;
    if (taskProcessEnv(process.env, shape).GLIBC_TUNABLES === spare.tunables) return spare;
    // The jobs coming now start their processes otherwise: the next spare is started as this job's.
    spare.child.kill('SIGKILL');
    this.spareWanted(shape);
    return undefined;
  }

  /**
   * The job's sandbox here (`TaskSandboxes.prepare`), made of the spare when this is the job's first
   * launch here and the spare can serve it (`takeSpare`; never a streaming job's); `adopted`: the
   * spare's process, now the job's.
   */
  private async jobSandbox(
    jobId: string,
    owner: string | undefined,
    module: string,
    shape: ProcessShape,
    storePaths: StorePaths,
    streaming?: StreamingSandboxOptions,
  ): Promise<{ sandbox: JobSandbox; adopted: ChildProcess | undefined }> {
    const spare = streaming ? undefined : this.takeSpare(jobId, shape, storePaths);
    try {
      const sandbox = await this.sandboxes.prepare(jobId, owner, module, streaming, spare?.sandbox);
      return { sandbox, adopted: this.afterAdoption(spare, sandbox, shape) };
    } catch (err) {
      this.afterAdoption(spare, undefined, shape);
      throw err;
    }
  }

  /**
   * After `prepare` was given `spare`: its process, when the job adopted its sandbox (another spare is
   * started); else it is the spare again, or goes (the job's sandbox was made meanwhile, or the job's
   * account differs).
   */
  private afterAdoption(
    spare: SpareProcess | undefined,
    sandbox: JobSandbox | undefined,
    shape: ProcessShape,
  ): ChildProcess | undefined {
    if (!spare) return undefined;
    if (sandbox?.dir === spare.sandbox.dir) {
      this.spareWanted(shape);
      return spare.child;
    }
    // A failed adoption may have linked the spare's sandbox to a job: such a spare serves no other.
    if (sandbox === undefined || this.spare !== undefined || this.stopping) spare.child.kill('SIGKILL');
    else this.spare = spare;
    return undefined;
  }

  /**
   * A process for `spec`: an idle one of the same job (warm: one that ran an attempt of the job, its
   * code compiled and addon loaded, or one started for the job ahead of its first launch here, see
   * `warmJob`), else a new one in the job's sandbox. What a process may read and write is fixed when
   * it starts, and is its job's (the spare's, adopted before this is asked, is too).
   */
  private takeTaskProcess(spec: AttemptSpec, sandbox: JobSandbox): { child: ChildProcess; warm: boolean } {
    // What a process may read and write was fixed when it started: only one allowed the same store paths will do.
    const storePaths = JSON.stringify(localStorePaths(spec));
    for (let i = this.idle.length - 1; i >= 0; i--) {
      const p = this.idle[i]!;
      if (p.jobId !== spec.jobId || !isUsable(p.child) || this.processStorePaths.get(p.child) !== storePaths) continue;
      this.idle.splice(i, 1);
      return { child: p.child, warm: true };
    }
    return { child: this.forkTaskProcess(spec, sandbox, localStorePaths(spec)), warm: false };
  }

  /**
   * A file:// output's directory of attempts' parts, which the JobTracker made when the job was set up
   * (on a file system every worker shares): the task account must be able to write there. It and
   * the staging directory holding it must be directories, not symbolic links: a worker running as
   * root would otherwise hand whatever a link points to to the task account.
   */
  private async prepareOutputDir(spec: AttemptSpec, sandbox: JobSandbox): Promise<void> {
    const dir = localOutputDir(spec);
    if (dir === undefined) return;
    try {
      for (const path of [posix.dirname(dir), dir]) {
        const st = await lstat(path);
        if (!st.isDirectory())
          throw new MinimrError('ESTORE', `${path} is not a directory (a symbolic link, or a file)`, { path });
      }
      if (sandbox.account) await lchown(dir, sandbox.account.uid, sandbox.account.gid);
    } catch (err) {
      throw new MinimrError(
        'ESTORE',
        `${spec.outputStore?.uri}: this worker cannot prepare the job's staging directory ${dir} ` +
          `(${err instanceof MinimrError ? err.message : ((err as NodeJS.ErrnoException).code ?? (err as Error).message)}); ` +
          'a file:// output must be on a file ' +
          'system every worker shares',
        { uri: spec.outputStore?.uri ?? '' },
      );
    }
  }

  /** Notes a process of `jobId` settling (see `settling`); answers what to call once it is idle or gone. */
  private settlingProcess(jobId: string): () => void {
    let done!: () => void;
    const settled = new Promise<void>((resolve) => (done = resolve));
    const processes = this.settling.get(jobId) ?? new Set<Promise<void>>();
    processes.add(settled);
    this.settling.set(jobId, processes);
    return () => {
      processes.delete(settled);
      if (processes.size === 0 && this.settling.get(jobId) === processes) this.settling.delete(jobId);
      done();
    };
  }

  /** Waits until a settling process of `jobId` is idle or gone, at most about what a fork costs. */
  private async oneSettled(jobId: string): Promise<void> {
    const processes = this.settling.get(jobId);
    if (!processes || processes.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.race(processes),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, SETTLING_WAIT_MS))),
    ]);
    clearTimeout(timer);
  }

  /** A process whose attempt succeeded says it is clean: keep it for the job's next attempt. */
  private keepIdle(child: ChildProcess, jobId: string): void {
    if (this.stopping || !isUsable(child)) {
      child.kill('SIGKILL');
      return;
    }
    this.idle.push({ child, jobId });
    // As many warm processes as slots: enough for a job's waves, bounded memory.
    while (this.idle.length > this.opts.mapSlots + this.opts.reduceSlots) this.idle.shift()!.child.kill('SIGKILL');
  }

  /** The job module's file, fetched from the JobTracker once per content hash and kept for later jobs. */
  private jobModule(spec: Pick<AttemptSpec, 'jobId' | 'moduleHash'>): Promise<string> {
    const hash = spec.moduleHash;
    let p = this.jobModules.get(hash);
    if (p) {
      this.jobModules.delete(hash);
      this.jobModules.set(hash, p);
      return p;
    }
    p = (async () => {
      const { source, name } = await this.jobTracker['get-job-module']({ jobId: spec.jobId }, 30_000);
      if (jobModuleHash(source) !== hash) {
        throw new MinimrError('EJOBMODULE', `job module ${name} of ${spec.jobId} does not match its hash ${hash}`, {
          jobId: spec.jobId,
        });
      }
      const file = await storeJobModule(source, this.modulesDir);
      this.modulesStored.add(hash);
      return file;
    })();
    this.jobModules.set(hash, p);
    p.catch(() => this.jobModules.delete(hash));
    this.evictModules();
    return p;
  }

  /** This worker's own streaming module, stored once in the module cache (streaming-module.ts). */
  private streamingModule(): Promise<string> {
    this.streamingModuleFile ??= streamingModuleSource().then((source) => storeJobModule(source, this.modulesDir));
    this.streamingModuleFile.catch(() => (this.streamingModuleFile = undefined));
    return this.streamingModuleFile;
  }

  /** Keeps the module cache to MAX_CACHED_MODULES, dropping the least recently used that no attempt runs. */
  private evictModules(): void {
    if (this.jobModules.size <= MAX_CACHED_MODULES) return;
    const inUse = new Set([...this.running.values()].map((r) => r.spec.moduleHash));
    for (const [hash, p] of this.jobModules) {
      if (this.jobModules.size <= MAX_CACHED_MODULES) break;
      if (inUse.has(hash)) continue;
      this.jobModules.delete(hash);
      this.modulesStored.delete(hash);
      void p.then((file) => rm(file, { force: true })).catch(() => undefined);
    }
  }

  private async launch(spec: AttemptSpec): Promise<void> {
    phaseTrace('w-launch', { attempt: spec.attemptId });
    const record: RunningAttempt = {
      spec,
      progress: 0,
      counters: {},
      finished: false,
      mapOutputChanges: [],
      moduleWaitMs: 0,
    };
    if (typeof spec.shuffleSecret === 'string') this.jobSecrets.set(spec.jobId, spec.shuffleSecret);
    this.running.set(spec.attemptId, record);
    let sandbox: JobSandbox;
    /** The spare process, when this launch made the job's sandbox of it. */
    let adopted: ChildProcess | undefined;
    let waitStarted = performance.now();
    try {
      record.log = await AttemptLog.open(this.logRoot, spec.jobId, spec.attemptId, this.attemptLogMaxBytes);
      waitStarted = performance.now();
      // A module stored here is not waited for, whatever else the event loop did meanwhile (a spare's fork).
      const stored = spec.streaming !== true && this.modulesStored.has(spec.moduleHash);
      // A streaming job runs this worker's own streaming module (never fetched code: it may start processes).
      const cachedModule = spec.streaming === true ? await this.streamingModule() : await this.jobModule(spec);
      record.moduleWaitMs = stored ? 0 : Math.round(performance.now() - waitStarted);
      ({ sandbox, adopted } = await this.jobSandbox(
        spec.jobId,
        spec.owner,
        cachedModule,
        spec,
        localStorePaths(spec),
        spec.streaming === true
          ? { files: async () => (await this.jobTracker['get-job-files']({ jobId: spec.jobId }, 30_000)).files }
          : undefined,
      ));
    } catch (err) {
      this.report(record, 'failed', {}, serializeError(err));
      return;
    }
    const log = record.log;
    // An adopted spare not used by this attempt (killed meanwhile, or failing) waits for the job's next one.
    const keepAdopted = (): void => {
      if (adopted) this.keepIdle(adopted, spec.jobId);
    };
    if (record.finished) {
      keepAdopted();
      void log.close();
      return;
    }
    try {
      await this.prepareOutputDir(spec, sandbox);
    } catch (err) {
      keepAdopted();
      this.report(record, 'failed', {}, serializeError(err));
      return;
    }
    if (!adopted && !this.idle.some((p) => p.jobId === spec.jobId)) await this.oneSettled(spec.jobId);
    // Killed while its output directory was prepared or a process settled: it must not start after all
    // (it would run unseen, writing its part after its job committed: a speculative loser killed early).
    if (record.finished) {
      keepAdopted();
      void log.close();
      return;
    }
    const { child, warm } = adopted ? { child: adopted, warm: false } : this.takeTaskProcess(spec, sandbox);
    let settled: (() => void) | undefined;
    record.child = child;
    if (spec.streaming === true && child.pid !== undefined)
      record.commandMemory = new CommandMemoryWatch(
        child.pid,
        spec.memoryMb * 1024 * 1024,
        (taskBytes, commandBytes) => {
          record.failure = {
            code: 'ETASK',
            message:
              `${spec.attemptId} is running beyond its memory: its commands hold ${mib(commandBytes)} MiB, ` +
              `more than the ${spec.memoryMb} MiB granted (its task process ${mib(taskBytes)} MiB besides); killed`,
            details: { attemptId: spec.attemptId, taskId: spec.taskId },
          };
          killTaskProcess(child, true);
        },
      );
    record.warm = warm;
    record.spare = adopted !== undefined;
    record.sandbox = sandbox;
    this.taskOutput.assign(child, log);
    this.logger.debug({ attempt: spec.attemptId, warm, pid: child.pid }, 'attempt started');
    const detach = (): void => {
      link.detach();
      child.off('exit', onExit);
    };
    const taskHandlers: Handlers<TaskToWorker, ChildProcess> = {
      ready: () => undefined,
      progress: (msg) => {
        record.progress = msg.progress;
        record.counters = msg.counters;
      },
      done: (msg) => {
        phaseTrace('w-done', { attempt: spec.attemptId });
        // Before the report: the JobTracker's next launch of the job may come back at once.
        if (msg.state === 'succeeded') settled = this.settlingProcess(spec.jobId);
        this.report(record, msg.state, msg.counters, msg.error, msg.mapOutput, msg.outputPart);
        // A failed attempt's process exits by itself; it is never reused.
        if (msg.state !== 'succeeded') {
          killTaskProcess(child, spec.streaming === true);
        }
      },
      idle: () => {
        detach();
        if (record.killReason === undefined) this.keepIdle(child, spec.jobId);
        else child.kill('SIGKILL');
        settled?.();
      },
      'link-block': ({ attemptId, blockId, token }) => this.linkBlock(record, attemptId, blockId, token),
      ...this.forwardedFsCalls(spec.jobId, spec.jobToken),
    };
    const link = new IpcLink(
      child,
      new Dispatcher<ChildProcess>('a worker', () => TASK_CALLER).serve(TASK_TO_WORKER, taskHandlers),
      child,
      (err) =>
        this.logger.warn({ attempt: spec.attemptId, code: err.code, err: err.message }, 'task process frame refused'),
    );
    record.link = stubOf(WORKER_TO_TASK, () => link);
    const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
      detach();
      settled?.();
      if (record.finished) return;
      if (record.failure !== undefined) this.report(record, 'failed', record.counters, record.failure);
      else if (record.killReason !== undefined)
        this.report(record, 'killed', record.counters, { code: 'EKILLED', message: record.killReason });
      else {
        this.report(record, 'failed', record.counters, {
          code: 'ETASK',
          message:
            `task process of ${spec.attemptId} exited unexpectedly ` +
            `(${signal ? `signal ${signal}` : `exit code ${code}`})`,
          details: { attemptId: spec.attemptId, taskId: spec.taskId },
        });
      }
    };
    child.on('exit', onExit);
    phaseTrace('w-run', { attempt: spec.attemptId, warm, child: child.pid });
    void record.link.run({ spec, modulePath: sandbox.modulePath });
    for (const change of record.mapOutputChanges.splice(0)) this.forwardMapOutputs(record, change);
  }

  /**
   * A local replica for the attempt's task, which may not read this worker's block directory: with
   * a read token the NameNode gave for the block (the check the data port makes), its files are
   * linked into the attempt's input directory, which the task may read (sandbox.ts).
   */
  private async linkBlock(
    record: RunningAttempt,
    attemptId: string,
    blockId: string,
    token: string,
  ): Promise<{ linked: boolean; dir?: string }> {
    if (attemptId !== record.spec.attemptId || record.finished || !record.sandbox)
      throw new MinimrError('EKILLED', `attempt ${attemptId} is not running here`, { attemptId });
    const key = this.blockKey;
    if (!key)
      throw new MinimrError('ETOKEN', `datanode ${this.workerId} has not registered with a NameNode yet`, { blockId });
    key.verify(token, blockId, 'read', Date.now());
    const data = this.blockStore.localBlockPath(blockId);
    if (!data?.endsWith('.blk')) return { linked: false };
    // Meta first, as a reader opens them: a block is its data file and its checksums (local-disk-block-store.ts).
    const files = [`${data.slice(0, -'.blk'.length)}.meta`, data];
    try {
      return { linked: true, dir: await this.sandboxes.linkBlock(record.sandbox, attemptId, files) };
    } catch (err) {
      // Deleted meanwhile: the task reads another replica.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { linked: false };
      throw err;
    }
  }

  /**
   * Drops one attempt's map output. Its job's directory stays while the job has a sandbox here (its
   * other attempts, running as the job's account, write there) until clean-up; an orphan's
   * (`orphan`: one the JobTracker did not know) goes with its last output otherwise.
   */
  private async removeMapOutput(jobId: string, attemptId: string, orphan = false): Promise<void> {
    if (orphan && !this.sandboxes.has(jobId)) {
      await removeAttemptMapOutput(this.shuffleRoot, jobId, attemptId).catch(() => undefined);
      return;
    }
    await rm(mapOutputPaths(this.shuffleRoot, jobId, attemptId).dir, { recursive: true, force: true }).catch(
      () => undefined,
    );
  }

  /** Passes a reduce attempt the map outputs that became available or were lost (in order, after its `run`). */
  private mapOutputsChanged(message: MapOutputsChanged): void {
    const record = this.running.get(message.attemptId);
    if (!record || record.finished) return;
    if (record.link) this.forwardMapOutputs(record, message);
    else record.mapOutputChanges.push(message);
  }

  private forwardMapOutputs(record: RunningAttempt, message: MapOutputsChanged): void {
    void record.link?.['map-outputs']({
      attemptId: message.attemptId,
      available: message.available,
      lost: message.lost,
    });
  }

  /**
   * A task's NameNode calls (`fs-*` of the task link), each sent on this worker's JobTracker
   * connection as `task-fs-*` for the task's job with the attempt's job token (the JobTracker
   * acts as the job's owner within the token's scope).
   */
  private forwardedFsCalls(
    jobId: string,
    jobToken: string,
  ): Pick<Handlers<TaskToWorker, ChildProcess>, Extract<keyof TaskToWorker, `fs-${string}`>> {
    const forward =
      (op: string) =>
      (args: object): Promise<unknown> => {
        if (!this.peer)
          return Promise.reject(new MinimrError('ECONNECT', 'the worker is not connected to a JobTracker'));
        return this.peer.call(`task-${op}`, { ...args, jobId, jobToken });
      };
    const ops = Object.keys(TASK_TO_WORKER).filter((name) => name.startsWith('fs-'));
    return Object.fromEntries(ops.map((op) => [op, forward(op)])) as unknown as Pick<
      Handlers<TaskToWorker, ChildProcess>,
      Extract<keyof TaskToWorker, `fs-${string}`>
    >;
  }

  private kill(attemptId: string, reason: string): void {
    const record = this.running.get(attemptId);
    if (!record || record.finished) return;
    record.killReason = reason;
    if (record.child && record.child.exitCode === null && record.child.signalCode === null) {
      killTaskProcess(record.child, record.spec.streaming === true);
    } else this.report(record, 'killed', record.counters, { code: 'EKILLED', message: reason });
  }

  private report(
    record: RunningAttempt,
    state: 'succeeded' | 'failed' | 'killed',
    counters: Counters,
    error?: SerializedError,
    mapOutput?: MapOutputSummary,
    outputPart?: PendingPart,
  ): void {
    if (record.finished) return;
    record.finished = true;
    this.running.delete(record.spec.attemptId);
    if (this.running.size === 0 && !this.spare) this.spareWanted();
    const watch = record.commandMemory;
    if (watch) {
      watch.stop();
      // Commands its task process left (it was killed, or they ignored their input's end) go with the attempt.
      if (state !== 'succeeded') watch.killCommands();
    }
    const { spec } = record;
    void this.sandboxes.endAttempt(spec.jobId, spec.attemptId).catch(() => undefined);
    // A task process that died (or was killed) cannot clean up after itself: its worker does.
    if (state !== 'succeeded' && spec.kind === 'map') void this.removeMapOutput(spec.jobId, spec.attemptId);
    if (spec.kind === 'reduce') {
      void rm(reduceWorkDir(this.shuffleRoot, spec.jobId, spec.attemptId), { recursive: true, force: true }).catch(
        () => undefined,
      );
    }
    // How it ended, with the user's own stack (task/user-stack.ts), for `minimr job logs`: after all its
    // process wrote, and the log closed then (when the process exits, or runs the next attempt).
    const userStack = error?.details?.stack;
    record.log?.end(
      state === 'succeeded'
        ? []
        : [
            `attempt ${state}${error ? `: ${error.code}: ${error.message}` : ''}`,
            ...(typeof userStack === 'string' ? userStack.split('\n') : []),
          ],
    );
    // What the launch cost on this side: fetching the module (0 when cached), and whether the process was warm.
    const launch = {
      ...counters,
      // A streaming attempt's commands' memory is the attempt's: their peak counts in its own.
      ...(watch
        ? {
            COMMAND_PEAK_RSS_BYTES: watch.peakBytes,
            PEAK_RSS_BYTES: (counters.PEAK_RSS_BYTES ?? 0) + watch.peakBytes,
          }
        : {}),
      WARM_LAUNCH: record.warm ? 1 : 0,
      // Started in the worker's spare process: no fork waited for.
      ...(record.spare ? { SPARE_LAUNCH: 1 } : {}),
      ...(record.moduleWaitMs > 0 ? { MODULE_WAIT_MS: record.moduleWaitMs } : {}),
    };
    // The error reaches the job's status and its clients: this worker's paths stay in its own log.
    const shown = error && publicError(error);
    if (error && shown && shown.message !== error.message)
      this.logger.info(
        { attempt: spec.attemptId, err: error },
        'attempt error as reported, before its paths were hidden',
      );
    if (this.peer)
      void this.jobTracker['attempt-finished']({
        workerId: this.workerId,
        attemptId: spec.attemptId,
        state,
        counters: launch,
        error: shown,
        mapOutput,
        ...(outputPart ? { outputPart } : {}),
      });
  }

  /** A reader reported this replica bad: check it, and tell the NameNode only what this worker found. */
  private async verifyReplica(block: ArgsOf<JobTrackerToWorker['verify-blocks']>['blocks'][number]): Promise<void> {
    try {
      const reason = await checkLocalReplica(this.blockStore, block);
      if (reason === undefined) {
        this.logger.info({ block: block.blockId }, 'replica reported bad verified good');
        return;
      }
      this.logger.warn({ block: block.blockId, reason }, 'replica reported bad is corrupt');
      if (this.peer)
        void this.jobTracker['replica-corrupt']({ workerId: this.workerId, blockId: block.blockId, reason });
    } catch (err) {
      this.logger.warn({ block: block.blockId, err: (err as Error).message }, 'cannot verify a replica');
    }
  }

  /**
   * Starts a process for a job ahead of its first launch here, when the JobTracker says its first
   * attempt started elsewhere (`warm-job`). A job's processes are forked for it (sandbox.ts), so
   * without this a worker's first attempt of every job waits for one (~150 ms); a tiny job's reduce
   * on the second worker waited that long after its map. The process is an idle one of the job's
   * (`takeTaskProcess`), for attempts that read and write nothing outside the block store, and
   * is never started where the job already ran, while the warm processes fill the slots, or for a
   * job that already ended.
   */
  private async warmJob(job: WarmJob): Promise<void> {
    const slots = this.opts.mapSlots + this.opts.reduceSlots;
    const running = () => [...this.running.values()].some((r) => r.spec.jobId === job.jobId);
    if (this.stopping || this.sandboxes.has(job.jobId) || running() || this.endedJobs.has(job.jobId)) return;
    if (this.idle.length >= slots) return;
    try {
      const { sandbox, adopted } = await this.jobSandbox(
        job.jobId,
        job.owner,
        await this.jobModule(job),
        job,
        NO_STORE_PATHS,
      );
      // The job ended meanwhile (its clean-up may have run before the sandbox was made).
      if (this.endedJobs.has(job.jobId)) {
        adopted?.kill('SIGKILL');
        await this.sandboxes.remove(job.jobId);
        return;
      }
      // The spare is now the job's process here.
      if (adopted) {
        this.keepIdle(adopted, job.jobId);
        return;
      }
      // A launch forked its own meanwhile; or the idle processes filled the slots (this one would evict another's).
      if (this.stopping || this.idle.length >= slots || this.idle.some((p) => p.jobId === job.jobId) || running())
        return;
      this.keepIdle(this.forkTaskProcess(job, sandbox, NO_STORE_PATHS, 'warm-job'), job.jobId);
    } catch (err) {
      // Nothing lost: the job's first launch here forks as it would have.
      this.logger.debug({ job: job.jobId, err: (err as Error).message }, 'could not start a process ahead for a job');
    }
  }

  private async cleanupJob(jobId: string): Promise<void> {
    this.endedJobs.add(jobId);
    // Bounded: only a warm-job still under way can ask, moments after its job ended.
    if (this.endedJobs.size > 1000) this.endedJobs.delete(this.endedJobs.values().next().value!);
    this.jobSecrets.delete(jobId);
    // Its warm processes go with it: a process runs one job's attempts only.
    for (const idle of this.idle.filter((p) => p.jobId === jobId)) idle.child.kill('SIGKILL');
    // The job's module stays cached by its hash: the next job of the same module needs no fetch.
    await removeJobMapOutputs(this.shuffleRoot, jobId).catch(() => undefined);
    await this.sandboxes.remove(jobId).catch(() => undefined);
  }
}

/** A process started ahead of its job's first launch here (`warmJob`) may use the block store only. */
const NO_STORE_PATHS: StorePaths = { read: [], write: [] };

/**
 * What an attempt reads and writes on this host's file system outside the block store: the directory
 * of its file:// input file, and for a file:// output the directory where the job's attempts stage
 * their parts. The input's directory rather than the file: the maps of one directory's files then
 * share a key, so a warm process is reused across them (the JobTracker checked the files, which lie
 * under a --file-root directory, and so does their directory).
 */
function localStorePaths(attempt: AttemptSpec): StorePaths {
  const input = attempt.input;
  const inputLocation = input.kind === 'file' && isExternalUri(input.path) ? parseStoreUri(input.path) : undefined;
  const outputDir = localOutputDir(attempt);
  return {
    // The output's directory is read too: its writer checks what is there before it renames a part into place.
    read: [
      ...(inputLocation?.scheme === 'file' ? [posix.dirname(inputLocation.path)] : []),
      ...(outputDir !== undefined ? [outputDir] : []),
    ],
    write: outputDir !== undefined ? [outputDir] : [],
  };
}

/** A file:// output's directory of attempts' parts (file-store's committer's staging), or undefined. */
function localOutputDir(attempt: AttemptSpec): string | undefined {
  const target = attempt.outputStore;
  const location = target && parseStoreUri(target.uri);
  return location?.scheme === 'file' ? attemptsDirOf(stagingDirOf(location.path, attempt.jobId)) : undefined;
}
