/**
 * YARN's side of the YARN-ME policies (docs/specs/yarn-me.md): the queue order of the Fair Scheduler and
 * node reservations. The `yarn` policy is YarnMePolicy with elasticity off (yarn-me.ts): YARN's
 * regular allocation, where a task runs only with its ideal memory, and a job that cannot place
 * its next task on a node reserves that node until it can.
 *
 * Queue order (YARN's FairSharePolicy with memory as the resource, one queue): the job using the
 * least memory per unit of weight first, then the earlier submitted, then by id. Pools are not
 * modelled: every job is a leaf of one queue, as in the paper's experiments.
 *
 * On 3000 nodes a thousand jobs wait and the policy is called hundreds of thousands of times, so
 * the queue and the reservations are kept between calls and brought up to date with what changed
 * (FairQueue, Reservations.prune): a call costs what changed, not a sort of the whole queue. The
 * order is a strict total order (ids break ties), so keeping it sorted gives the very order a
 * sort of the snapshot's jobs gives.
 */
import type { JobView } from './types.js';
import { byCodeUnit } from './rooms.js';

/** Memory each job's running attempts hold, MB. */
export function memoryInUse(jobs: readonly JobView[]): Map<string, number> {
  return new Map(jobs.map((job) => [job.id, memoryOf(job)]));
}

function memoryOf(job: JobView): number {
  let mb = 0;
  for (const a of job.runningAttempts) mb += a.memoryMb;
  return mb;
}

/** Memory in use by job id, MB (a Map, or a round's view of one). */
export type MemoryByJob = Pick<ReadonlyMap<string, number>, 'get'>;

/** Whether job `a` comes before job `b` in the fair queue, given the memory each uses. */
export function fairShareBefore(a: JobView, b: JobView, usedMb: MemoryByJob): boolean {
  const ra = (usedMb.get(a.id) ?? 0) / (a.weight > 0 ? a.weight : 1);
  const rb = (usedMb.get(b.id) ?? 0) / (b.weight > 0 ? b.weight : 1);
  if (ra !== rb) return ra < rb;
  if (a.submitTime !== b.submitTime) return a.submitTime < b.submitTime;
  return byCodeUnit(a.id, b.id) < 0;
}

/** The jobs in fair queue order. */
export function fairShareOrder(jobs: readonly JobView[], usedMb: MemoryByJob): JobView[] {
  return [...jobs].sort((a, b) => (fairShareBefore(a, b, usedMb) ? -1 : fairShareBefore(b, a, usedMb) ? 1 : 0));
}

/** Moves `job` (already in `order`) to its place after its memory in use grew. */
export function requeue(order: JobView[], job: JobView, usedMb: MemoryByJob): void {
  let i = order.indexOf(job);
  if (i < 0) return;
  order.splice(i, 1);
  while (i < order.length && fairShareBefore(order[i]!, job, usedMb)) i++;
  order.splice(i, 0, job);
}

/**
 * Where `job` goes in `order` (sorted by fairShareBefore under `usedMb`): the first place whose job is not before it.
 */
