import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { clientCredentials } from '../../src/runtime/wire/auth.js';
import { JobClient, type JobStatus } from '../../src/runtime/index.js';
import type { FsClient } from '../../src/storage/index.js';
import { assertCountsEqual, fixtureModule, freePort, makeText, readOutput, waitFor } from '../helpers/cluster.js';

const CLI = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));
const LOG_LEVEL = process.env.MINIMR_LOG_LEVEL ?? 'error';

/**
 * The cluster secret every process of the test is given (the JobTracker too: it must survive its restarts unchanged).
 */
let secretFile = '';

function startProcess(args: string[]): ChildProcess {
  return spawn(process.execPath, [CLI, ...args], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, MINIMR_LOG_LEVEL: LOG_LEVEL, MINIMR_SECRET_FILE: secretFile },
  });
}

async function stopProcess(child: ChildProcess | undefined, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill(signal);
  await exited;
}

/** Every path under `dir` in the block store. */
async function walk(fs: FsClient, dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const f of await fs.list(dir)) {
    out.push(f.path);
    if (f.type === 'dir') out.push(...(await walk(fs, f.path)));
  }
  return out;
}

/** Map outputs (job/attempt directories) left on a worker's disk. */
async function mapOutputsOnDisk(workerDir: string): Promise<string[]> {
  const root = join(workerDir, 'shuffle');
  const out: string[] = [];
  for (const job of await readdir(root).catch(() => [] as string[])) {
    for (const attempt of await readdir(join(root, job)).catch(() => [] as string[])) out.push(`${job}/${attempt}`);
  }
  return out;
}

/**
 * A cluster of real processes: the JobTracker is a `minimr jobtracker` process that the tests kill
 * with SIGKILL and start again on the same directory and port, two `minimr worker` processes, and
 * a client in this process that follows its jobs across the restarts.
 */
