/**
 * The scheduler seam. A policy is a pure object: it gets a read-only snapshot of the cluster, with the
 * current time in it, and returns decisions. It never does I/O, never sets timers, never reads a clock,
 * so the JobTracker and the discrete-event simulator can drive the very same policy object and be
 * compared decision by decision. Whatever state a policy keeps between calls (delay-scheduling waits,
 * partitions, timers) must be derived from snapshots only.
 */

export type TaskKind = 'map' | 'reduce';
export type Locality = 'node' | 'rack' | 'any';

export interface WorkerView {
  readonly id: string;
  readonly host: string;
  readonly rack: string;
  readonly mapSlots: number;
  readonly reduceSlots: number;
  readonly memoryMb: number;
  readonly freeMapSlots: number;
  readonly freeReduceSlots: number;
  readonly freeMemoryMb: number;
  /** Measured by the worker at start-up, MB/s; 0 when unknown. */
  readonly diskMBps: number;
}

export interface AttemptView {
  readonly id: string;
  readonly taskId: string;
  readonly jobId: string;
  readonly kind: TaskKind;
  readonly workerId: string;
  readonly startTime: number;
  /** 0..1 */
  readonly progress: number;
  readonly memoryMb: number;
  readonly locality: Locality;
}

export interface TaskView {
  readonly id: string;
  readonly jobId: string;
  readonly kind: TaskKind;
  readonly index: number;
  /** Workers holding a replica of the task's input (maps only; empty when it has no input). */
  readonly preferredWorkers: readonly string[];
  /** Racks of those workers. */
  readonly preferredRacks: readonly string[];
  /** Memory the task asks for at its ideal size. */
  readonly memoryMb: number;
  /** Input bytes (maps: split length; reduces: 0 until known). */
  readonly inputBytes: number;
  /** Workers on which an attempt of this task already failed: avoid them when another will do. */
  readonly failedOnWorkers: readonly string[];
}

export interface JobView {
  readonly id: string;
  readonly name: string;
  /** Pool (queue) the job was submitted to; "default" when none was given. */
  readonly pool: string;
  readonly submitTime: number;
  readonly mapsTotal: number;
  readonly mapsCompleted: number;
  readonly reducesTotal: number;
  readonly reducesCompleted: number;
  /** Tasks ready to run now, in task-index order (reduces appear only once all maps are done). */
  readonly pendingTasks: readonly TaskView[];
  readonly runningAttempts: readonly AttemptView[];
}

export type SchedulingTrigger =
  | { readonly kind: 'heartbeat'; readonly workerId: string }
  | { readonly kind: 'job-submitted'; readonly jobId: string }
  | { readonly kind: 'attempt-finished'; readonly attemptId: string; readonly jobId: string }
  | { readonly kind: 'worker-joined'; readonly workerId: string }
  | { readonly kind: 'worker-lost'; readonly workerId: string }
  | { readonly kind: 'tick' };

export interface ClusterSnapshot {
  /** Milliseconds; wall clock on the real cluster, simulated time in the simulator. */
  readonly now: number;
  readonly trigger: SchedulingTrigger;
  /** Live workers only. */
  readonly workers: readonly WorkerView[];
  /** Active jobs in submission order. */
  readonly jobs: readonly JobView[];
}

export type Decision =
  | {
      readonly kind: 'launch';
      readonly taskId: string;
      readonly jobId: string;
      readonly workerId: string;
      /** Memory granted; defaults to the task's `memoryMb`. */
      readonly memoryMb?: number;
      readonly locality: Locality;
    }
  | { readonly kind: 'kill'; readonly attemptId: string; readonly reason: string };

export interface Policy {
  readonly name: string;
  schedule(snapshot: ClusterSnapshot): readonly Decision[];
}
