import {
  LocalDiskBlockStore,
  readRemoteBlock,
  type DatanodeAddress,
  type LocalReplicaReader,
  type ReadBufferPool,
  type VerifiedPiece,
} from '../../storage/index.js';

/** Asks the worker to link a local replica into the attempt's input directory (the `link-block` row). */
export type LinkBlock = (blockId: string, token: string) => Promise<{ linked: boolean; dir?: string }>;

/**
 * Replicas on this task's worker, read from disk without its data port. The task may not read the
 * worker's block directory (sandbox.ts): given the block's read token, the worker links the
 * replica's files into the attempt's input directory, which the task may read, and the read goes
 * on there as a short-circuit read did. A replica the worker no longer has is read over HTTP.
 */
export class LinkedLocalReplicas implements LocalReplicaReader {
  /** Stores over the input directories the worker named, by directory. */
  private readonly stores = new Map<string, LocalDiskBlockStore>();

  constructor(
    readonly workerId: string,
    private readonly linkBlock: LinkBlock,
  ) {}

  async *readPieces(
    location: DatanodeAddress,
    blockId: string,
    token: string,
    start: number,
    end: number,
    buffers: ReadBufferPool | undefined,
  ): AsyncIterable<VerifiedPiece> {
    const { linked, dir } = await this.linkBlock(blockId, token);
    if (!linked || dir === undefined) {
      for await (const bytes of readRemoteBlock(location, blockId, start, end, { token }))
        yield { bytes, crc32: undefined };
      return;
    }
    let store = this.stores.get(dir);
    if (!store) {
      store = new LocalDiskBlockStore({ dir, workerId: this.workerId });
      this.stores.set(dir, store);
    }
    yield* store.readPieces(blockId, start, end, buffers);
  }
}