describe('JobTracker restart recovery (real processes, SIGKILL)', () => {
  let dir: string;
  let port: number;
  let jobTracker: ChildProcess | undefined;
  const workers: ChildProcess[] = [];
  let client: JobClient;
  /** Where jobs may write file:// outputs: task processes run as the workers' task account, so it is open to it. */
  let shared: string;
  const text = makeText(1_200_000, 7);
  const params = { mapDelayMs: 40, reduceDelayMs: 200 };

  const jobTrackerArgs = (extra: string[] = []) => [
    'jobtracker',
    '--dir',
    join(dir, 'jt'),
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    '--heartbeat-ms',
    '200',
    '--block-size',
    '64k',
    '--replication',
    '2',
    '--recovery-wait-ms',
    '20000',
    // A loaded machine delays heartbeats; a worker taken for lost would have its outputs re-run.
    '--worker-timeout-ms',
    '15000',
    '--file-output-root',
    shared,
    ...extra,
  ];

  const workerArgs = (i: number) => [
    'worker',
    '--jobtracker',
    `ws://127.0.0.1:${port}`,
    '--dir',
    join(dir, `w${i}`),
    '--id',
    `worker-${i}`,
    '--rack',
    `/rack-${i}`,
    '--map-slots',
    '2',
    '--reduce-slots',
    '1',
    '--disk-mbps',
    '100',
  ];

  /** A complete-looking map output of a job no JobTracker knows, on worker i's disk. */
  async function plantOrphan(i: number): Promise<string> {
    const jobDir = join(dir, `w${i}`, 'shuffle', 'job_19990101000000_0001');
    const attemptDir = join(jobDir, 'attempt_19990101000000_0001_m_000000_0');
    await mkdir(attemptDir, { recursive: true });
    await writeFile(join(attemptDir, 'file.out'), 'stale');
    await writeFile(join(attemptDir, 'file.out.index'), 'stale');
    return jobDir;
  }

  async function connect(): Promise<JobClient> {
    const url = `ws://127.0.0.1:${port}`;
    const credentials = await clientCredentials(url, { secretFile });
    return waitFor(
      'the JobTracker to listen',
      () => JobClient.connect(url, { ...(credentials ? { security: { credentials } } : {}) }).catch(() => undefined),
      60_000,
    );
  }

  async function startJobTracker(extra: string[] = []): Promise<void> {
    jobTracker = startProcess(jobTrackerArgs(extra));
    const probe = await connect();
    await waitFor(
      'both workers to register',
      async () => ((await probe.clusterInfo()).workers.length === 2 ? true : undefined),
      60_000,
    );
    probe.close();
  }

  async function restartJobTracker(extra: string[] = []): Promise<void> {
    await stopProcess(jobTracker, 'SIGKILL');
    await startJobTracker(extra);
  }

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'minimr-restart-'));
    shared = await mkdtemp(join(tmpdir(), 'minimr-restart-files-'));
    await chmod(shared, 0o755);
    secretFile = join(dir, 'secret');
    await writeFile(secretFile, randomBytes(32).toString('hex'), { mode: 0o600 });
    port = await freePort();
    jobTracker = startProcess(jobTrackerArgs());
    for (let i = 0; i < 2; i++) workers.push(startProcess(workerArgs(i)));
    const probe = await connect();
    await waitFor(
      'both workers to register',
      async () => ((await probe.clusterInfo()).workers.length === 2 ? true : undefined),
      60_000,
    );
    probe.close();
    client = await connect();
    await client.fs.put(Buffer.from(text), '/in/text.txt');
  });

  after(async () => {
    client?.close();
    await stopProcess(jobTracker);
    for (const w of workers) await stopProcess(w);
    if (dir) await rm(dir, { recursive: true, force: true });
    if (shared) await rm(shared, { recursive: true, force: true });
  });

  /** Successful attempt ids per task, from the job's attempts. */
  async function succeeded(jobId: string, kind: 'map' | 'reduce'): Promise<Set<string>> {
    return new Set(
      (await client.attempts(jobId)).filter((a) => a.kind === kind && a.state === 'succeeded').map((a) => a.attemptId),
    );
  }

  /**
   * Submits slow WordCount, kills the JobTracker with SIGKILL once `when` holds, starts it again,
   * and returns what the client that followed the job saw, with the attempts that had succeeded
   * before the kill.
   */
  async function runThroughRestart(
    output: string,
    reducers: number,
    when: (s: JobStatus) => boolean,
    keptKind: 'map' | 'reduce',
    overwrite = false,
  ) {
    const jobId = await client.submit(fixtureModule('slow-wordcount'), {
      input: ['/in/text.txt'],
      output,
      reducers,
      params,
      overwrite,
    });
    const seen: JobStatus[] = [];
    const following = client.waitForCompletion(jobId, {
      onProgress: (s) => seen.push(s),
      pollMs: 100,
      reconnectMs: 120_000,
    });
    following.catch(() => undefined);
    await waitFor(
      'the moment to kill the JobTracker',
      async () => (when(await client.status(jobId)) ? true : undefined),
      120_000,
    );
    const before = await succeeded(jobId, keptKind);
    // Their journal records are written as they succeed; give the last one time to reach the disk.
    await new Promise((r) => setTimeout(r, 300));
    const seenBefore = seen.length;
    await restartJobTracker();
    const final = await following;
    return { jobId, final, before, seenAfter: seen.slice(seenBefore) };
  }

  /**
   * The attempts that had succeeded before the kill are still the tasks' successful attempts; the
   * output is the reference WordCount, byte for byte what an undisturbed run of the same job writes,
   * with no `_temporary` left.
   */
  async function assertKeptAndCorrect(
    jobId: string,
    output: string,
    reducers: number,
    before: Set<string>,
    kind: 'map' | 'reduce',
  ): Promise<void> {
    const after = await succeeded(jobId, kind);
    for (const id of before) assert.ok(after.has(id), `${kind} attempt ${id}, done before the kill, was kept`);
    const written = await readOutput(client.fs, output);
    assertCountsEqual(written, text);
    const paths = await walk(client.fs, output);
    assert.deepEqual(
      paths.filter((p) => p.includes('_temporary')),
      [],
      'no _temporary left in the output',
    );
    assert.ok(paths.includes(`${output}/_SUCCESS`), 'the job committed');
    await client.run(fixtureModule('slow-wordcount'), {
      input: ['/in/text.txt'],
      output: `${output}-undisturbed`,
      reducers,
    });
    assert.ok(
      written.equals(await readOutput(client.fs, `${output}-undisturbed`)),
      'output identical to an undisturbed run',
    );
  }

  it(
    'SIGKILL in the map phase: the job resumes, keeps the maps ' +
      'whose outputs are still on the workers, and its output is the ' +
      'reference WordCount',
    async () => {
      const { jobId, final, before, seenAfter } = await runThroughRestart(
        '/out/mid-map',
        3,
        (s) => s.mapsCompleted >= 3 && s.mapsCompleted <= s.mapsTotal - 4,
        'map',
      );
      assert.equal(final.state, 'succeeded');
      assert.equal(final.jobId, jobId);
      assert.ok(
        seenAfter.some((s) => s.mapsCompleted < s.mapsTotal),
        'the client kept following the job after the restart, mid-map',
      );
      await assertKeptAndCorrect(jobId, '/out/mid-map', 3, before, 'map');
    },
  );

  it(
    'SIGKILL in the reduce phase: committed reduces are kept, the ' +
      'rest re-run, and the output is the reference WordCount',
    async () => {
      const { jobId, final, before, seenAfter } = await runThroughRestart(
        '/out/mid-reduce',
        4,
        (s) => s.mapsCompleted === s.mapsTotal && s.reducesCompleted >= 1 && s.reducesCompleted < s.reducesTotal,
        'reduce',
      );
      assert.equal(final.state, 'succeeded');
      assert.ok(seenAfter.length > 0, 'the client kept following the job after the restart');
      assert.ok(before.size >= 1);
      await assertKeptAndCorrect(jobId, '/out/mid-reduce', 4, before, 'reduce');
    },
  );

  it(
    'SIGKILL in the map phase of an --overwrite job: it resumes in its staging directory, and ' +
      'its commit replaces the previous output whole',
    async () => {
      await client.fs.put(Buffer.from('previous result\n'), '/out/replaced/part-r-00009');
      const { jobId, final, before, seenAfter } = await runThroughRestart(
        '/out/replaced',
        3,
        (s) => s.mapsCompleted >= 3 && s.mapsCompleted <= s.mapsTotal - 4,
        'map',
        true,
      );
      assert.equal(final.state, 'succeeded');
      assert.ok(
        seenAfter.some((s) => s.mapsCompleted < s.mapsTotal),
        'the JobTracker was restarted while the job ran',
      );
      await assertKeptAndCorrect(jobId, '/out/replaced', 3, before, 'map');
      assert.deepEqual(
        (await client.fs.list('/out/replaced')).map((f) => f.path),
        [
          '/out/replaced/_SUCCESS',
          '/out/replaced/part-r-00000',
          '/out/replaced/part-r-00001',
          '/out/replaced/part-r-00002',
        ],
        'nothing of the previous output is left',
      );
      assert.deepEqual(
        (await client.fs.list('/out')).filter((f) => f.path.includes('.overwrite-')),
        [],
        'no staging directory is left',
      );
    },
  );

  it(
    'SIGKILL in the reduce phase of a job writing to file://: the parts journaled before the kill are ' +
      'committed with the re-run ones, and the output is the reference WordCount',
    async () => {
      try {
        const output = join(shared, 'wc');
        const { jobId, final, before } = await runThroughRestart(
          `file://${output}`,
          4,
          (s) => s.mapsCompleted === s.mapsTotal && s.reducesCompleted >= 1 && s.reducesCompleted < s.reducesTotal,
          'reduce',
        );
        assert.equal(final.state, 'succeeded', final.error?.message);
        assert.ok(before.size >= 1);
        const after = await succeeded(jobId, 'reduce');
        for (const id of before) assert.ok(after.has(id), `reduce attempt ${id}, done before the kill, was kept`);
        const names = (await readdir(output)).sort();
        assert.deepEqual(names, ['_SUCCESS', 'part-r-00000', 'part-r-00001', 'part-r-00002', 'part-r-00003']);
        const written = Buffer.concat(await Promise.all(names.slice(1).map((n) => readFile(join(output, n)))));
        assertCountsEqual(written, text);
        assert.deepEqual(await readdir(shared), ['wc'], 'no staging directory is left');
      } finally {
        await rm(join(shared, 'wc'), { recursive: true, force: true });
      }
    },
  );

  it('no map outputs remain on the workers once the jobs have ended', async () => {
    for (let i = 0; i < 2; i++) {
      await waitFor(
        `worker ${i}'s disk to be clean of map outputs`,
        async () => ((await mapOutputsOnDisk(join(dir, `w${i}`))).length === 0 ? true : undefined),
        30_000,
      );
    }
  });

  it(
    'ended jobs retire from memory but answer `job status` and `job ' +
      'list --all` from the history, across a restart',
    async () => {
      // The jobs before the last restart are in the history only: a restart recovers the active jobs alone.
      const earlier = (await client.list(true)).filter((s) => s.state === 'succeeded');
      assert.ok(earlier.length >= 4);
      await restartJobTracker(['--retained-jobs', '1']);
      client.close();
      client = await connect();
      const last = await client.run(fixtureModule('slow-wordcount'), {
        input: ['/in/text.txt'],
        output: '/out/after-retire',
        reducers: 1,
      });
      assert.equal(last.state, 'succeeded');
      const inMemory = (await client.list()).map((s) => s.jobId);
      assert.deepEqual(inMemory, [last.jobId], 'only the newest ended job is in memory');
      const all = await client.list(true);
      for (const s of earlier) {
        assert.ok(!inMemory.includes(s.jobId));
        const status = await client.status(s.jobId);
        assert.equal(status.state, 'succeeded');
        assert.equal(status.mapsCompleted, s.mapsTotal);
        assert.deepEqual(status.counters, s.counters);
        assert.ok(
          all.some((a) => a.jobId === s.jobId),
          `${s.jobId} in job list --all`,
        );
        assert.ok((await client.attempts(s.jobId)).length >= s.mapsTotal + s.reducesTotal);
      }
      // The CLI says the same.
      const cli = spawn(
        process.execPath,
        [CLI, 'job', 'list', '--all', '--jobtracker', `ws://127.0.0.1:${port}`, '--secret-file', secretFile],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      let printed = '';
      cli.stdout!.on('data', (d: Buffer) => (printed += d.toString()));
      const [code] = (await once(cli, 'exit')) as [number];
      assert.equal(code, 0);
      for (const s of [...earlier, last]) assert.match(printed, new RegExp(s.jobId));
    },
  );

  it(
    'orphan map outputs are deleted: by a worker registering with a ' +
      'restarted JobTracker, and by a worker at its start',
    async () => {
      const gone = async (path: string) =>
        (await readdir(path).then(
          () => false,
          () => true,
        )) || undefined;
      const onLiveWorker = await plantOrphan(0);
      await restartJobTracker();
      await waitFor('worker-0 to delete the orphan it reported', () => gone(onLiveWorker), 30_000);
      await stopProcess(workers[1]);
      const onStoppedWorker = await plantOrphan(1);
      workers[1] = startProcess(workerArgs(1));
      await waitFor('worker-1 to delete the orphan at its start', () => gone(onStoppedWorker), 30_000);
    },
  );
});
