/**
 * The JobTracker's side of the worker link (WORKER_TO_JOBTRACKER): registration, heartbeats,
 * attempt reports, replica reports, job modules, and the file system calls a worker forwards for
 * its tasks. A report counts only from the connection that registered the worker it names; the
 * dispatcher has already checked its shape and that it comes from a registered worker.
 */
import type { Effect } from '../../books/index.js';
import { MinimrError, type SerializedError } from '../../errors.js';
import type { DatanodeAddress } from '../../storage/index.js';
import { phaseTrace } from '../../util/index.js';
import { isLoopbackAddress } from '../worker/index.js';
import {
  JOBTRACKER_TO_WORKER,
  stubOf,
  type ArgsOf,
  type Handlers,
  type NamenodeArgs,
  type NamenodeOp,
  type RegisterResult,
  serveNamenodeOperation,
  type RpcPeer,
  type WorkerToJobTracker,
} from '../wire/index.js';
import type { TrackerCore } from './core.js';
import { checkJobTokenScope } from './job-tokens.js';
import {
  attemptMeasures,
  outputWorkDir,
  type RuntimeAttempt,
  type RuntimeData,
  type RuntimeWorker,
  type WorkerLink,
} from './runtime-data.js';
import { journaledSuccess, mapOutputsToDrop } from './job-recovery.js';
import { unreportedPart } from './store-output.js';

/** Attempts a worker does not list for this long after launch are taken as lost. */
const LAUNCH_GRACE_HEARTBEATS = 3;

type Report<K extends keyof WorkerToJobTracker> = ArgsOf<WorkerToJobTracker[K]>;

export class WorkerService {
  /** Where each connection comes from: a worker that advertises loopback from elsewhere is warned about. */
  private readonly peerAddresses = new WeakMap<RpcPeer, string>();

  constructor(private readonly core: TrackerCore) {}

  /** A new connection, before it authenticated: where it comes from, and what its closing means. */
  connected(peer: RpcPeer, remoteAddress: string | undefined): void {
    if (remoteAddress) this.peerAddresses.set(peer, remoteAddress);
    void peer.closed.then(() => {
      if (!peer.label) return;
      const worker = this.core.books.worker(peer.label);
      if (worker?.alive && worker.data.peer === peer) this.core.workerLost(worker, 'its connection closed');
    });
  }

  /** Whether `peer` is the connection of a live registered worker: what the `worker` role means. */
  isWorkerPeer(peer: RpcPeer): boolean {
    return peer.label !== '' && this.core.books.worker(peer.label)?.data.peer === peer;
  }

  handlers(): Handlers<WorkerToJobTracker, RpcPeer> {
    const forTask =
      <K extends NamenodeOp>(op: K) =>
      (args: NamenodeArgs<K> & { jobId: string; jobToken: string }) =>
        this.forTask(op, args) as Promise<never>;
    return {
      register: (args, { peer }) => this.register(args, peer),
      'webhdfs-open': (args) => this.core.webhdfs.openAtDatanode(args),
      'webhdfs-create': (args, { peer }) => this.core.webhdfs.createAtDatanode(args, peer.label),
      'webhdfs-allocate-block': (args, { peer }) => this.core.webhdfs.allocateAtDatanode(args, peer.label),
      'webhdfs-commit-block': (args, { peer }) => this.core.webhdfs.commitBlockAtDatanode(args, peer.label),
      'webhdfs-complete': (args, { peer }) => this.core.webhdfs.completeAtDatanode(args, peer.label),
      'webhdfs-abandon': (args, { peer }) => this.core.webhdfs.abandonAtDatanode(args, peer.label),
      heartbeat: (args, { peer }) => this.heartbeat(args, peer),
      'attempt-finished': (args, { peer }) => {
        phaseTrace('jt-finished', { attempt: args.attemptId });
        this.attemptFinished(args, peer);
      },
      'block-replicated': (args, { peer }) => {
        if (!this.workerFor(peer, args.workerId)) return;
        for (const target of args.targets) {
          if (!this.core.books.worker(target)?.alive) continue;
          this.core.namenode.blockReceived(target, args.blockId);
          this.core.copier.arrived(args.blockId, target);
          this.core.mrc.copyLanded(args.blockId, target);
        }
        for (const target of args.full ?? []) this.core.namenode.copyRefusedFull(target, args.blockId);
      },
      'replica-corrupt': (args, { peer }) => {
        // Only the holder's own finding counts: a message naming another worker's replica is ignored.
        if (!this.workerFor(peer, args.workerId)) return;
        this.core.logger.warn(
          { worker: args.workerId, blockId: args.blockId, reason: args.reason },
          'worker found its replica corrupt',
        );
        this.core.namenode.replicaCorrupt(args.workerId, args.blockId);
      },
      'block-report': (args, { peer }) => {
        if (!this.workerFor(peer, args.workerId)) return;
        this.core.namenode.blockReport(args.workerId, args.replicas);
      },
      'blocks-scanned': (args, { peer }) => {
        if (!this.workerFor(peer, args.workerId)) return;
        const corrupt = this.core.namenode.blocksScanned(args.workerId, args.replicas);
        if (corrupt.length > 0)
          this.core.logger.warn({ worker: args.workerId, blocks: corrupt }, 'block scanner found corrupt replicas');
      },
      'get-job-module': ({ jobId }) => {
        const job = this.core.books.job(jobId);
        if (!job)
          throw new MinimrError('ENOJOB', `no job ${jobId} on this JobTracker (see \`minimr job list --all\`)`, {
            jobId,
          });
        return { source: job.data.submission.moduleSource, name: job.data.submission.moduleName };
      },
      'get-job-files': ({ jobId }) => {
        const job = this.core.books.job(jobId);
        if (!job)
          throw new MinimrError('ENOJOB', `no job ${jobId} on this JobTracker (see \`minimr job list --all\`)`, {
            jobId,
          });
        return { files: job.data.submission.streaming?.files ?? [] };
      },
      'task-fs-mkdir': forTask('mkdir'),
      'task-fs-stat': forTask('stat'),
      'task-fs-list': forTask('list'),
      'task-fs-remove': forTask('remove'),
      'task-fs-rename': forTask('rename'),
      'task-fs-create': forTask('create'),
      'task-fs-allocateBlock': forTask('allocateBlock'),
      'task-fs-commitBlock': forTask('commitBlock'),
      'task-fs-complete': forTask('complete'),
      'task-fs-abandon': forTask('abandon'),
      'task-fs-getBlocks': forTask('getBlocks'),
      'task-fs-reportBadReplica': forTask('reportBadReplica'),
      'task-fs-chmod': forTask('chmod'),
      'task-fs-chown': forTask('chown'),
    };
  }

