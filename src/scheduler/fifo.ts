/**
 * FIFO with data locality, after Hadoop's JobQueueTaskScheduler: jobs are served in submission
 * order, and within the job that gets a slot the task is chosen node-local first, then
 * rack-local, then anywhere.
 *
 * Delay scheduling, when `nodeLocalDelayMs` > 0 (Zaharia et al., EuroSys 2010; the wait of
 * Hadoop's FairScheduler `locality.threshold.node` and Spark's `spark.locality.wait`, 3 s): a
 * free map slot on a worker that holds none of a job's pending input does not run one of its
 * maps there while a live worker that holds it could; the job is skipped (a later job may take
 * the slot) until it has been skipped for `nodeLocalDelayMs`, as a slot usually frees on a
 * holder sooner, and a map reading its block over the network costs more than it gains. A
 * node-local launch ends the wait. Maps with no stored input, or whose input is on no live
 * worker that may run them, never wait. The default, 0, launches anywhere at once, as Hadoop 1's
 * FIFO does (the simulator's FIFO results, runtime-alone baselines and call mode rest on it).
 * On a pool split into MR-clusters (FAWKES) each cluster is such a FIFO queue on its own nodes,
 * without the wait (`fifoByCluster`, which FAWKES shares: its decisions are pinned without one).
 */
import { BestPlacedPicker, minPendingMemoryMb } from './pending-index.js';
import { localityOf, Rank, rankOf, visitingOrder, type Room } from './rooms.js';
import { definePolicy, parseOptions, type OptionSpecs, type PolicyDefinition, type PolicyOptions } from './options.js';
import { LocalityWaits } from './locality-waits.js';
import type {
  ClusterSnapshot,
  Consultation,
  Decision,
  JobView,
  Policy,
  TaskKind,
  TaskView,
  WorkerView,
} from './types.js';

export type FifoOptions = {
  /** How long a job may skip free map slots without its input before it runs a map there; 0: never skips. */
  readonly nodeLocalDelayMs: number;
};

export const DEFAULT_FIFO_OPTIONS: FifoOptions = Object.freeze({ nodeLocalDelayMs: 0 });

const FIFO_OPTION_SPECS: OptionSpecs<FifoOptions> = {
  nodeLocalDelayMs: {
    type: 'number',
    range: { min: 0, unit: 'ms' },
    about:
      'delay scheduling: how long a job may skip free map slots ' +
      'without its input before it runs a map there (0: never skips; ' +
      "Hadoop's and Spark's wait is 3000)",
  },
};

export function parseFifoOptions(raw: PolicyOptions): FifoOptions {
  return parseOptions('fifo', raw, FIFO_OPTION_SPECS, DEFAULT_FIFO_OPTIONS);
}

export const FIFO_DEFINITION: PolicyDefinition = definePolicy({
  name: 'fifo',
  summary: "Hadoop's FIFO: jobs in submission order, each job's tasks node-local first, then rack-local, then anywhere",
  options: FIFO_OPTION_SPECS,
  defaults: DEFAULT_FIFO_OPTIONS,
  create: (options) => new FifoPolicy(parseFifoOptions(options)),
});

/**
 * Whether a free slot elsewhere may run `job`'s `task` (not node-local there) now; when it says
 * no, the job is skipped for that slot and a later job is offered it.
 */
type MayRunAway = (job: JobView, task: TaskView) => boolean;

function slotsOf(room: Room, kind: TaskKind): number {
  return kind === 'map' ? room.mapSlots : room.reduceSlots;
}

function fits(room: Room, task: TaskView): boolean {
  return slotsOf(room, task.kind) > 0 && room.memoryMb >= task.memoryMb;
}

export class FifoPolicy implements Policy {
  readonly name = 'fifo';
  private readonly waits = new LocalityWaits();

  constructor(readonly options: FifoOptions = DEFAULT_FIFO_OPTIONS) {}

