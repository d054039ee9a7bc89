/**
 * YARN-ME's timeline generator (docs/specs/yarn-me.md): when will each job finish if every task from now on
 * ran regularly? Per node, the running attempts free their memory and slots at their predicted
 * ends; the queued tasks are placed as the fair scheduler would place them: whenever there is
 * room, the next task of the job using the least memory (per the queue's order among equals)
 * starts on the node with the most free memory, at its ideal memory, for its estimated duration.
 * A job's estimated completion is the latest end among its running attempts and placed tasks.
 *
 * The next task of the job first in line waits for room (as YARN's reservations keep it first in
 * line), and time moves on to the next release until it fits. A task larger than any node never
 * fits regularly and gets no end (only elasticity can run it).
 *
 * The queue is placed in that order, O(log(nodes + jobs)) per step, but only as far as the
 * questions asked need: a job's completion is known once its last task is placed, and whether it
 * ends at or after a given time as soon as one of its ends does (its completion only grows as
 * its tasks are placed). On 3000 nodes the queue holds hundreds of thousands of tasks, while
 * YARN-ME asks about the jobs first in line, which are placed first; placing all of it per
 * timeline made the timeline the cost of a run. Placing is the same steps in the same order
 * whatever is asked and when, so the answers are those of placing everything at once. For the
 * same reason a job's tasks are read only when it comes up in line, and the running attempts come
 * already in the order they end (RunningReleases, which NodeHoldings keeps between rebuilds): a
 * rebuild reads only as many of them as the placing reaches.
 */
import type { TaskKind, WorkerView } from './types.js';

/** A node as the timeline needs it: a worker's size and what is free on it now. */
export type TimelineNode = Pick<
  WorkerView,
  'id' | 'memoryMb' | 'mapSlots' | 'reduceSlots' | 'freeMemoryMb' | 'freeMapSlots' | 'freeReduceSlots'
>;

/** A running attempt: what it gives back, and when (predicted). */
export interface TimelineRelease {
  readonly nodeId: string;
  readonly jobId: string;
  readonly kind: TaskKind;
  readonly memoryMb: number;
  readonly endMs: number;
}

/** `count` alike tasks of a job (most jobs' pending tasks are one or two such groups). */
export interface TimelineTasks {
  readonly kind: TaskKind;
  readonly memoryMb: number;
  readonly durationMs: number;
  readonly count: number;
}

/**
 * The running attempts as the timeline releases them: by predicted end, an end already passed taken
 * as now, ties in the snapshot's order (of its jobs, then of each job's attempts); and each job's
 * latest predicted end. NodeHoldings keeps this between calls; `runningInOrder` makes it of a list.
 */
export interface RunningReleases {
  readonly releases: readonly TimelineRelease[];
  latestEndMs(jobId: string): number | undefined;
}

/** `running` (in the snapshot's order) as the timeline releases it at `now`. */
export function runningInOrder(now: number, running: readonly TimelineRelease[]): RunningReleases {
  const latest = new Map<string, number>();
  for (const r of running) latest.set(r.jobId, Math.max(latest.get(r.jobId) ?? r.endMs, r.endMs));
  // Array.prototype.sort is stable: equal ends keep the snapshot's order.
  const releases = [...running].sort((a, b) => Math.max(now, a.endMs) - Math.max(now, b.endMs));
  return { releases, latestEndMs: (jobId) => latest.get(jobId) };
}

/**
 * A job of the queue: the tasks it still has to run regularly, in order
 * (read when the job comes up in line: it must not change).
 */
export interface TimelineJob {
  readonly id: string;
  readonly tasks: readonly TimelineTasks[];
}

/** Something a heap can hold: it keeps its own position (-1 when not in the heap). */
interface Placed {
  at: number;
}

/** A binary heap whose items' keys change in place (each item keeps its position). */
class IndexedHeap<T extends Placed> {
  private readonly items: T[] = [];
  constructor(private readonly before: (a: T, b: T) => boolean) {}

  get top(): T | undefined {
    return this.items[0];
  }

  /** The item that would be on top without the top one: the better of its children. */
  secondToTop(): T | undefined {
    const a = this.items[1];
    const b = this.items[2];
    return a === undefined || (b !== undefined && this.before(b, a)) ? b : a;
  }

