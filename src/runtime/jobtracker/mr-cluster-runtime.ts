/**
 * MR-clusters (FAWKES) on the real cluster: the JobTracker's hand for what the books decide
 * (src/books/mr-clusters.ts) and the NameNode's scope for where a cluster's blocks may live.
 *
 * - Namespace: MR-cluster NAME owns `/mrc/NAME/`. Its jobs read and write there only; nothing may
 *   be written there unless NAME is admitted (`ENOMRCLUSTER`).
 * - Placement: a block under `/mrc/NAME/` goes to NAME's core nodes, and to its writer first when
 *   the writer is a transient-core node of NAME (it stores only the output it produces); a
 *   transient node stores nothing. NameNode re-replication copies onto core nodes only. A node
 *   draining out takes no new block.
 * - The books follow every real block of the namespace (`engineBlocks`): committed blocks,
 *   replicas added and dropped, files removed. So a shrink's drain plan (which blocks a leaving
 *   node must copy first, onto which node) is the books' plan over the real replicas, and a node
 *   leaves only when every block it holds has a replica on a node that stays.
 * - Effects: `replicate-block` asks the leaving node to copy the block to the chosen target over
 *   the data port; the landed copy (`block-replicated`) is `blockCopied`, and a copy not landed
 *   within DRAIN_COPY_TIMEOUT_MS is made again (`blockCopyFailed`). When the node has left
 *   (`worker-moved` out of a cluster that stays), its replicas of that cluster's blocks are
 *   deleted, never the last live one. `load-input` copies the activation's `--input` files into
 *   `/mrc/NAME/input/` (onto the core nodes); `save-output` moves `/mrc/NAME` to
 *   `/mrc-saved/NAME` (to `/mrc-saved/NAME.2`, ... when taken), out of the cluster's scope: its
 *   blocks stay in the block store, replicated wherever the default policy puts them, and the
 *   nodes can go back to the pool.
 * - Operations (`minimr mrc`): activate (a request; a minimum that does not fit waits in the global
 *   FIFO queue and the answer says so), list, deactivate (the `deactivate-cluster` decision, checked
 *   by the books as a policy's would be).
 */
import { MinimrError } from '../../errors.js';
import { FREE_POOL, type ClusterSnapshot, type Decision, type NodeKind, type Policy } from '../../scheduler/index.js';
import { FsClient, type BlockScope } from '../../storage/index.js';
import type { Books, Effect } from '../../books/index.js';
import { inputFilesAt } from './input-files.js';
import { outputWorkDir, type BooksHost, type RuntimeData, type RuntimeJob } from './runtime-data.js';
import type { JobSubmission } from '../wire/index.js';

/** A drain copy not confirmed within this time is made again, onto another node when there is one. */
export const DRAIN_COPY_TIMEOUT_MS = 30_000;

/** Policies that keep a job on its MR-cluster's nodes (fawkes names itself with its settings: fawkes-td-tc-dp). */
const keepsJobsOnTheirClusters = (policy: string): boolean =>
  policy === 'fifo' || policy === 'fawkes' || policy.startsWith('fawkes-');

const NAMESPACE = /^\/mrc\/([^/]+)(?:\/|$)/;
const SAVED_ROOT = '/mrc-saved';

/** The MR-cluster whose namespace `path` is in, if any. */
export function mrClusterOfPath(path: string): string | undefined {
  return NAMESPACE.exec(path)?.[1];
}

export function mrClusterRoot(name: string): string {
  return `/mrc/${name}`;
}

/** One row of `minimr mrc list`. */
export interface MrClusterRow {
  readonly name: string;
  readonly state: string;
  readonly minNodes: number;
  readonly nodes: Readonly<Record<NodeKind, readonly string[]>>;
  /** Nodes draining out, with where they go. */
  readonly leaving: readonly { readonly workerId: string; readonly to: string }[];
  /** Weight, mean share and discrimination D_i of the policy's last interval; absent before one ended. */
  readonly weight?: number;
  readonly share?: number;
  readonly discrimination?: number;
  /** Its FIFO queue: jobs submitted and not ended, and how many of them have not started. */
  readonly jobs: number;
  readonly waitingJobs: number;
  /** Why it waits, when it is in the global queue. */
  readonly queued?: string;
  readonly storedBytes: number;
  readonly blocks: number;
  readonly missingBlocks: number;
  readonly inputPath?: string;
  readonly inputError?: string;
}

