import assert from 'node:assert/strict';
import { once } from 'node:events';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MinimrError } from '../../src/errors.js';
import { LocalCluster, type LocalClusterOptions } from '../../src/local/index.js';
import type { FsClient } from '../../src/storage/index.js';
import { createLogger } from '../../src/log.js';
import { seededRandom } from '../../src/util/index.js';

/** Compiled app modules (dist/apps) and test fixtures (dist/test/fixtures). */
export function appModule(name: string): string {
  return fileURLToPath(new URL(`../../apps/${name}.js`, import.meta.url));
}
export function fixtureModule(name: string): string {
  return fileURLToPath(new URL(`../fixtures/${name}.js`, import.meta.url));
}

export interface TestCluster {
  cluster: LocalCluster;
  fs: FsClient;
  dir: string;
  stop(): Promise<void>;
}

/** A real local cluster (JobTracker here, workers as processes) in a fresh temp dir. */
export async function startTestCluster(options: Partial<LocalClusterOptions> = {}): Promise<TestCluster> {
  const dir = await mkdtemp(join(tmpdir(), 'minimr-test-'));
  const cluster = await LocalCluster.start({
    dataDir: dir,
    workers: 3,
    blockSize: 64 * 1024,
    replication: 2,
    heartbeatMs: 200,
    logger: createLogger('test-cluster', process.env.MINIMR_LOG_LEVEL ?? 'error'),
    workerLogLevel: process.env.MINIMR_LOG_LEVEL ?? 'error',
    ...options,
  });
  return {
    cluster,
    fs: cluster.client.fs,
    dir,
    async stop() {
      await cluster.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export async function readAll(chunks: AsyncIterable<Buffer>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of chunks) parts.push(c);
  return Buffer.concat(parts);
}

/** Concatenation of a job's part files in part order. */
export async function readOutput(fs: FsClient, dir: string): Promise<Buffer> {
  const parts = (await fs.list(dir))
    .filter((f) => /\/part-[mr]-\d+$/.test(f.path))
    .map((f) => f.path)
    .sort();
  const bufs: Buffer[] = [];
  for (const p of parts) bufs.push(await readAll(fs.cat(p)));
  return Buffer.concat(bufs);
}

/** A text of about `bytes` bytes with a skewed vocabulary, tabs, CRLFs and non-ASCII words. */
export function makeText(bytes: number, seed = 1): string {
  const next = seededRandom(seed);
  const vocab: string[] = [];
  for (let i = 0; i < 2000; i++) vocab.push(`w${i.toString(36)}`);
  vocab.push('Straße', 'naïve', '日本語', 'THE', 'the', 'The');
  const lines: string[] = [];
  let size = 0;
  while (size < bytes) {
    const n = 1 + Math.floor(next() * 14);
    const words: string[] = [];
    for (let i = 0; i < n; i++) words.push(vocab[Math.floor(vocab.length * next() ** 2)]!);
    const sep = next() < 0.1 ? '\t' : ' ';
    const line = words.join(sep) + (next() < 0.05 ? '\r' : '');
    lines.push(line);
    size += Buffer.byteLength(line) + 1;
  }
  return lines.join('\n') + '\n';
}

/** WordCount as Hadoop's example defines it, computed independently of minimr. */
export function referenceWordCount(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const token of text.split(/[ \t\n\r\f]+/)) {
    if (token.length > 0) counts.set(token, (counts.get(token) ?? 0) + 1);
  }
  return counts;
}

/** Parses `word\tcount` lines into a map. */
export function parseCounts(output: string): Map<string, number> {
  const m = new Map<string, number>();
  for (const line of output.split('\n')) {
    if (line === '') continue;
    const tab = line.lastIndexOf('\t');
    m.set(line.slice(0, tab), Number(line.slice(tab + 1)));
  }
  return m;
}

/** Polls `probe` every 50 ms until it gives a value, or fails after `timeoutMs` naming `what`. */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A WordCount output equals the reference count of `text`. */
export function assertCountsEqual(output: Buffer, text: string): void {
  const got = parseCounts(output.toString('utf8'));
  const want = referenceWordCount(text);
  assert.equal(got.size, want.size);
  for (const [w, n] of want) assert.equal(got.get(w), n, `count of ${JSON.stringify(w)}`);
}

/** An `assert.rejects` check: the error is a MinimrError with this code (and a message matching `pattern`). */
export function isCode(code: string, pattern?: RegExp) {
  return (err: unknown) => {
    assert.ok(err instanceof MinimrError, `expected MinimrError ${code}, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    if (pattern) assert.match(err.message, pattern);
    return true;
  };
}

/** A TCP port of loopback free now (for a process the test starts with --port: it may be taken after). */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** TeraSort's expected output, computed here: the 100-byte records of `records` by key, then by the whole record. */
export function teraSortReference(records: Buffer): Buffer {
  const rows = Array.from({ length: records.length / 100 }, (_, i) => records.subarray(i * 100, (i + 1) * 100));
  rows.sort((a, b) => Buffer.compare(a.subarray(0, 10), b.subarray(0, 10)) || Buffer.compare(a, b));
  return Buffer.concat(rows);
}

/**
 * A new directory under the system's temporary directory that the workers' task processes can
 * enter (mode 755): they run as the task account, so a file:// input or output directory must be
 * open to it, as a shared or network file system is to every worker.
 */
export async function sharedTempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  await chmod(dir, 0o755);
  return dir;
}