  add(item: T): void {
    item.at = this.items.length;
    this.items.push(item);
    this.update(item);
  }

  remove(item: T): void {
    const i = item.at;
    if (i < 0) return;
    const last = this.items.pop()!;
    item.at = -1;
    if (last !== item) {
      this.put(last, i);
      this.update(last);
    }
  }

  /** Restores the order after `item`'s key changed. */
  update(item: T): void {
    const h = this.items;
    let i = item.at;
    if (i < 0) return;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(item, h[parent]!)) break;
      this.put(h[parent]!, i);
      i = parent;
    }
    for (;;) {
      const l = 2 * i + 1;
      if (l >= h.length) break;
      const c = l + 1 < h.length && this.before(h[l + 1]!, h[l]!) ? l + 1 : l;
      if (!this.before(h[c]!, item)) break;
      this.put(h[c]!, i);
      i = c;
    }
    this.put(item, i);
  }

  private put(item: T, i: number): void {
    this.items[i] = item;
    item.at = i;
  }
}

interface NodeState {
  readonly index: number;
  freeMemoryMb: number;
  readonly freeSlots: Record<TaskKind, number>;
}

interface QueuedJob extends Placed {
  readonly id: string;
  /** Position in the queue: the order among jobs using as much memory. */
  readonly rank: number;
  usedMb: number;
  readonly source: TimelineJob;
  /** Tasks left to place, as groups (null until read from `source`); `group`'s `left` are still to place. */
  groups: readonly TimelineTasks[] | null;
  group: number;
  left: number;
}

/** What placed tasks give back to their node and job when they end. */
interface PlacedRelease extends Placed {
  readonly endMs: number;
  readonly seq: number;
  readonly node: NodeState;
  readonly job: QueuedJob;
  readonly kind: TaskKind;
  readonly memoryMb: number;
  readonly slots: number;
}

/** A node in one kind's heap. */
interface NodeEntry extends Placed {
  readonly node: NodeState;
}

/** More free memory first among nodes with a free slot of `kind`; ties by node order, never by heap shape. */
function nodeOrder(kind: TaskKind): (a: NodeEntry, b: NodeEntry) => boolean {
  return (a, b) => {
    const x = a.node.freeSlots[kind] > 0 ? a.node.freeMemoryMb : -1;
    const y = b.node.freeSlots[kind] > 0 ? b.node.freeMemoryMb : -1;
    return x > y || (x === y && a.node.index < b.node.index);
  };
}

export class Timeline {
  private readonly nodes: NodeState[] = [];
  /** Each node's place in each kind's heap, by node index. */
  private readonly entries: Record<TaskKind, NodeEntry[]> = { map: [], reduce: [] };
  private readonly byFree: Record<TaskKind, IndexedHeap<NodeEntry>> = {
    map: new IndexedHeap(nodeOrder('map')),
    reduce: new IndexedHeap(nodeOrder('reduce')),
  };
  /** Jobs with tasks left to place (or not yet known to have none), the one using the least memory first. */
  private readonly queue = new IndexedHeap<QueuedJob>(
    (a, b) => a.usedMb < b.usedMb || (a.usedMb === b.usedMb && a.rank < b.rank),
  );
  private readonly jobsById = new Map<string, QueuedJob>();
  /** What placed tasks give back, and when (in the order placed among equal times). */
  private readonly placed = new IndexedHeap<PlacedRelease>(
    (a, b) => a.endMs < b.endMs || (a.endMs === b.endMs && a.seq < b.seq),
  );
  private placedSeq = 0;
  /**
   * What running attempts give back, in order (before placed tasks ending at the same time), and
   * how many of them were given back.
   */
  private readonly running: RunningReleases;
  private runningReleased = 0;
  private readonly nodesById = new Map<string, NodeState>();
  /** The most memory of a node with slots of each kind: a bigger task never fits regularly. */
  private readonly largestNodeMb: Record<TaskKind, number> = { map: 0, reduce: 0 };
  private readonly completion = new Map<string, number>();
  /** The kinds some node has slots for. */
  private readonly kinds: readonly TaskKind[];
  private clock: number;