function placeOf(order: readonly JobView[], job: JobView, usedMb: MemoryByJob): number {
  let lo = 0;
  let hi = order.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (fairShareBefore(order[mid]!, job, usedMb)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The fair queue as of the last snapshot it was given: the jobs with pending tasks in fair-share
 * order (the snapshot's own JobViews), the memory every job holds, and the least any waiting job
 * asks for (`askOf`: the policy's smallest grant for a job's pending tasks). `update` looks only at
 * the jobs whose view changed: the books hand out the same JobView while a job does not change.
 */
export class FairQueue {
  private lastJobs: readonly JobView[] = [];
  private readonly sorted: JobView[] = [];
  private readonly used = new Map<string, number>();
  private readonly viewById = new Map<string, JobView>();
  private readonly askById = new Map<string, number>();
  private least = Number.POSITIVE_INFINITY;
  /** The job asking `least` left or asks more now: `least` is found again when asked. */
  private leastStale = false;
  /** Jobs that changed or left since takeChanged() (what they have pending may be less). */
  private changedIds = new Set<string>();
  /** Jobs that left since takeLeft(), and that arrived since takeArrived(). */
  private left: JobView[] = [];
  private arrived: JobView[] = [];

  constructor(
    private readonly askOf: (job: JobView) => number,
    /** Memory a job holds beyond its running attempts (its ApplicationMaster), MB. */
    private readonly heldBeyondAttempts: (jobId: string) => number = () => 0,
  ) {}

  /** Memory the job holds: its running attempts' and what it holds beyond them. */
  private usedBy(job: JobView): number {
    return memoryOf(job) + this.heldBeyondAttempts(job.id);
  }

  /**
   * Puts the job in its place again, and asks it again, after what it holds beyond its attempts or
   * what it asks for changed (its ApplicationMaster was placed).
   */
  refresh(jobId: string): void {
    const job = this.viewById.get(jobId);
    if (!job) return;
    this.changedIds.add(jobId);
    const i = this.unqueue(job);
    this.used.set(job.id, this.usedBy(job));
    if (i >= 0) this.enqueue(job, placeOf(this.sorted, job, this.used));
  }

  /** The least a waiting job asks for (infinite when none waits). */
  get leastAsk(): number {
    if (this.leastStale) {
      this.least = Number.POSITIVE_INFINITY;
      for (const mb of this.askById.values()) if (mb < this.least) this.least = mb;
      this.leastStale = false;
    }
    return this.least;
  }

  /** Asks are worked out again (what askOf answers changed, e.g. the memory step). */
  forgetAsks(): void {
    for (const job of this.sorted) this.askById.set(job.id, this.askOf(job));
    this.leastStale = true;
  }

  /** Jobs with pending tasks, in fair-share order (do not modify). */
  get waiting(): readonly JobView[] {
    return this.sorted;
  }

  /** Memory each active job's running attempts hold, MB. */
  get usedMb(): ReadonlyMap<string, number> {
    return this.used;
  }

  /** The job's view in the last snapshot; undefined when it was not active there. */
  viewOf(jobId: string): JobView | undefined {
    return this.viewById.get(jobId);
  }

  /** The jobs that arrived since the last call (as first seen), then forgets them. */
  takeArrived(): readonly JobView[] {
    const jobs = this.arrived;
    if (jobs.length > 0) this.arrived = [];
    return jobs;
  }

  /** The jobs that left (ended) since the last call, each as last seen, then forgets them. */
  takeLeft(): readonly JobView[] {
    const jobs = this.left;
    if (jobs.length > 0) this.left = [];
    return jobs;
  }

  /** The ids of the jobs that changed or left since the last call, then forgets them. */
  takeChanged(): ReadonlySet<string> {
    const ids = this.changedIds;
    this.changedIds = new Set();
    return ids;
  }

  /** Brings the queue up to `jobs` (a snapshot's active jobs). */
  update(jobs: readonly JobView[]): void {
    if (jobs === this.lastJobs) return;
    const last = this.lastJobs;
    // Both lists are in submission order: walk them side by side (jobs only arrive at the end and
    // leave anywhere); a list in another order still comes out right, as removals and arrivals.
    let k = 0;
    for (const job of jobs) {
      while (k < last.length && last[k]!.id !== job.id) this.remove(last[k++]!);
      if (k < last.length) {
        const before = last[k++]!;
        if (before !== job) this.change(before, job);
      } else {
        this.add(job);
      }
    }
    while (k < last.length) this.remove(last[k++]!);
    this.lastJobs = jobs;
  }

  private add(job: JobView): void {
    this.arrived.push(job);
    this.viewById.set(job.id, job);
    this.used.set(job.id, this.usedBy(job));
    if (job.pendingTasks.length > 0) this.enqueue(job, placeOf(this.sorted, job, this.used));
  }

  private enqueue(job: JobView, at: number): void {
    this.sorted.splice(at, 0, job);
    const ask = this.askOf(job);
    this.askById.set(job.id, ask);
    if (ask < this.least) this.least = ask;
  }

  private remove(job: JobView): void {
    if (this.viewById.get(job.id) !== job) return;
    this.changedIds.add(job.id);
    this.left.push(job);
    this.unqueue(job);
    this.viewById.delete(job.id);
    this.used.delete(job.id);
  }

  private change(before: JobView, job: JobView): void {
    this.changedIds.add(job.id);
    const usedMb = this.usedBy(job);
    if (
      before.pendingTasks.length > 0 &&
      job.pendingTasks.length > 0 &&
      usedMb === this.used.get(job.id) &&
      job.weight === before.weight &&
      job.submitTime === before.submitTime
    ) {
      // Its place is unchanged (progress reports change most views): only the view is new.
      const i = this.placeIn(before);
      if (i >= 0) {
        this.sorted[i] = job;
        this.viewById.set(job.id, job);
        if (job.pendingTasks !== before.pendingTasks) this.reask(job);
        return;
      }
    }
    const i = this.unqueue(before);
    this.viewById.set(job.id, job);
    if (job.pendingTasks.length === 0) {
      this.used.set(job.id, usedMb);
      return;
    }
    // Same place when neither its memory nor what orders it changed: only the view is new.
    if (
      i >= 0 &&
      usedMb === this.used.get(job.id) &&
      job.weight === before.weight &&
      job.submitTime === before.submitTime
    ) {
      this.enqueue(job, i);
      return;
    }
    this.used.set(job.id, usedMb);
    this.enqueue(job, placeOf(this.sorted, job, this.used));
  }

  private reask(job: JobView): void {
    const before = this.askById.get(job.id);
    const ask = this.askOf(job);
    this.askById.set(job.id, ask);
    if (ask < this.least) this.least = ask;
    else if (before === this.least && ask > before) this.leastStale = true;
  }

  /** Where `job` (this view) is in the sorted list; -1 when it is not there. */
  private placeIn(job: JobView): number {
    const i = placeOf(this.sorted, job, this.used);
    return this.sorted[i] === job ? i : this.sorted.indexOf(job);
  }

  /** Takes `job` (this view) out of the sorted list; its former place, -1 when it was not there. */
  private unqueue(job: JobView): number {
    if (job.pendingTasks.length === 0) return -1;
    const i = this.placeIn(job);
    if (i < 0) return i;
    this.sorted.splice(i, 1);
    if (this.askById.get(job.id) === this.least) this.leastStale = true;
    this.askById.delete(job.id);
    return i;
  }
}

/**
 * Nodes reserved by jobs. A job holds at most as many reservations as it has pending tasks (one
 * per container it asks for, as YARN reserves per request), and loses them when it has nothing
 * pending, ends, or its node is gone.
 */
export class Reservations {
  private readonly byNode = new Map<string, string>();
  /** Each job's reserved nodes, in the order they were reserved. */
  private readonly nodesByJob = new Map<string, Set<string>>();

  get size(): number {
    return this.byNode.size;
  }

  jobOn(nodeId: string): string | undefined {
    return this.byNode.get(nodeId);
  }

  countOf(jobId: string): number {
    return this.nodesByJob.get(jobId)?.size ?? 0;
  }

  reserve(nodeId: string, jobId: string): void {
    this.release(nodeId);
    this.byNode.set(nodeId, jobId);
    const nodes = this.nodesByJob.get(jobId);
    if (nodes) nodes.add(nodeId);
    else this.nodesByJob.set(jobId, new Set([nodeId]));
  }

  release(nodeId: string): void {
    const job = this.byNode.get(nodeId);
    if (job === undefined) return;
    this.byNode.delete(nodeId);
    const nodes = this.nodesByJob.get(job)!;
    nodes.delete(nodeId);
    if (nodes.size === 0) this.nodesByJob.delete(job);
  }

  /**
   * Drops reservations of nodes no longer live (`isLive`, when given: only needed when the live
   * workers changed) and of jobs with nothing pending; a job with more than it has pending keeps
   * its earliest ones. `jobs`: the only jobs whose pending tasks may have dropped (default all).
   */
  prune(
    pendingOf: (jobId: string) => number,
    isLive?: (nodeId: string) => boolean,
    jobs: Iterable<string> = [...this.nodesByJob.keys()],
  ): void {
    if (isLive) for (const node of [...this.byNode.keys()]) if (!isLive(node)) this.release(node);
    for (const job of jobs) {
      const nodes = this.nodesByJob.get(job);
      const excess = nodes ? nodes.size - pendingOf(job) : 0;
      if (excess > 0) for (const node of [...nodes!].slice(-excess)) this.release(node);
    }
  }

  /** For tests and reports: node -> job. */
  entries(): ReadonlyArray<readonly [string, string]> {
    return [...this.byNode];
  }
}
