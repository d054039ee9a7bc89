import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, truncate } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { JobClient } from '../../src/runtime/index.js';
import type { PhaseTraceEvent } from '../../src/util/index.js';
import {
  appModule,
  fixtureModule,
  makeText,
  parseCounts,
  readOutput,
  referenceWordCount,
  startTestCluster,
  type TestCluster,
} from '../helpers/cluster.js';

/** Clock ticks per second of /proc/PID/stat's start time (USER_HZ: 100 on Linux's common builds). */
const TICKS_PER_SECOND = 100;

/**
 * The task processes of the workers this test process started (Linux /proc): start time (epoch ms, to 10 ms) and the
 * file they run.
 */
async function taskProcesses(): Promise<{ startMs: number; entry: string }[]> {
  const uptimeS = Number((await readFile('/proc/uptime', 'utf8')).split(' ')[0]);
  const bootMs = Date.now() - uptimeS * 1000;
  const processes: { pid: number; ppid: number; startMs: number; entry: string | undefined }[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = await readFile(`/proc/${name}/stat`, 'utf8');
      // After the command name in parentheses: state, ppid, ..., starttime (the 22nd field overall).
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const entry = (await readFile(`/proc/${name}/cmdline`, 'utf8'))
        .split('\0')
        .find((arg) => /task-process[^/]*\.js$/.test(arg));
      processes.push({
        pid: Number(name),
        ppid: Number(fields[1]),
        startMs: bootMs + (Number(fields[19]) / TICKS_PER_SECOND) * 1000,
        entry,
      });
    } catch {
      // the process ended meanwhile
    }
  }
  const workers = new Set(processes.filter((p) => p.ppid === process.pid).map((p) => p.pid));
  return processes.flatMap((p) =>
    p.entry !== undefined && workers.has(p.ppid) ? [{ startMs: p.startMs, entry: p.entry }] : [],
  );
}

/**
 * Task processes are kept warm between attempts of the same job module, but never after a failed
 * attempt or one that left something running, and module-level state stays per attempt. One worker
 * with one map slot, so that the maps of a job run one after another on the same worker.
 */
describe('task processes: reused when clean, never after a failure or a leak', () => {
  let t: TestCluster;
  let client: JobClient;
  const text = makeText(600_000, 31);
  const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);

  before(async () => {
    t = await startTestCluster({ workers: 1, mapSlots: 1, reduceSlots: 1, replication: 1 });
    client = t.cluster.client;
    await t.fs.put(Buffer.from(text), '/in/text.txt');
  });
  after(async () => {
    await t?.stop();
  });

  const run = async (mode: string) => {
    const status = await client.run(fixtureModule('process-marks'), {
      input: ['/in/text.txt'],
      output: `/out/marks-${mode}`,
      params: { mode },
      overwrite: true,
    });
    assert.equal(status.state, 'succeeded');
    assert.equal(
      parseCounts((await readOutput(t.fs, `/out/marks-${mode}`)).toString()).get('lines'),
      lines,
      'every line counted once',
    );
    return status;
  };

  it(
    "a clean successful attempt's process runs the next attempt of " + 'the module, with fresh module-level state',
    async () => {
      const status = await run('clean');
      assert.ok(status.mapsTotal >= 8);
      assert.ok(
        (status.counters['user.reused-clean'] ?? 0) >= 1,
        `some maps ran in a process a previous map used: ${JSON.stringify(status.counters)}`,
      );
      assert.ok((status.counters.WARM_LAUNCH ?? 0) >= 1);
      assert.equal(
        status.counters['user.fresh-module'],
        status.mapsTotal,
        'every attempt saw its own module-level state',
      );
    },
  );

  it(
    'runs the bundled task process that `npm run build` wrote, ' + 'sharing the public API modules with the job',
    async () => {
      // A job's processes end with it (each is forked in its job's sandbox): look while one runs.
      const running = client.run(fixtureModule('process-marks'), {
        input: ['/in/text.txt'],
        output: '/out/marks-bundle',
        params: { mode: 'clean' },
        overwrite: true,
      });
      let done = false;
      void running.finally(() => {
        done = true;
      });
      const entries = new Set<string>();
      while (!done && entries.size === 0) {
        for (const p of await taskProcesses()) entries.add(basename(p.entry));
        await sleep(10);
      }
      assert.equal((await running).state, 'succeeded');
      assert.deepEqual([...entries], ['task-process.bundle.js'], "the worker's task processes run the bundle");
      const bundle = await readFile(new URL('../../src/runtime/task/task-process.bundle.js', import.meta.url), 'utf8');
      // The job's `import ... from 'minimr'` loads these files: one MinimrError class, one set of codecs.
      assert.match(bundle, /from "\.\.\/\.\.\/errors\.js"/);
      assert.match(bundle, /from "\.\.\/\.\.\/api\/index\.js"/);
      assert.doesNotMatch(bundle, /class MinimrError\b/);
    },
  );

  it("a failed attempt's process never runs another attempt", async () => {
    const status = await run('fail-first');
    assert.equal(status.failedAttempts, status.mapsTotal, 'the first attempt of every map failed');
    assert.equal(status.counters['user.reused-failed'] ?? 0, 0);
  });

  it('a process whose attempt left a timer running is not reused', async () => {
    const status = await run('timer');
    assert.equal(status.counters['user.reused-leaky'] ?? 0, 0);
  });

  it('a worker keeps a job module by its content: a later job of the same module does not fetch it again', async () => {
    for (const n of [1, 2]) {
      const status = await client.run(appModule('wordcount'), {
        input: ['/in/text.txt'],
        output: `/out/wc-${n}`,
        reducers: 1,
      });
      const want = referenceWordCount(text);
      const got = parseCounts((await readOutput(t.fs, `/out/wc-${n}`)).toString());
      assert.equal(got.size, want.size);
      if (n === 2)
        assert.equal(status.counters.MODULE_WAIT_MS ?? 0, 0, 'no attempt of the second job waited for its module');
    }
    const modules = (await readdir(join(t.dir, 'worker-0', 'jobs', 'modules'))).filter((f) => f.endsWith('.mjs'));
    assert.equal(modules.length, 2, `one file per module (process-marks, wordcount): ${modules.join(', ')}`);
  });
});

