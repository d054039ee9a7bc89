/**
 * What the machine did during a benchmark run, second by second: how busy its cores were (from
 * /proc/stat, every process counted), how much CPU this process used (for a local cluster, that is
 * the JobTracker and the benchmark's client), and how late this process's event loop ran timers.
 *
 * A local cluster's workers share one machine, so a result that depends on the workers being
 * independent (bench:fawkes's real part) can be confounded by CPU they take from each other; these
 * samples say whether the cores were saturated and whether the JobTracker fell behind.
 */
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';

export interface MachineLoadSample {
  /** Milliseconds since the sampler started. */
  readonly timeMs: number;
  /** Busy share of all cores since the previous sample (0..1). */
  readonly machineBusy: number;
  /** Of all cores' time, the share this process used (0..1). */
  readonly selfBusy: number;
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

export class MachineLoadSampler {
  readonly samples: MachineLoadSample[] = [];
  private readonly started = performance.now();
  private readonly histogram: IntervalHistogram = monitorEventLoopDelay({ resolution: 10 });
  private readonly timer: NodeJS.Timeout;
  private lastCores = readCoreTimes();
  private lastSelf = process.cpuUsage();
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
    const machineBusy = cores && this.lastCores && cores.total > this.lastCores.total ? (cores.busy - this.lastCores.busy) / (cores.total - this.lastCores.total) : Number.NaN;
    this.samples.push({
      timeMs: Math.round(now - this.started),
      machineBusy,
      selfBusy: wallMs > 0 ? selfMs / (wallMs * cpus().length) : Number.NaN,
      loopDelayP50Ms: this.histogram.percentile(50) / 1e6,
      loopDelayMaxMs: this.histogram.max / 1e6,
    });
    this.histogram.reset();
    this.lastCores = cores;
    this.lastSelf = self;
    this.lastAt = now;
  }

  stop(): readonly MachineLoadSample[] {
    clearInterval(this.timer);
    this.histogram.disable();
    return this.samples;
  }
}
