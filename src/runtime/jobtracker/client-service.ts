/**
 * The JobTracker's side of the client link (CLIENT_PROTOCOL): submission, job status and control,
 * attempt logs, profiles, MR-clusters and the file system, as the WebSocket link, `/api/v1` and the
 * web pages reach them. Who may call what is the table's `allowed` column; this file says who owns
 * a job, an attempt and a profile (`ownerOf`), and carries the calls out.
 */
import { realpath, statfs } from 'node:fs/promises';
import { networkInterfaces } from 'node:os';
import { dirname } from 'node:path';
import type { Books } from '../../books/index.js';
import { MinimrError } from '../../errors.js';
import {
  computeSplits,
  externalInputFiles,
  externalSplits,
  isExternalUri,
  isSameOrBelow,
  openExternalStore,
  parseStoreUri,
  storeConfOf,
  type Caller as NamenodeCaller,
  type FileStatus,
} from '../../storage/index.js';
import {
  isAttemptLogStream,
  serveNamenodeOperation,
  validateSubmission,
  type AttemptLogSlice,
  type Authority,
  type CallContext,
  type NamenodeArgs,
  type ClientProtocol,
  type UserOperations,
  type ClusterInfoResult,
  type Handlers,
  type JobStatus,
  type JobSubmission,
  type NamenodeOp,
  type OwnedResource,
  type Ownership,
} from '../wire/index.js';
import { STREAMING_MODULE_NAME, streamingModuleSource } from '../task/index.js';
import { fetchAttemptLog, attemptLogTokenId } from '../worker/index.js';
import type { TrackerCore } from './core.js';
import { inputFilesAt } from './input-files.js';
import {
  jobMemoryMb,
  jobPlan,
  jobStatus,
  outputWorkDir,
  type RuntimeAttempt,
  type RuntimeData,
  type TaskInputPlan,
} from './runtime-data.js';
import { estimatesFor } from './job-profile.js';
import { storeCommitterOf, writesToStore } from './store-output.js';

/** Where an attempt ran and whose job it was, from memory or the history. */
export interface AttemptOrigin {
  readonly jobId: string;
  readonly owner: string;
  readonly workerId: string;
}

/** statfs(2) types of network file systems (linux/magic.h): NFS, SMB/CIFS, SMB2, FUSE, Ceph, 9P, AFS, GPFS, Lustre. */
const NETWORK_FILE_SYSTEMS = new Set([
  0x6969, 0x517b, 0xff534d42, 0xfe534d42, 0x65735546, 0x00c36400, 0x01021997, 0x5346414f, 0x47504653, 0x0bd00bd0,
]);

export class ClientService implements Authority {
  private jobSeq = 0;

  constructor(
    private readonly core: TrackerCore,
    /** Job ids are `<prefix>_NNNN`: the prefix is the JobTracker's start time. */
    private readonly jobIdPrefix: string,
    private readonly maxAttempts: number,
    /** Directories whose files jobs may read as file:// inputs (JobTrackerOptions.fileRoots). */
    private readonly fileRoots: readonly string[] = [],
    /** Directories where jobs may write file:// outputs (JobTrackerOptions.fileOutputRoots). */
    private readonly fileOutputRoots: readonly string[] = [],
  ) {}

  get admin(): string {
    return this.core.admin;
  }

  /** Job ids continue after those the journal holds. */
  resumeNumbering(journaledIds: readonly string[]): void {
    for (const id of journaledIds) {
      if (id.startsWith(`${this.jobIdPrefix}_`))
        this.jobSeq = Math.max(this.jobSeq, Number(id.slice(this.jobIdPrefix.length + 1)) || 0);
    }
  }

