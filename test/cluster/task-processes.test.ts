import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
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
      const entries = new Set((await taskProcesses()).map((p) => basename(p.entry)));
      assert.deepEqual(
        [...entries],
        ['task-process.bundle.js'],
        "the worker's task processes (kept warm or spare) run the bundle",
      );
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
 * Spares: a worker starts them only while it runs no attempt. Its own cluster, with the phase trace
 * on: the worker traces each task process it forks (w-fork: a spare or for a launch, and the
 * attempts it ran then), and the test reads that account instead of comparing clocks (the
 * JobTracker, in this process, may see an attempt end after the worker's refill already forked).
 */
describe('task processes: spares', () => {
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

  it('a worker starts no spare process while it runs attempts: each ' +
    'cold launch beyond the spares it had forks its own', {
    skip: process.platform !== 'linux',
  }, async () => {
    // A worker forks its spares once it is idle (at its start, and 200 ms after its last attempt;
    // later on a loaded machine): wait until no task process has started for a second.
    await sleep(1000);
    for (let waited = 0; waited < 20_000; waited += 250) {
      const newest = Math.max(0, ...(await taskProcesses()).map((p) => p.startMs));
      if (Date.now() - newest >= 1000) break;
      await sleep(250);
    }
    await rm(trace, { force: true });
    // A module no test here ran before: no warm process of it is idle, so its first map launches cold.
    const status = await client.run(appModule('grep'), {
      input: ['/in/text.txt'],
      output: '/out/grep-spares',
      params: { pattern: 'a' },
      reducers: 1,
      overwrite: true,
    });
    assert.equal(status.state, 'succeeded');
    const matching = text
      .split('\n')
      .filter((line, i, all) => (i < all.length - 1 || line !== '') && line.includes('a')).length;
    assert.equal((await readOutput(t.fs, '/out/grep-spares')).toString(), `a\t${matching}\n`);
    // The spares the worker forks again once idle after the job are traced too: they must show running 0.
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
    // One spare per slot (a map and a reduce slot) was there at the start. Before, each spare taken
    // was replaced at once, beside the running attempts. The first map surely launches cold; the
    // reduce may be warm (it can take the map's process once the map is done).
    assert.ok(cold >= 1, `the first map launches cold: ${cold}`);
    const besideAttempts = forks.filter((f) => (f.running as number) > 0);
    const forkList = JSON.stringify(forks.map((f) => ({ spare: f.spare, running: f.running })));
    assert.ok(
      besideAttempts.every((f) => f.spare === false),
      `only a launch forks while attempts run: ${forkList}`,
    );
    assert.ok(
      besideAttempts.length <= Math.max(0, cold - 2),
      `${besideAttempts.length} task processes forked while attempts ran, for ${cold} cold launches: ${forkList}`,
    );
  });
});
