/**
 * FIFO with data locality, after Hadoop's JobQueueTaskScheduler: jobs are served strictly in
 * submission order, and within the job that gets a slot the task is chosen node-local first, then
 * rack-local, then anywhere. There is no delay scheduling: a slot is never left idle to wait for a
 * better-placed task (that is what FAIR adds). On a pool split into MR-clusters (FAWKES) each
 * cluster is such a FIFO queue on its own nodes.
 */
import { BestPlacedPicker, minPendingMemoryMb } from './pending-index.js';
import { localityOf, Rank, rankOf, visitingOrder, type Room } from './rooms.js';
import type { ClusterSnapshot, Decision, JobView, Policy, TaskKind, TaskView } from './types.js';

function slotsOf(room: Room, kind: TaskKind): number {
  return kind === 'map' ? room.mapSlots : room.reduceSlots;
}

function fits(room: Room, task: TaskView): boolean {
  return slotsOf(room, task.kind) > 0 && room.memoryMb >= task.memoryMb;
}

export class FifoPolicy implements Policy {
  readonly name = 'fifo';

  schedule(snapshot: ClusterSnapshot): readonly Decision[] {
    const decisions: Decision[] = [];
    // A worker with no free slot can take nothing, not even a task sent away from elsewhere.
    fifoByCluster(snapshot, visitingOrder(snapshot, { freeOnly: true }), decisions);
    return decisions;
  }
}

/**
 * FIFO with locality on a pool that may be split into MR-clusters (FAWKES): each cluster's jobs,
 * in submission order, on its own workers' `rooms` (a worker draining out of its cluster takes
 * nothing); without MR-clusters, every job on every room. Launches are appended to `decisions`.
 */
export function fifoByCluster(snapshot: ClusterSnapshot, rooms: readonly Room[], decisions: Decision[]): void {
  if (snapshot.mrClusters === undefined || snapshot.mrClusters.length === 0) {
    placeFifo(snapshot.jobs, rooms, decisions);
    return;
  }
  const jobsOf = new Map<string, JobView[]>();
  for (const job of snapshot.jobs) {
    const list = jobsOf.get(job.cluster);
    if (list) list.push(job);
    else jobsOf.set(job.cluster, [job]);
  }
  for (const [cluster, jobs] of jobsOf) {
    placeFifo(jobs, rooms.filter((r) => r.worker.cluster === cluster && r.worker.leavingFor === undefined), decisions);
  }
}

/** FIFO with locality: `jobs` in their order on `rooms` (visiting order), launches appended to `decisions`. */
function placeFifo(jobs: readonly JobView[], rooms: readonly Room[], decisions: Decision[]): void {
  const launched = new Set<string>();

  const launch = (job: JobView, task: TaskView, room: Room): void => {
    launched.add(task.id);
    if (task.kind === 'map') room.mapSlots -= 1;
    else room.reduceSlots -= 1;
    room.memoryMb -= task.memoryMb;
    decisions.push({
      kind: 'launch',
      taskId: task.id,
      jobId: job.id,
      workerId: room.worker.id,
      memoryMb: task.memoryMb,
      locality: localityOf(task, room.worker),
    });
  };

  /**
   * Where a task that already failed on `room` should go instead: the free worker where it would
   * be best placed, earliest in visiting order on ties; undefined when none can take it now.
   */
  const elsewhere = (task: TaskView, room: Room): Room | undefined => {
    let best: Room | undefined;
    let bestRank = Rank.OffRack + 1;
    for (const other of rooms) {
      if (other === room || task.failedOnWorkers.includes(other.worker.id) || !fits(other, task)) continue;
      const r = rankOf(task, other.worker);
      if (r < bestRank) {
        best = other;
        bestRank = r;
      }
    }
    return best;
  };

  const picker = new BestPlacedPicker(launched);
  // Launches only take candidates away, so once no task of a kind fits some free memory, none
  // fits that much or less for the rest of this call: later rooms need not look.
  const nothingFitsUpTo: Record<TaskKind, number> = { map: -1, reduce: -1 };
  // The jobs with a pending task of each kind, in job order: most jobs have none of one kind.
  const withPending = (kind: TaskKind) => jobs.filter((j) => minPendingMemoryMb(j.pendingTasks, kind) < Number.POSITIVE_INFINITY);
  const candidates: Partial<Record<TaskKind, readonly JobView[]>> = {};
  /** The earliest job's best-placed task of `kind` that fits `room`, or undefined. */
  const pick = (kind: TaskKind, room: Room): { job: JobView; task: TaskView } | undefined => {
    if (room.memoryMb <= nothingFitsUpTo[kind]) return undefined;
    for (const job of (candidates[kind] ??= withPending(kind))) {
      if (minPendingMemoryMb(job.pendingTasks, kind) > room.memoryMb) continue;
      // Among equally placed tasks the lowest task index (pendingTasks order) wins.
      const task = picker.pick(job.pendingTasks, kind, room.worker, (t) => fits(room, t));
      // Strict job order: a later job is looked at only when this one has nothing that fits here.
      if (task) return { job, task };
    }
    nothingFitsUpTo[kind] = Math.max(nothingFitsUpTo[kind], room.memoryMb);
    return undefined;
  };

  const fill = (kind: TaskKind, room: Room): void => {
    while (slotsOf(room, kind) > 0) {
      const chosen = pick(kind, room);
      if (!chosen) return;
      const { job, task } = chosen;
      if (task.failedOnWorkers.includes(room.worker.id)) {
        // Send it to another worker right away rather than merely skipping it here: a skipped
        // task could lose that worker's slots to better-placed tasks round after round, and the
        // task keeps its place in job order this way.
        const other = elsewhere(task, room);
        if (other) {
          launch(job, task, other);
          continue;
        }
      }
      launch(job, task, room);
    }
  };

  // Maps before reduces on each worker, as Hadoop's heartbeat does: reduces of a job cannot start
  // before its maps are done, so maps are what keeps every job moving.
  for (const room of rooms) {
    fill('map', room);
    fill('reduce', room);
  }
}