  /**
   * `jobs` in queue order, `usedMb` the memory each holds now, `running` the running attempts (in
   * the snapshot's order, or as RunningReleases). Times are ms on the snapshot's clock; releases due
   * before `now` are taken as due now (an attempt past its predicted end is about to end).
   */
  constructor(
    readonly now: number,
    nodes: readonly TimelineNode[],
    running: readonly TimelineRelease[] | RunningReleases,
    jobs: readonly TimelineJob[],
    usedMb: Pick<ReadonlyMap<string, number>, 'get'> = new Map(),
  ) {
    this.clock = now;
    this.running = 'releases' in running ? running : runningInOrder(now, running);
    const byId = this.nodesById;
    nodes.forEach((n, index) => {
      const state: NodeState = {
        index,
        freeMemoryMb: Math.max(0, n.freeMemoryMb),
        freeSlots: { map: Math.max(0, n.freeMapSlots), reduce: Math.max(0, n.freeReduceSlots) },
      };
      this.entries.map.push({ node: state, at: -1 });
      this.entries.reduce.push({ node: state, at: -1 });
      if (n.mapSlots > 0) this.largestNodeMb.map = Math.max(this.largestNodeMb.map, n.memoryMb);
      if (n.reduceSlots > 0) this.largestNodeMb.reduce = Math.max(this.largestNodeMb.reduce, n.memoryMb);
      this.nodes.push(state);
      byId.set(n.id, state);
    });
    // A kind no node runs needs no order (the paper's traces have maps only).
    this.kinds = (['map', 'reduce'] as const).filter((k) => this.largestNodeMb[k] > 0);
    for (const k of this.kinds) for (const entry of this.entries[k]) this.byFree[k].add(entry);
    jobs.forEach((j, rank) =>
      this.jobsById.set(j.id, {
        at: -1,
        id: j.id,
        rank,
        usedMb: usedMb.get(j.id) ?? 0,
        source: j,
        groups: null,
        group: 0,
        left: 0,
      }),
    );
    // A job whose tasks never fit leaves the line when it comes up (firstInLine), as if never in it.
    for (const job of this.jobsById.values()) this.queue.add(job);
  }

  /**
   * The estimated completion of job `jobId` (ms); undefined for a job that is neither queued nor
   * running (or whose tasks never fit and has nothing running).
   */
  completionOf(jobId: string): number | undefined {
    const job = this.inLine(jobId);
    while (job !== undefined && job.at >= 0 && this.placeNext());
    return this.completionSoFar(jobId);
  }

  /**
   * Whether a task of job `jobId` ending at `endMs` ends no later than the job would
   * (completionOf), or the job has no estimated completion.
   */
  withinJob(jobId: string, endMs: number): boolean {
    const job = this.inLine(jobId);
    // Its completion only grows while its tasks are placed: one end at or past endMs answers.
    while (
      job !== undefined &&
      job.at >= 0 &&
      !((this.completionSoFar(jobId) ?? Number.NEGATIVE_INFINITY) >= endMs) &&
      this.placeNext()
    );
    const end = this.completionSoFar(jobId);
    return end === undefined || endMs <= end;
  }

  /** The job `jobId` if it is still in line; one whose tasks never fit leaves it first. */
  private inLine(jobId: string): QueuedJob | undefined {
    const job = this.jobsById.get(jobId);
    if (job === undefined || job.at < 0) return undefined;
    if (this.hasTaskToPlace(job)) return job;
    this.queue.remove(job);
    return undefined;
  }

  /** The job's latest end so far: of its placed tasks, and of its running attempts (no earlier than now). */
  private completionSoFar(jobId: string): number | undefined {
    const placed = this.completion.get(jobId);
    if (placed !== undefined) return placed;
    const running = this.running.latestEndMs(jobId);
    return running === undefined ? undefined : Math.max(this.now, running);
  }

  private extend(jobId: string, endMs: number): void {
    const known = this.completionSoFar(jobId);
    if (known === undefined || endMs > known) this.completion.set(jobId, endMs);
    else this.completion.set(jobId, known);
  }

  /** Whether the job has a task left that fits some node (its tasks are read at the first ask). */
  private hasTaskToPlace(job: QueuedJob): boolean {
    if (job.groups === null) {
      job.groups = job.source.tasks;
      job.left = job.groups[0]?.count ?? 0;
      this.skipUnplaceable(job);
    }
    return job.group < job.groups.length;
  }

