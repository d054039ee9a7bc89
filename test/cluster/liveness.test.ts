import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { startTestCluster, waitFor } from '../helpers/cluster.js';

/**
 * Worker liveness when the JobTracker itself stalls. The test cluster's JobTracker runs in this
 * process with 200 ms heartbeats and loses a worker after 1 s of silence, so blocking this thread
 * stalls the tracker while the workers (other processes) go on sending heartbeats.
 */

function stallThisThread(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // Busy on purpose: nothing else of this process may run meanwhile.
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

describe('worker liveness', () => {
  it(
    'a JobTracker stalled for 3 s loses no worker: it judges on the ' +
      'heartbeats that arrived meanwhile, and still finds a dead one',
    async () => {
      const lost: string[] = [];
      const sink = new Writable({
        write(chunk: Buffer, _encoding, done) {
          for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) {
            const entry = JSON.parse(line) as { msg?: string; worker?: string };
            if (entry.msg === 'worker lost') lost.push(entry.worker ?? '?');
          }
          done();
        },
      });
      const t = await startTestCluster({ logger: pino({ level: 'warn' }, sink) });
      try {
        assert.equal((await t.cluster.client.clusterInfo()).workers.length, 3);
        stallThisThread(3000);
        await sleep(1500);
        assert.deepEqual(lost, [], "no worker is lost for the tracker's own stall");

        // A worker that really died is still found, stall or not.
        await t.cluster.killWorker(2);
        stallThisThread(3000);
        await waitFor('the dead worker lost', () => (lost.length > 0 ? true : undefined));
        await sleep(1500);
        assert.deepEqual(lost, ['worker-2']);
      } finally {
        await t.stop();
      }
    },
  );
});