export interface MrClusterListing {
  readonly clusters: readonly MrClusterRow[];
  readonly freeNodes: readonly string[];
  /** Var(D) of the policy's last interval. */
  readonly globalDiscrimination?: number;
}

/** What the JobTracker lends. */
export interface MrClusterRuntimeHost extends BooksHost {
  readonly policy: Policy;
  snapshot(): ClusterSnapshot;
  reschedule(): void;
}

interface DrainCopy {
  readonly blockId: string;
  readonly toWorkerId: string;
  readonly since: number;
}

export class MrClusterRuntime implements BlockScope {
  private readonly inputs = new Map<string, string>();
  private readonly inputErrors = new Map<string, string>();
  private readonly copies = new Map<string, DrainCopy>();

  constructor(private readonly host: MrClusterRuntimeHost) {}

  private get clusters(): Books<RuntimeData>['mrClusters'] {
    return this.host.books.mrClusters;
  }

  // ---- the NameNode's scope ------------------------------------------------------------------

  storers(path: string, writerId?: string): ReadonlySet<string> | undefined {
    const name = mrClusterOfPath(path);
    if (name === undefined || !this.clusters.cluster(name)) return undefined;
    const out = new Set<string>();
    for (const w of this.host.books.liveWorkers()) {
      if (w.cluster !== name || this.clusters.workerFields(w.shape.id).leavingFor !== undefined) continue;
      const kind = this.clusters.nodeKind(w.shape.id);
      if (kind === 'core' || (kind === 'transient-core' && w.shape.id === writerId)) out.add(w.shape.id);
    }
    return out;
  }

  mayHold(path: string, workerId: string): boolean {
    const name = mrClusterOfPath(path);
    if (name === undefined || !this.clusters.cluster(name)) return true;
    const w = this.host.books.worker(workerId);
    const f = this.clusters.workerFields(workerId);
    return w?.cluster === name && f.leavingFor === undefined && f.nodeKind !== undefined && f.nodeKind !== 'transient';
  }

  checkWritable(path: string): void {
    const name = mrClusterOfPath(path);
    if (name === undefined) return;
    const c = this.clusters.cluster(name);
    if (!c || c.state === 'queued' || c.state === 'deactivating') {
      throw new MinimrError(
        'ENOMRCLUSTER',
        `${path} is in the namespace of MR-cluster ${name}, which ` +
          `is ${c ? c.state : 'not active'}; activate it first (\`minimr ` +
          `mrc activate ${name} --min-nodes M\`)`,
        { path, cluster: name },
      );
    }
  }

  blockCommitted(path: string, blockId: string, length: number, workerIds: readonly string[]): void {
    const name = mrClusterOfPath(path);
    if (name === undefined) return;
    const job = this.jobWriting(path);
    this.clusters.blockStored(
      name,
      { id: blockId, bytes: length, jobId: job?.id ?? 'input', input: job === undefined },
      workerIds,
    );
  }

  replicaAdded(_path: string, blockId: string, workerId: string): void {
    this.clusters.replicaAdded(blockId, workerId);
  }

  replicaRemoved(_path: string, blockId: string, workerId: string): void {
    this.clusters.replicaRemoved(blockId, workerId);
  }

  blockForgotten(_path: string, blockId: string): void {
    this.copies.delete(blockId);
    const effects = this.clusters.blockRemoved(blockId, this.host.clock());
    if (effects.length > 0) this.afterChange(effects);
  }

  /** The running job whose output directory (or staging directory, with --overwrite) holds `path`. */
  private jobWriting(path: string): RuntimeJob | undefined {
    for (const job of this.host.books.active) {
      const out = job.data.submission.outputPath;
      if (path.startsWith(`${out}/`) || path.startsWith(`${outputWorkDir(job.id, job.data.submission)}/`)) return job;
    }
    return undefined;
  }

  // ---- jobs ----------------------------------------------------------------------------------

