import type { Books } from '../../books/index.js';
import type { Logger } from '../../log.js';
import type { ReplicaCause } from '../../metrics/index.js';
import type { BlockInfo, Namenode } from '../../storage/index.js';
import type { RuntimeData, RuntimeTask } from './runtime-data.js';

/** One block copy of task input made during the run, for data-movement figures. */
export interface PlacementLogEntry {
  readonly time: number;
  readonly jobId: string;
  readonly taskId: string;
  readonly workerId: string;
  readonly blockId: string;
  readonly bytes: number;
  /** The block came from a worker on another rack. */
  readonly crossRack: boolean;
  readonly cause: ReplicaCause;
}

/** A copy of a map's input on its way to a worker, block by block. */
interface InputCopy {
  readonly task: RuntimeTask;
  readonly workerId: string;
  readonly waiting: Set<string>;
}

/**
 * Carries out the books' `replicate` effects on the block store: a holder of each block of the
 * map's split sends it to the target, as in re-replication, and once every block has arrived the
 * books list the target as holding the input. A copy with no live source for some block fails,
 * and the books decide what that means (an owed replica stays owed while its window is open).
 */
export class InputCopier {
  readonly log: PlacementLogEntry[] = [];
  /** Copies on their way, by block id, until the target confirms. */
  private readonly copies = new Map<string, InputCopy[]>();

  constructor(
    private readonly namenode: Namenode,
    private readonly books: Books<RuntimeData>,
    private readonly logger: Logger,
    private readonly clock: () => number,
  ) {}

  async copy(task: RuntimeTask, workerId: string, cause: ReplicaCause): Promise<void> {
    const job = task.job;
    const target = this.books.worker(workerId);
    const input = task.data;
    if (input.kind !== 'file' || !target?.alive) {
      this.books.replicaFailed(task, workerId, cause);
      return;
    }
    const { path, start, length } = input;
    let blocks: BlockInfo[];
    try {
      blocks = await this.namenode.getBlocks(path);
    } catch (err) {
      this.logger.warn({ taskId: task.id, path, err: (err as Error).message }, 'cannot replicate task input');
      this.books.replicaFailed(task, workerId, cause);
      return;
    }
    const needed = blocks.filter(
      (b) =>
        b.offset < start + length && b.offset + b.length > start && !b.locations.some((l) => l.workerId === workerId),
    );
    const copy: InputCopy = { task, workerId, waiting: new Set<string>() };
    let unsourced = 0;
    for (const block of needed) {
      const source = block.locations.map((l) => this.books.worker(l.workerId)).find((w) => w?.alive);
      if (!source) {
        unsourced++;
        continue;
      }
      copy.waiting.add(block.blockId);
      const list = this.copies.get(block.blockId) ?? [];
      list.push(copy);
      this.copies.set(block.blockId, list);
      if (cause !== 'completed') job.data.addCounters({ PLACEMENT_BYTES: block.length });
      this.log.push({
        time: this.clock(),
        jobId: job.id,
        taskId: task.id,
        workerId,
        blockId: block.blockId,
        bytes: block.length,
        crossRack: source.shape.rack !== target.shape.rack,
        cause,
      });
      source.data.peer.send({
        type: 'replicate-block',
        blockId: block.blockId,
        targets: [target.data.address],
        token: this.namenode.issueBlockToken(block.blockId, 'write'),
      });
    }
    if (unsourced > 0) {
      // The task must not show as local there while some of its input could not be copied.
      this.logger.warn({ taskId: task.id, workerId, blocks: unsourced }, 'no live replica to copy task input from');
      this.drop((c) => c === copy);
      this.books.replicaFailed(task, workerId, cause);
    } else if (copy.waiting.size === 0) this.books.replicaLanded(task, workerId);
    else
      this.logger.info(
        { taskId: task.id, workerId, blocks: copy.waiting.size },
        'replicating task input for placement',
      );
  }

  /** A worker confirmed it holds `blockId`. */
  arrived(blockId: string, workerId: string): void {
    const list = this.copies.get(blockId);
    if (!list) return;
    for (const copy of list.filter((c) => c.workerId === workerId)) {
      copy.waiting.delete(blockId);
      if (copy.waiting.size === 0) this.books.replicaLanded(copy.task, workerId);
    }
    const rest = list.filter((c) => c.workerId !== workerId);
    if (rest.length > 0) this.copies.set(blockId, rest);
    else this.copies.delete(blockId);
  }

  /** Forgets copies to a lost worker: they will never be confirmed. */
  workerLost(workerId: string): void {
    this.drop((c) => c.workerId === workerId);
  }

  /** Forgets an ended job's copies. */
  jobEnded(jobId: string): void {
    this.drop((c) => c.task.job.id === jobId);
  }

  private drop(which: (copy: InputCopy) => boolean): void {
    for (const [blockId, list] of this.copies) {
      const rest = list.filter((c) => !which(c));
      if (rest.length === 0) this.copies.delete(blockId);
      else if (rest.length < list.length) this.copies.set(blockId, rest);
    }
  }
}
