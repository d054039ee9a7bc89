/**
 * Elastic attempts are real (YARN-ME, issue 14): a task granted 30% of its ideal memory runs with
 * the smaller shuffle buffer that grant implies, really spills, stays within the grant, and the job's
 * output is byte-identical to a regular run's. And the profile a job's first run leaves gives its
 * second run's tasks their ideal duration and penalty model, which is what lets a policy grant
 * them elastically at all (the books refuse an elastic grant to a task without a penalty model).
 *
 * TeraSort of 2 maps x 15 MB into one reduce, with 300 MiB buffers configured: ideal memory
 * 400 MB (buffer + the task's 100 MB overhead), so 30% is 120 MB, a 20 MiB buffer: the maps
 * (about 19 MiB of data and record metadata each) and the reduce (30 MB) spill at it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AttemptSummary, JobConf } from '../../src/runtime/index.js';
import {
  localityOf,
  minimumGrantMb,
  policyNames,
  type ClusterSnapshot,
  type Decision,
  type Policy,
  type TaskView,
} from '../../src/scheduler/index.js';
import { appModule, readOutput, startTestCluster, type TestCluster } from '../helpers/cluster.js';

const MiB = 1024 * 1024;
const BUFFER = 300 * MiB;
const IDEAL_MB = 300 + 100;
const ELASTIC_MB = Math.floor(IDEAL_MB * 0.3);
const ROWS_PER_MAP = 150_000;
const conf: JobConf = { 'shuffle.map.bufferBytes': BUFFER, 'shuffle.reduce.bufferBytes': BUFFER };

/**
 * Grants a task 30% of its ideal memory when it may (it has a penalty model, i.e. a profile), its
 * ideal otherwise; first pending task first, on the first worker with room. `held` keeps it from
 * launching anything, so a test can look at a job's pending tasks.
 */
class ThirtyPercentPolicy implements Policy {
  readonly name = 'thirty-percent';
  readonly consultWhen = 'every-event';
  held = false;
  schedule(s: ClusterSnapshot): readonly Decision[] {
    if (this.held) return [];
    const room = new Map(
      s.workers.map((w) => [
        w.id,
        { map: w.freeMapSlots, reduce: w.freeReduceSlots, memoryMb: w.freeMemoryMb, worker: w },
      ]),
    );
    const out: Decision[] = [];
    for (const job of s.jobs) {
      for (const task of job.pendingTasks) {
        const grant = grantFor(task);
        const r = [...room.values()].find((x) => x[task.kind] > 0 && x.memoryMb >= grant);
        if (!r) continue;
        r[task.kind]--;
        r.memoryMb -= grant;
        out.push({
          kind: 'launch',
          taskId: task.id,
          jobId: job.id,
          workerId: r.worker.id,
          memoryMb: grant,
          locality: localityOf(task, r.worker),
        });
      }
    }
    return out;
  }
}

function grantFor(task: TaskView): number {
  return task.penalty
    ? Math.max(minimumGrantMb(task.memoryMb, task.penalty), Math.floor(task.memoryMb * 0.3))
    : task.memoryMb;
}

const succeeded = (xs: AttemptSummary[], kind: 'map' | 'reduce') =>
  xs.filter((a) => a.kind === kind && a.state === 'succeeded');
const sum = (xs: AttemptSummary[], name: string) => xs.reduce((s, a) => s + (a.counters[name] ?? 0), 0);
const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
const wallMs = (a: AttemptSummary) => a.finishTime! - a.startTime;

