/**
 * Speculative execution on a real cluster (issue 38; the rule is the books', src/books/speculation.ts).
 * Three workers, one at `--cpu-throttle 4`: with speculation (on by default) a CPU-bound job finishes
 * within 1.3x of the same job on three fast workers, and slower without it (job.speculative=false);
 * the backups that lost their race are killed, each task succeeds once, and the output is the
 * reference's, one part per reduce.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { AttemptSummary } from '../../src/runtime/index.js';
import { fixtureModule, readOutput, startTestCluster, type TestCluster } from '../helpers/cluster.js';

const LINES = 27_000;
/** About 60 bytes a line: 256 KiB blocks make 6 maps of about 1.1 s of CPU each. */
const text = Array.from({ length: LINES }, (_, i) => `w${i % 37} ${'x'.repeat(50 + (i % 7))}\n`).join('');
const reference = new Map<string, number>();
for (let i = 0; i < LINES; i++) reference.set(`w${i % 37}`, (reference.get(`w${i % 37}`) ?? 0) + 1);

async function runJob(t: TestCluster, output: string, speculative: boolean) {
  const started = Date.now();
  const status = await t.cluster.client.run(fixtureModule('spin-lines'), {
    input: ['/in/lines.txt'],
    output,
    reducers: 3,
    params: { lineCpuMs: '0.25' },
    conf: { 'job.speculative': speculative },
  });
  const seconds = (Date.now() - started) / 1000;
  assert.equal(status.state, 'succeeded');
  const counts = new Map(
    (await readOutput(t.fs, output))
      .toString('utf8')
      .trim()
      .split('\n')
      .map((l) => {
        const [k, v] = l.split('\t');
        return [k!, Number(v)] as const;
      }),
  );
  assert.deepEqual(counts, reference);
  const parts = (await t.fs.list(output)).map((e) => e.path.split('/').pop()!).filter((n) => n.startsWith('part-'));
  assert.deepEqual(parts.sort(), ['part-r-00000', 'part-r-00001', 'part-r-00002']);
  return { seconds, attempts: await t.cluster.client.attempts(status.jobId) };
}

function succeededOnce(attempts: readonly AttemptSummary[]): void {
  const byTask = new Map<string, number>();
  for (const a of attempts) if (a.state === 'succeeded') byTask.set(a.taskId, (byTask.get(a.taskId) ?? 0) + 1);
  for (const [task, n] of byTask) assert.equal(n, 1, task);
}

describe('speculative execution with one worker four times slower', () => {
  let fast: TestCluster;
  let slow: TestCluster;
  const timings: Record<string, number> = {};
  before(async () => {
    fast = await startTestCluster({ workers: 3, mapSlots: 1, blockSize: 256 * 1024 });
    await fast.fs.put(Buffer.from(text), '/in/lines.txt');
  });
  after(async () => {
    await fast?.stop();
    await slow?.stop();
  });

  // Each timed case runs twice and keeps its faster run: other tests share this machine's two cores.
  test('three fast workers: the reference time', async () => {
    const first = await runJob(fast, '/out/fast', false);
    const second = await runJob(fast, '/out/fast2', false);
    timings.fast = Math.min(first.seconds, second.seconds);
    await fast.stop();
    slow = await startTestCluster({
      workers: 3,
      mapSlots: 1,
      blockSize: 256 * 1024,
      throttleOf: (i) => (i === 2 ? 4 : 1),
    });
    await slow.fs.put(Buffer.from(text), '/in/lines.txt');
  });

  test('with speculation: within 1.3x of the fast cluster, the losing copies killed', async () => {
    const first = await runJob(slow, '/out/speculative', true);
    const again = await runJob(slow, '/out/speculative2', true);
    const run = first.seconds <= again.seconds ? first : again;
    timings.speculative = run.seconds;
    const backups = run.attempts.filter((a) => a.speculative);
    assert.ok(backups.length > 0, 'backups were launched');
    const slowWorker = run.attempts.find((a) => a.workerId.endsWith('2'))?.workerId;
    for (const b of backups) assert.notEqual(b.workerId, slowWorker, 'no backup on the slow worker');
    const losers = run.attempts.filter((a) => a.error?.details?.by === 'speculation');
    assert.ok(losers.length > 0);
    for (const a of losers) assert.equal(a.state, 'killed');
    succeededOnce(run.attempts);
    assert.ok(
      timings.speculative <= 1.3 * timings.fast!,
      `${timings.speculative.toFixed(2)} s with speculation vs ${timings.fast!.toFixed(2)} s on fast workers`,
    );
  });

  test('without speculation (job.speculative=false): slower, and no backup', async () => {
    const run = await runJob(slow, '/out/plain', false);
    timings.plain = run.seconds;
    assert.equal(run.attempts.filter((a) => a.speculative).length, 0);
    succeededOnce(run.attempts);
    process.stderr.write(`speculation timings (s): ${JSON.stringify(timings)}\n`);
    assert.ok(
      timings.plain > timings.speculative!,
      `${timings.plain.toFixed(2)} s without vs ${timings.speculative!.toFixed(2)} s with speculation`,
    );
  });
});
