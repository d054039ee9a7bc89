import type { ThrottleBasis } from './cpu-throttle.js';

/**
 * What a task process needs to know about the worker that forked it (MINIMR_TASK_CONFIG). A task
 * process talks only to its worker, over the task link (wire/task-protocol.ts): NameNode calls go
 * over the IPC channel and the worker forwards them on its own JobTracker connection, so tasks open
 * no sockets to the master and load no WebSocket code.
 */
export interface TaskProcessConfig {
  workerId: string;
  rack: string;
  /** The worker's map output root; the task may touch only its job's directory in it (worker/sandbox.ts). */
  shuffleRoot: string;
  /** The node_modules directories (real paths) the task's native addons (LZ4, msgpackr) may be loaded from. */
  addonRoots?: string[];
  /** `--cpu-throttle`: task CPU time is stretched by this factor (see cpu-throttle.ts); 1 = full speed. */
  cpuThrottle?: number;
  /** What the throttle stretches (see cpu-throttle.ts); default 'working'. */
  cpuThrottleBasis?: ThrottleBasis;
  /**
   * In a TLS cluster: the cluster authority's certificate (PEM, public), which the task checks every
   * data port it reads or writes (blocks, shuffle) against.
   */
  clusterAuthority?: string;
  /** A spare: run the engine's rehearsal before the first attempt (task-process.ts `rehearse`). */
  rehearse?: boolean;
}
