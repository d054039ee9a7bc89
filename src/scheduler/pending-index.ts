/**
 * A job's pending tasks indexed by where their input is, so a policy finds the best-placed task for
 * a worker without scanning every pending task for every free slot (on 3000 workers with thousands
 * of pending tasks, that scan was most of the simulator's time).
 *
 * The index is a memo of a `pendingTasks` array: snapshots are immutable and the books hand out the
 * same array while a job's pending tasks do not change, so the index is built once per change and
 * shared by every later call, and a policy stays a pure function of its snapshots.
 */
import { Rank, rankOf } from './rooms.js';
import type { TaskKind, TaskView, WorkerView } from './types.js';

const NONE: readonly TaskView[] = [];

/** Lists this short are scanned: building their index would cost more than it saves. */
const SCAN_UP_TO = 32;
/** Tasks looked at for a node-local one before the index is used. */
const PROBE = 64;

interface KindIndex {
  readonly all: TaskView[];
  readonly homeless: TaskView[];
  readonly byWorker: Map<string, TaskView[]>;
  readonly byRack: Map<string, TaskView[]>;
  minMemoryMb: number;
}

export interface PendingIndex {
  /** Pending tasks of `kind`, in `pendingTasks` order. */
  all(kind: TaskKind): readonly TaskView[];
  /** The least memory a pending task of `kind` asks for; infinite when there is none. */
  minMemoryMb(kind: TaskKind): number;
  /** Those whose input is on `workerId`, in order. */
  onWorker(kind: TaskKind, workerId: string): readonly TaskView[];
  /** Those whose input is on `rack`, in order. */
  onRack(kind: TaskKind, rack: string): readonly TaskView[];
  /** Those with no stored input, in order. */
  homeless(kind: TaskKind): readonly TaskView[];
}

const memo = new WeakMap<readonly TaskView[], PendingIndex>();

function emptyKind(): KindIndex {
  return { all: [], homeless: [], byWorker: new Map(), byRack: new Map(), minMemoryMb: Number.POSITIVE_INFINITY };
}

function push(map: Map<string, TaskView[]>, key: string, task: TaskView): void {
  const list = map.get(key);
  if (list) list.push(task);
  else map.set(key, [task]);
}

/** The least memory a pending task of `kind` asks for (infinite when none), once per list. */
export function minPendingMemoryMb(tasks: readonly TaskView[], kind: TaskKind): number {
  let mins = minMemo.get(tasks);
  if (!mins) {
    mins = { map: Number.POSITIVE_INFINITY, reduce: Number.POSITIVE_INFINITY };
    for (const t of tasks) if (t.memoryMb < mins[t.kind]) mins[t.kind] = t.memoryMb;
    minMemo.set(tasks, mins);
  }
  return mins[kind];
}

const minMemo = new WeakMap<readonly TaskView[], { map: number; reduce: number }>();

export function pendingIndex(tasks: readonly TaskView[]): PendingIndex {
  const known = memo.get(tasks);
  if (known) return known;
  const kinds = { map: emptyKind(), reduce: emptyKind() };
  for (const t of tasks) {
    const k = kinds[t.kind];
    k.all.push(t);
    if (t.memoryMb < k.minMemoryMb) k.minMemoryMb = t.memoryMb;
    if (t.preferredWorkers.length === 0) k.homeless.push(t);
    for (const w of t.preferredWorkers) push(k.byWorker, w, t);
    for (const r of t.preferredRacks) push(k.byRack, r, t);
  }
  const index: PendingIndex = {
    all: (kind) => kinds[kind].all,
    minMemoryMb: (kind) => kinds[kind].minMemoryMb,
    onWorker: (kind, workerId) => kinds[kind].byWorker.get(workerId) ?? NONE,
    onRack: (kind, rack) => kinds[kind].byRack.get(rack) ?? NONE,
    homeless: (kind) => kinds[kind].homeless,
  };
  memo.set(tasks, index);
  return index;
}

/**
 * Picks, within one policy call, a job's best-placed task for a worker: the first (in
 * `pendingTasks` order) of the best rank (`rankOf`: node, rack, homeless, off-rack) among the tasks
 * that `fits` and are not yet launched in this call; with `demote`, the tasks it names rank after
 * all others. The result is the one a scan of every pending task would choose.
 */
export class BestPlacedPicker {
  /** Per list, how many tasks at its front are launched already (launches only grow in a call). */
  private readonly skip = new Map<readonly TaskView[], number>();

  constructor(
    private readonly launched: ReadonlySet<string>,
    private readonly demote?: (task: TaskView, worker: WorkerView) => boolean,
  ) {}

  pick(
    tasks: readonly TaskView[],
    kind: TaskKind,
    worker: WorkerView,
    fits: (task: TaskView) => boolean,
  ): TaskView | undefined {
    if (tasks.length <= SCAN_UP_TO) return this.scan(tasks, kind, worker, fits);
    // On a small cluster the first node-local task is usually a few tasks in: look there before
    // building (or fetching) the index, which pays off where a worker holds few of the inputs.
    const local = this.first(
      tasks,
      (t) =>
        t.kind === kind && t.preferredWorkers.includes(worker.id) && fits(t) && !(this.demote?.(t, worker) ?? false),
      PROBE,
    );
    if (local) return local;
    const index = pendingIndex(tasks);
    const all = index.all(kind);
    if (all.length === 0) return undefined;
    const usable = (t: TaskView) => fits(t) && !(this.demote?.(t, worker) ?? false);
    return (
      this.first(index.onWorker(kind, worker.id), usable) ??
      this.first(index.onRack(kind, worker.rack), usable) ??
      this.first(index.homeless(kind), usable) ??
      // Nothing usable is node-local, rack-local or homeless here: the first usable task is off-rack.
      this.first(all, usable) ??
      (this.demote ? this.first(all, (t) => fits(t) && this.demote!(t, worker)) : undefined)
    );
  }

  /** The same choice by looking at every task: cheaper than building an index for a short list. */
  private scan(
    tasks: readonly TaskView[],
    kind: TaskKind,
    worker: WorkerView,
    fits: (task: TaskView) => boolean,
  ): TaskView | undefined {
    let best: TaskView | undefined;
    let bestRank = Number.POSITIVE_INFINITY;
    for (const t of tasks) {
      if (t.kind !== kind || this.launched.has(t.id) || !fits(t)) continue;
      const r = this.demote?.(t, worker) ? Rank.OffRack + 1 : rankOf(t, worker);
      if (r < bestRank) {
        best = t;
        bestRank = r;
        if (r === Rank.Node) break;
      }
    }
    return best;
  }

  /** The first task of `list` not launched that is `ok`, looking at `limit` tasks at most. */
  private first(
    list: readonly TaskView[],
    ok: (task: TaskView) => boolean,
    limit = Number.POSITIVE_INFINITY,
  ): TaskView | undefined {
    let start = this.skip.get(list) ?? 0;
    while (start < list.length && this.launched.has(list[start]!.id)) start++;
    if (start > 0) this.skip.set(list, start);
    const end = Math.min(list.length, start + limit);
    for (let i = start; i < end; i++) {
      const t = list[i]!;
      if (!this.launched.has(t.id) && ok(t)) return t;
    }
    return undefined;
  }
}
