/**
 * A scope on the NameNode's placement: part of the namespace whose blocks may live only on some
 * datanodes, and who must hear of those blocks' lives. The JobTracker's MR-clusters (FAWKES) are
 * one: the blocks under `/mrc/NAME/` live on the cluster's core nodes and on the transient-core
 * node that wrote them, and the books follow every replica so that a node leaves only when each
 * block it holds has a replica elsewhere. The NameNode knows nothing of clusters; it asks here.
 */
import type { FsckReport } from './fsck.js';

export interface BlockScope {
  /**
   * The datanodes that may hold blocks of `path` (one written by `writerId`, or a copy when no
   * writer is named); undefined when the path is not scoped (any datanode).
   */
  storers(path: string, writerId?: string): ReadonlySet<string> | undefined;
  /**
   * Whether `workerId` may keep a copy of a block of `path` that landed on it
   * (a drain's target may be any storing node).
   */
  mayHold(path: string, workerId: string): boolean;
  /** Throws a MinimrError a user can act on when nothing may be written at `path` now. */
  checkWritable(path: string): void;
  /** The events of scoped blocks (`path` is the file a block belongs to). */
  blockCommitted(path: string, blockId: string, length: number, workerIds: readonly string[]): void;
  replicaAdded(path: string, blockId: string, workerId: string): void;
  replicaRemoved(path: string, blockId: string, workerId: string): void;
  blockForgotten(path: string, blockId: string): void;
}

export type { FsckReport };
