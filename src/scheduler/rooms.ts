import type { ClusterSnapshot, Locality, TaskView, WorkerView } from './types.js';

/** Where a task's input is relative to a worker. */
export function localityOf(task: TaskView, worker: WorkerView): Locality {
  if (task.preferredWorkers.includes(worker.id)) return 'node';
  if (task.preferredRacks.includes(worker.rack)) return 'rack';
  return 'any';
}

/**
 * Rank of a task for one worker; lower is better. Tasks without input locations rank between
 * rack-local and off-rack: they are 'any' everywhere, so spending a slot on them first keeps the
 * tasks that do have a home for the workers that can run them locally (Hadoop's nonLocalMaps).
 */
// biome-ignore lint/suspicious/noConstEnum: internal to src/scheduler (not in its index); tsc inlines it in hot loops
export const enum Rank {
  Node = 0,
  Rack = 1,
  Homeless = 2,
  OffRack = 3,
}

export function rankOf(task: TaskView, worker: WorkerView): Rank {
  if (task.preferredWorkers.includes(worker.id)) return Rank.Node;
  if (task.preferredRacks.includes(worker.rack)) return Rank.Rack;
  return task.preferredWorkers.length === 0 ? Rank.Homeless : Rank.OffRack;
}

/** What is still free on a worker while one decision list is being built. */
export interface Room {
  readonly worker: WorkerView;
  mapSlots: number;
  reduceSlots: number;
  memoryMb: number;
}

/** Code-unit order, not localeCompare: decisions must not depend on the host's locale. */
export function byCodeUnit(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The workers' free room in the order policies offer it: the trigger's worker first (it is the
 * one that just reported free capacity), then by id. With `freeOnly`, workers without a free slot
 * are left out (on a busy 3000-worker cluster, most of them).
 */
export function visitingOrder(snapshot: ClusterSnapshot, options: { freeOnly?: boolean } = {}): Room[] {
  const rooms: Room[] = [];
  for (const worker of snapshot.workers) {
    const mapSlots = Math.max(0, worker.freeMapSlots);
    const reduceSlots = Math.max(0, worker.freeReduceSlots);
    if (options.freeOnly && mapSlots === 0 && reduceSlots === 0) continue;
    rooms.push({ worker, mapSlots, reduceSlots, memoryMb: Math.max(0, worker.freeMemoryMb) });
  }
  rooms.sort((a, b) => byCodeUnit(a.worker.id, b.worker.id));
  const t = snapshot.trigger;
  if (t.kind === 'heartbeat' || t.kind === 'worker-joined') {
    const i = rooms.findIndex((r) => r.worker.id === t.workerId);
    if (i > 0) rooms.unshift(...rooms.splice(i, 1));
  }
  return rooms;
}
