import {
  CountMinSketch,
  hashAssignment,
  partitionsByReducer,
  simpleAssignment,
  sketchAssignment,
  type PartitionAssignment,
  type SketchWire,
  type SkewStrategy,
} from '../skew/index.js';
import type { TaskKind } from '../scheduler/index.js';

/** How a job's map output is partitioned and given to its reduces, as an engine hands it to the books. */
export interface SkewPlan {
  readonly strategy: SkewStrategy;
  /** Virtual partitions per reducer: maps write P = factor x R partitions. */
  readonly partitionFactor: number;
  /** 'cms': the sketch of a sample of the input; without one a 'cms' job is assigned like 'simple'. */
  readonly sketch?: SketchWire;
  /** 'cms': what sampling cost the client, for the status. */
  readonly sampleMs?: number;
  readonly sampledRecords?: number;
}

/** What the books decided for a job's partitions (JobStatus.skew). */
export interface SkewStatus {
  strategy: SkewStrategy;
  partitionFactor: number;
  /** P, the number of map output partitions. */
  partitions: number;
  /** 'cms': the sketch row whose hash partitions the map output, its seed, every row's estimate. */
  row?: number;
  seed?: number;
  rowMakespans?: number[];
  sampleMs?: number;
  sampledRecords?: number;
  /** Time spent computing the assignment, ms (also the SKEW_ASSIGNMENT_MS counter). */
  assignmentMs?: number;
  /** Relative speeds (mean 1) of the workers the reducers were planned on. */
  speeds?: Record<string, number>;
  /** Estimated reduce-phase time of the assignment, bytes / relative speed. */
  estimatedMakespan?: number;
  /** First reduce launch to last reduce success, ms (also REDUCE_PHASE_MS). */
  reducePhaseMs?: number;
  reducers: SkewReducerStatus[];
}

export interface SkewReducerStatus {
  index: number;
  partitions: number[];
  plannedWorker?: string;
  /** Worker of the successful attempt. */
  workerId?: string;
  estimatedBytes?: number;
  inputBytes?: number;
  inputRecords?: number;
  taskMs?: number;
}

/** A stopwatch for what planning costs (ms, any origin); the books read no clock of their own. */
export type Stopwatch = () => number;

/**
 * A job's virtual partitions and their assignment to reduce tasks, kept by the books for both
 * engines (the JobTracker's maps partition by it and its reduces read by it; the simulator's reduce
 * work follows the bytes it assigns).
 *
 * Maps write P = factor x R partitions. Which partitions a reduce reads is decided once:
 *  - 'hash': reduce i reads {p : p mod R = i}. Because P is a multiple of R, (h mod P) mod R = h mod R:
 *    every key goes to the reducer it goes to today, whatever the factor (same output bytes).
 *  - 'simple': when the last map has finished (the books open such a job's reduces only then,
 *    whatever its slow start), from the exact partition sizes the maps reported, by Simple
 *    Partitions Assignment.
 *  - 'cms': at submission, from the client's sketch (the maps must know the row's hash before they
 *    write anything), by Count-Min Sketch Assignment.
 *
 * Reducer i of an assignment is planned on a worker (reduce slots of the live workers, dealt round
 * robin by worker id) and estimated with that worker's speed. The scheduling policy, not the
 * books, picks where a reduce task runs, so the plan is kept by binding lazily: when a reduce
 * task is first launched on worker W it takes an unclaimed group of partitions planned for W, or
 * failing that the group planned on the worker whose speed is closest to W's. The task keeps its
 * group for every later attempt. (With one reduce slot per worker and R = workers, as in the skew
 * benchmark, every worker gets exactly the group planned for it.)
 */
export class JobSkew {
  readonly strategy: SkewStrategy;
  readonly factor: number;
  readonly reducers: number;
  /** P, the number of map output partitions. */
  readonly partitions: number;
  /** Murmur3 seed the maps partition with (the chosen sketch row; 0 is the default partitioner). */
  seed = 0;
  row?: number;
  rowMakespans?: number[];
  assignmentMs = 0;
  readonly sampleMs?: number;
  readonly sampledRecords?: number;
  private groups?: PartitionGroup[];
  private readonly groupOfTask: (number | undefined)[] = [];
  private speeds?: Record<string, number>;
  private estimatedMakespan?: number;
  private reducePhaseStart?: number;
  private reducePhaseEnd?: number;

