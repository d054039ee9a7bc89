/**
 * Contracts of the block store. The NameNode role (namespace + block map, persisted in `level`) lives
 * in the JobTracker process; the DataNode role (block files + checksums) in every worker. Clients
 * reach the NameNode through `NamenodeApi`, which the runtime implements over its RPC socket, and the
 * DataNodes over HTTP (`/blocks/...` on each worker's data port).
 */

/** Where a worker's data server listens; the rack drives placement and locality. */
export interface DatanodeAddress {
  readonly workerId: string;
  readonly host: string;
  readonly dataPort: number;
  readonly rack: string;
}

export interface BlockInfo {
  readonly blockId: string;
  /** Offset of the block's first byte in its file. */
  readonly offset: number;
  readonly length: number;
  /** CRC-32 of the whole block (zlib.crc32). */
  readonly crc32: number;
  /** Live replicas known to the NameNode, best first for the asking client when it gave its location. */
  readonly locations: readonly DatanodeAddress[];
  /** Block access token for reading this block from any of its replicas (block-token.ts). */
  readonly token: string;
}

export interface FileStatus {
  readonly path: string;
  readonly type: 'file' | 'dir';
  readonly length: number;
  readonly replication: number;
  readonly blockSize: number;
  readonly mtime: number;
  /** Owner, group and mode bits (permissions.ts). */
  readonly owner: string;
  readonly group: string;
  readonly mode: number;
}

export interface CreateOptions {
  readonly overwrite?: boolean;
  readonly replication?: number;
  readonly blockSize?: number;
  /** Create missing parent directories (default true, as `hdfs dfs -put`). */
  readonly parents?: boolean;
  /**
   * Workers to put the file's replicas on, as HDFS's favoredNodes: each block's replicas go to the
   * least-loaded live favored workers, the default policy places any that remain. For data sets a
   * user keeps on chosen nodes (a private data set, say).
   */
  readonly favoredWorkers?: readonly string[];
}

/** Who is asking; used to put the first replica on the writer's own node, and to sort replicas. */
export interface ClientLocation {
  readonly workerId?: string;
  readonly rack?: string;
}

export interface BlockAllocation {
  readonly blockId: string;
  readonly targets: readonly DatanodeAddress[];
  /** Block access token for writing this block to its targets. */
  readonly token: string;
}

/**
 * The NameNode's operations as a client sees them. Every method rejects with a MinimrError
 * (ENOENT, EEXIST, ENOTDIR, EISDIR, ENOTEMPTY, EBADPATH, ENOWORKERS) carrying the path in details.
 * Paths are absolute POSIX-style ("/in/words.txt").
 */
/** A block as its writer wrote it: its length and CRC-32, and the workers that stored it. */
export interface WrittenBlock {
  readonly blockId: string;
  readonly length: number;
  readonly crc32: number;
  readonly workerIds: readonly string[];
}

export interface NamenodeApi {
  mkdir(path: string, options?: { parents?: boolean }): Promise<void>;
  stat(path: string): Promise<FileStatus>;
  list(path: string): Promise<FileStatus[]>;
  remove(path: string, options?: { recursive?: boolean }): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  /** Starts a new file (invisible to readers until `complete`); returns the effective block size. */
  create(path: string, options?: CreateOptions): Promise<{ blockSize: number; replication: number }>;
  allocateBlock(path: string, client?: ClientLocation): Promise<BlockAllocation>;
  /** Records a written block and the workers that stored it. */
  commitBlock(path: string, block: WrittenBlock): Promise<void>;
  /**
   * Closes a file under construction: readers see it. `lastBlock`, its last block when not
   * committed yet, is committed first (as HDFS's complete does: a call less per file). Answers the
   * file's status.
   */
  complete(path: string, lastBlock?: WrittenBlock): Promise<FileStatus>;
  /** Drops a file under construction (writer failed); its blocks are deleted. */
  abandon(path: string): Promise<void>;
  getBlocks(path: string, client?: ClientLocation): Promise<BlockInfo[]>;
  /**
   * A replica looked bad to a reader: the NameNode has its datanode verify it
   * (only that datanode's finding deletes it).
   */
  reportBadReplica(blockId: string, workerId: string): Promise<void>;
  /** Sets the mode bits of a path (its owner or the admin); `mode` octal, as `755`. */
  chmod(path: string, mode: string | number): Promise<void>;
  /** Gives a path another owner and/or group (null: unchanged); the admin only. */
  chown(path: string, owner: string | null, group: string | null, options?: { recursive?: boolean }): Promise<void>;
}

/**
 * One map task's share of an input file. Plain JSON so the JobTracker can ship it to a task process.
 * A split covers the bytes [start, start + length) of one block; record readers may read past its end
 * to finish the last record they own.
 */
export interface InputSplit {
  readonly path: string;
  readonly start: number;
  readonly length: number;
  readonly fileLength: number;
  /** Workers holding a replica of the split's block, best first: the scheduler's data-local choice. */
  readonly preferredWorkers: readonly string[];
  readonly preferredRacks: readonly string[];
}

/** A batch of records with their byte offsets in the file; many records per call keeps map loops fast. */
export interface RecordBatch<V> {
  readonly offsets: number[];
  readonly values: V[];
  /** Bytes consumed from the file for this batch, including separators and skipped bytes. */
  readonly bytesRead: number;
}

export interface RecordBatchReader<V> {
  /** The next batch, or null when the split has no more records. */
  next(): Promise<RecordBatch<V> | null>;
  close(): Promise<void>;
}

/**
 * A split's records as raw bytes: whole records only, never one cut between chunks. Lines keep
 * their `\n` (and a CRLF line its `\r`); only a file's last line may lack its `\n`.
 */
export interface RecordChunk {
  readonly bytes: Buffer;
  /** File offset of `bytes[0]`: the offset of the chunk's first record. */
  readonly offset: number;
  /** Bytes consumed from the file for this chunk, including bytes skipped before it. */
  readonly bytesRead: number;
}

export interface RecordChunkReader {
  /** The next chunk, or null when the split has no more records. */
  next(): Promise<RecordChunk | null>;
  close(): Promise<void>;
}
