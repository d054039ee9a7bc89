import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { PhaseTraceEvent } from '../../src/util/index.js';
import { appModule, startTestCluster, type TestCluster } from '../helpers/cluster.js';

/**
 * MINIMR_PHASE_TRACE: the JobTracker (this process), the workers and the task processes (their
 * children, which inherit the variable) write every step of every attempt, in the order the steps
 * happen. A TeraSort whose maps spill once (buffers of about half a map's records and metadata)
 * shows each kind of step.
 */
describe("phase trace: every attempt's steps, from every process, in order", () => {
  let t: TestCluster;
  let dir: string;
  let trace: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'minimr-phase-trace-'));
    trace = join(dir, 'trace.jsonl');
    process.env.MINIMR_PHASE_TRACE = trace;
    t = await startTestCluster({ workers: 2, mapSlots: 1, reduceSlots: 1, replication: 1 });
  });
  after(async () => {
    delete process.env.MINIMR_PHASE_TRACE;
    await t?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it("a TeraSort's maps and reduces: launch, start, load, spill, merge, done, in time order", async () => {
    const client = t.cluster.client;
    await client.run(appModule('teragen'), { output: '/tera/in', params: { rows: 20_000, maps: 2 } });
    await rm(trace, { force: true });
    // A full 64 KiB split holds 655 records, 86 KB with their metadata: a 64 KiB buffer spills once
    // at 80% and merges that spill with its last generation (SPILLS 2); a short last split does not.
    // Speculation off: the trace is checked attempt by attempt, one per task.
    const conf = { 'shuffle.map.bufferBytes': 64 * 1024, 'job.speculative': false };
    const status = await client.run(appModule('terasort'), {
      input: ['/tera/in'],
      output: '/tera/out',
      reducers: 2,
      conf,
      params: { sampleSize: 2000, sampleSplits: 2 },
    });
    assert.equal(status.state, 'succeeded');
    const events = (await readFile(trace, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as PhaseTraceEvent);
    const attempts = await client.attempts(status.jobId);
    assert.equal(attempts.length, status.mapsTotal + 2);
    const pids = new Set(events.map((e) => e.pid));
    assert.ok(pids.has(process.pid), 'the JobTracker wrote');
    let spilled = 0;
    for (const a of attempts) {
      const own = events.filter((e) => e.attempt === a.attemptId);
      const order = [
        'jt-launch',
        'w-launch',
        'w-run',
        't-run',
        't-loaded',
        ...(a.kind === 'map' ? ['t-input-done'] : ['t-shuffled', 't-reduced', 't-closed']),
        't-done',
        'w-done',
        'jt-finished',
      ];
      assert.deepEqual(
        own.map((e) => e.event),
        order,
        `${a.attemptId}'s steps`,
      );
      for (let i = 1; i < own.length; i++)
        assert.ok(own[i]!.t >= own[i - 1]!.t, `${a.attemptId}: ${own[i]!.event} after ${own[i - 1]!.event}`);
      const taskPid = own.find((e) => e.event === 't-run')!.pid;
      assert.ok(
        taskPid !== process.pid && own.find((e) => e.event === 'w-run')!.pid !== taskPid,
        'the worker and the task process are other processes',
      );
      const taskEvents = own.filter((e) => e.pid === taskPid);
      for (let i = 1; i < taskEvents.length; i++)
        assert.ok(taskEvents[i]!.cpuMs >= taskEvents[i - 1]!.cpuMs, "a process's CPU time only grows");
      if (a.kind === 'map' && a.counters.SPILLS === 2) {
        spilled++;
        // The buffer's steps carry no attempt id: they are the task process's, between its start and its end.
        const start = own.find((e) => e.event === 't-run')!.t;
        const end = own.find((e) => e.event === 't-done')!.t;
        const buffer = events
          .filter((e) => e.pid === taskPid && e.event.startsWith('b-') && e.t >= start && e.t <= end)
          .map((e) => e.event);
        assert.deepEqual(
          buffer,
          ['b-sort', 'b-sorted', 'b-spill-written', 'b-finish', 'b-merge-start', 'b-merged'],
          `${a.attemptId}: one spill, then the merge with the last generation`,
        );
      }
    }
    assert.ok(spilled >= status.mapsTotal / 2, `most maps spilled once: ${spilled} of ${status.mapsTotal}`);
  });
});
