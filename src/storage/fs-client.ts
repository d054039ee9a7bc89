import { createReadStream, createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { crc32 } from 'node:zlib';
import { isMinimrError, MinimrError, serializeError } from '../errors.js';
import type { Logger } from '../log.js';
import type { BlockStore } from './block-store.js';
import { putRemoteBlock, readRemoteBlock } from './data-client.js';
import type { BlockInfo, ClientLocation, CreateOptions, DatanodeAddress, FileStatus, NamenodeApi } from './types.js';

export interface FsClientOptions {
  readonly namenode: NamenodeApi;
  /** Where this client runs: replica 1 of its writes lands here, and its reads prefer near replicas. */
  readonly client?: ClientLocation;
  /** This machine's datanode store: replicas on it are read and written on disk, skipping HTTP. */
  readonly localStore?: BlockStore;
  readonly timeoutMs?: number;
  readonly logger?: Logger;
}

export interface FileWriter {
  write(data: Buffer): Promise<void>;
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
  private readonly timeoutMs: number | undefined;
  private readonly log: Logger;

  constructor(options: FsClientOptions) {
    this.namenode = options.namenode;
    this.client = options.client;
    this.localStore = options.localStore;
    this.timeoutMs = options.timeoutMs;
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
      else for await (const chunk of createReadStream(source, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) await writer.write(chunk);
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

  /** Bytes [start, end) of a file, across blocks, each block from its best working replica. */
  async *readRange(path: string, start = 0, end = Number.POSITIVE_INFINITY): AsyncIterable<Buffer> {
    if (!(start >= 0) || !(end >= start)) throw new MinimrError('EPROTOCOL', `invalid byte range [${start}, ${end}) of ${path}`, { path, start, end });
    const blocks = await this.namenode.getBlocks(path, this.client);
    for (const block of blocks) {
      const blockEnd = block.offset + block.length;
      if (blockEnd <= start || block.length === 0) continue;
      if (block.offset >= end) break;
      yield* this.readBlock(path, block, Math.max(start, block.offset) - block.offset, Math.min(end, blockEnd) - block.offset);
    }
  }

  private async *readBlock(path: string, block: BlockInfo, from: number, to: number): AsyncIterable<Buffer> {
    let position = from;
    let lastError: unknown;
    for (const location of block.locations) {
      try {
        for await (const chunk of this.openReplica(location, block.blockId, position, to)) {
          position += chunk.length;
          yield chunk;
        }
        if (position !== to) {
          throw new MinimrError('ECONNECT', `replica on ${location.workerId} ended at ${position} of ${to}`, { blockId: block.blockId, workerId: location.workerId });
        }
        return;
      } catch (err) {
        lastError = err;
        // Resume on the next replica at `position`: the bytes already handed out were verified good.
        this.log.warn({ path, blockId: block.blockId, workerId: location.workerId, err: serializeError(err) }, 'replica read failed; trying the next one');
        if (isMinimrError(err, 'ECHECKSUM') || isMinimrError(err, 'ENOENT')) {
          await this.namenode.reportBadReplica(block.blockId, location.workerId).catch((reportErr: unknown) => {
            this.log.warn({ blockId: block.blockId, err: serializeError(reportErr) }, 'could not report a bad replica');
          });
        }
      }
    }
    throw new MinimrError('ENOREPLICA', `no readable replica of block ${block.blockId} of ${path}`, { blockId: block.blockId, path }, { cause: lastError });
  }

  private openReplica(location: DatanodeAddress, blockId: string, start: number, end: number): AsyncIterable<Buffer> {
    if (this.localStore && location.workerId === this.localStore.workerId) return this.localStore.read(blockId, start, end);
    return readRemoteBlock(location, blockId, start, end, { timeoutMs: this.timeoutMs });
  }
}

const SILENT_LOGGER = { warn: () => undefined } as unknown as Logger;

class BlockWriter implements FileWriter {
  private parts: Buffer[] = [];
  private buffered = 0;
  private inFlight: Promise<void> | undefined;
  private failure: unknown;
  private finished = false;

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
        const take = Math.min(this.blockSize - this.buffered, data.length - offset);
        // A copy: callers reuse their buffers once write resolves, and a block may be sent later.
        this.parts.push(Buffer.from(data.subarray(offset, offset + take)));
        this.buffered += take;
        offset += take;
        if (this.buffered === this.blockSize) await this.startBlock(this.takeBuffered());
      }
    } catch (err) {
      throw await this.fail(err);
    }
  }

  async close(): Promise<FileStatus> {
    this.assertWritable();
    try {
      if (this.buffered > 0) await this.startBlock(this.takeBuffered());
      await this.drainInFlight();
      await this.namenode.complete(this.path);
      this.finished = true;
      return await this.namenode.stat(this.path);
    } catch (err) {
      throw await this.fail(err);
    }
  }

  async abort(): Promise<void> {
    if (this.finished) return;
    this.finished = true;
    this.failure ??= new MinimrError('EKILLED', `write of ${this.path} aborted`, { path: this.path });
    this.parts = [];
    await this.inFlight?.catch(() => undefined);
    await this.namenode.abandon(this.path);
  }

  private assertWritable(): void {
    if (this.failure !== undefined) throw this.failure;
    if (this.finished) throw new MinimrError('EINTERNAL', `writer of ${this.path} is closed`, { path: this.path });
  }

  private takeBuffered(): Buffer {
    const block = Buffer.concat(this.parts, this.buffered);
    this.parts = [];
    this.buffered = 0;
    return block;
  }

  /** One block in flight while the next one fills: memory stays at two blocks at most. */
  private async startBlock(data: Buffer): Promise<void> {
    await this.drainInFlight();
    const sending = this.sendBlock(data);
    sending.catch(() => undefined); // surfaced by the next drainInFlight
    this.inFlight = sending;
  }

  private async drainInFlight(): Promise<void> {
    const sending = this.inFlight;
    this.inFlight = undefined;
    await sending;
  }

  private async sendBlock(data: Buffer): Promise<void> {
    const { blockId, targets } = await this.namenode.allocateBlock(this.path, this.client);
    const expectedCrc32 = crc32(data) >>> 0;
    const outcomes = await Promise.allSettled(
      targets.map(async (target) => {
        const result =
          this.localStore && target.workerId === this.localStore.workerId
            ? await this.localStore.write(blockId, data)
            : await putRemoteBlock(target, blockId, data, { expectedCrc32, timeoutMs: this.timeoutMs });
        if (result.length !== data.length || result.crc32 !== expectedCrc32) {
          throw new MinimrError('ECHECKSUM', `datanode ${target.workerId} stored block ${blockId} wrongly`, { blockId, workerId: target.workerId });
        }
        return target.workerId;
      }),
    );
    const workerIds: string[] = [];
    let firstError: unknown;
    outcomes.forEach((outcome, i) => {
      if (outcome.status === 'fulfilled') workerIds.push(outcome.value);
      else {
        firstError ??= outcome.reason;
        this.log.warn({ path: this.path, blockId, workerId: targets[i]!.workerId, err: serializeError(outcome.reason) }, 'replica write failed; dropping that target');
      }
    });
    if (workerIds.length === 0) {
      throw new MinimrError('ENOREPLICA', `no datanode stored block ${blockId} of ${this.path}`, { blockId, path: this.path }, { cause: firstError });
    }
    await this.namenode.commitBlock(this.path, { blockId, length: data.length, crc32: expectedCrc32, workerIds });
  }

  /** Records the first failure, abandons the file so nothing half-written stays, and returns the error to throw. */
  private async fail(err: unknown): Promise<unknown> {
    if (this.failure === undefined) {
      this.failure = err;
      this.finished = true;
      this.parts = [];
      await this.inFlight?.catch(() => undefined);
      await this.namenode.abandon(this.path).catch((abandonErr: unknown) => {
        this.log.warn({ path: this.path, err: serializeError(abandonErr) }, 'could not abandon a failed file');
      });
    }
    return this.failure;
  }
}
