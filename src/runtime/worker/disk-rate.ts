import { open, rm } from 'node:fs/promises';
import { join } from 'node:path';

const PROBE_BYTES = 8 * 1024 * 1024;
const CHUNK = 1024 * 1024;

/**
 * The worker's disk write rate in MB/s (10^6 bytes), from writing and fsyncing a small probe file
 * in its data directory at start-up. Improved FAIR classifies jobs as I/O- or CPU-bound against
 * this rate (DIOR in docs/specs/fair-and-improved-fair.md). A page-cache-backed directory (tmpfs)
 * reports a very high rate,
 * which is the truth for that worker. 0 means the probe failed; the worker still starts.
 */
export async function measureDiskMBps(dir: string): Promise<number> {
  const path = join(dir, `.disk-probe-${process.pid}`);
  const chunk = Buffer.alloc(CHUNK, 0x5a);
  const started = process.hrtime.bigint();
  try {
    const fh = await open(path, 'w');
    try {
      for (let written = 0; written < PROBE_BYTES; written += CHUNK) await fh.write(chunk);
      await fh.sync();
    } finally {
      await fh.close();
    }
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    return Math.round((PROBE_BYTES / 1e6 / Math.max(seconds, 1e-6)) * 10) / 10;
  } catch {
    return 0;
  } finally {
    await rm(path, { force: true });
  }
}
