/** How a JobTracker is set up (`minimr jobtracker`'s flags, LocalCluster's options). */
import type { SpeculationOptions, WorkerHealthOptions, WorkerLimits } from '../../books/index.js';
import type { Logger } from '../../log.js';
import type { Policy, PoolView } from '../../scheduler/index.js';
import type { UiSource } from '../wire/index.js';
import type { HttpPages } from './endpoint.js';

export interface JobTrackerOptions {
  /** Directory for the NameNode's metadata. */
  dataDir: string;
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  policy: Policy;
  /**
   * Directories whose files jobs may read as `file://` inputs (default none): the JobTracker and the
   * workers read them with their own rights, whoever submitted the job, so only what the admin opens.
   */
  fileRoots?: readonly string[];
  /**
   * Directories where jobs may write `file://` outputs (default none): the JobTracker commits them,
   * and replaces an old output under --overwrite, with its own rights.
   */
  fileOutputRoots?: readonly string[];
  /** Pools with their minimum shares and weights, as the policy sees them (`ClusterSnapshot.pools`). */
  pools?: readonly PoolView[];
  heartbeatMs?: number;
  /**
   * A worker connected but silent for this long is suspect: no new attempts (default 5 heartbeats).
   * A dropped connection loses the worker at once.
   */
  workerTimeoutMs?: number;
  /** A worker silent this long has its attempts run again elsewhere, ms (default 60 s, Hadoop's TaskTracker expiry). */
  taskExpiryMs?: number;
  /**
   * A worker silent this long is lost, and its blocks are re-replicated, ms (default 10 minutes, as
   * HDFS's DataNode expiry); one heard from before keeps its blocks.
   */
  datanodeExpiryMs?: number;
  blockSize?: number;
  replication?: number;
  maxAttempts?: number;
  /**
   * Speculative execution (src/books/speculation.ts): on unless `enabled: false`; a job's conf
   * `job.speculative` overrides it.
   */
  speculation?: Partial<SpeculationOptions>;
  /** Elastic grants are whole multiples of this, MB (default 100, the YARN-ME paper's step). */
  memoryStepMb?: number;
  /** The most slots and memory a worker may claim (default DEFAULT_WORKER_LIMITS). */
  workerLimits?: WorkerLimits;
  /** When a worker's failing or vanishing attempts exclude it (default DEFAULT_WORKER_HEALTH). */
  workerHealth?: WorkerHealthOptions;
  /**
   * Ended jobs kept in memory at most (older ones retire to the history); default 100, as Hadoop 1's
   * completeuserjobs.maximum.
   */
  retainedJobs?: number;
  /** An ended job retires to the history after this long in memory, ms; default 1 hour. */
  retainMs?: number;
  /**
   * After a restart, how long recovered jobs wait for their workers to register again, ms; default
   * max(10 s, the worker timeout).
   */
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
  /**
   * Serve wss:// (and https://) with this certificate and key (PEM). Without it, a JobTracker whose
   * `host` is not loopback makes the cluster's authority and its own certificate in `dataDir`
   * (tls.ts) and serves TLS with those; workers' data ports are certified by that authority either way.
   */
  tls?: { readonly cert: Buffer; readonly key: Buffer };
  /** Serve plain ws:// (and http://) beyond loopback: keys and secrets then cross the network in clear text. */
  insecurePlaintext?: boolean;
  /** The NameNode makes a new block token key this often, ms (default 1 hour); the previous one stays valid as long. */
  blockKeyRollMs?: number;
  /**
   * The web pages, served on the same port for requests that are neither the API nor /metrics:
   * the entry point that starts the JobTracker plugs src/ui in here (the runtime does not import it).
   */
  webPages?: (source: UiSource) => HttpPages;
  /**
   * The audit log (JSON lines, audit-log.ts): default `<dataDir>/audit.log`; false writes none.
   */
  auditLog?: string | false;
  /** Unauthenticated connections one address may hold (default 64, endpoint.ts); past it, refused. */
  maxUnauthenticatedPerAddress?: number;
}