/**
 * What a task process may read and write is fixed when it starts (its job's sandbox,
 * worker/sandbox.ts), so a worker forks a process for a launch of a job, or one spare, in a sandbox
 * of no job, while it runs no attempt; the job launched next adopts it. (Before issue 34 a worker
 * kept a spare per slot, which any job's attempt could run in.) Its own cluster, with the phase
 * trace on: the worker traces each task process it forks (w-fork, and the attempts it ran then),
 * and the test reads that account instead of comparing clocks.
 */
describe('task processes: forked for a launch of their job, or one spare while idle', () => {
  let t: TestCluster;
  let client: JobClient;
  let traceDir: string;
  let trace: string;
  const text = makeText(600_000, 31);

  before(async () => {
    traceDir = await mkdtemp(join(tmpdir(), 'minimr-spares-'));
    trace = join(traceDir, 'trace.jsonl');
    process.env.MINIMR_PHASE_TRACE = trace;
    try {
      t = await startTestCluster({ workers: 1, mapSlots: 1, reduceSlots: 1, replication: 1 });
    } finally {
      // The workers and their task processes have it; nothing else in this process needs it.
      delete process.env.MINIMR_PHASE_TRACE;
    }
    client = t.cluster.client;
    await t.fs.put(Buffer.from(text), '/in/text.txt');
  });
  after(async () => {
    await t?.stop();
    await rm(traceDir, { recursive: true, force: true });
  });

  it("a worker forks ahead only its spare, while idle: the job's first launch adopts it, each other cold " +
    "launch forks its own, and the job's later attempts reuse them", {
    skip: process.platform !== 'linux',
  }, async () => {
    await sleep(1000);
    // Emptied, not removed: the task processes (another account where the worker is root) append to
    // it but could not make it again, and the job's may all be running already (the spare, reuse).
    await truncate(trace).catch(() => undefined);
    const status = await client.run(appModule('grep'), {
      input: ['/in/text.txt'],
      output: '/out/grep-forks',
      params: { pattern: 'a' },
      reducers: 1,
      overwrite: true,
    });
    assert.equal(status.state, 'succeeded');
    const matching = text
      .split('\n')
      .filter((line, i, all) => (i < all.length - 1 || line !== '') && line.includes('a')).length;
    assert.equal((await readOutput(t.fs, '/out/grep-forks')).toString(), `a\t${matching}\n`);
    // Nothing is forked once the job is over either.
    await sleep(1000);
    const events = (await readFile(trace, 'utf8').catch(() => ''))
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as PhaseTraceEvent);
    assert.ok(
      events.some((e) => e.event === 'w-run'),
      'the worker traces its steps (else no fork would show either)',
    );
    const forks = events.filter((e) => e.event === 'w-fork');
    const launches = status.mapsTotal + status.reducesTotal;
    const cold = launches - (status.counters.WARM_LAUNCH ?? 0);
    const forkList = JSON.stringify(forks.map((f) => ({ spare: f.spare, running: f.running })));
    // The worker was idle for a second before: its spare was ready, and the job's first launch took it.
    assert.equal(status.counters.SPARE_LAUNCH, 1, forkList);
    const forLaunches = forks.filter((f) => f.spare === false);
    const ahead = forks.filter((f) => f.spare === true);
    assert.ok(
      forLaunches.every((f) => (f.running as number) > 0),
      `every other fork is for a launch: ${forkList}`,
    );
    assert.equal(forLaunches.length, cold - 1, `one fork per cold launch but the spare's: ${forkList}`);
    // The next spare, once the worker ran nothing (at the latest after the job): never beside an attempt.
    assert.ok(ahead.length >= 1 && ahead.every((f) => f.running === 0), `spares forked while idle: ${forkList}`);
    assert.ok(cold < launches, `the job's later attempts ran in its warm processes: ${cold} cold of ${launches}`);
    // The tasks trace their steps too: the phase trace is writable by the task user where the worker runs as root.
    assert.ok(
      events.some((e) => e.event === 't-run'),
      'task processes trace their steps',
    );
  });
});