  /**
   * A job may run on its MR-cluster only with its input and output in the cluster's namespace; one without a cluster
   * may not write there.
   */
  checkSubmission(s: JobSubmission): void {
    const name = s.mrCluster;
    if (name === undefined) {
      const owner = mrClusterOfPath(s.outputPath);
      if (owner !== undefined) {
        throw new MinimrError(
          'EBADJOB',
          `output ${s.outputPath} is in the namespace of ` +
            `MR-cluster ${owner}: submit the job with --mr-cluster ${owner}`,
          { path: s.outputPath },
        );
      }
      return;
    }
    const c = this.clusters.cluster(name);
    if (!c || c.state === 'deactivating') {
      const taking = [...this.clusters.clusters()].filter((r) => r.state !== 'deactivating').map((r) => r.name);
      throw new MinimrError(
        'ENOMRCLUSTER',
        `MR-cluster "${name}" ` +
          `is ${c ? 'being deactivated' : 'not active'}; MR-clusters ` +
          `taking jobs: ${taking.join(', ') || 'none'} (\`minimr mrc ` +
          `activate ${name} --min-nodes M\`)`,
        { cluster: name },
      );
    }
    const root = mrClusterRoot(name);
    // Its staging directory (outputWorkDir) would lie beside the root, outside the cluster's namespace.
    if (s.overwrite && s.outputPath === root)
      throw new MinimrError('EBADJOB', `--overwrite cannot replace the MR-cluster's root ${root}: write below it`, {
        path: root,
        cluster: name,
      });
    for (const p of [s.outputPath, ...(s.input.kind === 'generated' ? [] : s.inputPaths)]) {
      if (mrClusterOfPath(p) !== name) {
        throw new MinimrError(
          'EBADJOB',
          `a job of MR-cluster ${name} reads and writes under ${root}/ ` +
            `only, not ${p} (copy input there with \`minimr fs put\` or ` +
            `\`mrc activate --input\`)`,
          { path: p, cluster: name },
        );
      }
    }
  }

  // ---- operations ----------------------------------------------------------------------------

  async activate(name: unknown, minNodes: unknown, inputPath: unknown): Promise<MrClusterRow> {
    if (typeof name !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(name) || name === FREE_POOL) {
      throw new MinimrError(
        'EBADCONF',
        `an MR-cluster's name is 1-64 characters of [A-Za-z0-9_.-], ` +
          `other than "${FREE_POOL}" (the free pool), ` +
          `got ${JSON.stringify(name)}`,
      );
    }
    if (!keepsJobsOnTheirClusters(this.host.policy.name)) {
      throw new MinimrError(
        'EBADCONF',
        `MR-clusters need a policy that keeps jobs on their cluster's ` +
          `nodes (fawkes or fifo); this JobTracker ` +
          `runs ${this.host.policy.name}`,
      );
    }
    if (typeof minNodes !== 'number' || !Number.isInteger(minNodes) || minNodes < 1) {
      throw new MinimrError(
        'EBADCONF',
        `MR-cluster "${name}": --min-nodes must be a whole number of nodes >= 1, got ${JSON.stringify(minNodes)}`,
        { cluster: name },
      );
    }
    let inputBytes = 0;
    if (inputPath !== undefined && inputPath !== null) {
      if (typeof inputPath !== 'string') throw new MinimrError('EBADCONF', '--input must be a path in the block store');
      inputBytes = (await inputFilesAt(this.host.namenode, inputPath)).reduce((sum, f) => sum + f.length, 0);
    }
    const effects = this.clusters.request({ name, minNodes, inputBytes }, this.host.clock());
    // A name used again after a release starts afresh.
    this.inputErrors.delete(name);
    if (typeof inputPath === 'string') this.inputs.set(name, inputPath);
    else this.inputs.delete(name);
    this.host.logger.info({ cluster: name, minNodes, input: inputPath ?? null }, 'MR-cluster requested');
    this.afterChange(effects);
    return this.row(name);
  }

  list(): MrClusterListing {
    const last = this.host.policy.balanceHistory?.at(-1);
    return {
      clusters: [...this.clusters.clusters()].map((c) => this.row(c.name)),
      freeNodes: this.host.books
        .liveWorkers()
        .filter((w) => w.cluster === FREE_POOL)
        .map((w) => w.shape.id),
      ...(last ? { globalDiscrimination: last.globalDiscrimination } : {}),
    };
  }

