/**
 * A job's output in another store (file://, s3://, webhdfs://), committed through that store's
 * OutputCommitter (src/storage/stores) instead of the block store's renames: set up at submission
 * (EOUTPUTEXISTS there, as on the block store), each output task's attempt writes its part where no
 * reader looks and reports it as a PendingPart, the task's successful attempt's part is journaled
 * with the task, the job commit makes exactly those parts visible with a `_SUCCESS` manifest, and a
 * job that fails or is killed aborts: nothing at the output, no upload left open.
 *
 * The JobTracker opens the store with the job's own store settings and its own credentials (S3's
 * standard chain in its environment), as it did to list the job's inputs.
 */
import { MinimrError } from '../../errors.js';
import {
  isExternalUri,
  type OutputCommitter,
  openExternalStore,
  type PendingPart,
  storeConfOf,
} from '../../storage/index.js';
import type { JobSubmission } from '../wire/index.js';
import { partFileName, type RuntimeAttempt, type RuntimeJob } from './runtime-data.js';

/** Whether the job writes to another store than the block store. */
export function writesToStore(submission: Pick<JobSubmission, 'outputPath'>): boolean {
  return isExternalUri(submission.outputPath);
}

/** The committer of job `jobId`'s output (a fresh store client each time: the JobTracker keeps none between steps). */
export async function storeCommitterOf(jobId: string, submission: JobSubmission): Promise<OutputCommitter> {
  const conf = storeConfOf(submission.conf ?? {});
  const { store, location } = await openExternalStore(submission.outputPath, conf);
  return store.outputCommitter(location.uri, jobId);
}

/** The tasks whose parts are the job's output: its reduces, or the maps of a map-only job. */
export function outputTasksOf(job: RuntimeJob): RuntimeJob['maps'] {
  return job.reduces.length > 0 ? job.reduces : job.maps;
}

/**
 * Why an attempt's success report cannot be taken for a job writing to another store (undefined: it
 * can): an output task's attempt must report its own part, by its own name.
 */
export function unreportedPart(attempt: RuntimeAttempt, part: PendingPart | undefined): string | undefined {
  const task = attempt.task;
  const job = task.job;
  if (!writesToStore(job.data.submission) || (task.kind === 'map' && job.reduces.length > 0)) return undefined;
  const name = partFileName(task.kind, task.index);
  if (part === undefined) return `its report names no part of the output ${job.data.submission.outputPath}`;
  if (part.name !== name) return `its report names the part ${part.name}, not ${name}`;
  return undefined;
}

/** The parts the job commit makes visible: each output task's successful attempt's. */
export function partsToCommit(job: RuntimeJob): PendingPart[] {
  const parts: PendingPart[] = [];
  for (const task of outputTasksOf(job)) {
    const part = task.successfulAttempt?.data.outputPart;
    if (!part) throw new MinimrError('EINTERNAL', `task ${task.id} succeeded without a part to commit`);
    parts.push(part);
  }
  return parts;
}