describe('task processes: started ahead on the other workers at a job first launch', () => {
  let t: TestCluster;
  let client: JobClient;
  // One block: one map, on one worker; the job's second reduce then runs on the other.
  const text = makeText(40_000, 32);

  before(async () => {
    t = await startTestCluster({ workers: 2, mapSlots: 1, reduceSlots: 1, replication: 1 });
    client = t.cluster.client;
    await t.fs.put(Buffer.from(text), '/in/one-block.txt');
  });
  after(async () => {
    await t?.stop();
  });

  /** The job's sandbox directories left on the workers (each worker's `<dataDir>/sandbox/<jobId>`). */
  async function sandboxesOf(jobId: string): Promise<string[]> {
    const found: string[] = [];
    const walk = async (dir: string, depth: number): Promise<void> => {
      for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
        if (!entry.isDirectory()) continue;
        const path = join(dir, entry.name);
        if (entry.name === jobId && basename(dir) === 'sandbox') found.push(path);
        else if (depth < 3) await walk(path, depth + 1);
      }
    };
    await walk(t.dir, 0);
    return found;
  }

  it("the other worker's first attempt of the job runs in a process started while the map ran", async () => {
    const status = await client.run(appModule('wordcount'), {
      input: ['/in/one-block.txt'],
      output: '/out/warmed',
      reducers: 2,
      overwrite: true,
    });
    assert.equal(status.state, 'succeeded');
    assert.equal(status.mapsTotal, 1);
    const attempts = (await client.attempts(status.jobId)).filter((a) => a.state === 'succeeded');
    const mapWorker = attempts.find((a) => a.kind === 'map')!.workerId;
    const elsewhere = attempts.filter((a) => a.workerId !== mapWorker);
    assert.ok(
      elsewhere.length >= 1,
      `an attempt ran on the other worker: ${JSON.stringify(attempts.map((a) => a.workerId))}`,
    );
    for (const a of elsewhere)
      assert.equal(a.counters.WARM_LAUNCH, 1, `${a.attemptId} on ${a.workerId} found its process started`);
    // Counts as WordCount does, from the text itself.
    const want = new Map<string, number>();
    for (const w of text.split(/[ \t\r\n\f]+/)) if (w) want.set(w, (want.get(w) ?? 0) + 1);
    assert.deepEqual(parseCounts((await readOutput(t.fs, '/out/warmed')).toString()), want);
  });

  it('a process started for a job that then never ran there goes at the job clean-up, with its sandbox', async () => {
    const status = await client.run(appModule('wordcount'), {
      input: ['/in/one-block.txt'],
      output: '/out/map-only',
      reducers: 0,
      overwrite: true,
    });
    assert.equal(status.state, 'succeeded');
    let left: string[] = [];
    for (let i = 0; i < 50; i++) {
      left = await sandboxesOf(status.jobId);
      if (left.length === 0) break;
      await sleep(100);
    }
    assert.deepEqual(left, [], 'no sandbox of the job left on any worker');
  });
});
