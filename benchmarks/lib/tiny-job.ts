/**
 * Where a tiny job's time goes, end to end, from the client's submit to the client seeing it end.
 * The phases follow the job's critical path (its last map, then its last reduce), each measured
 * where it happens: client times and the JobTracker's attempt and job times (one clock: the
 * benchmark runs the JobTracker in its own process, as LocalCluster does), and durations the
 * workers and task processes measure themselves (counters: MODULE_WAIT_MS, MODULE_LOAD_MS,
 * TASK_MS, SHUFFLE_MS). The phases add up to the total.
 */
import type { AttemptSummary, JobStatus } from '../../src/runtime/index.js';

export const PHASES = [
  ['submit', 'client: module read (and loaded, the first time), submission; JobTracker: input splits, output dir'],
  ['schedule', 'job admitted -> its first map launched (policy call)'],
  [
    'map launch',
    'map launched -> its code runs: message to the worker, process handed the attempt, job module fetched and imported',
  ],
  ['map task', 'the map itself: read the split, map, sort and write its output (TASK_MS)'],
  ['map report', 'map done -> the JobTracker knows: counters, message, books'],
  ['map to reduce', 'last map known done -> reduce launched'],
  ['reduce launch', 'as for the map'],
  ['fetch', 'reduce: fetch and merge the map outputs (SHUFFLE_MS)'],
  ['reduce task', 'reduce: reduce and write its part file to the block store'],
  ['reduce report', 'as for the map'],
  ['commit', 'last task done -> job committed (part renamed, _SUCCESS written)'],
  [
    'clean-up + notify',
    'job committed -> the client sees it ended (_temporary removed, workers told, wait-job answered)',
  ],
] as const;

export type Phase = (typeof PHASES)[number][0];

export interface TinyRun {
  readonly totalMs: number;
  readonly phasesMs: Record<Phase, number>;
  /** Attempts that ran in a warm (reused) task process, of all attempts. */
  readonly warmLaunches: number;
  readonly attempts: number;
}

/** The phases of one finished job; `t0` and `tEnd` are the client's Date.now() at submit and when it saw the end. */
export function breakdown(status: JobStatus, attempts: readonly AttemptSummary[], t0: number, tEnd: number): TinyRun {
  const done = (kind: 'map' | 'reduce') => attempts.filter((a) => a.kind === kind && a.state === 'succeeded');
  const last = (list: AttemptSummary[]) => list.reduce((a, b) => ((b.finishTime ?? 0) > (a.finishTime ?? 0) ? b : a));
  const maps = done('map');
  const reduces = done('reduce');
  if (maps.length === 0 || reduces.length === 0 || status.finishTime === undefined)
    throw new Error(`job ${status.jobId} has no successful map and reduce`);
  const map = last(maps);
  const reduce = last(reduces);
  const firstMapStart = Math.min(...maps.map((a) => a.startTime));
  const c = (a: AttemptSummary, name: string) => a.counters[name] ?? 0;
  const launch = (a: AttemptSummary) => c(a, 'MODULE_WAIT_MS') + c(a, 'MODULE_LOAD_MS');
  /** What is left of an attempt's time beyond its launch and its task: messages and bookkeeping on both ends. */
  const report = (a: AttemptSummary) => a.finishTime! - a.startTime - launch(a) - c(a, 'TASK_MS');
  const phasesMs: Record<Phase, number> = {
    submit: status.submitTime - t0,
    schedule: firstMapStart - status.submitTime,
    'map launch': launch(map) + (map.startTime - firstMapStart),
    'map task': c(map, 'TASK_MS'),
    'map report': report(map),
    'map to reduce': reduce.startTime - map.finishTime!,
    'reduce launch': launch(reduce),
    fetch: c(reduce, 'SHUFFLE_MS'),
    'reduce task': c(reduce, 'TASK_MS') - c(reduce, 'SHUFFLE_MS'),
    'reduce report': report(reduce),
    commit: status.finishTime - reduce.finishTime!,
    'clean-up + notify': tEnd - status.finishTime,
  };
  return {
    totalMs: tEnd - t0,
    phasesMs,
    warmLaunches: attempts.filter((a) => a.counters.WARM_LAUNCH === 1).length,
    attempts: attempts.length,
  };
}
