import { access, readdir, rm, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { MinimrError } from '../errors.js';

/**
 * The one place that knows where map outputs live on a worker's disk:
 *   <rootDir>/<jobId>/<attemptId>/file.out        (data: one segment per reduce partition)
 *   <rootDir>/<jobId>/<attemptId>/file.out.index  (index: offset/length/records/crc32 per partition)
 *   <rootDir>/<jobId>/<attemptId>.reduce/        (a reduce attempt's shuffle work dir: fetched
 *                                                  segments and merged runs; '.' is not an id
 *                                                  character, so no shuffle URL can reach it)
 * Ids arrive from the network (shuffle URLs) and from other processes, so every id that becomes a
 * path component is validated here; nothing else builds these paths.
 */

const ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;

export interface MapOutputPaths {
  readonly dir: string;
  readonly dataFile: string;
  readonly indexFile: string;
}

export function isValidShuffleId(id: string): boolean {
  return ID_PATTERN.test(id);
}

/** Throws EBADPATH unless `id` is safe as a single path component. */
export function assertValidShuffleId(id: string, role: string): void {
  if (typeof id !== 'string' || !ID_PATTERN.test(id)) {
    throw new MinimrError('EBADPATH', `invalid ${role} ${JSON.stringify(id)}: only [A-Za-z0-9_-], 1-128 chars`, {
      role,
      id: String(id),
    });
  }
}

/** File names inside an attempt's output directory (the collector only knows its directory). */
export function mapOutputFilesIn(dir: string): MapOutputPaths {
  return { dir, dataFile: join(dir, 'file.out'), indexFile: join(dir, 'file.out.index') };
}

export function mapOutputPaths(rootDir: string, jobId: string, attemptId: string): MapOutputPaths {
  assertValidShuffleId(jobId, 'jobId');
  assertValidShuffleId(attemptId, 'attemptId');
  return mapOutputFilesIn(join(rootDir, jobId, attemptId));
}

/** Work dir of a reduce attempt's shuffle (segments fetched to disk, merged runs); gone with the job's dir. */
export function reduceWorkDir(rootDir: string, jobId: string, attemptId: string): string {
  assertValidShuffleId(jobId, 'jobId');
  assertValidShuffleId(attemptId, 'attemptId');
  return join(rootDir, jobId, `${attemptId}.reduce`);
}

/** Drops every map output of a job (job finished, failed or killed). Missing is fine. */
export async function removeJobMapOutputs(rootDir: string, jobId: string): Promise<void> {
  assertValidShuffleId(jobId, 'jobId');
  await rm(join(rootDir, jobId), { recursive: true, force: true });
}

/** Drops one attempt's output (attempt lost, killed, or superseded by a re-run). Missing is fine. */
export async function removeAttemptMapOutput(rootDir: string, jobId: string, attemptId: string): Promise<void> {
  const paths = mapOutputPaths(rootDir, jobId, attemptId);
  await rm(paths.dir, { recursive: true, force: true });
  // The job directory goes once its last attempt does; a non-empty or missing one stays as is.
  await rmdir(join(rootDir, jobId)).catch(() => undefined);
}

/** The complete map outputs under `rootDir` (those with their index written), by job and attempt. */
export async function listMapOutputs(rootDir: string): Promise<{ jobId: string; attemptId: string }[]> {
  const out: { jobId: string; attemptId: string }[] = [];
  for (const jobId of await readdir(rootDir).catch(() => [] as string[])) {
    if (!isValidShuffleId(jobId)) continue;
    for (const attemptId of await readdir(join(rootDir, jobId)).catch(() => [] as string[])) {
      if (!isValidShuffleId(attemptId)) continue;
      const complete = await access(mapOutputPaths(rootDir, jobId, attemptId).indexFile).then(
        () => true,
        () => false,
      );
      if (complete) out.push({ jobId, attemptId });
    }
  }
  return out;
}

/** Drops everything under `rootDir`: at a worker's start, what a previous run left is no job's any more. */
export async function removeAllMapOutputs(rootDir: string): Promise<void> {
  for (const name of await readdir(rootDir).catch(() => [] as string[]))
    await rm(join(rootDir, name), { recursive: true, force: true });
}
