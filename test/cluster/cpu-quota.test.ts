import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { CpuQuotaGroup } from '../../src/runtime/index.js';
import { MinimrError } from '../../src/errors.js';
import { appModule, assertCountsEqual, makeText, readOutput, startTestCluster } from '../helpers/cluster.js';

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

/** `parentOf`, or undefined for a process that ended meanwhile. */
function parentIfAlive(pid: number): number | undefined {
  try {
    const parent = parentOf(pid);
    // A process caught while it exits reads as a child of no one (ppid 0): it is gone, not adopted.
    return parent === 0 ? undefined : parent;
  } catch {
    return undefined;
  }
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
        // A worker's task processes live while its job runs (each is forked in its job's sandbox, and
        // ends with the job): look for them in the worker's group meanwhile.
        const running = tc.cluster.client.run(appModule('wordcount'), {
          input: ['/in.txt'],
          output: '/out',
          reducers: 2,
        });
        let ended = false;
        void running.finally(() => {
          ended = true;
        });
        const seen = new Map<number, number | undefined>();
        while (!ended) {
          for (const w of tc.cluster.workers)
            for (const pid of tc.cluster.cpuQuotas.get(w.workerId)!.pids())
              if (pid !== w.process.pid && !seen.has(pid)) seen.set(pid, parentIfAlive(pid));
          await new Promise((r) => setTimeout(r, 10));
        }
        const status = await running;
        assert.equal(status.state, 'succeeded');
        assertCountsEqual(await readOutput(tc.fs, '/out'), text);
        assert.ok(seen.size > 0, "task processes ran in the workers' groups");
        const workerPids = new Set(tc.cluster.workers.map((w) => w.process.pid));
        for (const [pid, parent] of seen)
          assert.ok(
            parent === undefined || workerPids.has(parent),
            `process ${pid} in a worker's group was started by a worker (parent ${parent})`,
          );
      } finally {
        await tc.stop();
      }
      for (const g of groups) assert.throws(() => g.pids(), 'the group was removed');
    },
  );
});
