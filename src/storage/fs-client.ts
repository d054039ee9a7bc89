import { createReadStream, createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { crc32 } from 'node:zlib';
import { isMinimrError, MinimrError, serializeError } from '../errors.js';
import type { Logger } from '../log.js';
import {
  crc32Combine,
  type BlockStore,
  type BlockWriteResult,
  type ReadBufferPool,
  type VerifiedPiece,
} from './block-store.js';
import { putRemoteBlock, readRemoteBlock } from './data-client.js';
import type {
  BlockInfo,
  ClientLocation,
  CreateOptions,
  DatanodeAddress,
  FileStatus,
  NamenodeApi,
  WrittenBlock,
} from './types.js';

export interface FsClientOptions {
  readonly namenode: NamenodeApi;
  /** Where this client runs: replica 1 of its writes lands here, and its reads prefer near replicas. */
  readonly client?: ClientLocation;
  /** This machine's datanode store: replicas on it are read and written on disk, skipping HTTP. */
  readonly localStore?: BlockStore;
  /**
   * Reads of replicas on this machine's datanode for a client that may not open its store (a
   * sandboxed task: its worker links the block into a directory the task may read). Writes then go
   * over HTTP like any replica's.
   */
  readonly localReplicas?: LocalReplicaReader;
  readonly timeoutMs?: number;
  readonly logger?: Logger;
  /**
   * Whole blocks up to this size are read into memory and checked against the NameNode's crc32
   * before any byte is handed out, so a tampered replica is skipped for the next one (default 0:
   * stream, and check at the block's end, failing with ECHECKSUM). Clients that print or copy data
   * out (`fs cat`, `fs get`) hold; tasks stream, and a failed attempt is retried.
   */
  readonly holdUnverifiedBytes?: number;
}

/** Reads a replica stored by the datanode `workerId` of this machine, given the block's read token. */
export interface LocalReplicaReader {
  readonly workerId: string;
  readPieces(
    location: DatanodeAddress,
    blockId: string,
    token: string,
    start: number,
    end: number,
    buffers: ReadBufferPool | undefined,
  ): AsyncIterable<VerifiedPiece>;
}

export interface FileWriter {
  write(data: Buffer): Promise<void>;
  /**
   * Bytes of the copies this writer made of what it was given that are left to the garbage
   * collector: a caller that paces full GCs by the garbage it makes (a task) counts these.
   */
  readonly garbageBytes: number;
  /** Sends the last block and makes the file visible; on failure the file is abandoned. */
  close(): Promise<FileStatus>;
  /** Drops the file and its blocks. */
  abort(): Promise<void>;
}

/** The block store as applications and tasks see it: paths and bytes, with blocks and replicas hidden. */
export class FsClient {
  private readonly namenode: NamenodeApi;
  private readonly client: ClientLocation | undefined;
  private readonly localStore: BlockStore | undefined;
  private readonly localReplicas: LocalReplicaReader | undefined;
  private readonly timeoutMs: number | undefined;
  private readonly log: Logger;
  private readonly holdUnverifiedBytes: number;
  /**
   * Bytes this client read, by where the replica was relative to it: on its own worker, another
   * worker of its rack, another rack. Data movement is a scheduling metric (improved FAIR).
   */
  readonly bytesRead = { local: 0, rack: 0, offRack: 0 };

  constructor(options: FsClientOptions) {
    this.namenode = options.namenode;
    this.client = options.client;
    this.localStore = options.localStore;
    this.localReplicas = options.localReplicas;
    this.timeoutMs = options.timeoutMs;
    this.holdUnverifiedBytes = options.holdUnverifiedBytes ?? 0;
    // Without a logger, replica fallbacks stay silent (they still happen); task processes pass none so
    // they need not load the logging library.
    this.log = options.logger ?? SILENT_LOGGER;
  }

  mkdir(path: string, options?: { parents?: boolean }): Promise<void> {
    return this.namenode.mkdir(path, options);
  }

  stat(path: string): Promise<FileStatus> {
    return this.namenode.stat(path);
  }

  list(path: string): Promise<FileStatus[]> {
    return this.namenode.list(path);
  }

  remove(path: string, options?: { recursive?: boolean }): Promise<void> {
    return this.namenode.remove(path, options);
  }

  rename(from: string, to: string): Promise<void> {
    return this.namenode.rename(from, to);
  }

  chmod(path: string, mode: string | number): Promise<void> {
    return this.namenode.chmod(path, mode);
  }

  chown(path: string, owner: string | null, group: string | null, options?: { recursive?: boolean }): Promise<void> {
    return this.namenode.chown(path, owner, group, options);
  }

  getBlocks(path: string): Promise<BlockInfo[]> {
    return this.namenode.getBlocks(path, this.client);
  }

  async createWriter(path: string, options?: CreateOptions): Promise<FileWriter> {
    const { blockSize } = await this.namenode.create(path, options);
    return new BlockWriter(path, blockSize, this.namenode, this.client, this.localStore, this.timeoutMs, this.log);
  }

  /** Copies a local file (by path) or a buffer into the store. */
  async put(source: string | Buffer, destination: string, options?: CreateOptions): Promise<FileStatus> {
    const writer = await this.createWriter(destination, options);
    try {
      if (Buffer.isBuffer(source)) await writer.write(source);
      else
        for await (const chunk of createReadStream(source, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>)
          await writer.write(chunk);
    } catch (err) {
      await writer.abort();
      throw err;
    }
    return writer.close();
  }

  /** Copies a stored file to a local path; a partial local file is removed on failure. */
  async get(source: string, localFile: string): Promise<void> {
    try {
      await pipeline(Readable.from(this.cat(source)), createWriteStream(localFile));
    } catch (err) {
      await rm(localFile, { force: true });
      throw err;
    }
  }

  cat(path: string): AsyncIterable<Buffer> {
    return this.readRange(path, 0, Number.POSITIVE_INFINITY);
  }

  /**
   * Bytes [start, end) of a file, across blocks, each block from its best working replica. With
   * `buffers`, a local replica is read into that pool's buffers, each taken back when the reader
   * asks for the next piece: a piece is then valid only until then.
   */
  async *readRange(
    path: string,
    start = 0,
    end = Number.POSITIVE_INFINITY,
    buffers?: ReadBufferPool,
  ): AsyncIterable<Buffer> {
    if (!(start >= 0) || !(end >= start))
      throw new MinimrError('EPROTOCOL', `invalid byte range [${start}, ${end}) of ${path}`, { path, start, end });
    const blocks = await this.namenode.getBlocks(path, this.client);
    for (const block of blocks) {
      const blockEnd = block.offset + block.length;
      if (blockEnd <= start || block.length === 0) continue;
      if (block.offset >= end) break;
      yield* this.readBlock(
        path,
        block,
        Math.max(start, block.offset) - block.offset,
        Math.min(end, blockEnd) - block.offset,
        buffers,
      );
    }
  }

  /**
   * A block's bytes from its replicas in turn: a replica that fails (unreachable, its own chunk
   * checksums, or, for a whole block, the NameNode's crc32) is reported and the next one resumes
   * where it stopped. Only a read of the whole block can be checked against the NameNode's crc32;
   * a partial one relies on the datanode's chunk checksums.
   */
  private async *readBlock(
    path: string,
    block: BlockInfo,
    from: number,
    to: number,
    buffers: ReadBufferPool | undefined,
  ): AsyncIterable<Buffer> {
    const whole = from === 0 && to === block.length;
    const hold = whole && block.length <= this.holdUnverifiedBytes;
    // Held pieces are kept until the block is checked: their buffers must not come back for reuse.
    const pool = hold ? undefined : buffers;
    let position = from;
    let crc = 0;
    let lastError: unknown;
    let checksumFailures = 0;
    for (const location of block.locations) {
      try {
        const where = this.distanceTo(location);
        const held: Buffer[] = [];
        let heldCrc = crc;
        let heldEnd = position;
        for await (const { bytes: chunk, crc32: chunkCrc } of this.openReplica(
          location,
          block.blockId,
          block.token,
          position,
          to,
          pool,
        )) {
          this.bytesRead[where] += chunk.length;
          heldEnd += chunk.length;
          if (!whole) {
            position = heldEnd;
            yield chunk;
          } else if (hold) {
            heldCrc = appendCrc(heldCrc, chunk, chunkCrc);
            held.push(chunk);
          } else {
            crc = appendCrc(crc, chunk, chunkCrc);
            position = heldEnd;
            yield chunk;
          }
        }
        if (heldEnd !== to) {
          throw new MinimrError('ECONNECT', `replica on ${location.workerId} ended at ${heldEnd} of ${to}`, {
            blockId: block.blockId,
            workerId: location.workerId,
          });
        }
        if (whole && (hold ? heldCrc : crc) >>> 0 !== block.crc32) {
          const err = new MinimrError(
            'ECHECKSUM',
            `block ${block.blockId} of ${path} from ${location.workerId} does not match the NameNode's checksum`,
            {
              blockId: block.blockId,
              workerId: location.workerId,
              path,
            },
          );
          // Bytes already handed out cannot be taken back: only a held block can try the next replica.
          if (!hold) {
            await this.reportBad(block.blockId, location.workerId);
            throw new HandedOutError(err);
          }
          throw err;
        }
        for (const chunk of held) yield chunk;
        return;
      } catch (err) {
        if (err instanceof HandedOutError) throw err.cause;
        lastError = err;
        // Resume on the next replica at `position`: the bytes already handed out were verified good.
        this.log.warn(
          { path, blockId: block.blockId, workerId: location.workerId, err: serializeError(err) },
          'replica read failed; trying the next one',
        );
        if (isMinimrError(err, 'ECHECKSUM')) checksumFailures++;
        if (isMinimrError(err, 'ECHECKSUM') || isMinimrError(err, 'ENOENT'))
          await this.reportBad(block.blockId, location.workerId);
      }
    }
    if (checksumFailures > 0 && checksumFailures === block.locations.length) {
      throw new MinimrError(
        'ECHECKSUM',
        `every replica of block ${block.blockId} of ${path} is corrupt`,
        { blockId: block.blockId, path },
        { cause: lastError },
      );
    }
    throw new MinimrError(
      'ENOREPLICA',
      `no readable replica of block ${block.blockId} of ${path}`,
      { blockId: block.blockId, path },
      { cause: lastError },
    );
  }

  /** Tells the NameNode a replica looked bad; it has the datanode check, so a wrong report deletes nothing. */
  private async reportBad(blockId: string, workerId: string): Promise<void> {
    await this.namenode.reportBadReplica(blockId, workerId).catch((reportErr: unknown) => {
      this.log.warn({ blockId, err: serializeError(reportErr) }, 'could not report a bad replica');
    });
  }

  private distanceTo(location: DatanodeAddress): 'local' | 'rack' | 'offRack' {
    if (this.client?.workerId !== undefined && location.workerId === this.client.workerId) return 'local';
    if (this.client?.rack !== undefined && location.rack === this.client.rack) return 'rack';
    return 'offRack';
  }

  private openReplica(
    location: DatanodeAddress,
    blockId: string,
    token: string,
    start: number,
    end: number,
    buffers: ReadBufferPool | undefined,
  ): AsyncIterable<VerifiedPiece> {
    if (this.localStore && location.workerId === this.localStore.workerId)
      return this.localStore.readPieces(blockId, start, end, buffers);
    if (this.localReplicas && location.workerId === this.localReplicas.workerId)
      return this.localReplicas.readPieces(location, blockId, token, start, end, buffers);
    return unverifiedPieces(readRemoteBlock(location, blockId, start, end, { timeoutMs: this.timeoutMs, token }));
  }
}

/** Bytes from the network: their CRC is still to be computed. */
async function* unverifiedPieces(chunks: AsyncIterable<Buffer>): AsyncIterable<VerifiedPiece> {
  for await (const bytes of chunks) yield { bytes, crc32: undefined };
}

/**
 * The running CRC of a block read with `bytes` appended: combined from the piece's known CRC
 * (a local replica's verified chunks), else hashed.
 */
function appendCrc(crc: number, bytes: Buffer, bytesCrc: number | undefined): number {
  return bytesCrc === undefined ? crc32(bytes, crc) : crc32Combine(crc, bytesCrc, bytes.length);
}

/** Wraps the error of a block whose bad bytes were already handed out: no replica can make up for it. */
class HandedOutError extends Error {
  constructor(override readonly cause: MinimrError) {
    super(cause.message);
  }
}

const SILENT_LOGGER = { warn: () => undefined } as unknown as Logger;

/** Bytes queued per replica before `write` waits for the slowest replica to catch up. */
const STREAM_HIGH_WATER_BYTES = 4 * 1024 * 1024;
/** Size of the copies a writer reuses (see BlockWriter.copyOf), and the shortest write it uses one for. */
const REUSED_COPY_BYTES = 1024 * 1024;
const MIN_REUSED_COPY_BYTES = REUSED_COPY_BYTES / 2;
/**
 * Spare copies a writer keeps: at least as many as can be in flight, so that none is dropped in a
 * steady stream: two blocks' queues (one block ending while the next is written) of
 * STREAM_HIGH_WATER_BYTES in copies of at least MIN_REUSED_COPY_BYTES and a chunk each, plus the
 * chunk each store is writing.
 */
const MAX_SPARE_COPIES = 2 * (STREAM_HIGH_WATER_BYTES / MIN_REUSED_COPY_BYTES + 2);

/**
 * One replica's upload of the block being written: a queue of chunks that the HTTP PUT (or the local
 * store) consumes as they come, so a block is streamed, never held whole in memory.
 */
class ReplicaStream implements AsyncIterable<Buffer> {
  private chunks: Buffer[] = [];
  private queued = 0;
  private ended = false;
  failed = false;
  private wakeConsumer: (() => void) | undefined;
  private wakeProducer: (() => void) | undefined;
  result!: Promise<BlockWriteResult>;

  /**
   * `released`, when given, is told of each chunk the consumer is done with: a block store is
   * done with a chunk of its source when it asks for the next one, or when the source ends
   * (BlockStore.write). Only for a local store: an HTTP upload may still hold a chunk it was
   * given in its socket's queue.
   */
  constructor(private readonly released?: (chunk: Buffer) => void) {}

  push(chunk: Buffer): void {
    if (this.failed) return;
    this.chunks.push(chunk);
    this.queued += chunk.length;
    this.wake('consumer');
  }

  end(): void {
    this.ended = true;
    this.wake('consumer');
  }

  /** The upload failed: drop what is queued and never make the writer wait for this replica again. */
  fail(): void {
    this.failed = true;
    this.chunks = [];
    this.queued = 0;
    this.wake('producer');
    this.wake('consumer');
  }

  async waitBelow(limit: number): Promise<void> {
    while (!this.failed && this.queued > limit) await new Promise<void>((resolve) => (this.wakeProducer = resolve));
  }

  private wake(who: 'consumer' | 'producer'): void {
    const fn = who === 'consumer' ? this.wakeConsumer : this.wakeProducer;
    if (who === 'consumer') this.wakeConsumer = undefined;
    else this.wakeProducer = undefined;
    fn?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Buffer> {
    for (;;) {
      const chunk = this.chunks.shift();
      if (chunk) {
        this.queued -= chunk.length;
        this.wake('producer');
        yield chunk;
        // Back for more: the consumer is done with this one (a consumer that stops early never comes back).
        this.released?.(chunk);
        continue;
      }
      // An abandoned upload must fail, not end: a clean end would store a truncated block.
      if (this.failed) throw new MinimrError('EKILLED', 'block upload abandoned by its writer');
      if (this.ended) return;
      await new Promise<void>((resolve) => (this.wakeConsumer = resolve));
    }
  }
}

interface OpenBlock {
  blockId: string;
  targets: readonly DatanodeAddress[];
  streams: ReplicaStream[];
  length: number;
  /** CRC-32 of the bytes sent so far; not kept for a block whose one replica is the local store (`crcOfStore`). */
  crc: number;
  /**
   * Its one replica is the local store, in this process: the store's CRC-32 is the block's. The
   * store computes it from the very memory this writer hands it (per 64 KiB chunk, for its
   * metadata), so a second pass here would only compare a computation with itself. It cuts the
   * writer's CPU by about a quarter (figures: docs/performance-notes.md#block-writer-crc).
   */
  crcOfStore: boolean;
}

class BlockWriter implements FileWriter {
  private block: OpenBlock | undefined;
  /**
   * The last full block's end (its replicas' results, then its commit), running while the next
   * block is written: a block's end waits for each replica's fsyncs (~35 ms per 64 MiB block on a
   * local disk), which a writer of many blocks (a reduce's output) otherwise waited out block by
   * block. At most one at a time, so blocks are committed in order; its failure is thrown by the
   * next write or close.
   */
  private finishing: Promise<void> | undefined;
  /** Its failure as soon as it is known, so that the writer stops at its next write. */
  private finishFailure: unknown;
  private failure: unknown;
  private finished = false;
  /** Copies every replica is done with, for the next ones. */
  private readonly spareCopies: Buffer[] = [];
  /** Of each reused copy in flight, the replicas still to be done with it (gone with the copy if one never says). */
  private readonly copyHolders = new WeakMap<Buffer, number>();
  garbageBytes = 0;

  constructor(
    private readonly path: string,
    private readonly blockSize: number,
    private readonly namenode: NamenodeApi,
    private readonly client: ClientLocation | undefined,
    private readonly localStore: BlockStore | undefined,
    private readonly timeoutMs: number | undefined,
    private readonly log: Logger,
  ) {}

  async write(data: Buffer): Promise<void> {
    this.assertWritable();
    try {
      let offset = 0;
      while (offset < data.length) {
        if (this.finishFailure !== undefined) throw this.finishFailure;
        const block = this.block ?? (await this.openBlock());
        const room = Math.min(this.blockSize - block.length, data.length - offset);
        const take = Math.min(room, REUSED_COPY_BYTES);
        const chunk = this.copyOf(data, offset, take, take >= MIN_REUSED_COPY_BYTES ? block.streams.length : 0);
        if (!block.crcOfStore) block.crc = crc32(chunk, block.crc);
        block.length += take;
        offset += take;
        for (const stream of block.streams) stream.push(chunk);
        await Promise.all(block.streams.map((stream) => stream.waitBelow(STREAM_HIGH_WATER_BYTES)));
        if (block.length === this.blockSize) await this.finishInBackground();
      }
    } catch (err) {
      throw await this.fail(err);
    }
  }

  async close(): Promise<FileStatus> {
    this.assertWritable();
    try {
      await this.finishing;
      // The last block is committed by complete itself: one round trip to the NameNode, not three.
      const lastBlock = this.block ? await this.endBlock() : undefined;
      const status = await this.namenode.complete(this.path, lastBlock);
      this.finished = true;
      this.dropSpareCopies();
      return status;
    } catch (err) {
      throw await this.fail(err);
    }
  }

  async abort(): Promise<void> {
    if (this.finished) return;
    this.finished = true;
    this.failure ??= new MinimrError('EKILLED', `write of ${this.path} aborted`, { path: this.path });
    await this.finishing?.catch(() => undefined);
    await this.dropBlock();
    this.dropSpareCopies();
    await this.namenode.abandon(this.path);
  }

  /** A writer that is done leaves its spare copies to the GC. */
  private dropSpareCopies(): void {
    this.garbageBytes += this.spareCopies.length * REUSED_COPY_BYTES;
    this.spareCopies.length = 0;
  }

  private assertWritable(): void {
    if (this.failure !== undefined) throw this.failure;
    if (this.finished) throw new MinimrError('EINTERNAL', `writer of ${this.path} is closed`, { path: this.path });
  }

  /**
   * A copy of `take` bytes of `data` from `offset`: callers reuse their buffers once write
   * resolves, and replicas read the copy later. Copies of MIN_REUSED_COPY_BYTES up to
   * REUSED_COPY_BYTES go into memory that all `holders` replicas have finished with
   * (`copyWritten`), so a writer given chunks of about a MiB (OutputWriter's, put's) makes no
   * garbage per byte: a reduce writing 512 MiB of output left 512 MiB of copies to the GC, and its
   * task paced a full GC every 16 MiB of them (gc-pacer.ts), each copy fresh memory whose pages the
   * kernel faulted in and zeroed. Not shorter ones (`holders` 0), so that the memory held stays
   * within twice the bytes queued; those are left to the GC.
   */
  private copyOf(data: Buffer, offset: number, take: number, holders: number): Buffer {
    if (holders === 0) {
      this.garbageBytes += take;
      return Buffer.from(data.subarray(offset, offset + take));
    }
    const memory = this.spareCopies.pop() ?? Buffer.allocUnsafe(REUSED_COPY_BYTES);
    data.copy(memory, 0, offset, offset + take);
    const chunk = memory.subarray(0, take);
    this.copyHolders.set(chunk, holders);
    return chunk;
  }

  /**
   * A replica is done with `chunk`, a copy made by `copyOf`: the local store when it asks for the
   * next chunk, an HTTP upload when its socket has taken the bytes (an upload may still hold a
   * chunk in its socket's queue after asking for the next). A reused copy every replica is done
   * with goes back to the spares. A replica that fails may never say: its copies are the GC's.
   */
  private readonly copyWritten = (chunk: Buffer): void => {
    const holders = this.copyHolders.get(chunk);
    if (holders === undefined) return;
    if (holders > 1) {
      this.copyHolders.set(chunk, holders - 1);
      return;
    }
    this.copyHolders.delete(chunk);
    if (this.spareCopies.length < MAX_SPARE_COPIES)
      this.spareCopies.push(Buffer.from(chunk.buffer, chunk.byteOffset, REUSED_COPY_BYTES));
    else this.garbageBytes += REUSED_COPY_BYTES;
  };

  /** Allocates the next block and starts one streaming upload per replica. */
  private async openBlock(): Promise<OpenBlock> {
    const { blockId, targets, token } = await this.namenode.allocateBlock(this.path, this.client);
    const isLocal = (target: DatanodeAddress): boolean =>
      this.localStore !== undefined && target.workerId === this.localStore.workerId;
    const crcOfStore = targets.length === 1 && isLocal(targets[0]!);
    const streams = targets.map((target) => {
      if (isLocal(target)) {
        const stream = new ReplicaStream(this.copyWritten);
        stream.result = this.localStore!.write(blockId, stream);
        return stream;
      }
      const stream = new ReplicaStream();
      stream.result = putRemoteBlock(target, blockId, stream, {
        timeoutMs: this.timeoutMs,
        token,
        onChunkSent: this.copyWritten,
      });
      return stream;
    });
    for (const stream of streams) {
      // A replica that fails stops being waited for; its error is reported when the block ends.
      stream.result.catch(() => stream.fail());
    }
    this.block = { blockId, targets, streams, length: 0, crc: 0, crcOfStore };
    return this.block;
  }

  /** Starts the full block's end once the one before has ended (see `finishing`). */
  private async finishInBackground(): Promise<void> {
    await this.finishing;
    const ending = this.finishBlock();
    ending.catch((err: unknown) => {
      this.finishFailure ??= err;
    });
    this.finishing = ending;
  }

  /** Ends the block's uploads, checks every replica against the bytes sent, and commits the block. */
  private async finishBlock(): Promise<void> {
    await this.namenode.commitBlock(this.path, await this.endBlock());
  }

  /** Ends the block's uploads and checks every replica against the bytes sent: the block as written. */
  private async endBlock(): Promise<WrittenBlock> {
    const block = this.block!;
    this.block = undefined;
    for (const stream of block.streams) stream.end();
    let blockCrc32 = block.crc >>> 0;
    const outcomes = await Promise.allSettled(
      block.streams.map(async (stream, i) => {
        const result = await stream.result;
        if (result.length !== block.length || (!block.crcOfStore && result.crc32 !== blockCrc32)) {
          throw new MinimrError(
            'ECHECKSUM',
            `datanode ${block.targets[i]!.workerId} stored block ${block.blockId} wrongly`,
            {
              blockId: block.blockId,
              workerId: block.targets[i]!.workerId,
            },
          );
        }
        return { workerId: block.targets[i]!.workerId, crc32: result.crc32 };
      }),
    );
    const workerIds: string[] = [];
    let firstError: unknown;
    let diskFull = 0;
    outcomes.forEach((outcome, i) => {
      if (outcome.status === 'fulfilled') {
        workerIds.push(outcome.value.workerId);
        if (block.crcOfStore) blockCrc32 = outcome.value.crc32 >>> 0;
      } else {
        firstError ??= outcome.reason;
        if (isMinimrError(outcome.reason, 'EDISKFULL')) diskFull++;
        this.log.warn(
          {
            path: this.path,
            blockId: block.blockId,
            workerId: block.targets[i]!.workerId,
            err: serializeError(outcome.reason),
          },
          'replica write failed; dropping that target',
        );
      }
    });
    if (workerIds.length === 0 && diskFull === outcomes.length) {
      // Every target was full (the NameNode had not yet heard so): the caller may retry elsewhere.
      throw new MinimrError(
        'EDISKFULL',
        `no datanode had room for block ${block.blockId} of ${this.path} ` +
          `(full: ${block.targets.map((t) => t.workerId).join(', ')})`,
        { blockId: block.blockId, path: this.path },
        { cause: firstError },
      );
    }
    if (workerIds.length === 0) {
      throw new MinimrError(
        'ENOREPLICA',
        `no datanode stored block ${block.blockId} of ${this.path}`,
        { blockId: block.blockId, path: this.path },
        { cause: firstError },
      );
    }
    return { blockId: block.blockId, length: block.length, crc32: blockCrc32, workerIds };
  }

  /** Stops the uploads of an unfinished block (its replicas discard what they got). */
  private async dropBlock(): Promise<void> {
    const block = this.block;
    this.block = undefined;
    if (!block) return;
    for (const stream of block.streams) stream.fail();
    await Promise.allSettled(block.streams.map((s) => s.result));
  }

  /** Records the first failure, abandons the file so nothing half-written stays, and returns the error to throw. */
  private async fail(err: unknown): Promise<unknown> {
    if (this.failure === undefined) {
      this.failure = err;
      this.finished = true;
      await this.finishing?.catch(() => undefined);
      await this.dropBlock();
      await this.namenode.abandon(this.path).catch((abandonErr: unknown) => {
        this.log.warn({ path: this.path, err: serializeError(abandonErr) }, 'could not abandon a failed file');
      });
    }
    return this.failure;
  }
}
