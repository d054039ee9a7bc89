/**
 * Phase trace: with MINIMR_PHASE_TRACE=FILE in the environment, the JobTracker, the workers and the
 * task processes each append one JSON line per step of an attempt to FILE (launch sent, process
 * given the attempt, module loaded, sort and spill of each buffer generation, final merge, done
 * seen by the JobTracker), with the wall time, the process id, the process's CPU time so far, and
 * its memory in MiB: resident, peak resident (VmHWM: a task process resets it per attempt), the JS
 * heap in use and ArrayBuffers (where a task's memory beyond its buffers goes).
 * `npm run bench:tera-phases` turns it into a per-attempt timeline: where a job's time goes between
 * the JobTracker, the worker, the process and the shuffle, and whether a step waited or computed.
 *
 * Events: `jt-launch`, `jt-finished` (JobTracker: launch sent, attempt-finished received); `w-launch`,
 * `w-run` (with `warm`: a process that ran the module before), `w-done`, `w-fork` (worker; with `spare`:
 * started ahead rather than for the launch at hand, and `running`: the attempts it ran then); `t-run`,
 * `t-loaded`, `t-input-done` (map), `t-shuffled`, `t-reduced`, `t-closed` (reduce), `t-done` (task
 * process; and `t-rehearsed`, with `ms`: a spare's rehearsal ended, its own steps traced before it
 * under the attempt ids `attempt_rehearsal_*`); `b-sort`, `b-sorted`, `b-spill-written`, `b-finish`,
 * `b-merge-start`, `b-merged` (the map's sort buffer, in the task process, without the attempt id:
 * its pid's current attempt).
 *
 * For measurements on one machine (all processes must see the same FILE). Off, it costs one
 * environment lookup per step (a few per attempt, none per record). Lines are appended with one
 * write each (O_APPEND), so the processes' lines do not interleave within a line.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

/**
 * One step: `t` ms since the epoch (sub-ms), `cpuMs` this process's CPU time (user + system) so far,
 * `rssMiB`, `peakMiB`, `heapMiB` and `buffersMiB` its resident and peak resident memory, JS heap in
 * use and ArrayBuffers.
 */
export interface PhaseTraceEvent {
  readonly t: number;
  readonly pid: number;
  readonly event: string;
  readonly cpuMs: number;
  readonly rssMiB: number;
  readonly peakMiB: number;
  readonly heapMiB: number;
  readonly buffersMiB: number;
  readonly attempt?: string;
  readonly [field: string]: unknown;
}

export function phaseTrace(event: string, fields: Readonly<Record<string, unknown>> = {}): void {
  const file = process.env.MINIMR_PHASE_TRACE;
  if (!file) return;
  const cpu = process.cpuUsage();
  const memory = process.memoryUsage();
  const line: PhaseTraceEvent = {
    t: performance.timeOrigin + performance.now(),
    pid: process.pid,
    event,
    cpuMs: Math.round((cpu.user + cpu.system) / 1000),
    rssMiB: Math.round(memory.rss / MiB),
    peakMiB: Math.round(peakRssBytes() / MiB),
    heapMiB: Math.round(memory.heapUsed / MiB),
    buffersMiB: Math.round(memory.arrayBuffers / MiB),
    ...fields,
  };
  try {
    appendFileSync(file, JSON.stringify(line) + '\n');
  } catch {
    // A trace line that cannot be written (a sandboxed task that may not write the file) is lost, not the step.
  }
}

const MiB = 1024 * 1024;

/**
 * This process's own peak RSS, in bytes: since it started, or since it last reset VmHWM (a task
 * process does per attempt). Linux's getrusage maxRSS is inherited across fork, so a task forked by
 * a worker that once used more would report the worker's peak; VmHWM is this process's alone.
 */
export function peakRssBytes(): number {
  try {
    const m = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'));
    if (m) return Number(m[1]) * 1024;
  } catch {
    // not Linux: the process's lifetime peak below
  }
  return process.resourceUsage().maxRSS * 1024;
}
