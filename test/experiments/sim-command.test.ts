import assert from 'node:assert/strict';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
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
      assert.equal(files.length, 6);
      assert.deepEqual((await readdir(join(dir, 'out'))).sort(), [
        'data-movement.csv',
        'data-movement.svg',
        'results.json',
        'results.md',
        'slowdown-cdf.csv',
        'slowdown-cdf.svg',
      ]);
      // The CDF's CSV holds each job's slowdown: 3 jobs of one policy, the last at fraction 1.
      const csv = (await readFile(join(dir, 'out', 'slowdown-cdf.csv'), 'utf8')).trim().split('\n');
      assert.equal(csv[0], 'series,slowdown (response time / runtime alone),fraction of jobs');
      assert.ok(csv.slice(1).every((row) => row.startsWith('fifo,')));
      assert.equal(csv[csv.length - 1]!.split(',')[2], '1');
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

  test("a comparison shows each policy's per-job agreement with the reference beside the means", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'minimr-sim-'));
    try {
      await writeFile(join(dir, 'trace.json'), TRACE);
      const run = (reference?: string) =>
        runSimCommand(
          {
            workload: join(dir, 'trace.json'),
            cluster: 'tyrex-20',
            policies: ['fifo', 'fair'],
            heartbeatMs: 1000,
            ...(reference ? { reference } : {}),
            out: join(dir, reference ?? 'first'),
          },
          () => {},
        );
      const { result, table } = await run();
      assert.equal(result.reference, 'fifo');
      const [fifo, fair] = result.policies;
      assert.equal(fifo!.agreement, 1);
      // Counted here from the two runs' per-job response times.
      const ref = new Map(fifo!.metrics.perJob.map((j) => [j.id, j.responseMs]));
      const within = fair!.metrics.perJob.filter(
        (j) => Math.abs(j.responseMs - ref.get(j.id)!) <= 0.1 * ref.get(j.id)!,
      );
      assert.equal(fair!.agreement, within.length / ref.size);
      assert.match(table, /\| avg JCT s \| jobs within 10% of fifo \|/);
      assert.match(table, /\| fifo \| 3\/3 \|( [^|]+ \|){5} 100% \|/);
      const md = await readFile(join(dir, 'first', 'results.md'), 'utf8');
      assert.match(md, /jobs within 10% of fifo/);
      const json = JSON.parse(await readFile(join(dir, 'first', 'results.json'), 'utf8')) as {
        reference: string;
        policies: Array<{ agreement: number }>;
      };
      assert.equal(json.reference, 'fifo');
      assert.equal(json.policies[1]!.agreement, fair!.agreement);
      const second = await run('fair');
      assert.equal(second.result.reference, 'fair');
      assert.equal(second.result.policies[1]!.agreement, 1);
      assert.match(second.table, /jobs within 10% of fair/);
      await assert.rejects(
        run('srjf'),
        (err) => err instanceof MinimrError && err.code === 'EBADCONF' && /reference policy srjf/.test(err.message),
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('a workload whose tasks are mostly shorter than a heartbeat is flagged before it runs', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'minimr-sim-'));
    try {
      // The trace's six tasks take 5 s (maps) and 4 s (reduces).
      await writeFile(join(dir, 'trace.json'), TRACE);
      const linesAt = async (heartbeatMs: number) => {
        const lines: string[] = [];
        await runSimCommand(
          { workload: join(dir, 'trace.json'), cluster: 'tyrex-20', policies: ['fifo'], heartbeatMs },
          (l) => lines.push(l),
        );
        return lines.filter((l) => l.includes('shorter than a heartbeat'));
      };
      assert.deepEqual(await linesAt(1000), []);
      const flagged = await linesAt(10_000);
      assert.equal(flagged.length, 1);
      assert.match(
        flagged[0]!,
        /^warning: 6 of 6 tasks of .* \(median 5000 ms\) are shorter than a heartbeat \(10000 ms\)/,
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
