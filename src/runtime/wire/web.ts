/**
 * What the web UI (src/ui) reads of a JobTracker, and the views it shows: the contract between the
 * two, declared on the wire so that the UI depends on nothing of the runtime but these types. The
 * JobTracker fills it (jobtracker/web-source.ts) with the same functions that serve the client
 * link's operations; its entry point hands it to the UI's request handler.
 */
import type { PolicyState } from '../../scheduler/index.js';
import type { BlockInfo, BlockStoreUsage, FileStatus } from '../../storage/index.js';
import type {
  AttemptLogSlice,
  AttemptLogStream,
  AttemptSummary,
  FinishedCursor,
  FinishedJobsPage,
  JobStatus,
} from './types.js';

export interface UiWorker {
  readonly id: string;
  readonly host: string;
  readonly dataPort: number;
  readonly rack: string;
  readonly mapSlots: number;
  readonly reduceSlots: number;
  readonly usedMapSlots: number;
  readonly usedReduceSlots: number;
  readonly memoryMb: number;
  readonly usedMemoryMb: number;
  readonly diskMBps: number;
  readonly lastHeartbeat: number;
  /** MR-cluster it belongs to (FAWKES), when any. */
  readonly cluster?: string;
}

export interface UiOverview {
  readonly now: number;
  readonly startedAt: number;
  readonly policy: string;
  readonly heartbeatMs: number;
  readonly workers: readonly UiWorker[];
  readonly blockStore: BlockStoreUsage;
  readonly jobs: readonly JobStatus[];
}

export interface UiTask {
  readonly taskId: string;
  readonly kind: 'map' | 'reduce';
  readonly index: number;
  readonly state: string;
  readonly inputBytes: number;
  readonly attempts: readonly AttemptSummary[];
}

/** What the UI reads; the JobTracker provides it. */
export interface UiSource {
  overview(): UiOverview;
  /** The jobs in the JobTracker's memory. */
  jobs(): JobStatus[];
  /** Up to `limit` ended jobs, in memory or retired to the history, newest first, older than `before`. */
  finishedJobs(limit: number, before?: FinishedCursor): Promise<FinishedJobsPage>;
  /** A job with its tasks and their attempts, from memory or the history; undefined when neither has it. */
  job(jobId: string): Promise<{ status: JobStatus; tasks: UiTask[] } | undefined>;
  /** The job an attempt belongs to, if the JobTracker or its history knows the attempt. */
  jobOfAttempt(attemptId: string): Promise<string | undefined>;
  attemptLog(attemptId: string, stream: AttemptLogStream, offset?: number, length?: number): Promise<AttemptLogSlice>;
  stat(path: string): Promise<FileStatus>;
  list(path: string): Promise<FileStatus[]>;
  blocks(path: string): Promise<BlockInfo[]>;
  blockStoreUsage(): BlockStoreUsage;
  policy(): { name: string; state?: PolicyState };
  now(): number;
}
