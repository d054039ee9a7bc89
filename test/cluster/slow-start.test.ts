import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AttemptSummary, JobClient } from '../../src/runtime/index.js';
import {
  appModule,
  assertCountsEqual,
  fixtureModule,
  makeText,
  readOutput,
  startTestCluster,
  waitFor,
  type TestCluster,
} from '../helpers/cluster.js';

/**
 * Reduce slow start on a real cluster (`job.reduceSlowStart`): reduces launch once that fraction of
 * the maps is done (the books' rule, the one the simulator runs), fetch each map output as its map
 * finishes, and give the same output as reduces started after the last map.
 */

const succeeded = (attempts: AttemptSummary[], kind: 'map' | 'reduce') =>
  attempts.filter((a) => a.kind === kind && a.state === 'succeeded');

describe('reduce slow start on a real cluster', () => {
  let t: TestCluster;
  let client: JobClient;
  // 64 KiB blocks: 10 maps.
  const text = makeText(600_000, 21);

  before(async () => {
    t = await startTestCluster({ replication: 2 });
    client = t.cluster.client;
    await t.fs.put(Buffer.from(text), '/in/text.txt');
  });
  after(async () => {
    await t?.stop();
  });

  it('slow start 0 and 1 give byte-identical output (WordCount, 3 reduces)', async () => {
    const outputs: Buffer[] = [];
    for (const slowStart of [1, 0]) {
      const status = await client.run(appModule('wordcount'), {
        input: ['/in/text.txt'],
        output: `/out/identical-${slowStart}`,
        reducers: 3,
        conf: { 'job.reduceSlowStart': slowStart },
      });
      assert.equal(status.state, 'succeeded');
      outputs.push(await readOutput(t.fs, `/out/identical-${slowStart}`));
    }
    assert.ok(outputs[0]!.length > 0);
    assert.ok(outputs[0]!.equals(outputs[1]!), 'same bytes');
    assertCountsEqual(outputs[1]!, text);
  });

  it(
    'reduces launch once the fraction of maps is done and fetch the ' +
      'outputs of the maps done before the last one ends',
    async () => {
      // The first map is slow (a full block, 1.5 s of delays), so the others are long done when it ends.
      const slowMap = 0;
      const jobId = await client.submit(fixtureModule('slow-wordcount'), {
        input: ['/in/text.txt'],
        output: '/out/early',
        reducers: 2,
        conf: { 'job.reduceSlowStart': 0.5 },
        params: { mapDelayMs: 150, slowMapIndex: slowMap },
      });
      const status = await client.waitForCompletion(jobId);
      assert.equal(status.state, 'succeeded');
      assert.equal(status.mapsTotal, 10);
      const attempts = await client.attempts(jobId);
      const mapEnds = succeeded(attempts, 'map')
        .map((a) => a.finishTime!)
        .sort((a, b) => a - b);
      const reduces = succeeded(attempts, 'reduce');
      assert.equal(reduces.length, 2);
      for (const r of reduces) {
        // The books open reduces at ceil(0.5 x 10) = 5 maps done, and the slow map ends last.
        assert.ok(
          r.startTime >= mapEnds[4]!,
          `reduce ${r.attemptId} started at ${r.startTime}, before the 5th map ended at ${mapEnds[4]}`,
        );
        assert.ok(
          r.startTime < mapEnds[9]!,
          `reduce ${r.attemptId} started at ${r.startTime}, not before the last map ended at ${mapEnds[9]}`,
        );
        const early = r.counters.SHUFFLE_EARLY_SEGMENTS ?? 0;
        assert.ok(
          early >= 5 && early <= 9,
          `reduce ${r.attemptId} fetched ${early} outputs before the last map's was known`,
        );
      }
      assertCountsEqual(await readOutput(t.fs, '/out/early'), text);
    },
  );

  it('a slow start outside [0, 1], or below 1 with skew.strategy "simple", is refused (EBADJOB)', async () => {
    for (const conf of [
      { 'job.reduceSlowStart': 1.5 },
      { 'job.reduceSlowStart': -0.1 },
      { 'job.reduceSlowStart': 0.5, 'skew.strategy': 'simple' as const },
    ]) {
      await assert.rejects(
        client.submit(appModule('wordcount'), { input: ['/in/text.txt'], output: '/out/bad', conf }),
        (err: unknown) => {
          assert.match(String((err as Error).message), /job\.reduceSlowStart/);
          return (err as { code?: string }).code === 'EBADJOB';
        },
      );
    }
  });
});

describe('reduce slow start: a worker lost while an early reduce is fetching', () => {
  it('the lost map outputs are re-run and the reduce reads them from the re-run: the output is right', async () => {
    const t = await startTestCluster({ replication: 2 });
    try {
      const text = makeText(600_000, 22);
      await t.fs.put(Buffer.from(text), '/in/text.txt');
      const client = t.cluster.client;
      const slowMap = 0;
      const jobId = await client.submit(fixtureModule('slow-wordcount'), {
        input: ['/in/text.txt'],
        output: '/out/lost',
        reducers: 1,
        conf: { 'job.reduceSlowStart': 0 },
        params: { mapDelayMs: 200, slowMapIndex: slowMap },
      });
      // The reduce runs and has fetched outputs; a worker holds a finished map's output and runs neither
      // the reduce nor the slow map: kill it.
      const victim = await waitFor('a worker holding only finished map outputs', async () => {
        const attempts = await client.attempts(jobId);
        const reduce = attempts.find((a) => a.kind === 'reduce' && a.state === 'running');
        const slow = attempts.find(
          (a) => a.kind === 'map' && a.state === 'running' && a.taskId.endsWith(`_m_00000${slowMap}`),
        );
        if (
          !reduce ||
          !slow ||
          (reduce.counters.SHUFFLE_BYTES_LOCAL ?? 0) + (reduce.counters.SHUFFLE_BYTES_REMOTE ?? 0) === 0
        )
          return undefined;
        const holders = succeeded(attempts, 'map').map((a) => a.workerId);
        return holders.find((w) => w !== reduce.workerId && w !== slow.workerId);
      });
      const before = (await client.attempts(jobId)).filter((a) => a.kind === 'map').length;
      await t.cluster.killWorker(Number(victim.replace('worker-', '')));
      const status = await client.waitForCompletion(jobId);
      assert.equal(status.state, 'succeeded');
      const attempts = await client.attempts(jobId);
      assert.ok(
        attempts.filter((a) => a.kind === 'map').length > before,
        'maps whose output was on the lost worker ran again',
      );
      assert.ok(
        succeeded(attempts, 'map').some(
          (a) => a.workerId !== victim && attempts.some((b) => b.taskId === a.taskId && b.workerId === victim),
        ),
        'a map that had succeeded on the lost worker succeeded again elsewhere',
      );
      assertCountsEqual(await readOutput(t.fs, '/out/lost'), text);
    } finally {
      await t.stop();
    }
  });
});
