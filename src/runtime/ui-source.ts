import type { Books } from '../books/index.js';
import type { Policy, SchedulingTrigger } from '../scheduler/index.js';
import type { Namenode } from '../storage/index.js';
import type { UiSource, UiTask } from '../ui/index.js';
import type { AttemptLogSlice, AttemptLogStream } from './attempt-logs.js';
import { attemptSummaries, jobStatus, type RuntimeAttempt, type RuntimeData } from './job-in-progress.js';

/** What the web UI reads of a JobTracker: its books, NameNode and policy, read-only. */
export interface JobTrackerParts {
  readonly books: Books<RuntimeData>;
  readonly namenode: Namenode;
  readonly policy: Policy;
  readonly clock: () => number;
  readonly heartbeatMs: number;
  readonly startedAt: number;
  readonly snapshot: (trigger: SchedulingTrigger) => ReturnType<Books<RuntimeData>['snapshot']>;
  readonly findAttempt: (attemptId: string) => RuntimeAttempt | undefined;
  readonly attemptLog: (attemptId: string, stream: AttemptLogStream, offset?: number, length?: number) => Promise<AttemptLogSlice>;
}

export function jobTrackerUiSource(p: JobTrackerParts): UiSource {
  return {
    now: p.clock,
    overview: () => ({
      now: p.clock(),
      startedAt: p.startedAt,
      policy: p.policy.name,
      heartbeatMs: p.heartbeatMs,
      workers: p.books.liveWorkers().map((w) => ({
        id: w.shape.id,
        host: w.data.address.host,
        dataPort: w.data.address.dataPort,
        rack: w.data.address.rack,
        mapSlots: w.shape.mapSlots,
        reduceSlots: w.shape.reduceSlots,
        usedMapSlots: w.usedMap,
        usedReduceSlots: w.usedReduce,
        memoryMb: w.shape.memoryMb,
        usedMemoryMb: w.usedMem,
        diskMBps: w.shape.diskMBps,
        lastHeartbeat: w.data.lastHeartbeat,
        ...(p.books.mrClusters.inUse ? { cluster: w.cluster } : {}),
      })),
      blockStore: p.namenode.usage(),
      jobs: [...p.books.jobs()].map(jobStatus),
    }),
    jobs: () => [...p.books.jobs()].map(jobStatus),
    job: (jobId) => {
      const job = p.books.job(jobId);
      if (!job) return undefined;
      const byTask = new Map<string, ReturnType<typeof attemptSummaries>>();
      for (const a of attemptSummaries(job)) byTask.set(a.taskId, [...(byTask.get(a.taskId) ?? []), a]);
      const tasks: UiTask[] = [...job.maps, ...job.reduces].map((t) => ({ taskId: t.id, kind: t.kind, index: t.index, state: t.state, inputBytes: t.inputBytes, attempts: byTask.get(t.id) ?? [] }));
      return { status: jobStatus(job), tasks };
    },
    jobOfAttempt: (attemptId) => p.findAttempt(attemptId)?.task.job.id,
    attemptLog: p.attemptLog,
    stat: (path) => p.namenode.stat(path),
    list: (path) => p.namenode.list(path),
    blocks: (path) => p.namenode.getBlocks(path),
    blockStoreUsage: () => p.namenode.usage(),
    policy: () => {
      const describe = p.policy.describeState?.bind(p.policy);
      return describe ? { name: p.policy.name, state: describe(p.snapshot({ kind: 'tick' })) } : { name: p.policy.name };
    },
  };
}
