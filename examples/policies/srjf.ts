/**
 * Shortest remaining job first, written only against the public policy API ('minimr/scheduler'): at
 * every call, the jobs with pending tasks are ordered by their estimated work left (pending tasks'
 * durations, plus what their running attempts have left at snapshot.now; a task without an estimate
 * counts as the job's mean finished task), and each free slot goes to the first job in that order with a
 * task that fits it, node-local tasks first. Time is read from the snapshot only, never from a clock.
 *
 *   minimr policy check ./examples/policies/srjf.ts
 *   minimr sim --workload hvw --policy fifo --policy ./examples/policies/srjf.ts
 */
import {
  definePolicy,
  localityOf,
  parseOptions,
  type ClusterSnapshot,
  type Decision,
  type JobView,
  type Policy,
  type TaskView,
} from 'minimr/scheduler';

type Options = {
  /** Prefer a node-local task of the chosen job over its lower-indexed tasks. */
  readonly preferLocal: boolean;
};

const DEFAULTS: Options = { preferLocal: true };

const SPECS = {
  preferLocal: { type: 'boolean', about: "within the chosen job, a task whose input is on the worker goes first" },
} as const;

function meanMs(job: JobView, kind: 'map' | 'reduce'): number {
  const done = kind === 'map' ? job.mapsCompleted : job.reducesCompleted;
  const ms = kind === 'map' ? job.stats.completedMapMs : job.stats.completedReduceMs;
  return done > 0 ? ms / done : 0;
}

function workLeftMs(job: JobView, now: number): number {
  let ms = 0;
  for (const t of job.pendingTasks) ms += t.idealDurationMs ?? meanMs(job, t.kind);
  for (const a of job.runningAttempts) {
    ms += Math.max(0, (a.idealDurationMs ?? meanMs(job, a.kind)) - (now - a.startTime));
  }
  return ms;
}

class ShortestRemainingJobFirst implements Policy {
  readonly name = 'srjf-plugin';
  /** Work left shrinks as time passes: the order may change with time alone. */
  readonly consultWhen = 'every-event' as const;

  constructor(readonly options: Options) {}

  schedule(snapshot: ClusterSnapshot): readonly Decision[] {
    const left = new Map(snapshot.jobs.map((j) => [j.id, workLeftMs(j, snapshot.now)]));
    const order = snapshot.jobs
      .filter((j) => j.pendingTasks.length > 0)
      .sort((a, b) => left.get(a.id)! - left.get(b.id)! || a.submitTime - b.submitTime || (a.id < b.id ? -1 : 1));
    const launched = new Set<string>();
    const decisions: Decision[] = [];
    for (const worker of snapshot.workers) {
      if (worker.leavingFor !== undefined) continue;
      const free = { map: worker.freeMapSlots, reduce: worker.freeReduceSlots, memoryMb: worker.freeMemoryMb };
      const fits = (t: TaskView) =>
        !launched.has(t.id) &&
        free[t.kind] > 0 &&
        t.memoryMb <= free.memoryMb &&
        !t.failedOnWorkers.includes(worker.id);
      for (const job of order) {
        for (;;) {
          const candidates = job.pendingTasks.filter(fits);
          if (candidates.length === 0) break;
          const task =
            (this.options.preferLocal && candidates.find((t) => t.preferredWorkers.includes(worker.id))) ||
            candidates[0]!;
          launched.add(task.id);
          free[task.kind] -= 1;
          free.memoryMb -= task.memoryMb;
          decisions.push({
            kind: 'launch',
            taskId: task.id,
            jobId: job.id,
            workerId: worker.id,
            memoryMb: task.memoryMb,
            locality: localityOf(task, worker),
          });
        }
      }
    }
    return decisions;
  }
}

export default definePolicy({
  name: 'srjf-plugin',
  summary: 'shortest remaining job first: the job with the least estimated work left gets each free slot',
  options: SPECS,
  defaults: DEFAULTS,
  create: (raw) => new ShortestRemainingJobFirst(parseOptions('srjf-plugin', raw, SPECS, DEFAULTS)),
});