  /**
   * Whether its decisions depend on more than the snapshot (the time jobs have waited): a caller
   * may then not skip calls in which nothing changed, since a wait running out is no change.
   */
  get waitsForLocality(): boolean {
    return this.options.nodeLocalDelayMs > 0;
  }

  /**
   * Without a wait it launches at ideal memory whatever fits, from the snapshot alone; a wait running out is no change.
   */
  get consultWhen(): Consultation {
    return this.waitsForLocality ? 'every-event' : 'after-change-if-a-task-fits';
  }

  schedule(snapshot: ClusterSnapshot): readonly Decision[] {
    const decisions: Decision[] = [];
    const rooms = visitingOrder(snapshot, { freeOnly: true });
    if (!this.waitsForLocality || (snapshot.mrClusters !== undefined && snapshot.mrClusters.length > 0)) {
      // A worker with no free slot can take nothing, not even a task sent away from elsewhere.
      fifoByCluster(snapshot, rooms, decisions);
      return decisions;
    }
    this.waits.advance(snapshot);
    const workers = snapshot.workers;
    const mayRunAway: MayRunAway = (job, task) => {
      if (!hasLiveHolder(task, workers)) return true;
      const wait = this.waits.of(job.id);
      if (wait.waitMs >= this.options.nodeLocalDelayMs) return true;
      wait.skipped = true;
      return false;
    };
    placeFifo(snapshot.jobs, rooms, decisions, mayRunAway);
    // A node-local launch ends its job's wait.
    for (const d of decisions) if (d.kind === 'launch' && d.locality === 'node') this.waits.launched(d.jobId, 0);
    return decisions;
  }
}

/** Some live worker that holds the task's input may run it (has map slots and has not failed it). */
function hasLiveHolder(task: TaskView, workers: readonly WorkerView[]): boolean {
  return workers.some(
    (w) => w.mapSlots > 0 && task.preferredWorkers.includes(w.id) && !task.failedOnWorkers.includes(w.id),
  );
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
    placeFifo(
      jobs,
      rooms.filter((r) => r.worker.cluster === cluster && r.worker.leavingFor === undefined),
      decisions,
    );
  }
}

/**
 * FIFO with locality: `jobs` in their order on `rooms` (visiting order), launches appended to
 * `decisions`; a map that would not be node-local where offered runs there only if `mayRunAway`
 * allows (else its job is passed over for that room).
 */
function placeFifo(
  jobs: readonly JobView[],
  rooms: readonly Room[],
  decisions: Decision[],
  mayRunAway?: MayRunAway,
): void {
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
  const withPending = (kind: TaskKind) =>
    jobs.filter((j) => minPendingMemoryMb(j.pendingTasks, kind) < Number.POSITIVE_INFINITY);
  const candidates: Partial<Record<TaskKind, readonly JobView[]>> = {};
  /** The earliest job's best-placed task of `kind` that fits `room`, or undefined. */
  const pick = (kind: TaskKind, room: Room): { job: JobView; task: TaskView } | undefined => {
    if (room.memoryMb <= nothingFitsUpTo[kind]) return undefined;
    let waiting = false;
    for (const job of (candidates[kind] ??= withPending(kind))) {
      if (minPendingMemoryMb(job.pendingTasks, kind) > room.memoryMb) continue;
      // Among equally placed tasks the lowest task index (pendingTasks order) wins.
      const task = picker.pick(job.pendingTasks, kind, room.worker, (t) => fits(room, t));
      if (
        task &&
        kind === 'map' &&
        mayRunAway &&
        rankOf(task, room.worker) !== Rank.Node &&
        task.preferredWorkers.length > 0 &&
        !mayRunAway(job, task)
      ) {
        waiting = true;
        continue;
      }
      // Job order: a later job is looked at only when this one has nothing that fits (or waits) here.
      if (task) return { job, task };
    }
    // A job that waits has a task that fits: the memory shortcut does not hold.
    if (!waiting) nothingFitsUpTo[kind] = Math.max(nothingFitsUpTo[kind], room.memoryMb);
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
