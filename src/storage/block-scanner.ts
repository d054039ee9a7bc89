import { setTimeout as sleep } from 'node:timers/promises';
import { crc32 } from 'node:zlib';
import { isMinimrError, serializeError } from '../errors.js';
import type { Logger } from '../log.js';
import { crc32Combine, type BlockStore } from './block-store.js';
import type { ScannedReplica } from './namenode.js';

export const DEFAULT_BLOCK_SCAN_BYTES_PER_SECOND = 1024 * 1024;
export const DEFAULT_BLOCK_SCAN_INTERVAL_MS = 10 * 60_000;
/** Scanned replicas are reported in batches of at most this many. */
const REPORT_BATCH = 100;

export interface BlockScannerOptions {
  readonly store: BlockStore;
  /** Bytes read per second at most, so the scan never competes with tasks for the disk (HDFS: 1 MiB/s). */
  readonly bytesPerSecond: number;
  /** Least time from the start of one pass over the store to the start of the next. */
  readonly intervalMs: number;
  /** Replicas read whole, with the length and CRC-32 found: the NameNode compares them with what was written. */
  readonly scanned: (replicas: ScannedReplica[]) => void;
  /** A replica whose bytes fail their own chunk checksums (or whose checksums are unreadable). */
  readonly corrupt: (blockId: string, reason: string) => void;
  readonly logger?: Logger;
}

/**
 * HDFS's block scanner: a datanode re-reads every replica it stores, at a bounded rate, in the
 * background. A replica whose bytes fail their chunk checksums is reported corrupt at once; the
 * others are reported with the length and CRC-32 read, which the NameNode compares with the block's
 * (a replica rewritten whole, checksums and all, passes its own checks but not that one). Either
 * way a bad replica nobody reads is found, dropped and copied again before a second fault loses the block.
 */
export class BlockScanner {
  private stopped = false;
  private running: Promise<void> | undefined;
  private readonly abort = new AbortController();

  constructor(private readonly options: BlockScannerOptions) {}

  start(): void {
    if (this.running || this.options.bytesPerSecond <= 0) return;
    this.running = this.loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    await this.running;
  }

  /** One pass over every replica in the store; resolves with the counts (tests call it directly). */
  async scanOnce(): Promise<{ scanned: number; corrupt: number }> {
    const { store } = this.options;
    let batch: ScannedReplica[] = [];
    let scanned = 0;
    let corrupt = 0;
    const started = performance.now();
    let bytes = 0;
    for (const blockId of await store.list()) {
      if (this.stopped) break;
      let crc = 0;
      let length = 0;
      try {
        for await (const piece of store.readPieces(blockId)) {
          crc =
            piece.crc32 === undefined ? crc32(piece.bytes, crc) : crc32Combine(crc, piece.crc32, piece.bytes.length);
          length += piece.bytes.length;
          bytes += piece.bytes.length;
          // Paced: the pass so far may not have gone faster than the rate allows.
          const due = started + (bytes / this.options.bytesPerSecond) * 1000;
          const wait = due - performance.now();
          if (wait > 0) await sleep(wait, undefined, { signal: this.abort.signal }).catch(() => undefined);
          if (this.stopped) break;
        }
      } catch (err) {
        // Deleted while it was read: nothing to report.
        if (isMinimrError(err, 'ENOENT')) continue;
        if (isMinimrError(err, 'ECHECKSUM')) {
          corrupt++;
          this.options.logger?.warn({ block: blockId, reason: err.message }, 'block scanner found a corrupt replica');
          this.options.corrupt(blockId, err.message);
          continue;
        }
        this.options.logger?.warn(
          { block: blockId, err: serializeError(err) },
          'block scanner could not read a replica',
        );
        continue;
      }
      if (this.stopped) break;
      scanned++;
      batch.push({ blockId, length, crc32: crc >>> 0 });
      if (batch.length >= REPORT_BATCH) {
        this.options.scanned(batch);
        batch = [];
      }
    }
    if (batch.length > 0) this.options.scanned(batch);
    return { scanned, corrupt };
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      const started = performance.now();
      try {
        await this.scanOnce();
      } catch (err) {
        this.options.logger?.warn({ err: serializeError(err) }, 'block scan failed');
      }
      const wait = started + this.options.intervalMs - performance.now();
      if (!this.stopped)
        await sleep(Math.max(wait, 0), undefined, { signal: this.abort.signal }).catch(() => undefined);
    }
  }
}