  /** Moves past groups with nothing left or too big for any node. */
  private skipUnplaceable(job: QueuedJob): void {
    const groups = job.groups ?? [];
    while (job.group < groups.length) {
      const g = groups[job.group]!;
      if (job.left > 0 && g.memoryMb <= this.largestNodeMb[g.kind]) return;
      job.group++;
      job.left = groups[job.group]?.count ?? 0;
    }
  }

  /** The job first in line with a task to place; those with none leave the line. */
  private firstInLine(): QueuedJob | undefined {
    for (let job = this.queue.top; job !== undefined; job = this.queue.top) {
      if (this.hasTaskToPlace(job)) return job;
      this.queue.remove(job);
    }
    return undefined;
  }

  /**
   * One step of placing the queue: the first in line's next tasks, else time on to the next release. False when nothing
   * is left to place.
   */
  private placeNext(): boolean {
    const job = this.firstInLine();
    if (job === undefined) return false;
    const g = job.groups![job.group]!;
    const node = this.byFree[g.kind].top?.node;
    const fits = node !== undefined && node.freeSlots[g.kind] > 0 && node.freeMemoryMb >= g.memoryMb;
    if (!fits) {
      // The first in line waits: time moves on to the next release (which may change who is first).
      if (!this.release()) this.queue.remove(job);
      return true;
    }
    // As many alike tasks as fit on the node while the job stays first in line.
    const next = this.secondUsedMb();
    let n = 0;
    do {
      node.freeMemoryMb -= g.memoryMb;
      node.freeSlots[g.kind]--;
      job.usedMb += g.memoryMb;
      job.left--;
      n++;
    } while (job.left > 0 && node.freeSlots[g.kind] > 0 && node.freeMemoryMb >= g.memoryMb && job.usedMb < next);
    this.reorder(node);
    const end = this.clock + g.durationMs;
    this.placed.add({
      at: -1,
      endMs: end,
      seq: this.placedSeq++,
      node,
      job,
      kind: g.kind,
      memoryMb: n * g.memoryMb,
      slots: n,
    });
    this.extend(job.id, end);
    this.skipUnplaceable(job);
    if (job.group < job.groups!.length) this.queue.update(job);
    else this.queue.remove(job);
    return true;
  }

  /**
   * The memory the job second in line uses: the first stays first while it uses less. The second
   * is the better of the heap top's children; one with nothing to place leaves the line, as it
   * would on reaching the top.
   */
  private secondUsedMb(): number {
    for (;;) {
      const next = this.queue.secondToTop();
      if (next === undefined) return Number.POSITIVE_INFINITY;
      if (this.hasTaskToPlace(next)) return next.usedMb;
      this.queue.remove(next);
    }
  }

  /** Applies the next release (the clock moves to it); false when none is left. */
  private release(): boolean {
    const releases = this.running.releases;
    const placed = this.placed.top;
    while (this.runningReleased < releases.length) {
      const running = releases[this.runningReleased]!;
      const endMs = Math.max(this.now, running.endMs);
      if (placed !== undefined && endMs > placed.endMs) break;
      this.runningReleased++;
      // A running attempt on a node not in the picture gives nothing back.
      const node = this.nodesById.get(running.nodeId);
      if (node === undefined) continue;
      this.give(endMs, node, this.jobsById.get(running.jobId), running.kind, running.memoryMb, 1);
      return true;
    }
    if (placed === undefined) return false;
    this.placed.remove(placed);
    this.give(placed.endMs, placed.node, placed.job, placed.kind, placed.memoryMb, placed.slots);
    return true;
  }

  /** `memoryMb` and `slots` of `kind` back to the node (and the job) at `time`. */
  private give(
    time: number,
    node: NodeState,
    job: QueuedJob | undefined,
    kind: TaskKind,
    memoryMb: number,
    slots: number,
  ): void {
    this.clock = Math.max(this.clock, time);
    node.freeMemoryMb += memoryMb;
    node.freeSlots[kind] += slots;
    this.reorder(node);
    if (job) {
      job.usedMb -= memoryMb;
      this.queue.update(job);
    }
  }

  private reorder(node: NodeState): void {
    for (const k of this.kinds) this.byFree[k].update(this.entries[k][node.index]!);
  }
}
