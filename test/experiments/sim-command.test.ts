import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import { MinimrError } from '../../src/errors.js';
import { runSimCommand } from '../../src/experiments/index.js';
import { loadCluster, loadWorkload } from '../../src/workloads/index.js';

const TRACE = [0, 2000, 4000]
  .map(
    (start, i) =>
      `{"am.type":"mapreduce","job.id":"sls_${i}","job.start.ms":${start},"job.end.ms":${start + 9000},"job.queue.name":"q",
 ` +
      ` "job.tasks":[{"container.host":"/r1/n1","container.start.ms":${start},"container.end.ms":${start + 5000},"container.priority":20},
 ` +
      `              ` +
      `{"container.host":"/r1/n2","container.start.ms":${start + 5000},"container.end.ms":${start + 9000},"container.priority":10}]}`,
  )
  .join('\n');

describe('minimr sim', () => {
  test('runSimCommand reads an SLS trace and a cluster file, returns the table and writes the report', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'minimr-sim-'));
    try {
      await writeFile(join(dir, 'trace.json'), TRACE);
      await writeFile(
        join(dir, 'cluster.json'),
        JSON.stringify({
          name: 'two',
          workers: [
            { id: 'n1', rack: 'r1', mapSlots: 1, reduceSlots: 1, memoryMb: 2048, diskMBps: 100 },
            { id: 'n2', rack: 'r1', mapSlots: 1, reduceSlots: 1, memoryMb: 2048 },
          ],
        }),
      );
      const lines: string[] = [];
      const { result, table, files } = await runSimCommand(
        {
          workload: join(dir, 'trace.json'),
          cluster: join(dir, 'cluster.json'),
          policies: ['fifo'],
          out: join(dir, 'out'),
          heartbeatMs: 1000,
        },
        (l) => lines.push(l),
      );
      assert.equal(result.policies[0]!.metrics.finished, 3);
      assert.match(table, /^\| policy \|/);
      assert.match(table, /\| fifo \| 3\/3 \|/);
      assert.equal(files.length, 4);
      assert.deepEqual((await readdir(join(dir, 'out'))).sort(), [
        'data-movement.svg',
        'results.json',
        'results.md',
        'slowdown-cdf.svg',
      ]);
      assert.ok(lines.some((l) => /3 jobs/.test(l)));
      assert.ok(!lines.some((l) => /warning/.test(l)), "the trace's hosts are the cluster's: no warning");
      // The same trace on a preset without hosts n1 and n2: said, not silent (issue 36).
      const elsewhere: string[] = [];
      await runSimCommand(
        { workload: join(dir, 'trace.json'), cluster: 'tyrex-20', policies: ['fifo'], heartbeatMs: 1000 },
        (l) => elsewhere.push(l),
      );
      assert.ok(
        elsewhere.some((l) =>
          /^warning: the trace's tasks ran on 1 host\(s\) that cluster tyrex-20 has not \(n1\)/.test(l),
        ),
        elsewhere.join('\n'),
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('unknown workloads and clusters are EBADCONF', async () => {
    await assert.rejects(
      loadWorkload('nope', {}),
      (err: unknown) =>
        err instanceof MinimrError && err.code === 'EBADCONF' && /unknown workload "nope"/.test(err.message),
    );
    await assert.rejects(
      loadCluster('tyrex-21'),
      (err: unknown) =>
        err instanceof MinimrError && err.code === 'EBADCONF' && /unknown cluster preset/.test(err.message),
    );
  });
});