  async ownerOf(resource: OwnedResource, key: string): Promise<Ownership> {
    switch (resource) {
      case 'job': {
        const job = this.core.books.job(key);
        const owner = job ? job.data.owner : (await this.core.history.record(key)).status.user;
        return { owner, what: `job ${key}` };
      }
      case 'attempt': {
        const origin = await this.locateAttempt(key);
        if (!origin)
          throw new MinimrError(
            'ENOATTEMPT',
            `no attempt ${key} on this JobTracker or in its history (see \`minimr job attempts JOB\`)`,
            { attemptId: key },
          );
        return { owner: origin.owner, what: `job ${origin.jobId}` };
      }
      case 'profile': {
        const profile = this.core.profiles.get(key);
        // A profile made before profiles had owners is the admin's to change.
        return { owner: profile ? (profile.owner ?? this.core.admin) : null, what: `the profile of ${key}` };
      }
    }
  }

  handlers(): Omit<Handlers<ClientProtocol, unknown>, keyof UserOperations> {
    const core = this.core;
    const fs =
      <K extends NamenodeOp>(op: K) =>
      (args: NamenodeArgs<K>, { caller }: CallContext<unknown>) =>
        serveNamenodeOperation(core.namenode, op, args, core.namenode.callerFor(caller.user)) as Promise<never>;
    return {
      'submit-job': ({ job }, { caller }) => this.submitJob(job, caller.user),
      'job-status': async ({ jobId }) => this.withSchedulingNote((await core.history.record(jobId)).status),
      'list-jobs': ({ all }) => core.history.list(all === true),
      'job-attempts': async ({ jobId }) => [...(await core.history.record(jobId)).attempts],
      'kill-job': ({ jobId }) => this.killJob(jobId),
      'wait-job': ({ jobId }) => core.waitForJob(jobId),
      'attempt-log': ({ attemptId, stream, offset, length }) => this.attemptLog(attemptId, stream, offset, length),
      'cluster-info': () => this.clusterInfo(),
      'job-profiles': ({ job }) =>
        job === undefined ? core.profiles.list() : [core.profiles.get(job)].filter((p) => p !== undefined),
      'import-profile': ({ job, profile }, { caller }) => core.profiles.import(job, profile, core.clock(), caller.user),
      'remove-profile': ({ job }) => core.profiles.remove(job),
      'mrc-activate': ({ name, minNodes, input }) => core.mrc.activate(name, minNodes, input ?? null),
      'mrc-list': () => core.mrc.list(),
      'mrc-deactivate': ({ name }) => core.mrc.deactivate(name),
      fsck: ({ path }, { caller }) => core.namenode.fsck(path ?? '/', core.namenode.callerFor(caller.user)),
      'fs-mkdir': fs('mkdir'),
      'fs-stat': fs('stat'),
      'fs-list': fs('list'),
      'fs-remove': fs('remove'),
      'fs-rename': fs('rename'),
      'fs-create': fs('create'),
      'fs-allocateBlock': fs('allocateBlock'),
      'fs-commitBlock': fs('commitBlock'),
      'fs-complete': fs('complete'),
      'fs-abandon': fs('abandon'),
      'fs-getBlocks': fs('getBlocks'),
      'fs-reportBadReplica': fs('reportBadReplica'),
      'fs-chmod': fs('chmod'),
      'fs-chown': fs('chown'),
    };
  }

  /** An active job's status says so when the JobTracker schedules no new work (JobTracker.stopScheduling). */
  private withSchedulingNote(status: JobStatus): JobStatus {
    const stopped = this.core.schedulingStopped;
    return stopped !== undefined && (status.state === 'pending' || status.state === 'running')
      ? { ...status, schedulingStopped: stopped }
      : status;
  }

  clusterInfo(): ClusterInfoResult {
    const core = this.core;
    return {
      policy: core.policy.name,
      heartbeatMs: core.heartbeatMs,
      ...(core.schedulingStopped !== undefined ? { schedulingStopped: core.schedulingStopped } : {}),
      workers: core.books.liveWorkers().map((w) => ({
        workerId: w.shape.id,
        host: w.data.address.host,
        dataPort: w.data.address.dataPort,
        rack: w.data.address.rack,
        mapSlots: w.shape.mapSlots,
        reduceSlots: w.shape.reduceSlots,
        memoryMb: w.shape.memoryMb,
        runningAttempts: w.running.size,
        lastHeartbeat: w.data.lastHeartbeat,
      })),
    };
  }

