/**
 * YARN's side of the YARN-ME policies (yarn-me.md): the queue order of the Fair Scheduler and
 * node reservations. The `yarn` policy is YarnMePolicy with elasticity off (yarn-me.ts): YARN's
 * regular allocation, where a task runs only with its ideal memory, and a job that cannot place
 * its next task on a node reserves that node until it can.
 *
 * Queue order (YARN's FairSharePolicy with memory as the resource, one queue): the job using the
 * least memory per unit of weight first, then the earlier submitted, then by id. Pools are not
 * modelled: every job is a leaf of one queue, as in the paper's experiments.
 */
import type { JobView } from './types.js';
import { byCodeUnit } from './rooms.js';

/** Memory each job's running attempts hold, MB. */
export function memoryInUse(jobs: readonly JobView[]): Map<string, number> {
  const used = new Map<string, number>();
  for (const job of jobs) {
    let mb = 0;
    for (const a of job.runningAttempts) mb += a.memoryMb;
    used.set(job.id, mb);
  }
  return used;
}

/** Whether job `a` comes before job `b` in the fair queue, given the memory each uses. */
export function fairShareBefore(a: JobView, b: JobView, usedMb: ReadonlyMap<string, number>): boolean {
  const ra = (usedMb.get(a.id) ?? 0) / (a.weight > 0 ? a.weight : 1);
  const rb = (usedMb.get(b.id) ?? 0) / (b.weight > 0 ? b.weight : 1);
  if (ra !== rb) return ra < rb;
  if (a.submitTime !== b.submitTime) return a.submitTime < b.submitTime;
  return byCodeUnit(a.id, b.id) < 0;
}

/** The jobs in fair queue order. */
export function fairShareOrder(jobs: readonly JobView[], usedMb: ReadonlyMap<string, number>): JobView[] {
  return [...jobs].sort((a, b) => (fairShareBefore(a, b, usedMb) ? -1 : fairShareBefore(b, a, usedMb) ? 1 : 0));
}

/** Moves `job` (already in `order`) to its place after its memory in use grew. */
export function requeue(order: JobView[], job: JobView, usedMb: ReadonlyMap<string, number>): void {
  let i = order.indexOf(job);
  if (i < 0) return;
  order.splice(i, 1);
  while (i < order.length && fairShareBefore(order[i]!, job, usedMb)) i++;
  order.splice(i, 0, job);
}

/**
 * Nodes reserved by jobs. A job holds at most as many reservations as it has pending tasks (one
 * per container it asks for, as YARN reserves per request), and loses them when it has nothing
 * pending, ends, or its node is gone.
 */
export class Reservations {
  private readonly byNode = new Map<string, string>();
  private readonly countByJob = new Map<string, number>();

  get size(): number {
    return this.byNode.size;
  }

  jobOn(nodeId: string): string | undefined {
    return this.byNode.get(nodeId);
  }

  countOf(jobId: string): number {
    return this.countByJob.get(jobId) ?? 0;
  }

  reserve(nodeId: string, jobId: string): void {
    this.release(nodeId);
    this.byNode.set(nodeId, jobId);
    this.countByJob.set(jobId, this.countOf(jobId) + 1);
  }

  release(nodeId: string): void {
    const job = this.byNode.get(nodeId);
    if (job === undefined) return;
    this.byNode.delete(nodeId);
    const left = this.countOf(job) - 1;
    if (left > 0) this.countByJob.set(job, left);
    else this.countByJob.delete(job);
  }

  /** Drops reservations of nodes no longer live and of jobs with nothing pending (or more than they have pending). */
  prune(liveNodes: ReadonlySet<string>, pendingByJob: ReadonlyMap<string, number>): void {
    const kept = new Map<string, number>();
    for (const [node, job] of [...this.byNode]) {
      const held = kept.get(job) ?? 0;
      if (!liveNodes.has(node) || held >= (pendingByJob.get(job) ?? 0)) {
        this.release(node);
        continue;
      }
      kept.set(job, held + 1);
    }
  }

  /** For tests and reports: node -> job. */
  entries(): ReadonlyArray<readonly [string, string]> {
    return [...this.byNode];
  }
}
