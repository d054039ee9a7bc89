/**
 * Issue 34, "replicas where the NameNode says", on a real cluster (JobTracker here, worker
 * processes): what is on the workers' disks, not what the NameNode believes, is checked after
 * tampered replicas are read, after one nobody reads is left to the block scanner, after a replica
 * file is deleted behind the NameNode's back, and after a put to a cluster with one worker on a
 * 4 MB file system. `fs fsck` reports the same, and shows a user only what the user may list.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { crc32 } from 'node:zlib';
import { LocalCluster } from '../../src/local/index.js';
import { createLogger } from '../../src/log.js';
import { LocalDiskBlockStore, type BlockInfo, type FsckReport } from '../../src/storage/index.js';
import { runMinimrBinary } from '../helpers/cli.js';
import { makeText, readAll, startTestCluster, waitFor, type TestCluster } from '../helpers/cluster.js';

const run = promisify(execFile);

function storeOf(dir: string, workerId: string): LocalDiskBlockStore {
  return new LocalDiskBlockStore({ dir: join(dir, workerId, 'blocks'), workerId });
}

/** The workers whose disk holds a good copy of the block (its bytes match the NameNode's crc32). */
async function goodCopiesOnDisk(dir: string, workerIds: readonly string[], block: BlockInfo): Promise<string[]> {
  const holders: string[] = [];
  for (const workerId of workerIds) {
    // A read that fails (the file replaced or deleted under it) is no good copy.
    const bytes = await readAll(storeOf(dir, workerId).read(block.blockId)).catch(() => undefined);
    if (bytes && bytes.length === block.length && crc32(bytes) >>> 0 === block.crc32) holders.push(workerId);
  }
  return holders.sort();
}

/**
 * Waits until every block of `path` has `replication` good copies on disk, exactly on the workers the
 * NameNode lists, and nowhere else a bad one; returns fsck's report of it then.
 */
async function waitForDiskTruth(
  t: TestCluster,
  path: string,
  replication: number,
  timeoutMs = 30_000,
): Promise<FsckReport> {
  const nn = t.cluster.jobTracker.namenode;
  const workers = t.cluster.workers.map((w) => w.workerId);
  return waitFor(
    `every block of ${path} to have ${replication} good replicas on disk, where the NameNode lists them`,
    async () => {
      for (const block of await nn.getBlocks(path)) {
        const onDisk = await goodCopiesOnDisk(t.dir, workers, block);
        const listed = block.locations.map((l) => l.workerId).sort();
        if (onDisk.length !== replication || listed.join() !== onDisk.join()) return undefined;
        for (const w of workers.filter((id) => !onDisk.includes(id)))
          if (await storeOf(t.dir, w).has(block.blockId)) return undefined;
      }
      const report = await t.cluster.client.fsck(path);
      return report.underReplicated.length === 0 && report.missing.length === 0 ? report : undefined;
    },
    timeoutMs,
  );
}

/** fsck's replicas of each block, against the disks. */
async function assertFsckMatchesDisks(t: TestCluster, report: FsckReport): Promise<void> {
  const workers = t.cluster.workers.map((w) => w.workerId);
  const nn = t.cluster.jobTracker.namenode;
  for (const file of report.files) {
    const blocks = await nn.getBlocks(file.path);
    for (const [i, b] of file.blocks.entries())
      assert.deepEqual([...b.replicas], await goodCopiesOnDisk(t.dir, workers, blocks[i]!), `${b.blockId}`);
  }
}

