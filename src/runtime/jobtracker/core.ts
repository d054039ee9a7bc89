/**
 * What the JobTracker's services (client-service.ts, worker-service.ts, liveness.ts, the HTTP
 * side) may use of its core: the books and the parts beside them, and the few acts that change
 * them. The core (jobtracker.ts) implements it; the services depend on this and nothing else of it.
 */
import type { SchedulingTrigger, ClusterSnapshot, Policy } from '../../scheduler/index.js';
import type { Effect } from '../../books/index.js';
import type { BooksHost, RuntimeAttempt, RuntimeData, RuntimeJob, RuntimeWorker } from './runtime-data.js';
import type { AttemptStops } from './attempt-stops.js';
import type { InputCopier } from './input-copier.js';
import type { JobHistory } from './job-history.js';
import type { JobJournal } from './job-journal.js';
import type { JobRecovery } from './job-recovery.js';
import type { JobTokens } from './job-tokens.js';
import type { WebHdfsServer } from './webhdfs-server.js';
import type { MrClusterRuntime } from './mr-cluster-runtime.js';
import type { ProfileStore } from './profile-store.js';
import type { PrometheusMetrics } from './prometheus.js';
import type { ClusterAuthority, JobStatus } from '../wire/index.js';

export interface TrackerCore extends BooksHost {
  readonly admin: string;
  /** The block store's WebHDFS server: workers serving an OPEN's second step ask it for the blocks. */
  readonly webhdfs: WebHdfsServer;
  readonly policy: Policy;
  readonly heartbeatMs: number;
  /** Why no new work is scheduled: the policy broke its contract (JobTracker.stopScheduling); undefined normally. */
  readonly schedulingStopped: string | undefined;
  readonly metrics: PrometheusMetrics;
  readonly copier: InputCopier;
  /** Killed attempts of jobs writing to another store, until their workers confirm them stopped. */
  readonly attemptStops: AttemptStops;
  readonly mrc: MrClusterRuntime;
  readonly history: JobHistory;
  readonly profiles: ProfileStore;
  readonly journal: JobJournal;
  /** Signs and checks the tokens a task's file system calls act for its job with. */
  readonly jobTokens: JobTokens;
  /** Jobs recovered after a restart, waiting for their workers; null once resumed. */
  readonly recovery: JobRecovery | null;
  /** The cluster's certificate authority in a TLS cluster (tls.ts): it certifies workers' data ports. */
  readonly clusterAuthority: ClusterAuthority | undefined;
  /** Set while the cluster shuts down: workers leaving is expected then. */
  readonly draining: boolean;
  snapshot(trigger: SchedulingTrigger): ClusterSnapshot;
  /** Consults the policy and carries out its decisions (re-entrant calls fold into one rerun). */
  schedule(trigger: SchedulingTrigger): void;
  /** Takes a worker out of the books and the NameNode's map of replicas. */
  workerLost(worker: RuntimeWorker, why: string): void;
  /** A connected worker silent past the heartbeat timeout: no new attempts, no new blocks. */
  workerSuspect(worker: RuntimeWorker, silentMs: number): void;
  /** A suspect worker silent past the task expiry: its attempts run again elsewhere. */
  workerTasksExpired(worker: RuntimeWorker, silentMs: number): void;
  /** A suspect worker was heard from again: it takes work again, with its blocks. */
  workerHeard(worker: RuntimeWorker, silentMs: number): void;
  /** Tells the job's running reduces that a map output became available or was lost. */
  tellRunningReduces(job: RuntimeJob, mapAttempt: RuntimeAttempt, change: 'available' | 'lost'): void;
  /** Carries out what the books' transitions leave to the world (launches, kills, commits ...). */
  carryOut(effects: readonly Effect<RuntimeData>[]): Promise<void>;
  /** A journal write whose failure is logged, not thrown. */
  journaled(write: Promise<void>): void;
  /** Wakes whoever waits for workers to register. */
  workerRegistered(): void;
  /** Tells those waiting for the job that it has ended and is cleaned up. */
  jobSettled(jobId: string, status: JobStatus): void;
  /** Resolves with the job's final status once it has ended and its clean-up is done. */
  waitForJob(jobId: string): Promise<JobStatus>;
}