  private readonly sketch?: SketchWire;

  constructor(plan: SkewPlan, reducers: number) {
    this.strategy = plan.strategy;
    this.factor = plan.partitionFactor;
    this.reducers = reducers;
    this.partitions = reducers * this.factor;
    if (plan.sketch) this.sketch = plan.sketch;
    if (plan.sampleMs !== undefined) this.sampleMs = plan.sampleMs;
    if (plan.sampledRecords !== undefined) this.sampledRecords = plan.sampledRecords;
  }

  get isPlanned(): boolean {
    return this.groups !== undefined;
  }

  /** Whether the assignment must be made before any map runs ('cms'), from the client's sketch. */
  get plansAtSubmission(): boolean {
    return this.strategy === 'cms' && this.reducers > 0 && this.sketch !== undefined;
  }

  /** 'simple' needs every partition's size: its reduces wait for the last map. */
  get needsEveryMap(): boolean {
    return this.strategy === 'simple' && this.reducers > 0;
  }

  /** 'cms': chooses the row and the reducer of every partition from the sketch. */
  planFromSketch(slots: readonly ReducerSlot[], stopwatch: Stopwatch): void {
    const started = stopwatch();
    const sketch = CountMinSketch.fromWire(this.sketch!);
    const chosen = sketchAssignment(
      sketch,
      slots.map((s) => s.speed),
    );
    this.row = chosen.row;
    this.seed = chosen.seed;
    this.rowMakespans = chosen.rowMakespans;
    this.adopt(chosen.assignment, slots);
    this.assignmentMs += stopwatch() - started;
  }

  /** 'hash' and 'simple': assigns from the partition sizes the maps measured (bytes of each partition). */
  planFromMapOutputs(partitionBytes: readonly number[], slots: readonly ReducerSlot[], stopwatch: Stopwatch): void {
    const started = stopwatch();
    const speeds = slots.map((s) => s.speed);
    this.adopt(
      this.strategy === 'simple' ? simpleAssignment(partitionBytes, speeds) : hashAssignment(partitionBytes, speeds),
      slots,
    );
    this.assignmentMs += stopwatch() - started;
  }

  private adopt(assignment: PartitionAssignment, slots: readonly ReducerSlot[]): void {
    const lists = partitionsByReducer(assignment.reducerOf, this.reducers);
    this.groups = lists.map((partitions, i) => ({
      partitions,
      estimatedBytes: assignment.loads[i]!,
      plannedWorker: slots[i]?.workerId,
      plannedSpeed: slots[i]?.speed ?? 1,
      claimedBy: undefined,
    }));
    this.estimatedMakespan = assignment.makespan;
    this.speeds = {};
    for (const s of slots) this.speeds[s.workerId] = round3(s.speed);
    // 'hash' is not a plan of placements: reduce i reads partitions {p : p mod R = i}, as today.
    if (this.strategy === 'hash') this.groups.forEach((_, i) => this.claim(i, i));
  }

  /** The partitions reduce task `taskIndex` reads, binding it to a group on its first launch. */
  partitionsFor(taskIndex: number, workerId: string, speedOf: (workerId: string) => number): number[] {
    const groups = this.groups!;
    let g = this.groupOfTask[taskIndex];
    if (g === undefined) {
      const free = groups.map((_, i) => i).filter((i) => groups[i]!.claimedBy === undefined);
      const speed = speedOf(workerId);
      g =
        free.find((i) => groups[i]!.plannedWorker === workerId) ??
        free.reduce(
          (best, i) =>
            Math.abs(groups[i]!.plannedSpeed - speed) < Math.abs(groups[best]!.plannedSpeed - speed) ? i : best,
          free[0]!,
        );
      this.claim(g, taskIndex);
    }
    return groups[g]!.partitions;
  }

  private claim(group: number, taskIndex: number): void {
    this.groups![group]!.claimedBy = taskIndex;
    this.groupOfTask[taskIndex] = group;
  }

