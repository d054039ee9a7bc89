import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { MinimrError } from '../errors.js';
import {
  bytesOf,
  ChunkChecksummer,
  CHECKSUM_CHUNK_SIZE,
  checksumError,
  clampRange,
  missingBlockError,
  pieceInRange,
  toAsyncChunks,
  validateBlockId,
  verifyChunks,
} from './block-store.js';
import type {
  BlockStat,
  BlockStore,
  BlockWriteResult,
  ReadBufferPool,
  StoredReplica,
  VerifiedPiece,
} from './block-store.js';

export interface LocalDiskBlockStoreOptions {
  /** Directory of this datanode's blocks; created if missing. */
  readonly dir: string;
  readonly workerId: string;
}

interface BlockMeta {
  readonly length: number;
  readonly crc32: number;
  readonly chunkCrcs: readonly number[];
}

const META_MAGIC = 'MRBM';
const META_VERSION = 1;
const META_HEADER_BYTES = 28;
const DATA_SUFFIX = '.blk';
const META_SUFFIX = '.meta';
/** Read 16 checksum chunks (1 MiB) per disk read: fewer syscalls, still bounded memory. */
const READ_CHUNKS_PER_IO = 16;

/**
 * A read of the block: `buf` the bytes, `memory` the whole buffer they were read into (a pool's buffer may be longer).
 */
interface PieceRead {
  readonly buf: Buffer;
  readonly memory: Buffer;
  readonly position: number;
}

function isErrno(err: unknown, ...codes: string[]): boolean {
  return err instanceof Error && codes.includes(String((err as NodeJS.ErrnoException).code));
}

function encodeMeta(meta: BlockMeta): Buffer {
  const buf = Buffer.alloc(META_HEADER_BYTES + 4 * meta.chunkCrcs.length);
  buf.write(META_MAGIC, 0, 'latin1');
  buf.writeUInt8(META_VERSION, 4);
  buf.writeUInt32LE(CHECKSUM_CHUNK_SIZE, 8);
  buf.writeBigUInt64LE(BigInt(meta.length), 12);
  buf.writeUInt32LE(meta.crc32, 20);
  buf.writeUInt32LE(meta.chunkCrcs.length, 24);
  meta.chunkCrcs.forEach((crc, i) => buf.writeUInt32LE(crc, META_HEADER_BYTES + 4 * i));
  return buf;
}

function decodeMeta(buf: Buffer): BlockMeta | undefined {
  if (
    buf.length < META_HEADER_BYTES ||
    buf.toString('latin1', 0, 4) !== META_MAGIC ||
    buf.readUInt8(4) !== META_VERSION
  )
    return undefined;
  if (buf.readUInt32LE(8) !== CHECKSUM_CHUNK_SIZE) return undefined;
  const length = Number(buf.readBigUInt64LE(12));
  const count = buf.readUInt32LE(24);
  if (count !== Math.ceil(length / CHECKSUM_CHUNK_SIZE) || buf.length !== META_HEADER_BYTES + 4 * count)
    return undefined;
  const chunkCrcs: number[] = [];
  for (let i = 0; i < count; i++) chunkCrcs.push(buf.readUInt32LE(META_HEADER_BYTES + 4 * i));
  return { length, crc32: buf.readUInt32LE(20), chunkCrcs };
}

