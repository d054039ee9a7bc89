/**
 * Restart recovery (Hadoop 1's `mapred.jobtracker.restart.recover`): a JobTracker started on the
 * directory of one that died resumes the jobs its journal (job-journal.ts) holds.
 *
 * How, and why this way:
 * - Each job is admitted again from its journaled submission and input plan, with the same id,
 *   through `Books.submit`. Its output directory's `_temporary` (partial attempt outputs of the
 *   dead JobTracker's attempts) is removed: those attempts are gone with it, as their workers kill
 *   them when the connection drops.
 * - Nothing runs until the workers have had time to register again (every worker that held a map
 *   output the journal names, or `waitMs`): a worker reports the map outputs on its disk when it
 *   registers, and only an output that is still there can be kept.
 * - Then the journaled facts are replayed through the books' own transitions: a task whose output
 *   is committed (its part file in the output directory), or a map whose output its worker still
 *   holds, is launched and succeeds at once (`Books.apply` of a launch decision, then
 *   `Books.attemptSucceeded`) under its original attempt id, on its original worker where that is
 *   back. The books thus count maps done, open reduces, start the commit and keep every other rule
 *   exactly as in a run; of the effects, the launch and the task commit are what the world already
 *   did, and are not done again. Every other task runs again, with attempt numbers after the last
 *   one journaled (`AttemptNumbering`), so no id is reused.
 * - A job with a skew assignment made at run time (`skew.strategy` simple or cms) keeps its maps
 *   but re-runs all its reduces: which partitions a reduce read is not journaled, so a committed
 *   reduce's part cannot be matched to a new assignment.
 * - A job that had ended but whose clean-up had not finished ends again the same way (killed or
 *   failed through `Books.killJob`/`failJob`, succeeded through its commit), so its clean-up runs.
 * - A job replacing an output (`--overwrite`) commits its tasks into its staging directory
 *   (runtime-data's `outputWorkDir`), made before it was journaled. Still there: the old output is
 *   untouched and the job resumes from the staging directory; gone: the job's commit had replaced
 *   the output in one NameNode step, so every task is committed there and only the end remains.
 */
import { hadoopAttemptId, type Books } from '../../books/index.js';
import {
  attemptMeasures,
  jobPlan,
  outputWorkDir,
  partFileName,
  type BooksHost,
  type RuntimeAttempt,
  type RuntimeData,
  type RuntimeJob,
  type RuntimeTask,
} from './runtime-data.js';
import { attemptNumberOf, type JournaledSuccess, type RecoveredJob } from './job-journal.js';
import type { HeldMapOutput } from '../wire/index.js';
import { writesToStore } from './store-output.js';

/**
 * Attempt numbers of recovered tasks continue after the last one the dead JobTracker used; the
 * books number each task's attempts from 0, and this offsets them (`Books`' `attemptId` option).
 */
export class AttemptNumbering {
  private readonly base = new Map<string, number>();

  attemptId(taskId: string, n: number): string {
    return hadoopAttemptId(taskId, n + (this.base.get(taskId) ?? 0));
  }

  /** The task's attempt `n` (counted by the books from 0) gets number `n + base`. */
  setBase(taskId: string, base: number): void {
    this.base.set(taskId, base);
  }

  forget(taskIds: Iterable<string>): void {
    for (const id of taskIds) this.base.delete(id);
  }
}

export interface RecoveryHost extends BooksHost {
  readonly numbering: AttemptNumbering;
}

interface PendingJob {
  readonly job: RuntimeJob;
  readonly recovered: RecoveredJob;
  /** Task ids whose part file is in the output directory. */
  readonly committed: ReadonlySet<string>;
  /** Reduces run again whatever the journal says (a run-time skew assignment). */
  readonly rerunReduces: boolean;
}

/** The jobs of a journal, admitted again and waiting for their workers to register. */
export class JobRecovery {
  /** `workerId attemptId` of every map output a registered worker reported. */
  private readonly held = new Set<string>();
  private readonly expectedWorkers = new Set<string>();
  /** `workerId attemptId` of every map output the journal says a worker holds. */
  private readonly journaledOutputs = new Set<string>();
  private readonly deadline: number;

  private constructor(
    private readonly host: RecoveryHost,
    private readonly pending: PendingJob[],
    waitMs: number,
  ) {
    this.deadline = host.clock() + waitMs;
    for (const p of pending) {
      for (const t of p.recovered.tasks.values()) {
        if (!t.success || t.success.committed) continue;
        this.expectedWorkers.add(t.success.workerId);
        this.journaledOutputs.add(`${t.success.workerId} ${t.success.attemptId}`);
      }
    }
  }

