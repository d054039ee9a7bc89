/**
 * CPU quotas for the workers of a local cluster (LocalCluster `cpuQuotaOf`).
 *
 * Workers of a local cluster share this machine's cores. An experiment that stands for separate
 * machines (bench:fawkes's real part: MR-clusters that must not slow each other down) needs each
 * worker to have CPU of its own that the others cannot take. `--cpu-throttle` on the 'cpu' basis
 * stretches only a task's own work; what it does not stretch (starting task processes, heartbeats,
 * serving blocks and map outputs, committing) still comes out of the shared cores, so a busy
 * MR-cluster slowed an idle-looking one by a third in bench:fawkes. A CFS quota is the kernel's
 * version of "a core of its own, F times slower": each worker process goes into a cgroup of its own
 * that may use at most `cores` of CPU time per wall second, and every process it starts (task
 * processes, spares) inherits the cgroup, so all of a worker's work is in its quota and no worker
 * can use CPU another was promised, as long as the quotas add up to at most the machine's cores.
 *
 * Linux only, and it needs write access to a cgroup CPU controller (root): cgroup v1's `cpu`
 * hierarchy (cpu.cfs_quota_us) or cgroup v2 (cpu.max) with the `cpu` controller enabled for the
 * root's children. Anything else is EBADCONF with what to do.
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MinimrError } from '../../errors.js';

const V1_ROOT = '/sys/fs/cgroup/cpu';
const V2_ROOT = '/sys/fs/cgroup';
/** Short periods keep a small quota's work evenly spread (a long one runs it in bursts, then stalls). */
const PERIOD_US = 20_000;
/** The kernel refuses quotas under 1 ms. */
const MIN_QUOTA_US = 1000;

type Flavour = 'v1' | 'v2';

function flavour(): Flavour {
  if (existsSync(join(V1_ROOT, 'cpu.cfs_quota_us'))) return 'v1';
  try {
    if (readFileSync(join(V2_ROOT, 'cgroup.controllers'), 'utf8').split(/\s+/).includes('cpu')) return 'v2';
  } catch {
    // No cgroup v2 here either.
  }
  throw new MinimrError(
    'EBADCONF',
    'a worker CPU quota needs a cgroup CPU controller (Linux, ' +
      '/sys/fs/cgroup/cpu or cgroup v2 with "cpu"); run without ' +
      '--cpu-quota',
  );
}

/** One worker's cgroup: its quota, the processes put in it, removed when they have ended. */
export class CpuQuotaGroup {
  private constructor(
    readonly path: string,
    private readonly kind: Flavour,
  ) {}

  /** Creates (or reuses) cgroup `name` limited to `cores` of CPU time per second. */
  static create(name: string, cores: number): CpuQuotaGroup {
    if (!(cores > 0))
      throw new MinimrError('EBADCONF', `a worker CPU quota must be a positive number of cores, got ${cores}`);
    const kind = flavour();
    const path = join(kind === 'v1' ? V1_ROOT : V2_ROOT, name);
    const quotaUs = Math.max(MIN_QUOTA_US, Math.round(cores * PERIOD_US));
    try {
      if (kind === 'v2') {
        // Children of the root get the cpu controller only once it is enabled for them.
        const enabled = readFileSync(join(V2_ROOT, 'cgroup.subtree_control'), 'utf8').split(/\s+/);
        if (!enabled.includes('cpu')) writeFileSync(join(V2_ROOT, 'cgroup.subtree_control'), '+cpu');
      }
      mkdirSync(path, { recursive: true });
      if (kind === 'v1') {
        writeFileSync(join(path, 'cpu.cfs_period_us'), String(PERIOD_US));
        writeFileSync(join(path, 'cpu.cfs_quota_us'), String(quotaUs));
      } else {
        writeFileSync(join(path, 'cpu.max'), `${quotaUs} ${PERIOD_US}`);
      }
    } catch (e) {
      throw new MinimrError(
        'EBADCONF',
        `cannot set a CPU quota in ${path} (${(e as Error).message}): ` +
          `worker CPU quotas need root; run without --cpu-quota`,
      );
    }
    return new CpuQuotaGroup(path, kind);
  }

  /** Moves process `pid` (and the processes it starts from now on) into the group. */
  add(pid: number): void {
    writeFileSync(join(this.path, 'cgroup.procs'), String(pid));
  }

  /** Processes in the group now. */
  pids(): number[] {
    return readFileSync(join(this.path, 'cgroup.procs'), 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map(Number);
  }

  /** Periods in which the group had used up its quota and waited, and how long it waited in all, ms. */
  stats(): { throttledPeriods: number; throttledMs: number } {
    const stat = new Map(
      readFileSync(join(this.path, 'cpu.stat'), 'utf8')
        .split('\n')
        .filter((l) => l.includes(' '))
        .map((l) => l.split(' ') as [string, string]),
    );
    const throttledMs =
      this.kind === 'v1'
        ? Number(stat.get('throttled_time') ?? 0) / 1e6
        : Number(stat.get('throttled_usec') ?? 0) / 1000;
    return { throttledPeriods: Number(stat.get('nr_throttled') ?? 0), throttledMs };
  }

  /** Removes the group; false while processes are still in it (a SIGKILLed worker's orphans). */
  remove(): boolean {
    try {
      rmdirSync(this.path);
      return true;
    } catch {
      return false;
    }
  }
}