describe('replicas where the NameNode says', () => {
  let t: TestCluster;
  const text = makeText(400_000, 34);
  before(async () => {
    t = await startTestCluster({
      workers: 3,
      replication: 2,
      blockSize: 64 * 1024,
      blockReportMs: 1000,
      blockScanBytesPerSecond: 64 * 1024 * 1024,
      blockScanIntervalMs: 1000,
    });
  });
  after(() => t?.stop());

  it('tampered replicas read by a client are replaced: every block has its full replication on disk', async () => {
    await t.fs.put(Buffer.from(text), '/tamper/read.txt');
    const nn = t.cluster.jobTracker.namenode;
    const blocks = await nn.getBlocks('/tamper/read.txt');
    assert.ok(blocks.length >= 6);
    // One replica each of four blocks, rewritten whole (checksums and all): only the NameNode's crc32 tells.
    for (const block of blocks.slice(0, 4)) {
      const victim = storeOf(t.dir, block.locations[0]!.workerId);
      await victim.delete(block.blockId);
      await victim.write(block.blockId, Buffer.alloc(block.length, 0x21));
    }
    const cat = await runMinimrBinary(
      [
        'fs',
        'cat',
        '/tamper/read.txt',
        '--jobtracker',
        t.cluster.url,
        '--secret-file',
        t.cluster.jobTracker.secretFile,
      ],
      { env: process.env },
    );
    assert.equal(cat.code, 0, cat.stderr);
    assert.equal(cat.stdout.toString(), text);
    const report = await waitForDiskTruth(t, '/tamper/read.txt', 2);
    assert.equal(report.healthy, true);
    await assertFsckMatchesDisks(t, report);
  });

  it('a tampered replica nobody reads is found by the block scanner and replaced', async () => {
    await t.fs.put(Buffer.from(text), '/tamper/unread.txt');
    const [block] = await t.cluster.jobTracker.namenode.getBlocks('/tamper/unread.txt');
    const victim = storeOf(t.dir, block!.locations[1]!.workerId);
    await victim.delete(block!.blockId);
    await victim.write(block!.blockId, Buffer.alloc(block!.length, 0x22));
    await waitForDiskTruth(t, '/tamper/unread.txt', 2);
  });

  it('a replica file deleted behind the NameNode is found by the block report and copied again', async () => {
    await t.fs.put(Buffer.from(text), '/behind/back.txt');
    const nn = t.cluster.jobTracker.namenode;
    const [block] = await nn.getBlocks('/behind/back.txt');
    const loser = block!.locations[0]!.workerId;
    assert.equal(await storeOf(t.dir, loser).delete(block!.blockId), true);
    await waitFor(
      'the NameNode to stop listing the lost replica or list it again with a fresh copy',
      async () => {
        const [now] = await nn.getBlocks('/behind/back.txt');
        const listed = now!.locations.map((l) => l.workerId);
        return listed.includes(loser) && !(await storeOf(t.dir, loser).has(block!.blockId)) ? undefined : true;
      },
      30_000,
    );
    const report = await waitForDiskTruth(t, '/behind/back.txt', 2);
    await assertFsckMatchesDisks(t, report);
  });

  it('fs fsck shows a user only the paths the user may list; the admin sees all', async () => {
    const nn = t.cluster.jobTracker.namenode;
    await nn.mkdir('/home/alice', { parents: true });
    await nn.chown('/home/alice', 'alice', null);
    await nn.chmod('/home/alice', '700');
    await t.fs.put(Buffer.from('private'), '/home/alice/secret.txt');
    const fsck = (user: string) =>
      runMinimrBinary(
        [
          'fs',
          'fsck',
          '/',
          '--user',
          user,
          '--jobtracker',
          t.cluster.url,
          '--secret-file',
          t.cluster.jobTracker.secretFile,
        ],
        { env: process.env },
      );
    const bob = await fsck('bob');
    assert.equal(bob.code, 0, bob.stderr);
    assert.doesNotMatch(bob.stdout.toString(), /\/home\/alice\/secret\.txt/);
    assert.match(bob.stdout.toString(), /\/tamper\/read\.txt/);
    const admin = await fsck(t.cluster.jobTracker.admin);
    assert.equal(admin.code, 0, admin.stderr);
    assert.match(admin.stdout.toString(), /\/home\/alice\/secret\.txt/);
  });
});

describe('a worker on a small file system', () => {
  const isRoot = process.getuid?.() === 0;
  let cluster: LocalCluster | undefined;
  let dir = '';
  let mounted = '';
  after(async () => {
    await cluster?.stop();
    if (mounted) await run('umount', ['-l', mounted]).catch(() => undefined);
    if (dir) await run('rm', ['-rf', dir]).catch(() => undefined);
  });

  it('fs put leaves no block under-replicated: the full worker gets no more blocks, the others take them', {
    skip: isRoot ? false : 'needs root to mount a 4 MB tmpfs',
  }, async () => {
    const { mkdtemp } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    dir = await mkdtemp(join(tmpdir(), 'minimr-tmpfs-'));
    const small = join(dir, 'worker-2');
    await mkdir(small, { recursive: true });
    await run('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', small]);
    mounted = small;
    cluster = await LocalCluster.start({
      dataDir: dir,
      workers: 2,
      replication: 2,
      blockSize: 256 * 1024,
      heartbeatMs: 200,
      logger: createLogger('test-cluster', process.env.MINIMR_LOG_LEVEL ?? 'error'),
      workerLogLevel: process.env.MINIMR_LOG_LEVEL ?? 'error',
    });
    await cluster.startWorker(2);
    await cluster.jobTracker.waitForWorkers(3);
    const data = Buffer.from(makeText(8 * 1024 * 1024, 7));
    const local = join(dir, 'input.txt');
    await writeFile(local, data);
    const put = await runMinimrBinary(
      ['fs', 'put', local, '/big.txt', '--jobtracker', cluster.url, '--secret-file', cluster.jobTracker.secretFile],
      { env: process.env },
    );
    assert.equal(put.code, 0, put.stderr);
    const nn = cluster.jobTracker.namenode;
    const blocks = await nn.getBlocks('/big.txt');
    assert.equal(blocks.length, Math.ceil(data.length / (256 * 1024)));
    const workers = cluster.workers.map((w) => w.workerId);
    const onSmall = [];
    for (const block of blocks) {
      const onDisk = await goodCopiesOnDisk(dir, workers, block);
      assert.equal(onDisk.length, 2, `${block.blockId} has 2 replicas on disk (${onDisk.join(', ')})`);
      assert.deepEqual(block.locations.map((l) => l.workerId).sort(), onDisk);
      if (onDisk.includes('worker-2')) onSmall.push(block.blockId);
    }
    // 4 MB hold at most 15 blocks of 256 KiB (with their checksums); the put needs twice the file's ~8 MB.
    assert.ok(onSmall.length > 0 && onSmall.length < 16, `the small worker holds some blocks (${onSmall.length})`);
    const report = await cluster.client.fsck('/');
    assert.deepEqual(report.underReplicated, []);
    assert.equal(report.healthy, true);
    const back = await readAll(cluster.client.fs.cat('/big.txt'));
    assert.ok(back.equals(data));
  });
});