  /** Admits the journal's jobs again; resolves to null when there are none. */
  static async begin(
    host: RecoveryHost,
    jobs: readonly RecoveredJob[],
    waitMs: number,
    admin: string,
  ): Promise<JobRecovery | null> {
    if (jobs.length === 0) return null;
    const pending: PendingJob[] = [];
    for (const recovered of jobs) {
      const j = recovered.job;
      const plan = jobPlan(j.jobId, j.submission, j.user ?? admin, j.splits, j.maxAttempts, j.estimates);
      const { job, effects } = host.books.submit(plan, j.submitTime);
      job.data.profile = j.profile;
      for (const task of [...job.maps, ...job.reduces])
        host.numbering.setBase(task.id, recovered.tasks.get(task.id)?.nextAttempt ?? 0);
      if (j.ended && j.ended.state !== 'succeeded') {
        // Its clean-up had not finished: end it again, which runs it (whole output removed).
        const error = j.ended.error ?? { code: 'EJOBFAILED', message: `job ${j.jobId} ${j.ended.state}` };
        const ending =
          j.ended.state === 'killed'
            ? host.books.killJob(job, j.submitTime, error)
            : host.books.failJob(job, j.submitTime, error);
        void host.carryOut([...effects, ...ending]);
        continue;
      }
      let rerunReduces = job.skew !== null && job.skew.strategy !== 'hash';
      let committed: Set<string>;
      try {
        if (writesToStore(j.submission)) {
          // Another store's parts wait, staged, for the job commit: a task is done when its part was journaled.
          committed = new Set(
            [...recovered.tasks].filter(([, t]) => t.success?.committed && t.success.outputPart).map(([id]) => id),
          );
          if (rerunReduces) for (const task of job.reduces) committed.delete(task.id);
          pending.push({ job, recovered, committed, rerunReduces });
          void host.carryOut(effects);
          continue;
        }
        const workDir = outputWorkDir(job.id, j.submission);
        // A job replacing an output whose staging directory is gone had replaced it: every task is committed.
        const replaced = workDir !== j.submission.outputPath && !(await exists(host, workDir));
        if (replaced) rerunReduces = false;
        committed = await committedTasks(host, job, replaced ? j.submission.outputPath : workDir, rerunReduces);
      } catch (err) {
        const error = {
          code: 'EJOBFAILED',
          message:
            `job ${j.jobId} cannot resume after the JobTracker's restart: ` +
            `its output ` +
            `directory ${j.submission.outputPath}: ${(err as Error).message}`,
        };
        void host.carryOut([...effects, ...host.books.failJob(job, host.clock(), error)]);
        continue;
      }
      pending.push({ job, recovered, committed, rerunReduces });
      void host.carryOut(effects);
      host.logger.info(
        { job: j.jobId, maps: job.maps.length, reduces: job.reduces.length, committed: committed.size },
        'job recovered from the journal',
      );
    }
    return new JobRecovery(host, pending, waitMs);
  }

  /** Whether a worker's map output is one a recovered job may keep. */
  wants(workerId: string, output: HeldMapOutput): boolean {
    return this.journaledOutputs.has(`${workerId} ${output.attemptId}`);
  }

  workerRegistered(workerId: string, outputs: readonly HeldMapOutput[]): void {
    for (const o of outputs) this.held.add(`${workerId} ${o.attemptId}`);
    this.expectedWorkers.delete(workerId);
  }

  /**
   * Every worker holding a journaled map output is back, or the wait is over; someone must be there to run the rest.
   */
  get ready(): boolean {
    if (this.host.books.liveWorkerCount === 0) return false;
    return this.expectedWorkers.size === 0 || this.host.clock() >= this.deadline;
  }

  /** Replays what the journal and the workers say is done; the rest is left pending for the policy. */
  async finish(): Promise<void> {
    const waits: Promise<void>[] = [];
    for (const p of this.pending) {
      if (!this.host.books.isActive(p.job)) continue;
      // A part file in the output directory is the commit; a journaled commit whose part is gone runs again.
      const reduceDone = (t: RuntimeTask) => !p.rerunReduces && p.committed.has(t.id);
      const needsMapOutputs = p.job.reduces.some((t) => !reduceDone(t));
      let kept = 0;
      for (const task of p.job.maps) {
        const success = this.success(p, task);
        const keep =
          p.job.reduces.length === 0
            ? p.committed.has(task.id)
            : !needsMapOutputs ||
              (success !== undefined &&
                this.held.has(`${success.workerId} ${success.attemptId}`) &&
                this.host.books.worker(success.workerId)?.alive === true);
        if (keep) {
          waits.push(this.adopt(p, task, success));
          kept++;
        }
      }
      for (const task of p.job.reduces) {
        if (reduceDone(task)) {
          waits.push(this.adopt(p, task, this.success(p, task)));
          kept++;
        }
      }
      this.host.logger.info(
        { job: p.job.id, kept, rerun: p.job.maps.length + p.job.reduces.length - kept },
        'job resumed',
      );
    }
    await Promise.all(waits);
  }

