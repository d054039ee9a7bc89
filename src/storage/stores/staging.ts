/**
 * Where the committers that rename (file://, WebHDFS) stage a job's output, and the check that a
 * reported part is one of that staging's own. A part's PendingPart comes from a task attempt, whose
 * process also runs the job's code: the committer, run by the JobTracker with its own rights, moves
 * only what lies where the job's attempts write (`<staging>/_temporary/<attempt>/<part name>`), so a
 * forged report cannot commit any other file into the output.
 */
import { posix } from 'node:path';
import { MinimrError } from '../../errors.js';
import type { PendingPart } from './types.js';

/** The hidden directory beside `outputPath` where job `jobId` stages its output (a dot name: no input reads it). */
export function stagingDirOf(outputPath: string, jobId: string): string {
  return posix.join(posix.dirname(outputPath), `.${posix.basename(outputPath)}.minimr-${jobId}`);
}

/** Where the attempts of a job staged at `staging` write their parts (each in a directory of its own). */
export function attemptsDirOf(staging: string): string {
  return posix.join(staging, '_temporary');
}

const NAME_RE = /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,199}$/;

/** `<staging>/_temporary/<attemptId>/<partName>`, after checking both names are plain ones. */
export function stagedPartPath(staging: string, attemptId: string, partName: string): string {
  if (!NAME_RE.test(attemptId) || !NAME_RE.test(partName) || partName.startsWith('_'))
    throw new MinimrError('EBADREQUEST', `bad attempt ${attemptId} or part name ${partName}`);
  return posix.join(attemptsDirOf(staging), attemptId, partName);
}

/** The staged path of a reported part: refused (EBADREQUEST) unless it is an attempt's file of that name. */
export function checkedStagedPath(staging: string, part: PendingPart): string {
  const commit = part.commit;
  const path =
    typeof commit === 'object' && commit !== null && !Array.isArray(commit) && typeof commit.path === 'string'
      ? commit.path
      : undefined;
  const attempt = path !== undefined && posix.dirname(posix.dirname(path)) === attemptsDirOf(staging);
  if (
    path === undefined ||
    !attempt ||
    posix.basename(path) !== part.name ||
    stagedPartPath(staging, posix.basename(posix.dirname(path)), part.name) !== path
  ) {
    throw new MinimrError('EBADREQUEST', `part ${part.name} was not staged by an attempt of this job`, {
      part: part.name,
    });
  }
  return path;
}