  /** Kills a job (the table has checked that the caller may); a retired job's status as it ended. */
  async killJob(jobId: string): Promise<JobStatus> {
    const core = this.core;
    const job = core.books.job(jobId);
    if (!job) return (await core.history.record(jobId)).status;
    await core.carryOut(
      core.books.killJob(job, core.clock(), { code: 'EJOBKILLED', message: `job ${jobId} was killed on request` }),
    );
    return jobStatus(job);
  }

  /**
   * A slice of an attempt's stdout or stderr (default: its last 64 KiB), read from the worker that
   * ran it: the logs stay on the workers (attempt-logs.ts), only the JobTracker knows where.
   */
  async attemptLog(attemptId: string, stream: string, offset?: number, length?: number): Promise<AttemptLogSlice> {
    if (!isAttemptLogStream(stream))
      throw new MinimrError('EBADREQUEST', `an attempt log is stdout or stderr, got ${JSON.stringify(stream)}`);
    const origin = await this.locateAttempt(attemptId);
    if (!origin)
      throw new MinimrError(
        'ENOATTEMPT',
        `no attempt ${attemptId} on this JobTracker or in its history (see \`minimr job attempts JOB\`)`,
        { attemptId },
      );
    const { jobId, workerId } = origin;
    // A worker that registered again since has a new data port: ask the one alive now.
    const worker = this.core.books.worker(workerId);
    if (!worker?.alive) {
      throw new MinimrError(
        'EWORKERLOST',
        `attempt ${attemptId} ran on worker ${workerId}, which is not ` +
          `connected now; its log is on that machine under ` +
          `DIR/logs/${jobId}/${attemptId}/`,
        {
          attemptId,
          workerId,
        },
      );
    }
    const { host, dataPort } = worker.data.address;
    const dataUrl = `http://${host.includes(':') ? `[${host}]` : host}:${dataPort}`;
    const token = this.core.namenode.blockKey.issue(attemptLogTokenId(jobId, attemptId), 'read', Date.now() + 60_000);
    return fetchAttemptLog(dataUrl, { jobId, attemptId, workerId }, stream, token, offset, length);
  }

  /** The job, owner and worker of an attempt in memory, or of a retired job's from the history. */
  async locateAttempt(attemptId: string): Promise<AttemptOrigin | undefined> {
    const attempt = findAttempt(this.core.books, attemptId);
    if (attempt)
      return { jobId: attempt.task.job.id, owner: attempt.task.job.data.owner, workerId: attempt.worker.shape.id };
    const retired = await this.core.history.retiredAttempt(attemptId);
    return retired && { jobId: retired.jobId, owner: retired.owner, workerId: retired.attempt.workerId };
  }

