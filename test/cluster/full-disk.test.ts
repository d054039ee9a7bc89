/**
 * One worker of three on a small tmpfs (4 MB): a TeraSort larger than that disk succeeds, its
 * output is sorted and complete (checked against the input sorted here), and every attempt that
 * failed with EDISKFULL on the full worker ran again on another worker (the books' per-task node
 * blacklist). Needs root to mount the tmpfs; skipped otherwise.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, statfs, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { LocalCluster } from '../../src/local/index.js';
import { createLogger } from '../../src/log.js';
import { seededRandom } from '../../src/util/index.js';
import { appModule, readOutput } from '../helpers/cluster.js';

const isRoot = process.getuid?.() === 0;

/** TeraGen-like input made here: `rows` records of 100 bytes, a random 10-byte key first. */
function teraInput(rows: number, seed: number): Buffer {
  const next = seededRandom(seed);
  const out = Buffer.alloc(rows * 100);
  for (let i = 0; i < rows; i++) {
    const at = i * 100;
    for (let k = 0; k < 10; k++) out[at + k] = Math.floor(next() * 256);
    out.write(`${String(i).padStart(10, '0')}`, at + 10, 'latin1');
    out.fill(0x41 + (i % 26), at + 20, at + 98);
    out.write('\r\n', at + 98, 'latin1');
  }
  return out;
}

function records(data: Buffer): Buffer[] {
  const list: Buffer[] = [];
  for (let i = 0; i < data.length; i += 100) list.push(data.subarray(i, i + 100));
  return list;
}

const byKeyThenBytes = (a: Buffer, b: Buffer) =>
  Buffer.compare(a.subarray(0, 10), b.subarray(0, 10)) || Buffer.compare(a, b);

describe('a full disk', () => {
  it('one worker on a small tmpfs: TeraSort succeeds, and the attempts that hit EDISKFULL ran again elsewhere', {
    skip: isRoot ? false : 'needs root to mount a tmpfs (mount -t tmpfs -o size=4m)',
  }, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'minimr-fulldisk-'));
    const fullDir = join(dir, 'worker-2');
    await mkdir(fullDir, { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', fullDir]);
    let cluster: LocalCluster | undefined;
    try {
      cluster = await LocalCluster.start({
        dataDir: dir,
        workers: 3,
        blockSize: 64 * 1024,
        replication: 2,
        heartbeatMs: 200,
        logger: createLogger('test-cluster', process.env.MINIMR_LOG_LEVEL ?? 'error'),
        workerLogLevel: process.env.MINIMR_LOG_LEVEL ?? 'error',
      });
      const fs = cluster.client.fs;
      // 8 MB of records: twice the small disk, so its maps' outputs and its share of the blocks cannot fit.
      const rows = 80_000;
      const input = teraInput(rows, 34);
      await fs.put(input, '/tera/in');
      // The NameNode keeps new blocks off a disk short of room (its reserve), so the put alone no
      // longer fills it: fill it here, as another tenant of the disk would, leaving less than one map's output.
      const { bavail, bsize } = await statfs(fullDir);
      await writeFile(join(fullDir, 'filler'), Buffer.alloc(Math.max(0, bavail * bsize - 16 * 1024)));
      // fs put left nothing under-replicated though one worker is full: the others have room.
      assert.deepEqual((await cluster.client.fsck('/tera')).underReplicated, []);
      const status = await cluster.client.run(appModule('terasort'), {
        input: ['/tera/in'],
        output: '/tera/out',
        reducers: 3,
      });
      assert.equal(status.state, 'succeeded', status.error?.message);
      const output = await readOutput(fs, '/tera/out');
      assert.equal(output.length, input.length, 'every record is in the output');
      const got = records(output);
      for (let i = 1; i < got.length; i++)
        assert.ok(Buffer.compare(got[i - 1]!.subarray(0, 10), got[i]!.subarray(0, 10)) <= 0, `order at ${i}`);
      const want = records(input).sort(byKeyThenBytes);
      assert.ok(Buffer.concat(want).equals(Buffer.concat([...got].sort(byKeyThenBytes))), 'the same records');
      assert.deepEqual((await cluster.client.fsck('/tera')).underReplicated, [], 'nothing under-replicated');

      const job = cluster.jobTracker.books.job(status.jobId)!;
      const tasks = [...job.maps, ...job.reduces];
      const diskFull = tasks.flatMap((task) => task.attempts.filter((a) => a.error?.code === 'EDISKFULL'));
      assert.ok(diskFull.length > 0, 'some attempt hit the full disk (else this test shows nothing)');
      for (const a of diskFull) {
        const task = a.task;
        assert.equal(a.worker.shape.id, 'worker-2', `${a.id} hit EDISKFULL on the small disk`);
        assert.notEqual(task.successfulAttempt?.worker.shape.id, 'worker-2', `${task.id} succeeded elsewhere`);
        const later = task.attempts.filter((b) => b.startTime > a.startTime);
        assert.ok(later.length > 0, `${task.id} ran again`);
        assert.ok(
          later.every((b) => b.worker.shape.id !== 'worker-2'),
          `${task.id} never ran again on the full worker: ${later.map((b) => b.worker.shape.id).join(', ')}`,
        );
      }
    } finally {
      await cluster?.stop();
      execFileSync('umount', [fullDir]);
      await rm(dir, { recursive: true, force: true });
    }
  });
});