  private success(p: PendingJob, task: RuntimeTask): JournaledSuccess | undefined {
    return p.recovered.tasks.get(task.id)?.success;
  }

  /** The task's journaled success, replayed: launched and succeeded at once, under its own attempt id. */
  private adopt(p: PendingJob, task: RuntimeTask, success: JournaledSuccess | undefined): Promise<void> {
    const { books, numbering } = this.host;
    const worker = (success && books.worker(success.workerId)) || books.liveWorkers()[0]!;
    const next = p.recovered.tasks.get(task.id)?.nextAttempt ?? 0;
    const now = this.host.clock();
    numbering.setBase(task.id, success ? attemptNumberOf(success.attemptId) : next);
    const effects = books.apply(
      [
        {
          kind: 'launch',
          taskId: task.id,
          jobId: p.job.id,
          workerId: worker.shape.id,
          memoryMb: success?.memoryMb ?? task.memoryMb,
          elastic: success?.elastic ?? false,
          locality: success?.locality ?? 'any',
        },
      ],
      success?.startTime ?? now,
    );
    const attempt = task.attempts[task.attempts.length - 1]!;
    const counters = success?.counters ?? {};
    attempt.data = {
      counters,
      ...(success?.mapOutput ? { mapOutput: success.mapOutput } : {}),
      ...(success?.outputPart ? { outputPart: success.outputPart } : {}),
    };
    effects.push(
      ...books.attemptSucceeded(
        attempt,
        success?.finishTime ?? now,
        success?.measures ?? { inputBytes: task.inputBytes, outputBytes: 0 },
      ),
    );
    if (task.successfulAttempt === attempt) p.job.data.addCounters(counters);
    // The books' next attempt of it (n = 1) gets the number after the last one used.
    numbering.setBase(task.id, Math.max(next, attemptNumberOf(attempt.id) + 1) - 1);
    return this.host.carryOut(effects.filter((e) => e.kind !== 'launch' && e.kind !== 'commit-task'));
  }
}

async function exists(host: RecoveryHost, path: string): Promise<boolean> {
  try {
    await host.namenode.stat(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * The job's tasks whose part file is in `out`, its output or staging directory (outputWorkDir);
 * the partial outputs under `_temporary` are removed (their attempts died with the JobTracker), and
 * with `dropReduces` the reduces' parts too.
 */
async function committedTasks(
  host: RecoveryHost,
  job: RuntimeJob,
  out: string,
  dropReduces: boolean,
): Promise<Set<string>> {
  await host.namenode.remove(`${out}/_temporary`, { recursive: true }).catch(() => undefined);
  await host.namenode.mkdir(`${out}/_temporary`, { parents: true });
  const names = new Set((await host.namenode.list(out)).map((f) => f.path.slice(f.path.lastIndexOf('/') + 1)));
  const committed = new Set<string>();
  for (const task of [...job.maps, ...job.reduces]) {
    const name = partFileName(task.kind, task.index);
    if (!names.has(name)) continue;
    if (dropReduces && task.kind === 'reduce') await host.namenode.remove(`${out}/${name}`);
    else committed.add(task.id);
  }
  return committed;
}

/** A successful attempt as the journal keeps it. */
export function journaledSuccess(attempt: RuntimeAttempt, committed: boolean): JournaledSuccess {
  return {
    attemptId: attempt.id,
    workerId: attempt.worker.shape.id,
    startTime: attempt.startTime,
    finishTime: attempt.finishTime ?? attempt.startTime,
    memoryMb: attempt.memoryMb,
    elastic: attempt.elastic,
    locality: attempt.locality,
    counters: attempt.data.counters,
    measures: attemptMeasures(attempt.task, attempt.data),
    ...(attempt.data.mapOutput ? { mapOutput: attempt.data.mapOutput } : {}),
    ...(attempt.data.outputPart ? { outputPart: attempt.data.outputPart } : {}),
    committed,
  };
}

/**
 * Which of the map outputs a worker reports it should delete: those no job needs, i.e. not the
 * successful attempt, on this worker, of a map of a job still running (or, while a recovery
 * waits, one its journal names).
 */
export function mapOutputsToDrop(
  books: Books<RuntimeData>,
  recovery: JobRecovery | null,
  workerId: string,
  outputs: readonly HeldMapOutput[],
): HeldMapOutput[] {
  const needed = new Map<string, Set<string>>();
  const neededOf = (jobId: string): Set<string> => {
    let ids = needed.get(jobId);
    if (!ids) {
      const job = books.job(jobId);
      const maps = job && books.isActive(job) ? job.maps : [];
      ids = new Set(
        maps.flatMap((t) => (t.successfulAttempt?.worker.shape.id === workerId ? [t.successfulAttempt.id] : [])),
      );
      needed.set(jobId, ids);
    }
    return ids;
  };
  return outputs.filter((o) => !recovery?.wants(workerId, o) && !neededOf(o.jobId).has(o.attemptId));
}
