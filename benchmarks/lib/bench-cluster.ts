// The embedded cluster and machine record the data-path benchmarks (apps, shuffle, slow-start) share,
// so their ratios are measured on the same shape of cluster and reported with the same context.
import os from 'node:os';
import { LocalCluster } from '../../src/local/index.js';
import { createLogger } from '../../src/log.js';
import { r3 } from './shell.js';

const MB = 1024 * 1024;

/**
 * The cluster shape every data-path benchmark runs on: 2 workers with 1 map + 1 reduce slot each,
 * FIFO with Hadoop's and Spark's 3 s locality wait: with one replica per block, a worker that ran
 * out of its own blocks otherwise takes the other's last pending one over the network, even when
 * that worker frees within milliseconds.
 */
export const BENCH_CLUSTER = {
  workers: 2,
  mapSlots: 1,
  reduceSlots: 1,
  replication: 1,
  blockSizeMb: 64,
  policy: 'fifo',
  nodeLocalDelayMs: 3000,
} as const;

export function startBenchCluster(dataDir: string, options: { nodeLocalDelayMs?: number } = {}): Promise<LocalCluster> {
  return LocalCluster.start({
    policy: BENCH_CLUSTER.policy,
    policyOptions: { nodeLocalDelayMs: options.nodeLocalDelayMs ?? BENCH_CLUSTER.nodeLocalDelayMs },
    dataDir,
    workers: BENCH_CLUSTER.workers,
    mapSlots: BENCH_CLUSTER.mapSlots,
    reduceSlots: BENCH_CLUSTER.reduceSlots,
    replication: BENCH_CLUSTER.replication,
    blockSize: BENCH_CLUSTER.blockSizeMb * MB,
    logger: createLogger('bench', process.env.MINIMR_LOG_LEVEL ?? 'warn'),
  });
}

/** What a reader needs to judge a run's absolute numbers: the machine and how busy it was. */
export interface MachineRecord {
  node: string;
  platform: string;
  cpu: string;
  cpus: number;
  memoryMb: number;
  loadavgStart: number[];
  loadavgEnd: number[];
  date: string;
}

export function machineRecord(): MachineRecord {
  return {
    node: process.version,
    platform: `${process.platform} ${os.release()}`,
    cpu: os.cpus()[0]?.model ?? 'unknown',
    cpus: os.cpus().length,
    memoryMb: Math.round(os.totalmem() / MB),
    loadavgStart: os.loadavg().map((x) => r3(x)),
    loadavgEnd: [],
    date: new Date().toISOString(),
  };
}

export function finishMachineRecord(env: MachineRecord): void {
  env.loadavgEnd = os.loadavg().map((x) => r3(x));
}

export function machineLine(env: MachineRecord): string {
  return (
    `${env.date}: Node ${env.node}, ${env.platform}, ${env.cpus} x ${env.cpu}, ${env.memoryMb} MB RAM, ` +
    (`load ${env.loadavgStart.join(' ')} at ` +
      `start, ${env.loadavgEnd.join(' ')} at end (shared machine: ` +
      `compare ratios, not absolute numbers).`)
  );
}
