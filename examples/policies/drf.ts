/**
 * Dominant resource fairness (Ghodsi et al., NSDI 2011), written only against the public policy API
 * ('minimr/scheduler'). A job's share of a resource is what its running attempts hold over the cluster's
 * total; its dominant share is the larger of its memory share and its cores share (a slot runs one task on
 * one core, so cores are the workers' map and reduce slots). Free capacity is offered, task by task, to the
 * job with the smallest dominant share that has a task fitting it (progressive filling: each launch raises
 * that job's shares before the next offer), ties broken by submission order. Jobs may be weighted
 * (JobView.weight): a share counts divided by the weight, as in weighted DRF.
 *
 *   minimr policy check ./examples/policies/drf.ts
 *   minimr sim --workload hvw --policy fifo --policy ./examples/policies/drf.ts
 */
import {
  definePolicy,
  localityOf,
  parseOptions,
  type ClusterSnapshot,
  type Decision,
  type JobView,
  type Policy,
  type TaskView,
  type WorkerView,
} from 'minimr/scheduler';

type Options = {
  /** Use JobView.weight (weighted DRF); false: every job weighs 1. */
  readonly weighted: boolean;
};

const DEFAULTS: Options = { weighted: true };

const SPECS = {
  weighted: { type: 'boolean', about: "divide each job's dominant share by its weight (weighted DRF)" },
} as const;

interface Usage {
  memoryMb: number;
  cores: number;
}

class DominantResourceFairness implements Policy {
  readonly name = 'drf';
  /** Shares change only when attempts start or end, and one call fills all it can. */
  readonly consultWhen = 'after-change' as const;

  constructor(readonly options: Options) {}

  schedule(snapshot: ClusterSnapshot): readonly Decision[] {
    const workers = snapshot.workers.filter((w) => w.leavingFor === undefined);
    const totalMemoryMb = snapshot.workers.reduce((s, w) => s + w.memoryMb, 0);
    const totalCores = snapshot.workers.reduce((s, w) => s + w.mapSlots + w.reduceSlots, 0);
    if (totalMemoryMb <= 0 || totalCores <= 0) return [];
    const usage = new Map<string, Usage>();
    for (const job of snapshot.jobs) {
      const u: Usage = { memoryMb: 0, cores: 0 };
      for (const a of job.runningAttempts) {
        u.memoryMb += a.memoryMb;
        u.cores += 1;
      }
      usage.set(job.id, u);
    }
    const dominantShare = (job: JobView): number => {
      const u = usage.get(job.id)!;
      const share = Math.max(u.memoryMb / totalMemoryMb, u.cores / totalCores);
      return this.options.weighted && job.weight > 0 ? share / job.weight : share;
    };
    const free = new Map(
      workers.map((w) => [w.id, { map: w.freeMapSlots, reduce: w.freeReduceSlots, memoryMb: w.freeMemoryMb }]),
    );
    const launched = new Set<string>();
    const decisions: Decision[] = [];
    /** The best worker for `task` now: node-local, then rack-local, then any; undefined when none fits. */
    const placeOf = (task: TaskView): WorkerView | undefined => {
      let best: WorkerView | undefined;
      let bestRank = 3;
      for (const w of workers) {
        const f = free.get(w.id)!;
        if (f[task.kind] <= 0 || f.memoryMb < task.memoryMb || task.failedOnWorkers.includes(w.id)) continue;
        const locality = localityOf(task, w);
        const rank = locality === 'node' ? 0 : locality === 'rack' ? 1 : 2;
        if (rank < bestRank) {
          best = w;
          bestRank = rank;
        }
      }
      return best;
    };
    const waiting = snapshot.jobs.filter((j) => j.pendingTasks.length > 0);
    for (;;) {
      // The job with the smallest dominant share that can still launch something; submission order on ties.
      let chosen: { job: JobView; task: TaskView; worker: WorkerView } | undefined;
      let chosenShare = Number.POSITIVE_INFINITY;
      for (const job of waiting) {
        const share = dominantShare(job);
        if (share >= chosenShare) continue;
        for (const task of job.pendingTasks) {
          if (launched.has(task.id)) continue;
          const worker = placeOf(task);
          if (worker) {
            chosen = { job, task, worker };
            chosenShare = share;
            break;
          }
        }
      }
      if (!chosen) return decisions;
      const { job, task, worker } = chosen;
      launched.add(task.id);
      const f = free.get(worker.id)!;
      f[task.kind] -= 1;
      f.memoryMb -= task.memoryMb;
      const u = usage.get(job.id)!;
      u.memoryMb += task.memoryMb;
      u.cores += 1;
      decisions.push({
        kind: 'launch',
        taskId: task.id,
        jobId: job.id,
        workerId: worker.id,
        memoryMb: task.memoryMb,
        locality: localityOf(task, worker),
      });
    }
  }
}

export default definePolicy({
  name: 'drf',
  summary: "dominant resource fairness: each free slot to the job with the smallest share of memory or cores",
  options: SPECS,
  defaults: DEFAULTS,
  create: (raw) => new DominantResourceFairness(parseOptions('drf', raw, SPECS, DEFAULTS)),
});
