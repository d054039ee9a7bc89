/** Small hand-made clusters, jobs and policies for the simulator tests. */
import { localityOf, type ClusterSnapshot, type Decision, type Policy } from '../../src/scheduler/index.js';
import type { ClusterShape, JobSpec, TaskSpec, WorkerShape } from '../../src/workloads/index.js';

export const MiB = 1024 * 1024;

export function worker(id: string, rack: string, over: Partial<WorkerShape> = {}): WorkerShape {
  return { id, rack, mapSlots: 1, reduceSlots: 1, memoryMb: 4096, diskMBps: 100, ...over };
}

export function cluster(...workers: WorkerShape[]): ClusterShape {
  return { name: 'test', workers };
}

/** A task without stored input (no locality, no remote reads). */
export function task(workMs: number, over: Partial<TaskSpec> = {}): TaskSpec {
  return { workMs, memoryMb: 1024, inputBytes: 0, replicas: [], ...over };
}

export function job(
  id: string,
  submitMs: number,
  maps: TaskSpec[],
  reduces: TaskSpec[] = [],
  over: Partial<JobSpec> = {},
): JobSpec {
  return { id, name: id, app: 'test', submitMs, maps, reduces, ...over };
}

/**
 * Launches every pending task on the first worker (id order) with a free slot, granting
 * `fraction` of its ideal memory (floored to whole MB): a stand-in for an elastic policy.
 */
export function grantingPolicy(fraction: number): Policy {
  return {
    name: `grant-${fraction}`,
    consultWhen: 'every-event',
    schedule(s: ClusterSnapshot): readonly Decision[] {
      const free = new Map(
        s.workers.map((w) => [w.id, { map: w.freeMapSlots, reduce: w.freeReduceSlots, mem: w.freeMemoryMb }]),
      );
      const out: Decision[] = [];
      for (const j of s.jobs) {
        for (const t of j.pendingTasks) {
          const memoryMb = Math.floor(t.memoryMb * fraction);
          const w = s.workers.find((x) => free.get(x.id)![t.kind] > 0 && free.get(x.id)!.mem >= memoryMb);
          if (!w) continue;
          const f = free.get(w.id)!;
          f[t.kind] -= 1;
          f.mem -= memoryMb;
          out.push({ kind: 'launch', taskId: t.id, jobId: j.id, workerId: w.id, memoryMb, locality: localityOf(t, w) });
        }
      }
      return out;
    },
  };
}