  reduceLaunched(now: number): void {
    this.reducePhaseStart ??= now;
  }

  reducesDone(now: number): void {
    this.reducePhaseEnd = now;
  }

  /** The job counters the reduce phase adds, once its last reduce succeeded. */
  get counters(): Readonly<Record<string, number>> {
    if (this.reducePhaseEnd === undefined) return {};
    return {
      REDUCE_PHASE_MS: this.reducePhaseEnd - (this.reducePhaseStart ?? this.reducePhaseEnd),
      SKEW_ASSIGNMENT_MS: round3(this.assignmentMs),
    };
  }

  status(
    reduces: readonly { index: number; successfulAttempt?: { workerId: string; counters: Counts } }[],
  ): SkewStatus {
    return {
      strategy: this.strategy,
      partitionFactor: this.factor,
      partitions: this.partitions,
      row: this.row,
      seed: this.strategy === 'cms' ? this.seed : undefined,
      rowMakespans: this.rowMakespans?.map(round3),
      sampleMs: this.sampleMs,
      sampledRecords: this.sampledRecords,
      assignmentMs: this.isPlanned ? round3(this.assignmentMs) : undefined,
      speeds: this.speeds,
      estimatedMakespan: this.estimatedMakespan === undefined ? undefined : round3(this.estimatedMakespan),
      reducePhaseMs:
        this.reducePhaseEnd !== undefined && this.reducePhaseStart !== undefined
          ? this.reducePhaseEnd - this.reducePhaseStart
          : undefined,
      reducers: reduces.map((task) => {
        const g = this.groupOfTask[task.index];
        const group = g === undefined ? undefined : this.groups?.[g];
        const done = task.successfulAttempt;
        return {
          index: task.index,
          partitions: group?.partitions ?? [],
          plannedWorker: group?.plannedWorker,
          workerId: done?.workerId,
          estimatedBytes: group?.estimatedBytes,
          inputBytes: done?.counters.REDUCE_INPUT_BYTES,
          inputRecords: done?.counters.REDUCE_INPUT_RECORDS,
          taskMs: done?.counters.TASK_MS,
        };
      }),
    };
  }
}

interface PartitionGroup {
  readonly partitions: number[];
  readonly estimatedBytes: number;
  readonly plannedWorker: string | undefined;
  readonly plannedSpeed: number;
  claimedBy: number | undefined;
}

type Counts = Readonly<Record<string, number | undefined>>;

/**
 * The books' side of skew assignment, across jobs: reducer slots planned on the live workers,
 * weighted by the speeds their successful attempts measured.
 */
export class SkewPlanner {
  private readonly speeds = new WorkerSpeedBook();

  constructor(
    private readonly liveWorkers: () => readonly { readonly workerId: string; readonly reduceSlots: number }[],
    private readonly stopwatch: Stopwatch,
  ) {}

  private reducerSlots(reducers: number): ReducerSlot[] {
    const workers = this.liveWorkers();
    const speeds = this.speeds.relativeSpeeds(workers.map((w) => w.workerId));
    return planReducerSlots(workers, reducers, (id) => speeds.get(id) ?? 1);
  }

  /** Plans a 'cms' job from its sketch before its maps run; false when the job plans later. */
  planAtSubmission(skew: JobSkew): boolean {
    if (!skew.plansAtSubmission) return false;
    skew.planFromSketch(this.reducerSlots(skew.reducers), this.stopwatch);
    return true;
  }

  /** The partitions a reduce attempt on `workerId` reads, planning the job from its map outputs first if need be. */
  partitionsFor(
    skew: JobSkew,
    mapOutputBytes: () => readonly number[],
    taskIndex: number,
    workerId: string,
    launchedAt: number,
  ): number[] {
    if (!skew.isPlanned) skew.planFromMapOutputs(mapOutputBytes(), this.reducerSlots(skew.reducers), this.stopwatch);
    skew.reduceLaunched(launchedAt);
    const ids = this.liveWorkers().map((w) => w.workerId);
    const speeds = this.speeds.relativeSpeeds(ids.includes(workerId) ? ids : [...ids, workerId]);
    return [...skew.partitionsFor(taskIndex, workerId, (id) => speeds.get(id) ?? 1)];
  }

