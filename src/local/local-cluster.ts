import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLogger, type Logger } from '../log.js';
import { CpuQuotaGroup, JobClient, JobTracker, type JobTrackerOptions, type ThrottleBasis } from '../runtime/index.js';
import { loadPolicyPlugins } from '../policy-plugins/index.js';
import { createPolicy, type Policy, type PolicyOptions, type PoolView } from '../scheduler/index.js';
import { createUiRequestHandler } from '../ui/index.js';

export interface LocalClusterOptions {
  dataDir: string;
  /**
   * Directories whose files jobs may read as file:// inputs (default '/': a local cluster runs on its
   * user's own machine, with that user's rights).
   */
  fileRoots?: readonly string[];
  /** Directories where jobs may write file:// outputs (default '/', as for fileRoots). */
  fileOutputRoots?: readonly string[];
  workers?: number;
  mapSlots?: number;
  reduceSlots?: number;
  /** Memory each worker offers to tasks, MiB (default: 512 per slot). */
  memoryMb?: number;
  /** Rack of worker i; default: every worker on /rack-(i mod 2). */
  rackOf?: (index: number) => string;
  blockSize?: number;
  replication?: number;
  heartbeatMs?: number;
  /** A connected worker silent this long is suspect (no new work); see JobTrackerOptions. */
  workerTimeoutMs?: number;
  /** A silent worker's attempts run again elsewhere after this long, ms (default 60 s). */
  taskExpiryMs?: number;
  /** A silent worker is lost, its blocks re-replicated, after this long, ms (default 10 minutes). */
  datanodeExpiryMs?: number;
  policy?: Policy | string;
  /** Options for a policy given by name (see `createPolicy`). */
  policyOptions?: PolicyOptions;
  pools?: readonly PoolView[];
  /** Disk rate worker i reports, MB/s; default: each worker measures its own. */
  diskMBpsOf?: (index: number) => number;
  /** CPU throttle factor of worker i (`minimr worker --cpu-throttle`): 2 makes its tasks ~2x slower. Default 1. */
  throttleOf?: (index: number) => number;
  /** What every worker's throttle stretches (`minimr worker --cpu-throttle-basis`); default 'working'. */
  throttleBasis?: ThrottleBasis;
  /**
   * Cores of CPU time worker i (with every task process it starts) may use, enforced by a cgroup
   * quota (see cpu-quota.ts; Linux, root); default: no quota, the workers share the machine.
   */
  cpuQuotaOf?: (index: number) => number | undefined;
  port?: number;
  maxAttempts?: number;
  /** Speculative execution (JobTrackerOptions.speculation); on by default. */
  speculation?: JobTrackerOptions['speculation'];
  /** Elastic grants are whole multiples of this, MB (default 100). */
  memoryStepMb?: number;
  /** Ended jobs the JobTracker keeps in memory, and for how long, ms (see JobTrackerOptions). */
  retainedJobs?: number;
  retainMs?: number;
  logger?: Logger;
  /** Log level of the worker processes (default: warn, so the terminal shows progress, not chatter). */
  workerLogLevel?: string;
  /** `minimr worker --no-spare-process` when false: workers start task processes for jobs only (default true). */
  spareProcess?: boolean;
  /** `minimr worker --block-report-ms`: time between the workers' block reports. */
  blockReportMs?: number;
  /** `minimr worker --block-scan-bytes-per-sec` and `--block-scan-interval-ms`: the workers' block scanners. */
  blockScanBytesPerSecond?: number;
  blockScanIntervalMs?: number;
}

export interface LocalWorkerProcess {
  readonly workerId: string;
  readonly process: ChildProcess;
}

const CLI = fileURLToPath(new URL('../cli/main.js', import.meta.url));

/**
 * An embedded cluster on this machine: the JobTracker in this process, each worker in a process of
 * its own (as on a real cluster, so that killing one is a real crash).
 */
export class LocalCluster {
  readonly jobTracker: JobTracker;
  readonly workers: LocalWorkerProcess[] = [];
  /** Worker id -> its CPU quota's cgroup, for workers started with one. */
  readonly cpuQuotas = new Map<string, CpuQuotaGroup>();
  client!: JobClient;
  private readonly options: LocalClusterOptions;

  private constructor(options: LocalClusterOptions, jobTracker: JobTracker) {
    this.options = options;
    this.jobTracker = jobTracker;
  }