  /**
   * A task's file system call acts as its job's owner, within its job token's scope (job-tokens.ts):
   * the job must be one this JobTracker runs and has not ended.
   */
  private forTask<K extends NamenodeOp>(
    op: K,
    args: NamenodeArgs<K> & { jobId: string; jobToken: string },
  ): Promise<unknown> {
    const { jobId, jobToken, ...rest } = args;
    const job = this.core.books.job(jobId);
    if (!job) throw new MinimrError('ENOJOB', `no job ${jobId} on this JobTracker`, { jobId });
    const attemptId = this.core.jobTokens.verify(jobToken, jobId, job.data.owner);
    if (!this.core.books.isActive(job))
      throw new MinimrError('ETOKEN', `job ${jobId} has ended: its tasks' job tokens no longer act for it`, { jobId });
    const named = rest as Record<string, unknown>;
    const paths = [named.path, named.from, named.to].filter((p): p is string => typeof p === 'string');
    const { inputPaths, outputPath } = job.data.submission;
    const workDir = outputWorkDir(jobId, job.data.submission);
    checkJobTokenScope(op, paths, { inputPaths, outputPath, workDir }, jobId, attemptId);
    return serveNamenodeOperation(
      this.core.namenode,
      op,
      rest as unknown as NamenodeArgs<K>,
      this.core.namenode.callerFor(job.data.owner),
    );
  }