  async deactivate(name: unknown): Promise<MrClusterRow> {
    const c = typeof name === 'string' ? this.clusters.cluster(name) : undefined;
    if (typeof name !== 'string' || !c)
      throw new MinimrError('ENOMRCLUSTER', `no MR-cluster ${JSON.stringify(name)} (see \`minimr mrc list\`)`);
    const decisions: Decision[] = [{ kind: 'deactivate-cluster', cluster: name }];
    const problems = this.host.books.check(this.host.snapshot(), decisions);
    if (problems.length > 0) {
      throw new MinimrError(
        'EBADCONF',
        `cannot deactivate MR-cluster ${name}: ${problems.map((p) => p.replace(/^decision \d+: /, '')).join('; ')}`,
        { cluster: name },
      );
    }
    const row = this.row(name);
    this.afterChange(this.host.books.apply(decisions, this.host.clock()));
    return { ...row, state: 'deactivating' };
  }

  private row(name: string): MrClusterRow {
    const c = this.clusters.cluster(name)!;
    const nodes: Record<NodeKind, string[]> = { core: [], 'transient-core': [], transient: [] };
    const leaving: Array<{ workerId: string; to: string }> = [];
    for (const w of this.host.books.liveWorkers()) {
      if (w.cluster !== name) continue;
      const f = this.clusters.workerFields(w.shape.id);
      if (f.nodeKind) nodes[f.nodeKind].push(w.shape.id);
      if (f.leavingFor !== undefined) leaving.push({ workerId: w.shape.id, to: f.leavingFor });
    }
    const jobs = this.host.books.active.filter((j) => j.cluster === name);
    const waitingJobs = jobs.filter(
      (j) =>
        j.running.length === 0 &&
        j.maps.every((t) => t.state === 'pending') &&
        j.reduces.every((t) => t.state === 'pending'),
    ).length;
    const balance = this.host.policy.balanceHistory?.at(-1)?.clusters.find((r) => r.name === name);
    const report = this.clusters.blockReport(name);
    const queued = this.clusters.queueReason(name);
    const input = this.inputs.get(name);
    const inputError = this.inputErrors.get(name);
    return {
      name,
      state: c.state,
      minNodes: c.minNodes,
      nodes,
      leaving,
      ...(balance ? { weight: balance.weight, share: balance.share, discrimination: balance.discrimination } : {}),
      jobs: jobs.length,
      waitingJobs,
      ...(queued !== undefined ? { queued } : {}),
      storedBytes: c.storedBytes,
      blocks: report.blocks,
      missingBlocks: report.missing.length,
      ...(input !== undefined ? { inputPath: input } : {}),
      ...(inputError !== undefined ? { inputError } : {}),
    };
  }

  // ---- effects -------------------------------------------------------------------------------

  /** Carries out the MR-cluster effects; the JobTracker hands every effect here. */
  effect(e: Effect<RuntimeData>): void {
    const log = this.host.logger;
    switch (e.kind) {
      case 'mr-cluster':
        log.info({ cluster: e.cluster.name, from: e.from, to: e.to }, 'MR-cluster state');
        if (e.to === 'released') void this.saveNamespace(e.cluster.name);
        break;
      case 'load-input':
        void this.loadInput(e.cluster.name);
        break;
      case 'replicate-block': {
        const from = this.host.books.worker(e.fromWorkerId);
        const to = this.host.books.worker(e.toWorkerId);
        log.info(
          { block: e.block.id, from: e.fromWorkerId, to: e.toWorkerId, cause: e.cause },
          'MR-cluster block copy',
        );
        this.copies.set(e.block.id, { blockId: e.block.id, toWorkerId: e.toWorkerId, since: this.host.clock() });
        if (from?.alive && to?.alive)
          from.data.peer.send({
            type: 'replicate-block',
            blockId: e.block.id,
            targets: [to.data.address],
            token: this.host.namenode.issueBlockToken(e.block.id, 'write'),
          });
        break;
      }
      case 'save-output':
        void this.saveOutput(e.cluster.name);
        break;
      case 'worker-moved': {
        const c = this.clusters.cluster(e.from);
        // A node that left a cluster which stays: its copies of the cluster's blocks go (each has a
        // replica on a node that stays: the books drained it first). On a release the nodes keep them.
        if (e.from === FREE_POOL || !c || c.state === 'deactivating') break;
        const root = `${mrClusterRoot(e.from)}/`;
        const kept = this.host.namenode.dropReplicas(e.worker.shape.id, (p) => p.startsWith(root));
        if (kept.length > 0)
          log.warn(
            { worker: e.worker.shape.id, cluster: e.from, blocks: kept },
            'node left its MR-cluster holding the only replica of blocks: kept',
          );
        break;
      }
      default:
        break;
    }
  }

