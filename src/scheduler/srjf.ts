/**
 * Shortest remaining job first (SRJF): the scheduler of YARN-ME's *meganode* bound (docs/specs/yarn-me.md):
 * on one node pooling the whole cluster's memory and cores, the job with the least estimated work
 * left (its pending tasks' durations plus what its running attempts have left, as the paper's
 * simulator's SRTF counts it) goes first, and every task that fits at its ideal memory runs, in
 * that order. An idealized bound for elasticity-agnostic schedulers: no fragmentation, no
 * reservations, perfect knowledge of durations. Tasks without an estimate count as the job's mean
 * finished task, else as nothing.
 */
import { minPendingMemoryMb } from './pending-index.js';
import { definePolicy, parseOptions, type PolicyDefinition } from './options.js';
import { localityOf, visitingOrder } from './rooms.js';
import type { ClusterSnapshot, Consultation, Decision, JobView, Policy } from './types.js';

function meanMs(job: JobView, kind: 'map' | 'reduce'): number {
  const done = kind === 'map' ? job.mapsCompleted : job.reducesCompleted;
  return done > 0 ? (kind === 'map' ? job.stats.completedMapMs : job.stats.completedReduceMs) / done : 0;
}

/** The job's estimated work left, ms of task time. */
export function remainingWorkMs(job: JobView, now: number): number {
  let ms = 0;
  for (const t of job.pendingTasks) ms += t.idealDurationMs ?? meanMs(job, t.kind);
  for (const a of job.runningAttempts)
    ms += Math.max(0, (a.idealDurationMs ?? meanMs(job, a.kind)) - (now - a.startTime));
  return ms;
}

export class SrjfPolicy implements Policy {
  readonly name = 'srjf';
  /** Running attempts' remaining work, and so the job order, changes with time alone. */
  readonly consultWhen: Consultation = 'every-event';

  schedule(snapshot: ClusterSnapshot): readonly Decision[] {
    const rooms = visitingOrder(snapshot, { freeOnly: true });
    if (rooms.length === 0) return [];
    const work = new Map(snapshot.jobs.map((j) => [j.id, remainingWorkMs(j, snapshot.now)]));
    const order = snapshot.jobs
      .filter((j) => j.pendingTasks.length > 0)
      .sort((a, b) => work.get(a.id)! - work.get(b.id)! || a.submitTime - b.submitTime || (a.id < b.id ? -1 : 1));
    const decisions: Decision[] = [];
    const launched = new Set<string>();
    for (const room of rooms) {
      for (const job of order) {
        if (
          Math.min(minPendingMemoryMb(job.pendingTasks, 'map'), minPendingMemoryMb(job.pendingTasks, 'reduce')) >
          room.memoryMb
        )
          continue;
        for (const task of job.pendingTasks) {
          if (room.mapSlots <= 0 && room.reduceSlots <= 0) break;
          const slots = task.kind === 'map' ? room.mapSlots : room.reduceSlots;
          if (slots <= 0 || task.memoryMb > room.memoryMb || launched.has(task.id)) continue;
          launched.add(task.id);
          decisions.push({
            kind: 'launch',
            taskId: task.id,
            jobId: job.id,
            workerId: room.worker.id,
            memoryMb: task.memoryMb,
            locality: localityOf(task, room.worker),
          });
          if (task.kind === 'map') room.mapSlots--;
          else room.reduceSlots--;
          room.memoryMb -= task.memoryMb;
        }
      }
    }
    return decisions;
  }
}

export const SRJF_DEFINITION: PolicyDefinition = definePolicy({
  name: 'srjf',
  summary:
    'shortest remaining job first at ideal memory, every task that ' +
    "fits, no reservations: the scheduler of YARN-ME's meganode " +
    'bound',
  options: {},
  defaults: {},
  create(options) {
    parseOptions('srjf', options, {}, {});
    return new SrjfPolicy();
  },
});