  static async start(options: LocalClusterOptions): Promise<LocalCluster> {
    const logger = options.logger ?? createLogger('local');
    if (typeof options.policy !== 'object')
      await loadPolicyPlugins([options.policy ?? 'fifo'], () => options.policyOptions ?? {}, 'cluster');
    const policy =
      typeof options.policy === 'object'
        ? options.policy
        : createPolicy(options.policy ?? 'fifo', options.policyOptions, 'cluster');
    const jobTracker = new JobTracker({
      dataDir: join(options.dataDir, 'jobtracker'),
      port: options.port ?? 0,
      policy,
      fileRoots: options.fileRoots ?? ['/'],
      fileOutputRoots: options.fileOutputRoots ?? ['/'],
      pools: options.pools,
      heartbeatMs: options.heartbeatMs ?? 500,
      workerTimeoutMs: options.workerTimeoutMs,
      taskExpiryMs: options.taskExpiryMs,
      datanodeExpiryMs: options.datanodeExpiryMs,
      blockSize: options.blockSize,
      replication: options.replication,
      maxAttempts: options.maxAttempts,
      ...(options.speculation !== undefined ? { speculation: options.speculation } : {}),
      memoryStepMb: options.memoryStepMb,
      retainedJobs: options.retainedJobs,
      retainMs: options.retainMs,
      logger,
      webPages: createUiRequestHandler,
    });
    await jobTracker.start();
    const cluster = new LocalCluster(options, jobTracker);
    try {
      const count = options.workers ?? 3;
      for (let i = 0; i < count; i++) await cluster.startWorker(i);
      await jobTracker.waitForWorkers(count);
      cluster.client = await JobClient.connect(jobTracker.url);
    } catch (err) {
      await cluster.stop();
      throw err;
    }
    return cluster;
  }

  get url(): string {
    return this.jobTracker.url;
  }

  /** Starts worker number `index` (again, after a crash: same id, same data directory). */
  async startWorker(index: number): Promise<LocalWorkerProcess> {
    const o = this.options;
    const workerId = `worker-${index}`;
    const dir = join(o.dataDir, workerId);
    await mkdir(dir, { recursive: true });
    const rack = o.rackOf ? o.rackOf(index) : `/rack-${index % 2}`;
    const args = [CLI, 'worker', '--jobtracker', this.jobTracker.url, '--dir', dir, '--id', workerId, '--rack', rack];
    if (o.mapSlots !== undefined) args.push('--map-slots', String(o.mapSlots));
    if (o.reduceSlots !== undefined) args.push('--reduce-slots', String(o.reduceSlots));
    if (o.memoryMb !== undefined) args.push('--memory-mb', String(o.memoryMb));
    if (o.diskMBpsOf) args.push('--disk-mbps', String(o.diskMBpsOf(index)));
    const throttle = o.throttleOf?.(index) ?? 1;
    if (throttle !== 1) args.push('--cpu-throttle', String(throttle));
    if (throttle !== 1 && o.throttleBasis !== undefined) args.push('--cpu-throttle-basis', o.throttleBasis);
    if (o.blockReportMs !== undefined) args.push('--block-report-ms', String(o.blockReportMs));
    if (o.spareProcess === false) args.push('--no-spare-process');
    if (o.blockScanBytesPerSecond !== undefined)
      args.push('--block-scan-bytes-per-sec', String(o.blockScanBytesPerSecond));
    if (o.blockScanIntervalMs !== undefined) args.push('--block-scan-interval-ms', String(o.blockScanIntervalMs));
    const cores = o.cpuQuotaOf?.(index);
    // Created before the spawn, so that a bad setting fails before there is a process to clean up.
    const quota =
      cores !== undefined
        ? (this.cpuQuotas.get(workerId) ?? CpuQuotaGroup.create(`minimr-${process.pid}-${workerId}`, cores))
        : undefined;
    const child = spawn(process.execPath, args, {
      stdio: ['ignore', 'inherit', 'inherit'],
      // The workers prove the cluster secret like any other; they read it from the JobTracker's file.
      env: {
        ...process.env,
        MINIMR_LOG_LEVEL: o.workerLogLevel ?? process.env.MINIMR_LOG_LEVEL ?? 'warn',
        MINIMR_SECRET_FILE: this.jobTracker.secretFile,
      },
    });
    if (quota && child.pid !== undefined) {
      // Right after the spawn, before the worker starts any task process: those inherit the group.
      quota.add(child.pid);
      this.cpuQuotas.set(workerId, quota);
    }
    const worker = { workerId, process: child };
    const existing = this.workers.findIndex((w) => w.workerId === workerId);
    if (existing >= 0) this.workers[existing] = worker;
    else this.workers.push(worker);
    return worker;
  }

  /** Crashes a worker the hard way (SIGKILL), as a test of recovery. */
  async killWorker(index: number): Promise<void> {
    const w = this.workers[index];
    if (!w || w.process.exitCode !== null || w.process.signalCode !== null) return;
    const exited = once(w.process, 'exit');
    w.process.kill('SIGKILL');
    await exited;
  }

  async stop(): Promise<void> {
    this.client?.close();
    this.jobTracker.drain();
    await Promise.all(
      this.workers.map(async (w) => {
        if (w.process.exitCode !== null || w.process.signalCode !== null) return;
        const exited = once(w.process, 'exit');
        w.process.kill('SIGTERM');
        const timer = setTimeout(() => w.process.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(timer);
      }),
    );
    await this.jobTracker.stop();
    // A group still holding a killed worker's orphaned task processes stays; they end on their own.
    for (const quota of this.cpuQuotas.values()) quota.remove();
  }
}