  /** A copy reported by a worker landed on `workerId`: a drain's copy moves the drain on. */
  copyLanded(blockId: string, workerId: string): void {
    const copy = this.copies.get(blockId);
    if (!copy || copy.toWorkerId !== workerId) return;
    this.copies.delete(blockId);
    this.afterChange(this.clusters.blockCopied(blockId, workerId, this.host.clock()));
  }

  /** Drain copies not confirmed in time are made again (the worker's copy failed, or its report was lost). */
  tick(now: number): void {
    for (const copy of [...this.copies.values()]) {
      if (now - copy.since < DRAIN_COPY_TIMEOUT_MS) continue;
      this.copies.delete(copy.blockId);
      this.host.logger.warn(
        { block: copy.blockId, to: copy.toWorkerId },
        'MR-cluster block copy not confirmed in time: copying again',
      );
      this.afterChange(this.clusters.blockCopyFailed(copy.blockId, copy.toWorkerId, now));
    }
  }

  private afterChange(effects: readonly Effect<RuntimeData>[]): void {
    void this.host.carryOut(effects);
    this.host.reschedule();
  }

  /** Copies the activation's input into `/mrc/NAME/input/`, onto the core nodes, then the cluster is active. */
  private async loadInput(name: string): Promise<void> {
    const source = this.inputs.get(name);
    const started = this.host.clock();
    try {
      if (source === undefined)
        throw new MinimrError('EINTERNAL', `MR-cluster ${name} has input bytes but no input path`);
      const fs = new FsClient({ namenode: this.host.namenode, logger: this.host.logger });
      for (const file of await inputFilesAt(this.host.namenode, source)) {
        const target = `${mrClusterRoot(name)}/input/${file.path.split('/').pop()}`;
        const writer = await fs.createWriter(target, { overwrite: true, replication: file.replication });
        try {
          for await (const chunk of fs.cat(file.path)) await writer.write(chunk);
          await writer.close();
        } catch (err) {
          await writer.abort().catch(() => undefined);
          throw err;
        }
      }
      this.host.logger.info(
        { cluster: name, input: source, ms: this.host.clock() - started },
        'MR-cluster input loaded',
      );
    } catch (err) {
      // The cluster still becomes active (its jobs then fail on their missing input, saying so): a
      // request never hangs on a load that cannot succeed.
      const message = (err as Error).message;
      this.inputErrors.set(name, message);
      this.host.logger.error({ cluster: name, input: source, err: message }, 'MR-cluster input could not be loaded');
    }
    this.afterChange(this.clusters.inputLoaded(name, this.host.clock()));
  }

  private async saveOutput(name: string): Promise<void> {
    await this.saveNamespace(name);
    this.afterChange(this.clusters.outputSaved(name, this.host.clock()));
  }

  /** Moves `/mrc/NAME` out of the cluster's scope to `/mrc-saved/NAME` (or `NAME.2`, ...). */
  private async saveNamespace(name: string): Promise<void> {
    const nn = this.host.namenode;
    const root = mrClusterRoot(name);
    try {
      await nn.stat(root);
    } catch {
      return;
    }
    try {
      await nn.mkdir(SAVED_ROOT, { parents: true });
      let target = `${SAVED_ROOT}/${name}`;
      for (
        let n = 2;
        await nn.stat(target).then(
          () => true,
          () => false,
        );
        n++
      )
        target = `${SAVED_ROOT}/${name}.${n}`;
      await nn.rename(root, target);
      this.host.logger.info({ cluster: name, savedTo: target }, 'MR-cluster namespace saved');
    } catch (err) {
      this.host.logger.error(
        { cluster: name, err: (err as Error).message },
        'MR-cluster namespace could not be saved: it stays under /mrc',
      );
    }
  }
}