  private async register(message: Report<'register'>, peer: RpcPeer): Promise<RegisterResult> {
    const w = message.worker;
    const core = this.core;
    core.books.checkWorkerClaim({
      id: w.workerId,
      mapSlots: w.mapSlots,
      reduceSlots: w.reduceSlots,
      memoryMb: w.memoryMb,
    });
    const previous = core.books.worker(w.workerId);
    if (previous?.alive) {
      // An id is not proof of being that worker: while the live one is still connected, the newcomer is
      // refused; unless that one is suspect (silent past the heartbeat timeout: a machine that rebooted
      // leaves such a connection behind), as it was refused until the old one was lost at that timeout.
      const suspect = core.books.isSuspect(w.workerId);
      if (previous.data.peer !== peer && previous.data.peer.isOpen && !suspect) {
        core.logger.warn(
          { worker: w.workerId, host: w.host },
          'refused a registration with the id of a live, connected worker',
        );
        throw new MinimrError(
          'EBADCONF',
          `worker id ${w.workerId} belongs to a live worker that is still ` +
            `connected; give this worker another --id, or stop the other one ` +
            `first`,
          // `connected`: a worker restarted before its old connection closed tries again.
          { workerId: w.workerId, connected: true },
        );
      }
      core.workerLost(previous, 'it registered again');
      if (suspect && previous.data.peer !== peer) previous.data.peer.terminate();
    }
    const address: DatanodeAddress = {
      workerId: w.workerId,
      host: w.host,
      dataPort: w.dataPort,
      rack: w.rack || '/default-rack',
    };
    const from = this.peerAddresses.get(peer);
    if (from && isLoopbackAddress(address.host) && !isLoopbackAddress(from)) {
      core.logger.warn(
        { worker: w.workerId, advertised: address.host, from },
        `worker ${w.workerId} connects from ${from} but advertises the ` +
          `loopback address ${address.host} for its data port: other ` +
          `workers cannot fetch its map outputs (start it with --host set ` +
          `to an address they reach)`,
      );
    }
    const now = core.clock();
    const link: WorkerLink = {
      address,
      peer,
      commands: stubOf(JOBTRACKER_TO_WORKER, () => peer),
      registeredAt: now,
      lastHeartbeat: now,
    };
    const shape = {
      id: w.workerId,
      host: address.host,
      rack: address.rack,
      mapSlots: w.mapSlots,
      reduceSlots: w.reduceSlots,
      memoryMb: w.memoryMb,
      diskMBps: w.diskMBps,
    };
    void core.carryOut(core.books.workerJoined(shape, link, now));
    peer.label = w.workerId;
    const orphanBlocks = await core.namenode.registerDatanode(address, message.blockIds, message.space);
    const mapOutputs = message.mapOutputs ?? [];
    const orphanMapOutputs = mapOutputsToDrop(core.books, core.recovery, w.workerId, mapOutputs);
    core.recovery?.workerRegistered(w.workerId, mapOutputs);
    core.logger.info(
      {
        worker: w.workerId,
        rack: address.rack,
        mapSlots: w.mapSlots,
        reduceSlots: w.reduceSlots,
        blocks: message.blockIds.length,
        mapOutputs: mapOutputs.length,
        orphanMapOutputs: orphanMapOutputs.length,
      },
      'worker registered',
    );
    core.workerRegistered();
    setImmediate(() => core.schedule({ kind: 'worker-joined', workerId: w.workerId }));
    // In a TLS cluster (every link is then TLS), the worker's data port gets a certificate for its advertised host.
    const authority = core.clusterAuthority;
    const tls =
      authority && message.tlsPublicKey !== undefined
        ? {
            tlsCertificate: await authority.issue(message.tlsPublicKey, [address.host], `minimr worker ${w.workerId}`),
            clusterAuthority: authority.certificate,
          }
        : {};
    return {
      heartbeatMs: core.heartbeatMs,
      orphanBlocks,
      orphanMapOutputs,
      blockKey: core.namenode.blockKey.toString(),
      ...tls,
    };
  }

  private workerFor(peer: RpcPeer, workerId: string): RuntimeWorker | undefined {
    const worker = this.core.books.worker(workerId);
    if (!worker?.alive || worker.data.peer !== peer) {
      this.core.logger.warn({ workerId }, 'message from an unregistered or replaced worker ignored');
      return undefined;
    }
    return worker;
  }

  private heartbeat(message: Report<'heartbeat'>, peer: RpcPeer): void {
    const core = this.core;
    const worker = this.workerFor(peer, message.workerId);
    if (!worker) return;
    const now = core.clock();
    const silentMs = now - worker.data.lastHeartbeat;
    worker.data.lastHeartbeat = now;
    core.metrics.heartbeat(worker.shape.id, now);
    core.namenode.datanodeHeartbeat(worker.shape.id, message.space);
    core.workerHeard(worker, silentMs);
    // Attempts given up while it was silent ran again elsewhere: what is left of them here is killed.
    // Its first heartbeat back need not list them: a worker stopped before it read their launch frames
    // may run its overdue heartbeat timer before it reads them (about 1 resume of an idle Node process in
    // 4), or send a heartbeat it had taken before it was stopped. So each is looked for until the worker
    // lists it or reports it ended (it finished while the worker was silent, or was never started): on
    // the one connection, the worker reads the launch before it can do either.
    const stale = worker.data.staleAttempts;
    const reported = new Set<string>();
    for (const p of message.attempts) {
      if (stale?.delete(p.attemptId)) {
        core.logger.info(
          { worker: worker.shape.id, attempt: p.attemptId },
          'killing an attempt given up while its worker was silent (it ran again elsewhere)',
        );
        worker.data.commands.kill({
          attemptId: p.attemptId,
          reason: `worker ${worker.shape.id} was silent past the task expiry; the attempt ran again elsewhere`,
        });
        continue;
      }
      reported.add(p.attemptId);
      const attempt = core.books.attempt(p.attemptId);
      if (!attempt || attempt.worker !== worker) continue;
      core.books.reportProgress(attempt, p.progress);
      attempt.data.counters = p.counters;
    }
    // A launch the worker never heard of (lost frame, worker restarted) must not hold a slot forever.
    for (const attempt of [...worker.running]) {
      if (!reported.has(attempt.id) && now - attempt.startTime > LAUNCH_GRACE_HEARTBEATS * core.heartbeatMs) {
        const error = { code: 'EWORKERLOST', message: `worker ${worker.shape.id} does not know attempt ${attempt.id}` };
        void core.carryOut(core.books.attemptWorkerFault(attempt, error, now));
      }
    }
    const commands = worker.data.commands;
    const deletions = core.namenode.takeBlockDeletions(worker.shape.id);
    if (deletions.length > 0) commands['delete-blocks']({ blockIds: deletions });
    const verifications = core.namenode.takeVerifications(worker.shape.id);
    if (verifications.length > 0)
      commands['verify-blocks']({
        blocks: verifications.map((b) => ({ blockId: b.blockId, length: b.length, crc32: b.crc32 })),
      });
    for (const work of core.namenode.takeReplicationWork(worker.shape.id)) {
      commands['replicate-block']({ blockId: work.blockId, targets: [...work.targets], token: work.token });
    }
    core.schedule({ kind: 'heartbeat', workerId: worker.shape.id });
  }

