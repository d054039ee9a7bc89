import type { Books } from '../../books/index.js';
import type { Policy, SchedulingTrigger } from '../../scheduler/index.js';
import type { Namenode } from '../../storage/index.js';
import type { AttemptLogSlice, AttemptLogStream, AttemptSummary, UiSource, UiTask } from '../wire/index.js';
import { MinimrError } from '../../errors.js';
import type { JobHistory } from './job-history.js';
import { jobStatus, type RuntimeData } from './runtime-data.js';

/**
 * What the web UI reads of a JobTracker (wire/web.ts's UiSource): its books, NameNode and policy,
 * read-only, and the client service's own functions for what the client link serves too (attempt
 * logs, where an attempt ran).
 */
export interface JobTrackerParts {
  readonly books: Books<RuntimeData>;
  readonly namenode: Namenode;
  readonly policy: Policy;
  readonly clock: () => number;
  readonly heartbeatMs: number;
  readonly startedAt: number;
  readonly snapshot: (trigger: SchedulingTrigger) => ReturnType<Books<RuntimeData>['snapshot']>;
  /** Ended jobs, in memory and retired. */
  readonly history: JobHistory;
  readonly locateAttempt: (attemptId: string) => Promise<{ readonly jobId: string } | undefined>;
  readonly attemptLog: (
    attemptId: string,
    stream: AttemptLogStream,
    offset?: number,
    length?: number,
  ) => Promise<AttemptLogSlice>;
}

export function jobTrackerWebSource(p: JobTrackerParts): UiSource {
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
    finishedJobs: (limit, before) => p.history.finished(limit, before),
    job: async (jobId) => {
      let entry: Awaited<ReturnType<JobHistory['record']>>;
      try {
        entry = await p.history.record(jobId);
      } catch (err) {
        if (err instanceof MinimrError && err.code === 'ENOJOB') return undefined;
        throw err;
      }
      const byTask = new Map<string, AttemptSummary[]>();
      for (const a of entry.attempts) byTask.set(a.taskId, [...(byTask.get(a.taskId) ?? []), a]);
      // A record written before tasks were recorded: its tasks are those its attempts name.
      const tasks =
        entry.tasks ??
        [...byTask.values()].map((as) => ({
          taskId: as[0]!.taskId,
          kind: as[0]!.kind,
          index: -1,
          state: 'not recorded',
          inputBytes: as[0]!.inputBytes,
        }));
      const withAttempts: UiTask[] = tasks.map((t) => ({ ...t, attempts: byTask.get(t.taskId) ?? [] }));
      return { status: entry.status, tasks: withAttempts };
    },
    jobOfAttempt: async (attemptId) => (await p.locateAttempt(attemptId))?.jobId,
    attemptLog: p.attemptLog,
    stat: (path) => p.namenode.stat(path),
    list: (path) => p.namenode.list(path),
    blocks: (path) => p.namenode.getBlocks(path),
    blockStoreUsage: () => p.namenode.usage(),
    policy: () => {
      const describe = p.policy.describeState?.bind(p.policy);
      return describe
        ? { name: p.policy.name, state: describe(p.snapshot({ kind: 'tick' })) }
        : { name: p.policy.name };
    },
  };
}
