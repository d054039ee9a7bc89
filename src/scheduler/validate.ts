import { mrClusterProblems } from './mr-cluster-checks.js';
import { grantProblem, memoryStepOf } from './memory.js';
import { localityOf } from './rooms.js';
import type { ClusterSnapshot, Decision, TaskView } from './types.js';

/**
 * Everything a decision list must satisfy against the snapshot it answers, whatever the policy;
 * one message per problem, none when the list is valid. The books (src/books) check every list
 * with it before any of it is carried out, so the JobTracker and the simulator refuse the same
 * lists, and the conformance suite asserts policies make none. Kills do not free capacity within
 * the same list: the killed attempt's slot and memory come back only once the worker confirms, as
 * they would on a real cluster. A grant below a task's ideal memory is elastic and must pass the
 * memory rules of memory.ts (minimum, steps, a penalty model); any grant must fit the free memory.
 */
export function validateDecisions(snapshot: ClusterSnapshot, decisions: readonly Decision[]): string[] {
  const problems: string[] = [];
  const workers = new Map(snapshot.workers.map((w) => [w.id, w]));
  const pending = new Map<string, TaskView>();
  const attempts = new Set<string>();
  const jobs = new Set<string>();
  for (const job of snapshot.jobs) {
    jobs.add(job.id);
    for (const t of job.pendingTasks) pending.set(t.id, t);
    for (const a of job.runningAttempts) attempts.add(a.id);
  }
  const used = new Map<string, { map: number; reduce: number; memoryMb: number }>();
  const launched = new Set<string>();
  const killed = new Set<string>();
  const migrated = new Set<string>();
  const moved = new Set<string>();
  for (const [i, d] of decisions.entries()) {
    const at = `decision ${i}`;
    switch (d.kind) {
      case 'kill':
        if (!attempts.has(d.attemptId)) problems.push(`${at}: kills unknown attempt ${d.attemptId}`);
        if (killed.has(d.attemptId)) problems.push(`${at}: kills attempt ${d.attemptId} twice`);
        killed.add(d.attemptId);
        continue;
      case 'migrate':
        if (!jobs.has(d.jobId)) problems.push(`${at}: migrates unknown job ${d.jobId}`);
        if (!Number.isInteger(d.toPartition) || d.toPartition < 0)
          problems.push(`${at}: migrates to partition ${d.toPartition}`);
        if (migrated.has(d.jobId)) problems.push(`${at}: migrates job ${d.jobId} twice`);
        migrated.add(d.jobId);
        continue;
      case 'move-node':
        if (!workers.has(d.workerId)) problems.push(`${at}: moves unknown worker ${d.workerId}`);
        if (typeof d.toCluster !== 'string' || d.toCluster === '')
          problems.push(`${at}: moves worker to cluster "${String(d.toCluster)}"`);
        if (moved.has(d.workerId)) problems.push(`${at}: moves worker ${d.workerId} twice`);
        moved.add(d.workerId);
        continue;
      case 'replicate': {
        const task = pending.get(d.taskId);
        if (!workers.has(d.workerId)) problems.push(`${at}: replicates onto unknown worker ${d.workerId}`);
        if (task?.kind !== 'map')
          problems.push(`${at}: replicates the input of ${d.taskId}, which is not a pending map`);
        else if (task.jobId !== d.jobId)
          problems.push(`${at}: task ${d.taskId} belongs to ${task.jobId}, not ${d.jobId}`);
        else if (task.preferredWorkers.length === 0)
          problems.push(`${at}: task ${d.taskId} has no stored input to replicate`);
        continue;
      }
      case 'deactivate-cluster':
        continue;
      case 'launch':
        break;
      default:
        problems.push(`${at}: unknown decision kind`);
        continue;
    }
    const worker = workers.get(d.workerId);
    const task = pending.get(d.taskId);
    if (!worker) problems.push(`${at}: unknown worker ${d.workerId}`);
    if (!task) problems.push(`${at}: task ${d.taskId} is not pending`);
    if (launched.has(d.taskId)) problems.push(`${at}: task ${d.taskId} launched twice`);
    launched.add(d.taskId);
    if (!worker || !task) continue;
    if (d.jobId !== task.jobId) problems.push(`${at}: task ${d.taskId} belongs to ${task.jobId}, not ${d.jobId}`);
    const memoryMb = d.memoryMb ?? task.memoryMb;
    const grant = grantProblem(task, memoryMb, d.elastic, memoryStepOf(snapshot));
    if (grant !== null) problems.push(`${at}: ${grant}`);
    if (d.startDelayMs !== undefined && !(Number.isFinite(d.startDelayMs) && d.startDelayMs >= 0))
      problems.push(`${at}: startDelayMs must be a finite number >= 0, got ${d.startDelayMs}`);
    const expected = localityOf(task, worker);
    if (d.locality !== expected) problems.push(`${at}: claims ${d.locality} locality, achieved ${expected}`);
    const u = used.get(worker.id) ?? { map: 0, reduce: 0, memoryMb: 0 };
    u[task.kind] += 1;
    u.memoryMb += memoryMb;
    used.set(worker.id, u);
  }
  for (const [id, u] of used) {
    const w = workers.get(id)!;
    if (u.map > w.freeMapSlots) problems.push(`worker ${id}: ${u.map} maps for ${w.freeMapSlots} free map slots`);
    if (u.reduce > w.freeReduceSlots)
      problems.push(`worker ${id}: ${u.reduce} reduces for ${w.freeReduceSlots} free reduce slots`);
    if (u.memoryMb > w.freeMemoryMb) problems.push(`worker ${id}: ${u.memoryMb} MB for ${w.freeMemoryMb} MB free`);
  }
  problems.push(...mrClusterProblems(snapshot, decisions));
  return problems;
}
