/**
 * The run record: what one run of a workload under one policy produced, in the same shape whether
 * the simulator or the real cluster produced it, so one metrics module serves both.
 * Times are milliseconds on the run's clock (simulated or wall), bytes are bytes.
 */
import type { BalanceSample, Locality, TaskKind } from '../scheduler/index.js';

export interface PhaseRecord {
  /** When the first task of the phase became runnable (maps: submission; reduces: last map done). */
  readonly requestMs: number;
  /** First launch of a task of the phase; null when none was launched. */
  readonly firstStartMs: number | null;
  /** End of the last successful task of the phase; null while the phase is unfinished. */
  readonly endMs: number | null;
}

export interface MigrationRunRecord {
  readonly timeMs: number;
  readonly from: number;
  readonly to: number;
  readonly partialSizeMs?: number;
  readonly timerMs?: number;
}

export interface JobRunRecord {
  readonly id: string;
  readonly name: string;
  readonly app: string;
  readonly pool: string;
  readonly cluster: string;
  readonly submitMs: number;
  /** Null when the job failed or had not finished when the run stopped. */
  readonly finishMs: number | null;
  readonly state: 'succeeded' | 'failed' | 'unfinished';
  readonly mapsTotal: number;
  readonly reducesTotal: number;
  /** Null for a job without maps (or reduces) or one never admitted. */
  readonly mapPhase: PhaseRecord | null;
  readonly reducePhase: PhaseRecord | null;
  /** Partition the job was in when it finished (Tyrex); 0 when no policy migrated it. */
  readonly partition: number;
  readonly migrations: readonly MigrationRunRecord[];
}

export type AttemptOutcome = 'succeeded' | 'failed' | 'killed';

export interface AttemptRunRecord {
  readonly id: string;
  readonly jobId: string;
  readonly taskId: string;
  readonly kind: TaskKind;
  readonly workerId: string;
  readonly startMs: number;
  readonly endMs: number;
  readonly outcome: AttemptOutcome;
  /**
   * Why it did not succeed: 'policy-kill: <reason>', 'worker-lost', 'task-error', 'out-of-memory', 'job-failed',
   * 'speculation: <the attempt that finished first>'.
   */
  readonly cause?: string;
  /** A backup of a slow attempt (speculative execution). */
  readonly speculative?: boolean;
  readonly locality: Locality;
  /** Partition of the job when the attempt was launched. */
  readonly partition: number;
  /** The attempt's whole input (maps: split length; reduces: 0). */
  readonly inputBytes: number;
  /** Input actually read before the attempt ended (all of it when it succeeded). */
  readonly bytesRead: number;
  /** Of `bytesRead`, bytes that came from a replica on another node (another rack included). */
  readonly remoteNodeBytes: number;
  /** Of `remoteNodeBytes`, bytes that came from another rack. */
  readonly remoteRackBytes: number;
  readonly memoryMb: number;
  /** The task's ideal memory; `memoryMb` below it means an elastic (under-sized) attempt. */
  readonly idealMemoryMb: number;
}

/**
 * Why a replica of a map's input was written during the run:
 * - `extra`: a copy a policy asked for beyond the input's replication: traffic the policy caused;
 * - `placed`: a replica the input's upload still owed, written where a policy chose (improved
 *   FAIR's private data placement): the upload writes it anyway, the policy only picks the node;
 * - `completed`: an owed replica no policy placed, written next to the existing ones when the
 *   input's placement window closed.
 */
export type ReplicaCause = 'extra' | 'placed' | 'completed';

/** A replica of a map's input written during the run (see `ReplicaCause`). */
export interface ReplicationRunRecord {
  readonly timeMs: number;
  readonly jobId: string;
  readonly taskId: string;
  readonly workerId: string;
  readonly bytes: number;
  /** The nearest existing replica was on another rack. */
  readonly crossRack: boolean;
  /** Absent in records written before owed replicas existed: `extra`. */
  readonly cause?: ReplicaCause;
}

/** Cluster usage from `timeMs` until the next sample. */
export interface UtilizationSample {
  readonly timeMs: number;
  readonly mapSlotsUsed: number;
  readonly reduceSlotsUsed: number;
  readonly memoryUsedMb: number;
  readonly mapSlots: number;
  readonly reduceSlots: number;
  readonly memoryMb: number;
  /** Running attempts granted less than their ideal memory. */
  readonly elasticAttempts: number;
  /** Slots (map + reduce) used by attempts of each partition, index = partition. */
  readonly partitionSlotsUsed: readonly number[];
  /** Live workers. */
  readonly workers: number;
}

/** One MR-cluster (FAWKES) at one sample time. */
export interface MrClusterCount {
  readonly name: string;
  /** 'requested': its jobs arrived, the request is not yet in the books' queue; else the books' state. */
  readonly state: string;
  /** Live nodes it holds (draining ones included), and of those each kind and the draining ones. */
  readonly nodes: number;
  readonly core: number;
  readonly transient: number;
  readonly transientCore: number;
  readonly leaving: number;
  /** Jobs arrived and not started (its queue), and arrived and not ended. */
  readonly waitingJobs: number;
  readonly activeJobs: number;
}

export interface MrClusterSample {
  readonly timeMs: number;
  readonly clusters: readonly MrClusterCount[];
  /** Live workers in no MR-cluster. */
  readonly freeNodes: number;
}

/** A node that drained out of its MR-cluster: its blocks were copied before it left. */
export interface MrClusterDrain {
  readonly workerId: string;
  readonly cluster: string;
  readonly startMs: number;
  readonly endMs: number;
  readonly bytes: number;
  readonly cause: 'drain' | 'last-replica';
}

/** What a run on MR-clusters (FAWKES) did to them. */
export interface MrClusterRunRecord {
  /** Every sample period. */
  readonly samples: readonly MrClusterSample[];
  readonly states: readonly {
    readonly timeMs: number;
    readonly cluster: string;
    readonly from: string;
    readonly to: string;
  }[];
  readonly moves: readonly {
    readonly timeMs: number;
    readonly workerId: string;
    readonly from: string;
    readonly to: string;
    readonly nodeKind?: string;
  }[];
  readonly drains: readonly MrClusterDrain[];
  /** Bytes of blocks copied off leaving nodes, of input loaded at activations, of output saved at deactivations. */
  readonly copiedBytes: number;
  readonly loadedBytes: number;
  readonly savedBytes: number;
  /** The policy's weights and discrimination, interval by interval (absent for a policy that keeps none). */
  readonly balance: readonly BalanceSample[];
  /** The output blocks left at the end, the under-replicated ones among them, and the blocks lost. */
  readonly blocks: { readonly blocks: number; readonly underReplicated: number; readonly missing: number };
}

export interface RunRecord {
  readonly policy: string;
  readonly workload: string;
  readonly cluster: string;
  readonly seed: number;
  /** When the run ended (last event). */
  readonly endMs: number;
  readonly jobs: readonly JobRunRecord[];
  readonly attempts: readonly AttemptRunRecord[];
  readonly replications: readonly ReplicationRunRecord[];
  readonly utilization: readonly UtilizationSample[];
  /** Runs on MR-clusters (FAWKES) only. */
  readonly mrClusters?: MrClusterRunRecord;
  /**
   * Set when the run ended in a deadlock its policy reported (Policy.stuckJobs): when, and each stuck
   * job with the reason; the jobs left count as unfinished.
   */
  readonly deadlock?: {
    readonly atMs: number;
    readonly jobs: readonly { readonly jobId: string; readonly reason: string }[];
  };
}
