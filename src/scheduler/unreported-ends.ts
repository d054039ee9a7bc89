/**
 * Containers that ended but whose node has not reported it yet (the option `usageAtReports`; not
 * yet part of `compat: 'dss'`, see yarn-me.ts). In YARN the ResourceManager learns that a container
 * finished from its node's next heartbeat, and DSS, the YARN-ME paper's simulator, models that: the
 * node's memory is free when the container ends (DSS events/yarn/yarn.py, YarnNodeContainerFinishEvent),
 * but the job's usage, which orders the fair queue, drops only when the node heartbeats next and reports it
 * (YarnNodeHeartbeatEvent.handle, then handle_container_finished). Until then the job still counts
 * the container's memory, and a job whose many containers ended at once keeps its place behind the
 * others for up to a heartbeat interval, node by node, as the nodes report.
 *
 * Kept from the policy's calls: each call's job views are compared with the last call's (the books
 * hand out the same view while a job does not change), an attempt gone from its job's running ones
 * has ended (several may end at one instant, with one call), and its memory is given back when its
 * node's next heartbeat is consulted.
 */
import type { AttemptView, JobView } from './types.js';

export class UnreportedEnds {
  /** Per node, the ended containers it has still to report: their jobs and memory. */
  private readonly byNode = new Map<string, { readonly jobId: string; readonly memoryMb: number }[]>();
  /** Per job, the memory of its ended containers not reported yet, MB. */
  private readonly byJob = new Map<string, number>();
  /** Each active job's view at the last call. */
  private lastViews = new Map<string, JobView>();
  private lastJobs: readonly JobView[] = [];

  /** Notes the attempts that ended since the last call, from a snapshot's active jobs. */
  observe(jobs: readonly JobView[]): void {
    if (jobs === this.lastJobs) return;
    const views = new Map<string, JobView>();
    for (const job of jobs) {
      views.set(job.id, job);
      const before = this.lastViews.get(job.id);
      if (before === undefined || before === job || before.runningAttempts === job.runningAttempts) continue;
      const running = new Set(job.runningAttempts.map((a) => a.id));
      for (const a of before.runningAttempts) if (!running.has(a.id)) this.ended(a);
    }
    // A job gone from the snapshot ended: nothing of it counts any more.
    for (const id of this.lastViews.keys()) if (!views.has(id)) this.byJob.delete(id);
    this.lastViews = views;
    this.lastJobs = jobs;
  }

  /** Memory of the job's ended containers that their nodes have not reported, MB. */
  of(jobId: string): number {
    return this.byJob.get(jobId) ?? 0;
  }

  /** The attempt ended; its node reports it at its next heartbeat. */
  private ended(a: AttemptView): void {
    const list = this.byNode.get(a.workerId);
    const entry = { jobId: a.jobId, memoryMb: a.memoryMb };
    if (list) list.push(entry);
    else this.byNode.set(a.workerId, [entry]);
    this.byJob.set(a.jobId, this.of(a.jobId) + a.memoryMb);
  }

  /** The ended containers not reported yet, each with its node (the jobs still active). */
  *entries(): Generator<{ readonly nodeId: string; readonly jobId: string; readonly memoryMb: number }> {
    for (const [nodeId, list] of this.byNode)
      for (const { jobId, memoryMb } of list) if (this.byJob.has(jobId)) yield { nodeId, jobId, memoryMb };
  }

  /** The node heartbeats and reports what ended on it: the jobs whose usage dropped. */
  report(nodeId: string): string[] {
    const list = this.byNode.get(nodeId);
    if (!list) return [];
    this.byNode.delete(nodeId);
    const jobs: string[] = [];
    for (const { jobId, memoryMb } of list) {
      const held = this.byJob.get(jobId);
      if (held === undefined) continue;
      if (held - memoryMb > 0) this.byJob.set(jobId, held - memoryMb);
      else this.byJob.delete(jobId);
      if (!jobs.includes(jobId)) jobs.push(jobId);
    }
    return jobs;
  }
}
