/**
 * YARN-ME's timeline generator (yarn-me.md): when will each job finish if every task from now on
 * ran regularly? Per node, the running attempts free their memory and slots at their predicted
 * ends; the queued tasks, taken in queue order, each start on the node where it fits first (the
 * one with the most free memory at that time) and run their ideal duration there. A job's
 * estimated completion is the latest end among its running attempts and its placed tasks.
 *
 * The placement is a list schedule in queue order: a task never starts before the one queued
 * ahead of it, as YARN's reservations keep a job's next task first in line. A task larger than any
 * node never fits regularly and gets no end (its job can only be helped by elasticity).
 *
 * Placement is lazy: jobs are placed in queue order only as far as an estimate is asked for, and a
 * job's estimate depends only on the jobs ahead of it, so asking for the head of the queue is cheap
 * however long the queue is.
 */
import { EventHeap } from '../util/index.js';
import type { TaskKind, WorkerView } from './types.js';

/** A node as the timeline needs it: a worker's size and what is free on it now. */
export type TimelineNode = Pick<WorkerView, 'id' | 'memoryMb' | 'mapSlots' | 'reduceSlots' | 'freeMemoryMb' | 'freeMapSlots' | 'freeReduceSlots'>;

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

/** A job of the queue with the tasks it still has to run regularly, in order. */
export interface TimelineJob {
  readonly id: string;
  readonly tasks: readonly TimelineTasks[];
}

interface NodeState {
  readonly index: number;
  freeMemoryMb: number;
  readonly freeSlots: Record<TaskKind, number>;
  /** Position in each kind's heap. */
  readonly at: Record<TaskKind, number>;
}

/**
 * Nodes by free memory, most first, among those with a free slot of one kind (the others sit at
 * the bottom with key -1). Positions are tracked so a node's key can change in place.
 */
class NodesByFreeMemory {
  private readonly heap: NodeState[] = [];
  constructor(private readonly kind: TaskKind) {}

  private key(n: NodeState): number {
    return n.freeSlots[this.kind] > 0 ? n.freeMemoryMb : -1;
  }

  add(n: NodeState): void {
    n.at[this.kind] = this.heap.length;
    this.heap.push(n);
    this.update(n);
  }

  top(): NodeState | undefined {
    return this.heap[0];
  }

  topKey(): number {
    const t = this.heap[0];
    return t === undefined ? -1 : this.key(t);
  }

  /** Restores the order after `n`'s free memory or slots changed. */
  update(n: NodeState): void {
    const h = this.heap;
    let i = n.at[this.kind];
    const k = this.key(n);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(k, n, h[parent]!)) break;
      this.put(h[parent]!, i);
      i = parent;
    }
    for (;;) {
      const l = 2 * i + 1;
      if (l >= h.length) break;
      const r = l + 1;
      const c = r < h.length && this.before(this.key(h[r]!), h[r]!, h[l]!) ? r : l;
      if (!this.before(this.key(h[c]!), h[c]!, n)) break;
      this.put(h[c]!, i);
      i = c;
    }
    this.put(n, i);
  }

  /** More free memory first; ties by node order, so placements never depend on the heap's shape. */
  private before(k: number, n: NodeState, other: NodeState): boolean {
    const ko = this.key(other);
    return k > ko || (k === ko && n.index < other.index);
  }

  private put(n: NodeState, i: number): void {
    this.heap[i] = n;
    n.at[this.kind] = i;
  }
}

export class Timeline {
  private readonly nodes: NodeState[] = [];
  private readonly byFree: Record<TaskKind, NodesByFreeMemory> = { map: new NodesByFreeMemory('map'), reduce: new NodesByFreeMemory('reduce') };
  /** What running or placed tasks give back, and when: memory and `slots` slots of `kind`. */
  private readonly releases = new EventHeap<{ node: NodeState; kind: TaskKind; memoryMb: number; slots: number }>();
  /** The most memory of a node with slots of each kind: a bigger task never fits regularly. */
  private readonly largestNodeMb: Record<TaskKind, number> = { map: 0, reduce: 0 };
  private readonly completion = new Map<string, number>();
  private clock: number;
  private placedJobs = 0;

