import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
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

interface TraceLine {
  readonly pid: number;
  readonly event: string;
  readonly attempt?: string;
}

/**
 * A spare task process rehearses the engine's map and reduce before a job adopts it (task-process.ts
 * `rehearse`). Seen through the phase trace, which the worker passes on to its task processes: the
 * process a job's first attempt ran in had rehearsed before it, and left nothing of it in the work
 * directory the job got. One worker, one map and one reduce slot.
 */
describe('spare task processes rehearse before a job adopts them', () => {
  let t: TestCluster;
  let trace: string;
  const traced = (): TraceLine[] =>
    existsSync(trace)
      ? readFileSync(trace, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line) as TraceLine)
      : [];

  before(async () => {
    const saved = process.env.MINIMR_PHASE_TRACE;
    trace = join(tmpdir(), `minimr-rehearsal-${process.pid}.trace`);
    // The workers (and so their task processes) take the trace from the environment they start with.
    process.env.MINIMR_PHASE_TRACE = trace;
    try {
      t = await startTestCluster({ workers: 1, mapSlots: 1, reduceSlots: 1, replication: 1 });
    } finally {
      if (saved === undefined) delete process.env.MINIMR_PHASE_TRACE;
      else process.env.MINIMR_PHASE_TRACE = saved;
    }
  });
  after(async () => {
    await t?.stop();
    await rm(trace, { force: true });
  });

  /** Waits until some process traced `t-rehearsed` and no job has taken a spare since; returns those pids. */
  const rehearsedSpares = async (): Promise<Set<number>> => {
    const sandboxRoot = join(t.dir, 'worker-0', 'sandbox');
    // A spare's sandbox may be going (adopted, its job cleaned up) while it is listed.
    const entries = (dir: string): string[] | undefined => {
      try {
        return readdirSync(dir);
      } catch {
        return undefined;
      }
    };
    const unadopted = () =>
      (entries(sandboxRoot) ?? []).filter(
        (d) => d.startsWith('spare-') && entries(join(sandboxRoot, d, 'shuffle'))?.length === 0,
      );
    let pids = new Set<number>();
    for (let waited = 0; waited < 20_000; waited += 50) {
      pids = new Set(
        traced()
          .filter((l) => l.event === 't-rehearsed')
          .map((l) => l.pid),
      );
      if (pids.size > 0 && unadopted().length > 0) break;
      await sleep(50);
    }
    assert.ok(pids.size > 0, 'a spare rehearsed');
    return pids;
  };

  it("a job's first attempt runs in a process that rehearsed, whose work directory holds nothing of the rehearsal", async () => {
    const rehearsed = await rehearsedSpares();
    const status = await t.cluster.client.run(fixtureModule('sandbox-probe'), {
      output: '/out/rehearsed',
      params: { probe: 'identity' },
    });
    assert.equal(status.state, 'succeeded');
    assert.equal(status.counters.SPARE_LAUNCH, 1, 'the map started in the spare');
    const got = new Map(
      (await readOutput(t.fs, '/out/rehearsed'))
        .toString()
        .trim()
        .split('\n')
        .map((line) => line.split('\t') as [string, string]),
    );
    assert.match(got.get('cwd') ?? '', /\/sandbox\/spare-\d+\/work$/, "the job adopted the spare's sandbox");
    assert.equal(got.get('cwd-entries'), '', 'the rehearsal removed what it wrote');
    const ran = traced().find((l) => l.event === 't-run' && l.attempt?.includes(status.jobId.replace(/^job_/, '')));
    assert.ok(ran, "the map's start is traced");
    assert.ok(rehearsed.has(ran.pid), `the map ran in a process that had rehearsed (pid ${ran.pid})`);
  });

  it("only the spare rehearses: a job's processes forked later, in the sandbox it adopted, start its attempts at once", async () => {
    await rehearsedSpares();
    // 64 KiB blocks: 4 maps on the one map slot. Each leaves a timer running, so its process is not
    // reused and the next map forks one, in the sandbox the job took from the spare.
    await t.fs.put(Buffer.from(makeText(250_000, 9)), '/in/marks.txt');
    const status = await t.cluster.client.run(fixtureModule('process-marks'), {
      input: ['/in/marks.txt'],
      output: '/out/marks',
      params: { mode: 'timer' },
    });
    assert.equal(status.state, 'succeeded');
    assert.equal(status.counters.SPARE_LAUNCH, 1);
    const job = status.jobId.replace(/^job_/, '');
    const lines = traced();
    const rehearsed = new Set(lines.filter((l) => l.event === 't-rehearsed').map((l) => l.pid));
    const runs = lines.filter((l) => l.event === 't-run' && l.attempt?.includes(`${job}_m_`));
    const pids = new Set(runs.map((l) => l.pid));
    assert.ok(pids.size >= 3, `the maps ran in ${pids.size} processes`);
    assert.equal([...pids].filter((pid) => rehearsed.has(pid)).length, 1, 'one of them, the spare, rehearsed');
  });

  it('a WordCount in a rehearsed spare counts as the reference does', async () => {
    await rehearsedSpares();
    const text = makeText(200_000, 5);
    await t.fs.put(Buffer.from(text), '/in/rehearsed.txt');
    const status = await t.cluster.client.run(appModule('wordcount'), {
      input: ['/in/rehearsed.txt'],
      output: '/out/rehearsed-wc',
      reducers: 2,
    });
    assert.equal(status.counters.SPARE_LAUNCH, 1);
    assert.deepEqual(parseCounts((await readOutput(t.fs, '/out/rehearsed-wc')).toString()), referenceWordCount(text));
  });
});
