import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { CpuQuotaGroup } from '../../src/runtime/index.js';
import { MinimrError } from '../../src/errors.js';
import { appModule, assertCountsEqual, makeText, readOutput, startTestCluster, waitFor } from '../helpers/cluster.js';

/**
 * Worker CPU quotas (LocalCluster `cpuQuotaOf`, bench:fawkes `--cpu-quota`): a worker and every
 * process it starts are held to their share of the machine by a cgroup. These tests need Linux and
 * root (a writable cgroup CPU controller); elsewhere they are skipped and say why.
 */

function quotaUnavailable(): string | false {
  try {
    const probe = CpuQuotaGroup.create(`minimr-probe-${process.pid}`, 1);
    probe.remove();
    return false;
  } catch (e) {
    return `no cgroup CPU quota here: ${(e as Error).message}`;
  }
}

const skip = quotaUnavailable();

/** The parent pid of process `pid`, from /proc. */
function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** A process that burns `cpuMs` of CPU time and prints its CPU time and wall time, ms. */
function burner(cpuMs: number) {
  const code =
    `const t0=performance.now();const c0=process.cpuUsage();let ` +
    `c=0;while(c<${cpuMs}){const ` +
    `u=process.cpuUsage(c0);c=(u.user+u.system)/1000;}process.stdout.write(JSON.stringify({cpuMs:c,wallMs:performance.now()-t0}));`;
  return spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
}

describe('worker CPU quotas', { skip }, () => {
  it(
    'a process in a group of a quarter core gets about a quarter of ' +
      'a core: its CPU time takes at least twice as long in wall time, ' +
      'and the kernel counts throttled periods',
    async () => {
      const group = CpuQuotaGroup.create(`minimr-test-${process.pid}-burn`, 0.25);
      try {
        const child = burner(400);
        group.add(child.pid!);
        assert.deepEqual(group.pids(), [child.pid]);
        let out = '';
        child.stdout.on('data', (b: Buffer) => (out += b.toString('utf8')));
        await once(child, 'exit');
        const r = JSON.parse(out) as { cpuMs: number; wallMs: number };
        // At a quarter core 400 ms of CPU need about 1.6 s; unconfined, 0.4 s on an idle core.
        assert.ok(
          r.wallMs >= 2 * r.cpuMs,
          `${r.cpuMs.toFixed(0)} ms of CPU took ${r.wallMs.toFixed(0)} ms of wall time`,
        );
        assert.ok(group.stats().throttledPeriods > 0);
      } finally {
        assert.equal(group.remove(), true);
      }
    },
  );

  it('a quota of zero or less cores is EBADCONF', () => {
    for (const cores of [0, -1, Number.NaN]) {
      assert.throws(
        () => CpuQuotaGroup.create(`minimr-test-${process.pid}-bad`, cores),
        (e: unknown) => e instanceof MinimrError && e.code === 'EBADCONF',
      );
    }
  });

  it(
    'each worker of a local cluster runs in its own group, with the ' +
      'task processes it starts; a job runs correctly; the groups go ' +
      'when the cluster stops',
    async () => {
      const tc = await startTestCluster({ workers: 2, cpuQuotaOf: () => 0.5 });
      const groups = [...tc.cluster.cpuQuotas.values()];
      try {
        assert.equal(groups.length, 2);
        for (const w of tc.cluster.workers)
          assert.ok(
            tc.cluster.cpuQuotas.get(w.workerId)!.pids().includes(w.process.pid!),
            `${w.workerId} is in its group`,
          );
        const text = makeText(300_000);
        await tc.fs.put(Buffer.from(text), '/in.txt');
        const status = await tc.cluster.client.run(appModule('wordcount'), {
          input: ['/in.txt'],
          output: '/out',
          reducers: 2,
        });
        assert.equal(status.state, 'succeeded');
        assertCountsEqual(await readOutput(tc.fs, '/out'), text);
        // The task processes a worker started (kept for reuse, or spares) are in the worker's group.
        await waitFor(
          "a task process in a worker's group",
          () => (groups.some((g) => g.pids().length > 1) ? true : undefined),
          10_000,
        );
        for (const w of tc.cluster.workers) {
          const pids = tc.cluster.cpuQuotas.get(w.workerId)!.pids();
          for (const pid of pids.filter((p) => p !== w.process.pid))
            assert.equal(parentOf(pid), w.process.pid, `process ${pid} in ${w.workerId}'s group was started by it`);
        }
      } finally {
        await tc.stop();
      }
      for (const g of groups) assert.throws(() => g.pids(), 'the group was removed');
    },
  );
});