  /**
   * `jobs` in queue order. Times are ms on the snapshot's clock; releases due before `now` are
   * taken as due now (an attempt past its predicted end is about to end).
   */
  constructor(
    readonly now: number,
    nodes: readonly TimelineNode[],
    running: readonly TimelineRelease[],
    private readonly jobs: readonly TimelineJob[],
  ) {
    this.clock = now;
    const byId = new Map<string, NodeState>();
    nodes.forEach((n, index) => {
      const state: NodeState = {
        index,
        freeMemoryMb: Math.max(0, n.freeMemoryMb),
        freeSlots: { map: Math.max(0, n.freeMapSlots), reduce: Math.max(0, n.freeReduceSlots) },
        at: { map: -1, reduce: -1 },
      };
      if (n.mapSlots > 0) this.largestNodeMb.map = Math.max(this.largestNodeMb.map, n.memoryMb);
      if (n.reduceSlots > 0) this.largestNodeMb.reduce = Math.max(this.largestNodeMb.reduce, n.memoryMb);
      this.nodes.push(state);
      byId.set(n.id, state);
      this.byFree.map.add(state);
      this.byFree.reduce.add(state);
    });
    for (const r of running) {
      const end = Math.max(now, r.endMs);
      this.extend(r.jobId, end);
      const node = byId.get(r.nodeId);
      if (node) this.releases.push(end, { node, kind: r.kind, memoryMb: r.memoryMb, slots: 1 });
    }
  }

  /**
   * The estimated completion of job `jobId` (ms), placing the queue up to it first; undefined for a
   * job that is neither queued nor running (or whose tasks never fit and has nothing running).
   */
  completionOf(jobId: string): number | undefined {
    while (this.placedJobs < this.jobs.length && !this.placedUpTo(jobId)) this.placeNextJob();
    return this.completion.get(jobId);
  }

  private placedUpTo(jobId: string): boolean {
    for (let i = 0; i < this.placedJobs; i++) if (this.jobs[i]!.id === jobId) return true;
    return false;
  }

  private extend(jobId: string, endMs: number): void {
    const known = this.completion.get(jobId);
    if (known === undefined || endMs > known) this.completion.set(jobId, endMs);
  }

  /** Places the next job's tasks, as many alike ones at once as fit on the chosen node. */
  private placeNextJob(): void {
    const job = this.jobs[this.placedJobs++]!;
    for (const group of job.tasks) {
      const { kind, memoryMb, durationMs } = group;
      if (memoryMb > this.largestNodeMb[kind]) continue;
      for (let left = group.count; left > 0; ) {
        const node = this.firstFit(kind, memoryMb);
        if (!node) break;
        const n = Math.min(left, node.freeSlots[kind], memoryMb > 0 ? Math.floor(node.freeMemoryMb / memoryMb) : left);
        node.freeMemoryMb -= n * memoryMb;
        node.freeSlots[kind] -= n;
        this.reorder(node);
        const end = this.clock + durationMs;
        this.releases.push(end, { node, kind, memoryMb: n * memoryMb, slots: n });
        this.extend(job.id, end);
        left -= n;
      }
    }
  }

  /** The node with the most free memory once `memoryMb` and a slot of `kind` are free on one; time moves on to then. */
  private firstFit(kind: TaskKind, memoryMb: number): NodeState | undefined {
    const heap = this.byFree[kind];
    while (heap.topKey() < memoryMb) {
      const next = this.releases.pop();
      if (!next) return undefined;
      this.clock = Math.max(this.clock, next.time);
      const { node } = next.value;
      node.freeMemoryMb += next.value.memoryMb;
      node.freeSlots[next.value.kind] += next.value.slots;
      this.reorder(node);
    }
    return heap.top();
  }

  private reorder(node: NodeState): void {
    this.byFree.map.update(node);
    this.byFree.reduce.update(node);
  }
}
