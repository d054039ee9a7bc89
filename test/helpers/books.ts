/**
 * Builders shared by the tests of the books and of the policies: worker shapes and launches for a
 * `Books` driven by posted events, and hand-made snapshot views (workers, tasks, attempts, jobs) for
 * single-round policy tests. Fields not given take harmless defaults.
 */
import assert from 'node:assert/strict';
import type { AttemptRecord, Books, Effect, TaskRecord } from '../../src/books/index.js';
import type {
  AttemptView,
  ClusterSnapshot,
  Decision,
  JobView,
  SchedulingTrigger,
  TaskKind,
  TaskView,
  WorkerView,
} from '../../src/scheduler/index.js';

export const TICK: SchedulingTrigger = { kind: 'tick' };

/** A worker as it joins the books: 2 map and 1 reduce slot, 4096 MB, 100 MB/s unless given. */
export function workerShape(
  id: string,
  rack: string,
  over: { mapSlots?: number; reduceSlots?: number; memoryMb?: number } = {},
) {
  return {
    id,
    host: id,
    rack,
    mapSlots: over.mapSlots ?? 2,
    reduceSlots: over.reduceSlots ?? 1,
    memoryMb: over.memoryMb ?? 4096,
    diskMBps: 100,
  };
}

/** Launches `task` on `workerId` the way an engine does: snapshot, check, apply. */
export function launch(books: Books, task: TaskRecord, workerId: string, now: number): AttemptRecord {
  const decision: Decision = {
    kind: 'launch',
    taskId: task.id,
    jobId: task.job.id,
    workerId,
    locality: task.preferredWorkers.includes(workerId)
      ? 'node'
      : task.preferredRacks.includes(books.worker(workerId)!.shape.rack)
        ? 'rack'
        : 'any',
  };
  const snap = books.snapshot(TICK, now);
  assert.deepEqual(books.check(snap, [decision]), []);
  const [effect] = books.apply([decision], now);
  assert.equal(effect?.kind, 'launch');
  return (effect as Extract<Effect, { kind: 'launch' }>).attempt;
}

export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** Hand-made snapshot views for single-round tests. */
export function mkWorker(id: string, rack: string, over: Partial<WorkerView> = {}): WorkerView {
  const mapSlots = over.mapSlots ?? 2;
  const reduceSlots = over.reduceSlots ?? 1;
  const memoryMb = over.memoryMb ?? 4096;
  return {
    id,
    host: id,
    rack,
    mapSlots,
    reduceSlots,
    memoryMb,
    freeMapSlots: mapSlots,
    freeReduceSlots: reduceSlots,
    freeMemoryMb: memoryMb,
    diskMBps: 0,
    cluster: 'default',
    ...over,
  };
}

export function mkTask(
  jobId: string,
  kind: TaskKind,
  index: number,
  over: Partial<TaskView> & { workers?: readonly WorkerView[] } = {},
): TaskView {
  const { workers: all = [], ...rest } = over;
  const preferredWorkers = rest.preferredWorkers ?? [];
  const racks: string[] = [];
  for (const id of preferredWorkers) {
    const rack = all.find((w) => w.id === id)?.rack;
    if (rack !== undefined && !racks.includes(rack)) racks.push(rack);
  }
  return {
    id: `${jobId}-${kind === 'map' ? 'm' : 'r'}${index}`,
    jobId,
    kind,
    index,
    preferredWorkers,
    preferredRacks: racks,
    memoryMb: 256,
    inputBytes: kind === 'map' ? 64 * 1024 * 1024 : 0,
    failedOnWorkers: [],
    ...rest,
  };
}

/**
 * A running attempt of `jobId`'s task `index` (the task `mkTask` names) on `workerId` since
 * `startTime`: half done, 256 MB at its ideal memory, no locality, a map's 64 MiB input.
 */
export function mkAttempt(
  jobId: string,
  kind: TaskKind,
  index: number,
  workerId: string,
  startTime: number,
  over: Partial<AttemptView> = {},
): AttemptView {
  const taskId = `${jobId}-${kind === 'map' ? 'm' : 'r'}${index}`;
  return {
    id: `${taskId}_1`,
    taskId,
    jobId,
    kind,
    workerId,
    startTime,
    progress: 0.5,
    memoryMb: 256,
    idealMemoryMb: 256,
    elastic: false,
    locality: 'any',
    inputWorkers: [],
    inputBytes: kind === 'map' ? 64 * 1024 * 1024 : 0,
    ...over,
  };
}

export function mkJob(id: string, pendingTasks: readonly TaskView[], over: Partial<JobView> = {}): JobView {
  const maps = pendingTasks.filter((t) => t.kind === 'map').length;
  const reduces = pendingTasks.filter((t) => t.kind === 'reduce').length;
  return {
    id,
    name: id,
    pool: 'default',
    weight: 1,
    partition: 0,
    cluster: 'default',
    submitTime: 0,
    mapsTotal: maps,
    mapsCompleted: 0,
    reducesTotal: reduces,
    reducesCompleted: 0,
    pendingTasks,
    runningAttempts: [],
    stats: { completedMapMs: 0, completedReduceMs: 0, mapInputBytes: 0, mapOutputBytes: 0 },
    ...over,
  };
}

export function mkSnapshot(
  workers: readonly WorkerView[],
  jobs: readonly JobView[],
  over: Partial<ClusterSnapshot> = {},
): ClusterSnapshot {
  return deepFreeze({ now: 0, trigger: { kind: 'tick' }, workers, jobs, pools: [], ...over });
}