  private attemptFinished(message: Report<'attempt-finished'>, peer: RpcPeer): void {
    const core = this.core;
    const worker = this.workerFor(peer, message.workerId);
    if (!worker) return;
    // Whatever the books make of it (a killed attempt has left them), its process is done.
    core.attemptStops.confirmed(message.attemptId, worker.shape.id);
    // One given up while its worker was silent ended there by itself: there is nothing left of it to kill.
    worker.data.staleAttempts?.delete(message.attemptId);
    const attempt = core.books.attempt(message.attemptId);
    if (!attempt || attempt.worker !== worker) return;
    const now = core.clock();
    attempt.data.counters = message.counters;
    if (message.mapOutput) attempt.data.mapOutput = message.mapOutput;
    if (message.outputPart) attempt.data.outputPart = message.outputPart;
    const error: SerializedError = message.error ?? { code: 'EUNKNOWN', message: 'unknown error' };
    let effects: Effect<RuntimeData>[];
    const unproven =
      message.state === 'succeeded'
        ? (unprovenSuccess(attempt, message) ?? unreportedPart(attempt, message.outputPart))
        : undefined;
    if (unproven) {
      core.logger.warn({ attempt: attempt.id, worker: worker.shape.id, why: unproven }, 'success report refused');
      effects = core.books.attemptWorkerFault(
        attempt,
        { code: 'EPROTOCOL', message: `worker ${worker.shape.id} reported ${attempt.id} succeeded, but ${unproven}` },
        now,
      );
    } else if (message.state === 'succeeded') {
      const task = attempt.task;
      effects = core.books.attemptSucceeded(attempt, now, attemptMeasures(task, attempt.data));
      if (task.successfulAttempt === attempt) {
        task.job.data.addCounters(message.counters);
        if (task.kind === 'map') core.tellRunningReduces(task.job, attempt, 'available');
        // Its output is on its worker's disk; a reduce's (or a map-only map's) is journaled once committed.
        if (task.kind === 'map' && task.job.reduces.length > 0)
          core.journaled(core.journal.taskSucceeded(task.job.id, task.id, journaledSuccess(attempt, false)));
      }
    } else if (message.state === 'failed') {
      effects = core.books.attemptFailed(attempt, error, now);
    } else {
      effects = core.books.attemptKilled(attempt, error, now, false);
    }
    void core.carryOut(effects);
    core.schedule({ kind: 'attempt-finished', attemptId: attempt.id, jobId: attempt.task.job.id });
  }
}

/**
 * Why a map's success report cannot be taken (undefined: it can): a map whose job has reduces
 * must describe the output it stores, partition by partition, or its reducers would take it for
 * empty and the job would succeed without its data.
 */
function unprovenSuccess(attempt: RuntimeAttempt, message: Report<'attempt-finished'>): string | undefined {
  const task = attempt.task;
  const job = task.job;
  if (task.kind !== 'map' || job.reduces.length === 0) return undefined;
  const partitions = job.skew?.partitions ?? job.reduces.length;
  const out = message.mapOutput;
  if (!out || out.partitionBytes.length !== partitions || out.partitionRecords.length !== partitions) {
    return `its report does not describe the map output of ${partitions} partitions`;
  }
  return undefined;
}