describe('elastic attempts on a real cluster', () => {
  let t: TestCluster;
  const policy = new ThirtyPercentPolicy();
  let input: Buffer;

  before(async () => {
    t = await startTestCluster({ workers: 2, blockSize: 16 * MiB, memoryStepMb: 1, policy, memoryMb: 1600 });
    await t.cluster.client.run(appModule('teragen'), {
      output: '/tera/in',
      params: { rows: 2 * ROWS_PER_MAP, maps: 2 },
    });
    input = await readOutput(t.fs, '/tera/in');
  });
  after(async () => {
    await t?.stop();
  });

  it(
    "a recurring job's second run gets its profile and runs " +
      'elastic: it spills, stays within its grants, and writes the ' +
      'same bytes',
    async (ctx) => {
      const client = t.cluster.client;
      const submit = (output: string) =>
        client.submit(appModule('terasort'), {
          input: ['/tera/in'],
          output,
          reducers: 1,
          conf,
          params: { sampleSize: 2000, sampleSplits: 2 },
        });

      // Run 1: no profile yet, so every task runs at its ideal memory.
      const first = await client.waitForCompletion(await submit('/tera/out-1'));
      assert.deepEqual(first.profile, { state: 'none' });
      const regular = await client.attempts(first.jobId);
      assert.ok(
        regular.every((a) => !a.elastic && a.memoryMb === IDEAL_MB),
        'the first run is regular',
      );
      const regularOutput = await readOutput(t.fs, '/tera/out-1');
      const records: Buffer[] = [];
      for (let at = 0; at < input.length; at += 100) records.push(input.subarray(at, at + 100));
      records.sort((a, b) => Buffer.compare(a.subarray(0, 10), b.subarray(0, 10)) || Buffer.compare(a, b));
      assert.ok(regularOutput.equals(Buffer.concat(records)), 'the regular run sorts its input');

      // Run 2, held: its pending tasks carry what run 1 measured.
      policy.held = true;
      const secondId = await submit('/tera/out-2');
      const pending = t.cluster.jobTracker.snapshot({ kind: 'tick' }).jobs.find((j) => j.id === secondId)!.pendingTasks;
      const maps = succeeded(regular, 'map');
      const [reduce] = succeeded(regular, 'reduce');
      assert.equal(pending.length, 2);
      // Both splits are 15 MB: each map's ideal duration is the mean of run 1's, its needed buffer
      // what a map held (record bytes + 32 bytes of metadata each) under the 80% spill threshold.
      const mapNeed = mean(
        maps.map(
          (a) =>
            Math.ceil(((a.counters.MAP_OUTPUT_BYTES ?? 0) + 32 * (a.counters.MAP_OUTPUT_RECORDS ?? 0)) / 0.8 / MiB) *
            MiB,
        ),
      );
      for (const task of pending) {
        assert.ok(
          Math.abs(task.idealDurationMs! - mean(maps.map(wallMs))) < 1,
          `map ideal duration ${task.idealDurationMs}`,
        );
        assert.deepEqual(task.penalty, {
          kind: 'spill',
          rule: 'map',
          bufferBytes: mapNeed,
          overheadMb: 100,
          minFraction: 101 / IDEAL_MB,
        });
      }
      policy.held = false;
      const second = await client.waitForCompletion(secondId);
      assert.equal(second.profile.state, 'used');
      // The reduce reads the whole map output (30 MB raw) again: it needs what run 1's did.
      const reduceTask = second.profile.state === 'used' ? second.profile.reduce : undefined;
      const raw = sum(maps, 'MAP_OUTPUT_RAW_BYTES');
      assert.equal(reduceTask?.neededMemoryMb, Math.ceil(Math.max(raw / 0.66, raw / 2 / 0.25) / MiB) + 100);
      assert.ok(Math.abs(reduceTask!.idealDurationMs - wallMs(reduce!)) <= 1);

      // Run 2 ran elastic, with 20 MiB buffers: more spills, more bytes spilled, the same output.
      const elastic = await client.attempts(secondId);
      assert.ok(
        elastic.length >= 3 &&
          elastic.every((a) => a.elastic && a.memoryMb === ELASTIC_MB && a.idealMemoryMb === IDEAL_MB),
        'every attempt of run 2 is elastic at 30%',
      );
      assert.equal(second.elasticAttempts, elastic.length);
      // On disk: spilled, or (a segment of a map on the reduce's worker) read in place from the map's file.
      const onDisk = (xs: AttemptSummary[]) => sum(xs, 'SPILLED_BYTES') + sum(xs, 'SHUFFLE_BYTES_IN_PLACE');
      assert.ok(
        onDisk(succeeded(elastic, 'reduce')) > onDisk(succeeded(regular, 'reduce')),
        'the elastic reduce keeps more on disk',
      );
      // A 15 MB split takes two generations of a 20 MiB buffer: the maps publish both as two runs
      // (shuffle.map.outputRuns), so they write no more than the regular maps did.
      assert.ok(
        succeeded(elastic, 'map').every((a) => (a.counters.SPILLS ?? 0) === 2),
        'every elastic map filled its buffer twice',
      );
      assert.ok(
        sum(succeeded(elastic, 'map'), 'SPILLED_BYTES') <= sum(succeeded(regular, 'map'), 'SPILLED_BYTES') * 1.01,
        'two runs, written once',
      );
      for (const a of succeeded(elastic, 'map').concat(succeeded(elastic, 'reduce'))) {
        const c = a.counters;
        ctx.diagnostic(
          `${a.attemptId}: ${a.memoryMb} MB, ${wallMs(a)} ms, ` +
            `spills ${c.SPILLS}, ` +
            `spilled ${((c.SPILLED_BYTES ?? 0) / MiB).toFixed(1)} MiB, peak ` +
            `RSS ${((c.PEAK_RSS_BYTES ?? 0) / MiB).toFixed(1)} MiB`,
        );
        assert.ok(
          (a.counters.PEAK_RSS_BYTES ?? Infinity) <= ELASTIC_MB * MiB,
          `${a.attemptId}: peak ` +
            `RSS ${((a.counters.PEAK_RSS_BYTES ?? 0) / MiB).toFixed(1)} MiB ` +
            `over its ${ELASTIC_MB} MB grant`,
        );
      }
      assert.ok((await readOutput(t.fs, '/tera/out-2')).equals(regularOutput), 'the elastic run writes the same bytes');

      // The profile now holds both sizes of buffer for each phase.
      const [profile] = await client.profiles('terasort');
      assert.equal(profile?.runs, 2);
      assert.deepEqual(
        profile?.map.map((b) => [b.bufferMiB, b.attempts]),
        [
          [20, 2],
          [300, 2],
        ],
      );
      assert.deepEqual(
        profile?.reduce.map((b) => [b.bufferMiB, b.attempts]),
        [
          [20, 1],
          [300, 1],
        ],
      );
    },
  );
});