  /** Submits a job for `user`: its input must be readable and its output writable by that user. */
  async submitJob(raw: unknown, user: string): Promise<{ jobId: string }> {
    const core = this.core;
    let submission = validateSubmission(raw);
    // A streaming job runs the engine's streaming module, never one its client sent (sandbox.ts).
    if (submission.streaming)
      submission = { ...submission, moduleSource: await streamingModuleSource(), moduleName: STREAMING_MODULE_NAME };
    core.mrc.checkSubmission(submission);
    const caller = core.namenode.callerFor(user);
    const allSplits = await this.planInput(submission, caller);
    const maxMaps = submission.conf?.['job.maxMaps'];
    const splits = maxMaps !== undefined ? allSplits.slice(0, maxMaps) : allSplits;
    // Numbered first (as Hadoop's JobSubmitter does): a job replacing an output stages it under its id.
    const jobId = `${this.jobIdPrefix}_${String(++this.jobSeq).padStart(4, '0')}`;
    await this.prepareOutput(jobId, submission, caller);
    const memory = jobMemoryMb(submission);
    const verdict = estimatesFor(
      core.profiles.get(submission.name),
      {
        conf: submission.conf,
        mapInputBytes: splits.map((s) => s.inputBytes),
        reducers: submission.reducers,
        mapMemoryMb: memory.map,
        reduceMemoryMb: memory.reduce,
      },
      Math.max(0, ...core.books.liveWorkers().map((w) => w.shape.memoryMb)),
    );
    if (verdict.use.state === 'rejected')
      core.logger.warn(
        { job: jobId, name: submission.name, why: verdict.use.reason },
        'profile not usable: the job runs regular',
      );
    else if (verdict.use.state === 'none')
      core.logger.info({ job: jobId, name: submission.name }, 'no profile of this job yet: it runs regular');
    const maxAttempts = submission.maxAttempts ?? this.maxAttempts;
    const submitTime = core.clock();
    // Journaled before it is admitted: a client holding its id holds a job that survives a restart.
    await core.journal.jobSubmitted({
      jobId,
      submission,
      user,
      splits,
      ...(verdict.estimates ? { estimates: verdict.estimates } : {}),
      maxAttempts,
      profile: verdict.use,
      submitTime,
    });
    let admitted: ReturnType<Books<RuntimeData>['submit']>;
    try {
      admitted = core.books.submit(
        jobPlan(jobId, submission, user, splits, maxAttempts, verdict.estimates),
        submitTime,
      );
    } catch (err) {
      await core.journal.forget(jobId);
      throw err;
    }
    const { job, effects } = admitted;
    job.data.profile = verdict.use;
    if (job.skew?.plansAtSubmission)
      core.logger.info(
        { job: jobId, row: job.skew.row, ms: job.skew.assignmentMs },
        'count-min sketch assignment made',
      );
    core.logger.info(
      { job: jobId, name: submission.name, user, maps: job.maps.length, reduces: job.reduces.length },
      'job submitted',
    );
    core.metrics.jobSubmitted();
    if (effects.length > 0) await core.carryOut(effects);
    else setImmediate(() => core.schedule({ kind: 'job-submitted', jobId }));
    return { jobId };
  }

  private async planInput(submission: JobSubmission, caller: NamenodeCaller): Promise<TaskInputPlan[]> {
    if (submission.input.kind === 'generated') {
      return submission.input.splits.map((value) => ({
        input: { kind: 'generated', value },
        preferredWorkers: [],
        preferredRacks: [],
        inputBytes: 0,
      }));
    }
    if (submission.inputPaths.length === 0) {
      throw new MinimrError('ENOINPUT', 'the job reads files but no input path was given (--input PATH)');
    }
    const namenode = this.core.namenode;
    const files: FileStatus[] = [];
    const plans: TaskInputPlan[] = [];
    for (const path of submission.inputPaths) {
      if (isExternalUri(path)) plans.push(...(await this.planExternalInput(path, submission)));
      else files.push(...(await inputFilesAt(namenode, path, caller)));
    }
    for (const file of files) {
      const blocks = await namenode.getBlocks(file.path, undefined, caller);
      for (const split of computeSplits(file.path, blocks)) {
        plans.push({
          input: {
            kind: 'file',
            path: split.path,
            start: split.start,
            length: split.length,
            fileLength: split.fileLength,
          },
          preferredWorkers: split.preferredWorkers,
          preferredRacks: split.preferredRacks,
          inputBytes: split.length,
        });
      }
    }
    return plans;
  }

  /**
   * Splits of an input in another store (file://, s3://, webhdfs://), listed by the JobTracker with
   * the job's store settings; its tasks read them with the same settings. A file:// input must be
   * under a directory the cluster's admin opened to jobs (`--file-root`): the JobTracker and the
   * workers read it with their own rights, not the submitter's.
   */
  private async planExternalInput(uri: string, submission: JobSubmission): Promise<TaskInputPlan[]> {
    const conf = storeConfOf(submission.conf ?? {});
    const { store, location } = await openExternalStore(uri, conf);
    if (location.scheme === 'file') this.checkFileRoot(location.path, uri);
    const plans: TaskInputPlan[] = [];
    const local = location.scheme === 'file' ? await this.workersOnThisHost(location.path) : [];
    for (const file of await externalInputFiles(store, location.uri)) {
      // A symbolic link under a root must not lead a job outside it.
      if (location.scheme === 'file') {
        const path = parseStoreUri(file.uri).path;
        this.checkFileRoot(await realpath(path).catch(() => path), file.uri);
      }
      for (const split of externalSplits(file, this.core.namenode.defaultBlockSize)) {
        plans.push({
          input: { kind: 'file', ...split, ...(Object.keys(conf).length > 0 ? { store: conf } : {}) },
          preferredWorkers: local,
          preferredRacks: [],
          inputBytes: split.length,
        });
      }
    }
    return plans;
  }

