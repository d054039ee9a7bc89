/**
 * An independent look at the task processes' memory (Linux only): samples /proc every `intervalMs`
 * for the children of the worker processes (the task processes, spares included) and keeps each
 * one's VmHWM (peak RSS of its own address space) and when it was first and last seen alive.
 *
 * Why: getrusage's ru_maxrss (Node's process.resourceUsage().maxRSS) is NOT the process's own peak
 * on Linux: execve keeps the larger of the new image's peak and the peak of the address space it
 * replaces, and a child forked from a Node worker starts as a copy of the worker, so the child's
 * maxRSS is at least the worker's RSS when it forked. VmHWM is per address space and starts afresh
 * at exec.
 *
 * Attribution to attempts is by time: a task process runs one attempt and exits when it ends, so
 * an attempt is matched to the process of its worker that disappeared closest to the attempt's
 * finish time (within `slackMs`), each process used once.
 */
import { readFileSync } from 'node:fs';

export interface ProcSample {
  pid: number;
  workerId: string;
  firstSeen: number;
  lastSeen: number;
  hwmBytes: number;
}

export interface AttemptTimes {
  attemptId: string;
  workerId: string;
  startTime: number;
  finishTime?: number;
}

/** A `kB` field of /proc/PID/status (VmHWM, VmRSS ...); undefined where there is none. */
export function readStatusKb(pid: number, field: string): number | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'latin1');
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'latin1').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

export class ProcRssSampler {
  readonly available: boolean;
  private readonly seen = new Map<number, ProcSample>();
  private readonly workerHwm = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private lastSample = 0;

  constructor(
    private readonly workers: () => ReadonlyArray<{ workerId: string; pid: number | undefined }>,
    private readonly intervalMs = 100,
  ) {
    this.available = process.platform === 'linux' && readStatusKb(process.pid, 'VmHWM') !== undefined;
  }

  start(): void {
    if (!this.available || this.timer) return;
    this.timer = setInterval(() => this.sample(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Forgets what was seen (between runs); processes still alive are seen again at the next sample. */
  reset(): void {
    this.seen.clear();
    this.workerHwm.clear();
  }

  sample(): void {
    const now = Date.now();
    this.lastSample = now;
    for (const w of this.workers()) {
      if (w.pid === undefined) continue;
      const whwm = readStatusKb(w.pid, 'VmHWM');
      if (whwm !== undefined)
        this.workerHwm.set(w.workerId, Math.max(this.workerHwm.get(w.workerId) ?? 0, whwm * 1024));
      for (const pid of childrenOf(w.pid)) {
        const hwm = readStatusKb(pid, 'VmHWM');
        if (hwm === undefined) continue;
        const s = this.seen.get(pid);
        if (s) {
          s.lastSeen = now;
          s.hwmBytes = Math.max(s.hwmBytes, hwm * 1024);
        } else {
          this.seen.set(pid, { pid, workerId: w.workerId, firstSeen: now, lastSeen: now, hwmBytes: hwm * 1024 });
        }
      }
    }
  }

  processes(): ProcSample[] {
    return [...this.seen.values()];
  }

  /** Peak RSS (VmHWM) of each worker process itself, as sampled. */
  workerPeaks(): Record<string, number> {
    return Object.fromEntries(this.workerHwm);
  }

  /** attemptId -> the sampled VmHWM of the process that ran it, for the attempts that match. */
  attribute(attempts: readonly AttemptTimes[], slackMs = 1500): Map<string, ProcSample> {
    const candidates: { attemptId: string; sample: ProcSample; diff: number }[] = [];
    for (const a of attempts) {
      if (a.finishTime === undefined) continue;
      for (const s of this.seen.values()) {
        // Still alive at the last sample: not (yet) the process of a finished attempt.
        if (s.lastSeen >= this.lastSample) continue;
        if (s.workerId !== a.workerId || s.firstSeen > a.startTime + slackMs) continue;
        const diff = Math.abs(s.lastSeen - a.finishTime);
        if (diff <= slackMs) candidates.push({ attemptId: a.attemptId, sample: s, diff });
      }
    }
    candidates.sort((x, y) => x.diff - y.diff);
    const out = new Map<string, ProcSample>();
    const used = new Set<number>();
    for (const c of candidates) {
      if (out.has(c.attemptId) || used.has(c.sample.pid)) continue;
      out.set(c.attemptId, c.sample);
      used.add(c.sample.pid);
    }
    return out;
  }
}