  attemptSucceeded(workerId: string, kind: TaskKind, bytes: number, ms: number): void {
    this.speeds.record(workerId, kind, bytes, ms);
  }
}

/** A reducer of a plan: the worker it is expected to run on and that worker's relative speed. */
export interface ReducerSlot {
  readonly workerId: string;
  readonly speed: number;
}

/**
 * Reduce slots of the given workers dealt round robin in worker id order (first slot of every worker,
 * then second slots...), one per reducer; wraps around when there are more reducers than slots.
 */
export function planReducerSlots(
  workers: readonly { workerId: string; reduceSlots: number }[],
  reducers: number,
  speedOf: (workerId: string) => number,
): ReducerSlot[] {
  const sorted = [...workers]
    .filter((w) => w.reduceSlots > 0)
    .sort((a, b) => (a.workerId < b.workerId ? -1 : a.workerId > b.workerId ? 1 : 0));
  const order: string[] = [];
  const levels = Math.max(0, ...sorted.map((w) => w.reduceSlots));
  for (let level = 0; level < levels; level++)
    for (const w of sorted) if (w.reduceSlots > level) order.push(w.workerId);
  if (order.length === 0) return Array.from({ length: reducers }, (_, i) => ({ workerId: `unknown-${i}`, speed: 1 }));
  return Array.from({ length: reducers }, (_, i) => {
    const workerId = order[i % order.length]!;
    return { workerId, speed: speedOf(workerId) };
  });
}

/** Completed tasks kept per worker and kind for its rate. */
const RATE_WINDOW = 16;

/**
 * Each worker's measured processing rate, from its completed tasks: bytes of task input (reduce input
 * for reduces, split bytes for maps) over the task's own time (TASK_MS), summed over its last
 * RATE_WINDOW tasks of a kind, so that big tasks weigh more than small ones, whose fixed costs
 * (process start, fetch latency) would make a fast worker look slow.
 */
export class WorkerSpeedBook {
  private readonly samples = new Map<string, Record<TaskKind, { bytes: number; ms: number }[]>>();

  record(workerId: string, kind: TaskKind, bytes: number, ms: number): void {
    if (!(bytes > 0 && ms > 0 && Number.isFinite(bytes) && Number.isFinite(ms))) return;
    let s = this.samples.get(workerId);
    if (!s) this.samples.set(workerId, (s = { map: [], reduce: [] }));
    const list = s[kind];
    list.push({ bytes, ms });
    if (list.length > RATE_WINDOW) list.shift();
  }

  /** Bytes per second of `kind` tasks on the worker, if it completed any. */
  rate(workerId: string, kind: TaskKind): number | undefined {
    const list = this.samples.get(workerId)?.[kind];
    if (!list || list.length === 0) return undefined;
    let bytes = 0;
    let ms = 0;
    for (const x of list) {
      bytes += x.bytes;
      ms += x.ms;
    }
    return (bytes / ms) * 1000;
  }

  /**
   * Speeds of `workerIds` relative to their mean (so 1 = average; only ratios matter to an
   * assignment). Reduce rates where measured, normalised among the workers that have one; else map
   * rates, normalised likewise; else the neutral 1. Maps are the fallback because reduce rates are
   * what estimated reduce times need, but a new cluster has run maps before any reduce.
   */
  relativeSpeeds(workerIds: readonly string[]): Map<string, number> {
    const meanOf = (kind: TaskKind): number | undefined => {
      const rates = workerIds.map((w) => this.rate(w, kind)).filter((r): r is number => r !== undefined);
      return rates.length === 0 ? undefined : rates.reduce((a, b) => a + b, 0) / rates.length;
    };
    const meanReduce = meanOf('reduce');
    const meanMap = meanOf('map');
    const out = new Map<string, number>();
    for (const w of workerIds) {
      const r = this.rate(w, 'reduce');
      const m = this.rate(w, 'map');
      out.set(w, r !== undefined && meanReduce ? r / meanReduce : m !== undefined && meanMap ? m / meanMap : 1);
    }
    return out;
  }
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
