/**
 * Attempt views (AttemptView) as the books hand them out. A running attempt's view changes on
 * every progress report, many thousand times a simulated minute on a 3000-node cluster, and the
 * progress is all that changes: the new view is the old one with its progress replaced, a copy
 * of a plain object, not a view built again field by field. A view is built in full once per
 * attempt (its launch) and whenever something else about it changes (the books drop it then).
 *
 * Views keep one shape (the same fields in the same order, whatever an attempt has), so code
 * reading them stays monomorphic; the optional fields are set only when the task has them.
 */
import type { AttemptView } from '../scheduler/index.js';
import type { AttemptRecord, EngineData } from './records.js';

type Writable<T> = { -readonly [K in keyof T]: T[K] };

/** The attempt's view, built from its record. */
export function attemptViewOf<D extends EngineData>(a: AttemptRecord<D>): AttemptView {
  const task = a.task;
  // Without spreads of optional fields: a literal, then fields set in the view's order.
  const view = {
    id: a.id,
    taskId: task.id,
    jobId: task.job.id,
    kind: task.kind,
    workerId: a.worker.shape.id,
    startTime: a.startTime,
    progress: a.progress,
    memoryMb: a.memoryMb,
    idealMemoryMb: task.memoryMb,
    elastic: a.elastic,
  } as Writable<AttemptView>;
  if (task.idealDurationMs !== undefined) view.idealDurationMs = task.idealDurationMs;
  if (task.penalty !== undefined) view.penalty = task.penalty;
  view.locality = a.locality;
  view.inputWorkers = task.preferredWorkers;
  view.inputBytes = task.inputBytes;
  return view;
}

/** `view` with another progress (all else about an attempt that reports progress stays). */
export function withProgress(view: AttemptView, progress: number): AttemptView {
  return { ...view, progress };
}

/**
 * Attempts whose progress changed, by job, since the job's list of running attempt views was last
 * built. While its attempts stay the same (none started or ended), the job's next list is the last
 * one with these attempts' new views put in their places: a copy of an array and a few writes,
 * where building it again looked at every running attempt of the job.
 */
export class ProgressPatches<J, A> {
  private readonly byJob = new Map<J, A[]>();

  /** `attempt` of `job` has a new view. */
  add(job: J, attempt: A): void {
    const list = this.byJob.get(job);
    if (list === undefined) this.byJob.set(job, [attempt]);
    else list.push(attempt);
  }

  /** The job's patches since the last take (then forgotten); undefined when none. */
  take(job: J): readonly A[] | undefined {
    const list = this.byJob.get(job);
    if (list !== undefined) this.byJob.delete(job);
    return list;
  }

  /** Patches the job's `views` (by the places of `attempts`, its running attempts in the same order). */
  static applied<A, V>(views: readonly V[], attempts: readonly A[], patched: readonly A[], viewOf: (a: A) => V): V[] {
    const copy = views.slice();
    for (const a of patched) {
      const i = attempts.indexOf(a);
      if (i >= 0) copy[i] = viewOf(a);
    }
    return copy;
  }
}
