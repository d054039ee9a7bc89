import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { JobClient } from '../../src/runtime/index.js';
import {
  appModule,
  isCode,
  assertCountsEqual,
  fixtureModule,
  makeText,
  parseCounts,
  readAll,
  readOutput,
  startTestCluster,
  waitFor,
  type TestCluster,
} from '../helpers/cluster.js';

describe('bad input gets a clear error and loses nothing', () => {
  let t: TestCluster;
  let client: JobClient;
  let scratch: string;
  const text = makeText(300_000, 3);

  before(async () => {
    t = await startTestCluster();
    client = t.cluster.client;
    scratch = await mkdtemp(join(tmpdir(), 'minimr-scratch-'));
    await t.fs.put(Buffer.from(text), '/in/text.txt');
  });
  after(async () => {
    await t?.stop();
    await rm(scratch, { recursive: true, force: true });
  });

  it('a missing input path is ENOINPUT, naming the path', async () => {
    await assert.rejects(
      client.submit(appModule('wordcount'), { input: ['/no/such/file'], output: '/out/x' }),
      isCode('ENOINPUT', /\/no\/such\/file/),
    );
  });

  it('an existing output path is refused (EOUTPUTEXISTS) and left untouched; --overwrite replaces it', async () => {
    await t.fs.put(Buffer.from('precious\n'), '/out/existing/keep.txt');
    await assert.rejects(
      client.submit(appModule('wordcount'), { input: ['/in/text.txt'], output: '/out/existing' }),
      isCode('EOUTPUTEXISTS', /--overwrite/),
    );
    assert.equal((await readAll(t.fs.cat('/out/existing/keep.txt'))).toString(), 'precious\n');
    const status = await client.run(appModule('wordcount'), {
      input: ['/in/text.txt'],
      output: '/out/existing',
      overwrite: true,
    });
    assert.equal(status.state, 'succeeded');
    await assert.rejects(t.fs.stat('/out/existing/keep.txt'), isCode('ENOENT'));
  });

  it('a job module that does not load is EJOBMODULE', async () => {
    const file = join(scratch, 'broken.mjs');
    await writeFile(file, 'export default defineJob({ name: "broken", map( {\n');
    await assert.rejects(
      client.submit(file, { input: ['/in/text.txt'], output: '/out/broken' }),
      isCode('EJOBMODULE', /does not load/),
    );
    await assert.rejects(
      client.submit(join(scratch, 'missing.mjs'), { input: ['/in/text.txt'], output: '/out/broken' }),
      isCode('EJOBMODULE', /cannot read/),
    );
  });

  it('a job module without map is EJOBMODULE, saying what is missing', async () => {
    await assert.rejects(
      client.submit(fixtureModule('no-map'), { input: ['/in/text.txt'], output: '/out/nomap' }),
      isCode('EJOBMODULE', /`map` must be a function/),
    );
  });

  it('a map that always throws is retried 4 times, then the job fails with the message and the task id', async () => {
    const jobId = await client.submit(fixtureModule('failing-map'), {
      input: ['/in/text.txt'],
      output: '/out/failing-map',
    });
    await assert.rejects(
      client.waitForCompletion(jobId),
      isCode('EJOBFAILED', /task task_\S+_m_\d+ failed 4 times.*boom in map on purpose/),
    );
    const status = await client.status(jobId);
    assert.equal(status.state, 'failed');
    assert.ok(status.failedAttempts >= 4);
    assert.equal(status.error?.details?.taskId !== undefined, true);
    // A failed job's partial output is removed, so the same command can simply be run again.
    await assert.rejects(t.fs.stat('/out/failing-map'), isCode('ENOENT'));
  });

  it('a map that fails once per task is retried and the job succeeds', async () => {
    const status = await client.run(fixtureModule('failing-map'), {
      input: ['/in/text.txt'],
      output: '/out/flaky',
      params: { firstAttemptOnly: 1 },
    });
    assert.equal(status.state, 'succeeded');
    assert.equal(status.failedAttempts, status.mapsTotal);
    const lines = text.split('\n');
    if (lines.at(-1) === '') lines.pop();
    const out = parseCounts((await readOutput(t.fs, '/out/flaky')).toString());
    assert.equal((out.get('nonempty') ?? 0) + (out.get('empty') ?? 0), lines.length);
  });

  it('a reduce that throws fails the job with the reduce task id', async () => {
    const jobId = await client.submit(fixtureModule('failing-reduce'), {
      input: ['/in/text.txt'],
      output: '/out/failing-reduce',
    });
    await assert.rejects(
      client.waitForCompletion(jobId),
      isCode('EJOBFAILED', /task task_\S+_r_000000 failed 4 times.*reduce gave up on purpose/),
    );
  });

  it('CPU-bound user code does not delay heartbeats: maps that block for 3 s lose no worker', async () => {
    // 200 ms heartbeats, a worker is lost after 1 s of silence: a map blocking its thread for 3 s
    // would lose its worker if it ran in the worker's own thread.
    const lines = Array.from({ length: 250 }, (_, i) => `line ${i} of a small file`).join('\n');
    await t.fs.put(Buffer.from(lines), '/in/blocking.txt');
    const status = await client.run(fixtureModule('slow-wordcount'), {
      input: ['/in/blocking.txt'],
      output: '/out/blocking',
      params: { mapDelayMs: 3000 },
    });
    assert.equal(status.state, 'succeeded');
    assert.equal(status.killedAttempts, 0);
    assert.equal(status.failedAttempts, 0);
    assert.equal((await client.clusterInfo()).workers.length, 3);
    assertCountsEqual(await readOutput(t.fs, '/out/blocking'), lines);
  });

  it('a killed job ends as killed and its output is removed', async () => {
    const jobId = await client.submit(fixtureModule('slow-wordcount'), {
      input: ['/in/text.txt'],
      output: '/out/killed',
      params: { mapDelayMs: 200 },
    });
    await waitFor('the job to run', async () => ((await client.status(jobId)).state === 'running' ? true : undefined));
    const status = await client.kill(jobId);
    assert.equal(status.state, 'killed');
    await assert.rejects(client.waitForCompletion(jobId), isCode('EJOBKILLED'));
    await assert.rejects(t.fs.stat('/out/killed'), isCode('ENOENT'));
  });

  it('a corrupt block replica is detected by its checksum and read from another replica', async () => {
    const data = Buffer.from(makeText(200_000, 11));
    await t.fs.put(data, '/in/corrupt-me.txt', { replication: 2 });
    const blocks = await t.fs.getBlocks('/in/corrupt-me.txt');
    let corrupted = 0;
    // Flip a byte of every block on its first replica's disk: every read must fall back.
    for (const block of blocks) {
      const holder = block.locations[0]!;
      const dir = join(t.dir, holder.workerId, 'blocks');
      const files = await findFiles(dir, block.blockId);
      const blockFile = files.find((f) => !f.endsWith('.meta'));
      assert.ok(blockFile, `block file of ${block.blockId} under ${dir}`);
      const bytes = await readFile(blockFile);
      bytes[Math.floor(bytes.length / 2)] ^= 0xff;
      await writeFile(blockFile, bytes);
      corrupted++;
    }
    assert.ok(corrupted > 1);
    assert.ok((await readAll(t.fs.cat('/in/corrupt-me.txt'))).equals(data), 'read falls back to the good replicas');
    const status = await client.run(appModule('wordcount'), { input: ['/in/corrupt-me.txt'], output: '/out/corrupt' });
    assert.equal(status.state, 'succeeded');
    assertCountsEqual(await readOutput(t.fs, '/out/corrupt'), data.toString('utf8'));
  });
});

