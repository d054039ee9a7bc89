/**
 * Job tokens, as Hadoop's delegation tokens: what lets a task's file system calls act as its job's
 * owner. The JobTracker signs one per attempt it launches (an HMAC, under a key only it holds, of
 * the job, the attempt, the owner and an expiry); the attempt's worker hands it back with every
 * `task-fs-*` call it forwards. A worker can therefore act only for the jobs whose attempts it was
 * given, and only within their paths: it cannot name another job id and borrow its owner's rights,
 * as the secret alone allowed before.
 *
 * The token's scope is checked on every call:
 * - the job is one this JobTracker runs, has not ended, and the token is not past its expiry;
 * - reads (stat, list, block locations, bad-replica reports) are of the job's input paths or its
 *   output directory; writes are inside the attempt's own temporary directory under the output
 *   (`<output>/_temporary/<attempt>`), where it writes its part file before the commit (under the
 *   job's staging directory instead when it replaces an output: runtime-data's `outputWorkDir`).
 * Outside them: ETOKEN, saying what the token allows.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { MinimrError } from '../../errors.js';
import { isSameOrBelow } from '../../storage/index.js';
import type { NamenodeOp } from '../wire/index.js';
import { proofMatches } from '../wire/index.js';

/** A job's attempts rarely run a week; a token that old is refused even if its job still runs. */
export const JOB_TOKEN_LIFETIME_MS = 7 * 24 * 3_600_000;

const TOKEN_FORMAT = /^([A-Za-z0-9_-]{1,400})\.([0-9]{1,15})\.([A-Za-z0-9_-]{43})$/;

/** The NameNode operations a task may call that only read. */
const READS: ReadonlySet<NamenodeOp> = new Set<NamenodeOp>(['stat', 'list', 'getBlocks', 'reportBadReplica']);

/** What a job token was issued for, as its signature binds it. */
export interface JobTokenScope {
  readonly jobId: string;
  readonly attemptId: string;
  readonly owner: string;
}

/** The paths a job's token reaches, from the job itself (never from the token). */
export interface JobPaths {
  readonly inputPaths: readonly string[];
  readonly outputPath: string;
  /** Where its attempts write and its tasks commit, when not `outputPath` (runtime-data's `outputWorkDir`). */
  readonly workDir?: string;
}

export class JobTokens {
  private key = randomBytes(32);

  constructor(private readonly clock: () => number) {}

  /**
   * Takes the key kept in `file` (made there, mode 0600, on first start): the attempts a restarted
   * JobTracker finds still running on their workers keep acting with the tokens they were given.
   */
  async open(file: string): Promise<void> {
    try {
      await writeFile(file, `${this.key.toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const kept = Buffer.from((await readFile(file, 'utf8')).trim(), 'base64url');
    if (kept.length !== 32)
      throw new MinimrError('EBADCONF', `the job token key ${file} is damaged: remove it (running attempts then fail)`);
    this.key = kept;
  }

  issue(scope: JobTokenScope): string {
    const expiresAt = Math.floor(this.clock() + JOB_TOKEN_LIFETIME_MS);
    const attempt = Buffer.from(scope.attemptId, 'utf8').toString('base64url');
    return `${attempt}.${expiresAt}.${this.mac(scope, expiresAt)}`;
  }

  /**
   * Throws ETOKEN unless `token` was issued for an attempt of `jobId` owned by `owner` and has not
   * expired; answers the attempt it was issued for.
   */
  verify(token: string, jobId: string, owner: string): string {
    const m = TOKEN_FORMAT.exec(token);
    const attemptId = m ? Buffer.from(m[1]!, 'base64url').toString('utf8') : '';
    const expiresAt = m ? Number(m[2]) : 0;
    if (!m || !proofMatches(this.mac({ jobId, attemptId, owner }, expiresAt), m[3])) {
      throw new MinimrError(
        'ETOKEN',
        `a task's file system call for job ${jobId} carries no valid job token for that job ` +
          '(a worker may act only for the attempts it was given)',
        { jobId },
      );
    }
    if (this.clock() > expiresAt)
      throw new MinimrError('ETOKEN', `the job token of attempt ${attemptId} has expired`, { jobId });
    return attemptId;
  }

  private mac(scope: JobTokenScope, expiresAt: number): string {
    return createHmac('sha256', this.key)
      .update(`minimr-job-token-v1\0${scope.jobId}\0${scope.attemptId}\0${scope.owner}\0${expiresAt}`)
      .digest('base64url');
  }
}

/**
 * Throws ETOKEN unless `op` on `paths` stays in what attempt `attemptId` of a job with `job`'s
 * paths may touch (see the file's essay).
 */
export function checkJobTokenScope(
  op: NamenodeOp,
  paths: readonly string[],
  job: JobPaths,
  jobId: string,
  attemptId: string,
): void {
  const workDir = job.workDir ?? job.outputPath;
  const attemptDir = `${workDir}/_temporary/${attemptId}`;
  const allowed = READS.has(op) ? [...job.inputPaths, job.outputPath, workDir] : [attemptDir];
  for (const path of paths) {
    if (allowed.some((dir) => isSameOrBelow(path, dir))) continue;
    throw new MinimrError(
      'ETOKEN',
      `a task of job ${jobId} may not ${op} ${path}: its job token allows ` +
        (READS.has(op) ? "reading the job's input and output" : `writing under ${attemptDir}`),
      { jobId, path },
    );
  }
}
