/**
 * A job writing to another store is aborted only once its workers confirmed that the attempts its end
 * killed have stopped (attempt-stops.ts): a task process killed an instant earlier may be starting its
 * part's S3 upload, which an abort run before it died would not see (issue 37). A real JobTracker on
 * port 0 under FIFO, a file:// output (whose abort removes its staging directory: that is what is
 * watched) and a fake worker that reports the killed attempt when the test says.
 */
import assert from 'node:assert/strict';
import { access, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { AttemptSpec, JobStatus } from '../../src/runtime/wire/index.js';
import { FifoPolicy } from '../../src/scheduler/index.js';
import { stagingDirOf } from '../../src/storage/stores/staging.js';
import { appModule } from '../helpers/cluster.js';
import { registerFakeWorker, startJobTracker, type LoneJobTracker } from '../helpers/jobtracker.js';

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

describe('JobTracker: a failed job writing to another store is aborted once its killed attempts stopped', () => {
  let lone: LoneJobTracker;
  let root: string;

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'minimr-store-abort-'));
    lone = await startJobTracker(new FifoPolicy(), 100_000, { fileOutputRoots: [root] });
  });
  after(async () => {
    await lone.stop();
    await rm(root, { recursive: true, force: true });
  });

  it('waits for the worker to report the killed reduce before the abort, and the client hears after it', async () => {
    const { jt, client } = lone;
    const worker = await registerFakeWorker(jt.url, 'w1', { map: 2, reduce: 2 });
    const output = join(root, 'out');
    const jobId = await client.submit(appModule('pi'), {
      output: `file://${output}`,
      reducers: 2,
      maxAttempts: 1,
      params: { maps: 2, samples: 10 },
    });
    const staging = stagingDirOf(output, jobId);
    assert.ok(await exists(staging), 'the committer staged the output at submission');
    let answered = false;
    const waiting = worker.peer.request<JobStatus>({ type: 'wait-job', jobId });
    void waiting.then(() => (answered = true));
    const finish = async (spec: AttemptSpec, state: 'succeeded' | 'failed' | 'killed') => {
      worker.peer.send({
        type: 'attempt-finished',
        workerId: worker.id,
        attemptId: spec.attemptId,
        state,
        counters: {},
        ...(state === 'succeeded'
          ? { mapOutput: { partitionBytes: [1, 1], partitionRecords: [1, 1] } }
          : { error: { code: state === 'failed' ? 'ETASK' : 'EKILLED', message: `reduce ${state}` } }),
      });
      await worker.peer.request({ type: 'job-status', jobId });
    };
    const launchedKind = (kind: 'map' | 'reduce') => worker.launched.filter((s) => s.kind === kind);
    while (launchedKind('map').length < 2) await worker.heartbeat(jobId);
    for (const spec of launchedKind('map')) await finish(spec, 'succeeded');
    while (launchedKind('reduce').length < 2) await worker.heartbeat(jobId);
    const [failing, running] = launchedKind('reduce') as [AttemptSpec, AttemptSpec];
    await finish(failing, 'failed');
    assert.deepEqual(worker.killed, [running.attemptId], 'the job failed and its other reduce was killed');

    // Unconfirmed, the killed reduce may still be writing: nothing is aborted, the client not told.
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.ok(await exists(staging), 'no abort before the killed attempt is confirmed stopped');
    assert.equal(answered, false);

    await finish(running, 'killed');
    const status = await waiting;
    assert.equal(status.state, 'failed');
    assert.match(status.error?.message ?? '', /reduce failed/);
    assert.equal(await exists(staging), false, 'aborted once the worker confirmed');
    worker.close();
  });
});