async function readFully(handle: FileHandle, buf: Buffer, position: number): Promise<number> {
  let filled = 0;
  while (filled < buf.length) {
    const { bytesRead } = await handle.read(buf, filled, buf.length - filled, position + filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return filled;
}

/**
 * Blocks as `<id>.blk` plus `<id>.meta` (CRC-32 per 64 KiB chunk and of the whole block). A write goes
 * to `tmp/`, is fsynced, and is renamed into place meta first, data last: the data file's presence is
 * what makes a block exist, so a crash mid-write leaves nothing a reader can see.
 */
export class LocalDiskBlockStore implements BlockStore {
  readonly workerId: string;
  readonly dir: string;
  private readonly tmpDir: string;
  private dirsReady: Promise<void> | undefined;

  constructor(options: LocalDiskBlockStoreOptions) {
    this.dir = options.dir;
    this.workerId = options.workerId;
    this.tmpDir = join(options.dir, 'tmp');
  }

  /** Creates the directories and clears temp files a crashed write left behind. */
  async open(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    await rm(this.tmpDir, { recursive: true, force: true });
    await mkdir(this.tmpDir, { recursive: true });
    this.dirsReady = Promise.resolve();
  }

  /** Where a block's data lives, for short-circuit reads on this machine; undefined when it is not stored. */
  localBlockPath(blockId: string): string | undefined {
    const path = this.dataPath(validateBlockId(blockId));
    return existsSync(path) ? path : undefined;
  }

  async write(blockId: string, source: AsyncIterable<Buffer> | Buffer): Promise<BlockWriteResult> {
    validateBlockId(blockId);
    await this.ensureDirs();
    const unique = randomUUID();
    const tmpData = join(this.tmpDir, `${blockId}.${unique}${DATA_SUFFIX}`);
    const tmpMeta = join(this.tmpDir, `${blockId}.${unique}${META_SUFFIX}`);
    let handle: FileHandle | undefined;
    try {
      handle = await open(tmpData, 'wx');
      const summer = new ChunkChecksummer();
      for await (const chunk of toAsyncChunks(source)) {
        summer.update(chunk);
        await this.writeToFile(handle, chunk);
      }
      await handle.sync();
      await handle.close();
      handle = undefined;
      const meta = summer.finish();
      handle = await open(tmpMeta, 'wx');
      await this.writeToFile(handle, encodeMeta(meta));
      await handle.sync();
      await handle.close();
      handle = undefined;
      await rename(tmpMeta, this.metaPath(blockId));
      await rename(tmpData, this.dataPath(blockId));
      await this.syncDir();
      return { length: meta.length, crc32: meta.crc32 };
    } catch (err) {
      await handle?.close().catch(() => undefined);
      await rm(tmpData, { force: true }).catch(() => undefined);
      await rm(tmpMeta, { force: true }).catch(() => undefined);
      if (isErrno(err, 'ENOSPC', 'EDQUOT')) {
        // No path in it: the message reaches clients, who have no business with the worker's directories.
        throw new MinimrError(
          'EDISKFULL',
          `disk full on worker ${this.workerId} while writing block ${blockId}`,
          { blockId, workerId: this.workerId },
          { cause: err },
        );
      }
      throw err;
    }
  }

  read(blockId: string, start?: number, end?: number): AsyncIterable<Buffer> {
    return bytesOf(this.readPieces(blockId, start, end));
  }

  async *readPieces(
    blockId: string,
    start?: number,
    end?: number,
    buffers?: ReadBufferPool,
  ): AsyncIterable<VerifiedPiece> {
    validateBlockId(blockId);
    const meta = await this.readMeta(blockId);
    let handle: FileHandle;
    try {
      handle = await open(this.dataPath(blockId), 'r');
    } catch (err) {
      if (isErrno(err, 'ENOENT')) throw missingBlockError(blockId, this.workerId);
      throw err;
    }
    try {
      if ((await handle.stat()).size !== meta.length) throw checksumError(blockId, this.workerId, -1);
      const range = clampRange(meta.length, start, end);
      const ioSize = READ_CHUNKS_PER_IO * CHECKSUM_CHUNK_SIZE;
      // Only the chunks the range touches are read and verified: a bad chunk elsewhere does not fail this read.
      const alignedEnd = Math.min(meta.length, Math.ceil(range.end / CHECKSUM_CHUNK_SIZE) * CHECKSUM_CHUNK_SIZE);
      const readAt = async (position: number): Promise<PieceRead> => {
        const wanted = Math.min(ioSize, alignedEnd - position);
        const memory = buffers?.take(wanted) ?? Buffer.allocUnsafe(wanted);
        const buf = memory.length === wanted ? memory : memory.subarray(0, wanted);
        if ((await readFully(handle, buf, position)) !== wanted)
          throw checksumError(blockId, this.workerId, position / CHECKSUM_CHUNK_SIZE);
        return { buf, memory, position };
      };
      // One read ahead: the disk (or page cache copy) works while the reader uses the bytes before.
      let next: Promise<PieceRead> | undefined =
        range.start < range.end
          ? readAt(Math.floor(range.start / CHECKSUM_CHUNK_SIZE) * CHECKSUM_CHUNK_SIZE)
          : undefined;
      try {
        while (next !== undefined) {
          const { buf, memory, position }: PieceRead = await next;
          const after: number = position + buf.length;
          next = after < range.end ? readAt(after) : undefined;
          const crc = verifyChunks(buf, position / CHECKSUM_CHUNK_SIZE, meta.chunkCrcs, blockId, this.workerId);
          yield pieceInRange(buf, position, crc, range);
          // The reader asked for the next piece: it is done with this one.
          buffers?.give(memory);
        }
      } finally {
        // A reader that stopped early (or failed) leaves a read in flight: it must end before the file closes.
        await next?.catch(() => undefined);
      }
    } finally {
      await handle.close();
    }
  }

  async has(blockId: string): Promise<boolean> {
    validateBlockId(blockId);
    return (await this.exists(this.dataPath(blockId))) && (await this.exists(this.metaPath(blockId)));
  }

  async list(): Promise<string[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (err) {
      if (isErrno(err, 'ENOENT')) return [];
      throw err;
    }
    const metas = new Set(names.filter((n) => n.endsWith(META_SUFFIX)).map((n) => n.slice(0, -META_SUFFIX.length)));
    return names
      .filter((n) => n.endsWith(DATA_SUFFIX))
      .map((n) => n.slice(0, -DATA_SUFFIX.length))
      .filter((id) => metas.has(id) && /^[A-Za-z0-9_-]+$/.test(id))
      .sort();
  }

  async report(): Promise<StoredReplica[]> {
    const replicas: StoredReplica[] = [];
    for (const blockId of await this.list()) {
      try {
        replicas.push({ blockId, length: (await stat(this.dataPath(blockId))).size });
      } catch (err) {
        // Deleted since the listing: not on the disk.
        if (!isErrno(err, 'ENOENT')) throw err;
      }
    }
    return replicas;
  }

  async delete(blockId: string): Promise<boolean> {
    validateBlockId(blockId);
    const existed = await this.exists(this.dataPath(blockId));
    // Data first: once it is gone the block is gone, whatever happens to the meta file.
    await rm(this.dataPath(blockId), { force: true });
    await rm(this.metaPath(blockId), { force: true });
    return existed;
  }

  async stat(blockId: string): Promise<BlockStat> {
    validateBlockId(blockId);
    if (!(await this.exists(this.dataPath(blockId)))) throw missingBlockError(blockId, this.workerId);
    const meta = await this.readMeta(blockId);
    return { blockId, length: meta.length, crc32: meta.crc32 };
  }

  /** Overridable so tests can simulate a full disk; writes all of `data` at the current position. */
  protected async writeToFile(handle: FileHandle, data: Buffer): Promise<void> {
    let written = 0;
    while (written < data.length) {
      const { bytesWritten } = await handle.write(data, written, data.length - written);
      written += bytesWritten;
    }
  }

  private dataPath(blockId: string): string {
    return join(this.dir, blockId + DATA_SUFFIX);
  }

  private metaPath(blockId: string): string {
    return join(this.dir, blockId + META_SUFFIX);
  }

  private async readMeta(blockId: string): Promise<BlockMeta> {
    let raw: Buffer;
    try {
      raw = await readFile(this.metaPath(blockId));
    } catch (err) {
      if (isErrno(err, 'ENOENT')) throw missingBlockError(blockId, this.workerId);
      throw err;
    }
    const meta = decodeMeta(raw);
    if (!meta) throw checksumError(blockId, this.workerId, -1);
    return meta;
  }

  private async exists(path: string): Promise<boolean> {
    try {
      await stat(path);
      return true;
    } catch (err) {
      if (isErrno(err, 'ENOENT')) return false;
      throw err;
    }
  }

  private ensureDirs(): Promise<void> {
    this.dirsReady ??= mkdir(this.tmpDir, { recursive: true }).then(() => undefined);
    return this.dirsReady;
  }

  /** Makes the renames durable: without it a power loss could forget a block the NameNode was told about. */
  private async syncDir(): Promise<void> {
    const handle = await open(this.dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  }
}