async function findFiles(dir: string, name: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && entry.name.startsWith(name))
      found.push(join(entry.parentPath ?? (entry as unknown as { path: string }).path, entry.name));
  }
  return found;
}

describe('a worker killed with SIGKILL', () => {
  const text = makeText(600_000, 5);

  for (const phase of ['map', 'reduce'] as const) {
    it(`in the middle of a ${phase}: the job still succeeds with the undisturbed output`, async () => {
      const t = await startTestCluster({ replication: 2, heartbeatMs: 200 });
      try {
        await t.fs.put(Buffer.from(text), '/in/text.txt');
        const client = t.cluster.client;
        const params: Record<string, number> = phase === 'map' ? { mapDelayMs: 150 } : { reduceDelayMs: 150 };
        const jobId = await client.submit(fixtureModule('slow-wordcount'), {
          input: ['/in/text.txt'],
          output: '/out/crash',
          reducers: 3,
          params,
        });
        const victim = await waitFor(`a running ${phase}`, () => {
          const job = t.cluster.jobTracker.snapshot({ kind: 'tick' }).jobs.find((j) => j.id === jobId);
          const running = job?.runningAttempts.find((a) => a.kind === phase && a.progress > 0);
          return running?.workerId;
        });
        await t.cluster.killWorker(Number(victim.replace('worker-', '')));
        const status = await client.waitForCompletion(jobId);
        assert.equal(status.state, 'succeeded');
        assert.ok(status.killedAttempts >= 1, 'the attempts on the dead worker were re-run');
        assertCountsEqual(await readOutput(t.fs, '/out/crash'), text);
      } finally {
        await t.stop();
      }
    });
  }
});