/**
 * The same story under the real `yarn-me` policy, once it is registered: 4 maps on 2 workers of
 * 600 MB, each map asking for 400 MB. The first run has no profile and runs regular (one map per
 * worker at a time); the second, planned from the profile the first left, gets elastic grants for
 * the maps that do not fit regularly.
 */
describe('a recurring job under yarn-me', {
  skip: !policyNames().includes('yarn-me') && 'the yarn-me policy is not registered on this branch',
}, () => {
  let t: TestCluster;

  before(async () => {
    t = await startTestCluster({ workers: 2, blockSize: 16 * MiB, memoryStepMb: 10, policy: 'yarn-me', memoryMb: 600 });
    await t.cluster.client.run(appModule('teragen'), { output: '/tera/small', params: { rows: 40_000, maps: 4 } });
  });
  after(async () => {
    await t?.stop();
  });

  it(
    'its second run is scheduled elastically from the profile its ' + 'first run left, with the same output',
    async (ctx) => {
      const client = t.cluster.client;
      const run = (output: string) =>
        client.run(appModule('terasort'), {
          input: ['/tera/small'],
          output,
          reducers: 1,
          conf,
          params: { sampleSize: 2000, sampleSplits: 2 },
        });
      const first = await run('/tera/small-1');
      assert.deepEqual(first.profile, { state: 'none' });
      assert.equal(first.elasticAttempts, 0);
      const second = await run('/tera/small-2');
      assert.equal(second.profile.state, 'used');
      const attempts = await client.attempts(second.jobId);
      const elastic = attempts.filter((a) => a.elastic);
      ctx.diagnostic(
        attempts
          .map((a) => `${a.taskId} ${a.workerId} ${a.memoryMb}/${a.idealMemoryMb} MB${a.elastic ? ' elastic' : ''}`)
          .join('; '),
      );
      assert.ok(
        elastic.length > 0,
        `no elastic attempt in ${attempts.map((a) => `${a.attemptId} ${a.memoryMb} MB`).join(', ')}`,
      );
      assert.ok(elastic.every((a) => a.memoryMb < a.idealMemoryMb && a.memoryMb <= 600 - IDEAL_MB));
      assert.ok((await readOutput(t.fs, '/tera/small-2')).equals(await readOutput(t.fs, '/tera/small-1')));
    },
  );
});
