/**
 * What the machine did during a benchmark run, second by second: how busy its cores were (from
 * /proc/stat, every process counted), how much CPU this process used (for a local cluster, that is
 * the JobTracker and the benchmark's client), and how late this process's event loop ran timers.
 *
 * A local cluster's workers share one machine, so a result that depends on the workers being
 * independent (bench:fawkes's real part) can be confounded by CPU they take from each other; these
 * samples say whether the cores were saturated and whether the JobTracker fell behind.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { cpus } from 'node:os';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';

export interface MachineLoadSample {
  /** Milliseconds since the sampler started. */
  readonly timeMs: number;
  /** Busy share of all cores since the previous sample (0..1). */
  readonly machineBusy: number;
  /** Of all cores' time, the share this process used (0..1). */
  readonly selfBusy: number;
  /**
   * Of all cores' time, the share this process's children used (a local cluster's workers: heartbeats,
   * block and shuffle serving) and their children (task processes, the ones ended since the previous
   * sample included).
   */
  readonly childrenBusy: number;
  readonly grandchildrenBusy: number;
  /** This process's event-loop delay over the interval: median and maximum, ms. */
  readonly loopDelayP50Ms: number;
  readonly loopDelayMaxMs: number;
}

interface CoreTimes {
  readonly busy: number;
  readonly total: number;
}

/** Jiffies of all cores from /proc/stat's first line; null where there is no /proc. */
function readCoreTimes(): CoreTimes | null {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
    const f = line.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal: idle and iowait are not busy.
    const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
    const idle = (f[3] ?? 0) + (f[4] ?? 0);
    return { busy: total - idle, total };
  } catch {
    return null;
  }
}

/** Clock ticks per second of /proc/PID/stat's times (USER_HZ, 100 on Linux). */
const TICKS_PER_S = 100;

interface ProcTimes {
  readonly pid: number;
  readonly ppid: number;
  /** utime + stime, and cutime + cstime (its ended children that it waited for), ms. */
  readonly selfMs: number;
  readonly reapedChildrenMs: number;
}

function readProcs(): ProcTimes[] {
  const out: ProcTimes[] = [];
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((n) => /^\d+$/.test(n));
  } catch {
    return out;
  }
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      // Fields after the command name, which may contain spaces, in parentheses.
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ms = (k: number) => (Number(f[k]) * 1000) / TICKS_PER_S;
      out.push({ pid: Number(pid), ppid: Number(f[1]), selfMs: ms(11) + ms(12), reapedChildrenMs: ms(13) + ms(14) });
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return out;
}

/** CPU used so far by this process's children, and by their children (live or ended and reaped), ms. */
function descendantsCpuMs(): { children: number; grandchildren: number } {
  const procs = readProcs();
  const children = procs.filter((p) => p.ppid === process.pid);
  const childPids = new Set(children.map((p) => p.pid));
  const live = procs.filter((p) => childPids.has(p.ppid)).reduce((a, p) => a + p.selfMs + p.reapedChildrenMs, 0);
  return {
    children: children.reduce((a, p) => a + p.selfMs, 0),
    grandchildren: live + children.reduce((a, p) => a + p.reapedChildrenMs, 0),
  };
}

export class MachineLoadSampler {
  readonly samples: MachineLoadSample[] = [];
  private readonly started = performance.now();
  private readonly histogram: IntervalHistogram = monitorEventLoopDelay({ resolution: 10 });
  private readonly timer: NodeJS.Timeout;
  private lastCores = readCoreTimes();
  private lastSelf = process.cpuUsage();
  private lastDescendants = descendantsCpuMs();
  private lastAt = performance.now();

  constructor(everyMs = 1000) {
    this.histogram.enable();
    this.timer = setInterval(() => this.sample(), everyMs);
    this.timer.unref();
  }

  private sample(): void {
    const now = performance.now();
    const cores = readCoreTimes();
    const self = process.cpuUsage();
    const wallMs = now - this.lastAt;
    const selfMs = (self.user - this.lastSelf.user + self.system - this.lastSelf.system) / 1000;
    const descendants = descendantsCpuMs();
    const coreMs = wallMs * cpus().length;
    const machineBusy =
      cores && this.lastCores && cores.total > this.lastCores.total
        ? (cores.busy - this.lastCores.busy) / (cores.total - this.lastCores.total)
        : Number.NaN;
    this.samples.push({
      timeMs: Math.round(now - this.started),
      machineBusy,
      selfBusy: coreMs > 0 ? selfMs / coreMs : Number.NaN,
      // A child that ended loses its own times from the sum, so a share can dip below 0 for a sample.
      childrenBusy: coreMs > 0 ? (descendants.children - this.lastDescendants.children) / coreMs : Number.NaN,
      grandchildrenBusy:
        coreMs > 0 ? (descendants.grandchildren - this.lastDescendants.grandchildren) / coreMs : Number.NaN,
      loopDelayP50Ms: this.histogram.percentile(50) / 1e6,
      loopDelayMaxMs: this.histogram.max / 1e6,
    });
    this.histogram.reset();
    this.lastCores = cores;
    this.lastSelf = self;
    this.lastDescendants = descendants;
    this.lastAt = now;
  }

  stop(): readonly MachineLoadSample[] {
    clearInterval(this.timer);
    this.histogram.disable();
    return this.samples;
  }
}