  /**
   * The workers for which a file:// input at `path` is on their own host: when its file system is a
   * local one (not a network file system every host mounts), its files are on this JobTracker's host,
   * which listed them, so the workers there read them node-local; a network file system's files are
   * equally near every worker (none preferred).
   */
  private async workersOnThisHost(path: string): Promise<string[]> {
    const fsType = await statfs(path).then(
      (s) => s.type,
      () => undefined,
    );
    if (fsType === undefined || NETWORK_FILE_SYSTEMS.has(fsType)) return [];
    const here = new Set([
      'localhost',
      ...Object.values(networkInterfaces()).flatMap((a) => (a ?? []).map((i) => i.address)),
    ]);
    return this.core.books
      .liveWorkers()
      .filter((w) => here.has(w.data.address.host))
      .map((w) => w.shape.id);
  }

  private checkFileRoot(path: string, uri: string, access: 'read' | 'write' = 'read'): void {
    const roots = access === 'read' ? this.fileRoots : this.fileOutputRoots;
    if (roots.some((root) => isSameOrBelow(path, root))) return;
    const option = access === 'read' ? '--file-root' : '--file-output-root';
    throw new MinimrError(
      'EPERM',
      roots.length === 0
        ? `${uri}: this cluster lets jobs ${access} no file:// paths (its admin opens directories with ` +
            `\`minimr jobtracker ${option} DIR\`)`
        : `${uri} is outside the directories this cluster lets jobs ${access}: ${roots.join(', ')}`,
      { path: uri },
    );
  }

  /**
   * The job's output directory, or with `--overwrite` its staging directory (outputWorkDir): the
   * previous output is left alone until the job commits, and replaced then (job-completion.ts).
   * Made before the job is journaled, so that after a restart a missing staging directory means
   * its commit replaced the output (job-recovery.ts).
   */
  private async prepareOutput(jobId: string, submission: JobSubmission, caller: NamenodeCaller): Promise<void> {
    const namenode = this.core.namenode;
    const out = submission.outputPath;
    if (writesToStore(submission)) {
      const location = parseStoreUri(out);
      // The JobTracker commits a file:// output (and replaces an old one) with its own rights: where the admin lets it.
      if (location.scheme === 'file') {
        const parent = dirname(location.path);
        this.checkFileRoot(await realpath(parent).catch(() => parent), out, 'write');
      }
      await (await storeCommitterOf(jobId, submission)).setupJob({ overwrite: submission.overwrite });
      return;
    }
    let exists = true;
    try {
      await namenode.stat(out, caller);
    } catch (err) {
      if (!(err instanceof MinimrError && err.code === 'ENOENT')) throw err;
      exists = false;
    }
    if (exists) {
      if (!submission.overwrite) {
        throw new MinimrError(
          'EOUTPUTEXISTS',
          `output path ${out} already exists; remove it (\`minimr fs rm -r ${out}\`) or submit with --overwrite`,
          { path: out },
        );
      }
      // Refused now rather than after the job's work, at its commit.
      await namenode.checkReplaceable(out, caller);
    }
    await namenode.mkdir(`${outputWorkDir(jobId, submission)}/_temporary`, { parents: true }, caller);
  }
}

/** Any attempt the books hold, running or ended (the books index only running ones). */
export function findAttempt(books: Books<RuntimeData>, attemptId: string): RuntimeAttempt | undefined {
  const running = books.attempt(attemptId);
  if (running) return running;
  for (const job of books.jobs()) {
    for (const task of [...job.maps, ...job.reduces]) {
      const found = task.attempts.find((a) => a.id === attemptId);
      if (found) return found;
    }
  }
  return undefined;
}
