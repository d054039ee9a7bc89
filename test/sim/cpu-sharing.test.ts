import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { MinimrError } from '../../src/errors.js';
import { FifoPolicy, type ClusterSnapshot, type Decision, type Policy } from '../../src/scheduler/index.js';
import { ProcessorSharing, simulate, workUnderSharingMs, type SimulationOptions } from '../../src/sim/index.js';
import {
  clusterPreset,
  parseClusterJson,
  readClusterFile,
  tyrexWorkload,
  type ClusterShape,
  type JobSpec,
  type WorkerShape,
} from '../../src/workloads/index.js';
import { MiB, job, task, worker } from './helpers.js';

/** Map-only workers w1..wn, all on host "h" with `cores` cores. */
function sharedHost(workers: number, cores: number, over: Partial<WorkerShape> = {}): ClusterShape {
  return {
    name: 'shared',
    workers: Array.from({ length: workers }, (_, i) =>
      worker(`w${i + 1}`, 'r1', { host: 'h', reduceSlots: 0, ...over }),
    ),
    hosts: { h: { cores } },
  };
}

function run(jobs: JobSpec[], shape: ClusterShape, over: Partial<SimulationOptions> = {}) {
  return simulate({ workload: { name: 'cpu', jobs }, cluster: shape, policy: new FifoPolicy(), ...over });
}

/** Each attempt's [id, worker, start, end, outcome]. */
function attempts(r: ReturnType<typeof simulate>): Array<[string, string, number, number, string]> {
  return r.run.attempts.map((a) => [a.id, a.workerId, a.startMs, a.endMs, a.outcome]);
}

describe('processor sharing arithmetic', () => {
  test('2 runs of 10 s on 1 core both end at 20 s', () => {
    const ps = new ProcessorSharing<string>(new Map([['h', 1]]), 3000);
    assert.deepEqual(ps.start('a', 'h', 10_000, 0), [{ key: 'a', endMs: 10_000 }]);
    assert.deepEqual(ps.start('b', 'h', 10_000, 0), [
      { key: 'a', endMs: 20_000 },
      { key: 'b', endMs: 20_000 },
    ]);
    assert.equal(ps.workDoneMs('a', 8_000), 4_000);
  });

  test('10 s and 20 s on 1 core end at 20 s and 30 s', () => {
    const ps = new ProcessorSharing<string>(new Map([['h', 1]]), 3000);
    ps.start('short', 'h', 10_000, 0);
    const ends = ps.start('long', 'h', 20_000, 0);
    assert.deepEqual(ends, [
      { key: 'short', endMs: 20_000 },
      { key: 'long', endMs: 40_000 },
    ]);
    // At 20 s the long run has done 10 s of its 20; alone it does the other 10 s by 30 s.
    assert.deepEqual(ps.stop('short', 20_000), [{ key: 'long', endMs: 30_000 }]);
  });

  test('3 runs of 10 s on 2 cores each run at 2/3 and end at 15 s', () => {
    const ps = new ProcessorSharing<string>(new Map([['h', 2]]), 3000);
    assert.deepEqual(ps.start('a', 'h', 10_000, 0), [{ key: 'a', endMs: 10_000 }]);
    // Two runs on two cores: no one slows, so no end moves.
    assert.deepEqual(ps.start('b', 'h', 10_000, 0), [{ key: 'b', endMs: 10_000 }]);
    assert.deepEqual(
      ps.start('c', 'h', 10_000, 0).map((e) => e.endMs),
      [15_000, 15_000, 15_000],
    );
  });

  test('a run that starts halfway through another: the first ends at 15 s, the second at 20 s', () => {
    const ps = new ProcessorSharing<string>(new Map([['h', 1]]), 3000);
    ps.start('first', 'h', 10_000, 0);
    // At 5 s the first has 5 s left; at half speed that takes 10 s.
    assert.deepEqual(ps.start('second', 'h', 10_000, 5_000), [
      { key: 'first', endMs: 15_000 },
      { key: 'second', endMs: 25_000 },
    ]);
    assert.deepEqual(ps.stop('first', 15_000), [{ key: 'second', endMs: 20_000 }]);
    // Work done at past times comes from the rate history: full speed, then half speed.
    assert.equal(ps.workDoneMs('second', 15_000), 5_000);
    assert.equal(ps.workDoneMs('second', 17_000), 7_000);
  });

  test('work done at a past heartbeat spans rate changes; unknown runs and other hosts are apart', () => {
    const ps = new ProcessorSharing<string>(
      new Map([
        ['h', 1],
        ['g', 1],
      ]),
      10_000,
    );
    ps.start('a', 'h', 10_000, 0);
    ps.start('b', 'h', 10_000, 2_000);
    ps.start('c', 'h', 10_000, 4_000);
    ps.start('other', 'g', 10_000, 0);
    // a: 2 s alone, 2 s at 1/2, then 1/3.
    assert.equal(ps.workDoneMs('a', 1_000), 1_000);
    assert.equal(ps.workDoneMs('a', 3_000), 2_500);
    assert.equal(ps.workDoneMs('a', 7_000), 4_000);
    assert.equal(ps.workDoneMs('b', 1_000), 0);
    assert.equal(ps.workDoneMs('other', 7_000), 7_000);
    assert.deepEqual(ps.stop('nobody', 8_000), []);
    assert.equal(ps.shares('g'), true);
    assert.equal(ps.shares('elsewhere'), false);
  });
});

describe('processor sharing history', () => {
  test('old rates are dropped, work done within the heartbeat window stays exact', () => {
    const ps = new ProcessorSharing<string>(new Map([['h', 1]]), 1_000);
    ps.start('long', 'h', 100_000, 0);
    // Runs come and go every second: 'long' alternates between full and half speed.
    for (let t = 1_000; t <= 20_000; t += 2_000) {
      ps.start(`s${t}`, 'h', 100_000, t);
      ps.stop(`s${t}`, t + 1_000);
    }
    // 0-1 s full, then ten rounds of 1 s at half and 1 s full; the last half second is 19-20 s.
    assert.equal(ps.workDoneMs('long', 21_000), 1_000 + 10 * 1_500);
    assert.equal(ps.workDoneMs('long', 19_500), 1_000 + 9 * 1_500 + 250);
    assert.equal(ps.workDoneMs('long', 20_500), 1_000 + 9 * 1_500 + 500 + 500);
    assert.equal(ps.workDoneMs('long', 22_000), 1_000 + 10 * 1_500 + 1_000);
  });
});

describe('work under sharing, from measured runs', () => {
  test(
    'undoes the stretch the model puts on runs: 10 s and 20 s of ' + 'work on 1 core measured as 0-20 s and 0-30 s',
    () => {
      assert.deepEqual(
        workUnderSharingMs(
          [
            { startMs: 0, endMs: 20_000 },
            { startMs: 0, endMs: 30_000 },
          ],
          1,
        ),
        [10_000, 20_000],
      );
    },
  );

  test('3 runs on 2 cores, one starting late; runs with a core each are not shrunk', () => {
    // 0-4 s: a and b on 2 cores (full speed); 4-10 s: a, b, c at 2/3; 10-12 s: c alone.
    assert.deepEqual(
      workUnderSharingMs(
        [
          { startMs: 0, endMs: 10_000 },
          { startMs: 0, endMs: 10_000 },
          { startMs: 4_000, endMs: 12_000 },
        ],
        2,
      ),
      [8_000, 8_000, 6_000],
    );
    assert.deepEqual(
      workUnderSharingMs(
        [
          { startMs: 0, endMs: 5_000 },
          { startMs: 1_000, endMs: 3_000 },
        ],
        4,
      ),
      [5_000, 2_000],
    );
  });
});

describe('CPU sharing in the simulator', () => {
  test('2 maps of 10 s on two workers of a 1-core host end at 20 s', () => {
    const r = run([job('job_0001', 0, [task(10_000), task(10_000)])], sharedHost(2, 1));
    assert.deepEqual(
      attempts(r).map((a) => a[3]),
      [20_000, 20_000],
    );
    assert.equal(r.run.jobs[0]!.finishMs, 20_000);
  });

  test('10 s and 20 s on 1 core end at 20 s and 30 s', () => {
    const r = run([job('job_0001', 0, [task(10_000), task(20_000)])], sharedHost(2, 1));
    assert.deepEqual(attempts(r), [
      ['attempt_0001_m_000000_0', 'w1', 0, 20_000, 'succeeded'],
      ['attempt_0001_m_000001_0', 'w2', 0, 30_000, 'succeeded'],
    ]);
  });

  test('3 maps of 10 s on 2 cores end at 15 s; on 3 hosts of 1 core each at 10 s', () => {
    const r = run([job('job_0001', 0, [task(10_000), task(10_000), task(10_000)])], sharedHost(3, 2));
    assert.deepEqual(
      attempts(r).map((a) => a[3]),
      [15_000, 15_000, 15_000],
    );
    const apart: ClusterShape = {
      name: 'apart',
      workers: [worker('w1', 'r1'), worker('w2', 'r1'), worker('w3', 'r1')],
      hosts: { w1: { cores: 1 }, w2: { cores: 1 }, w3: { cores: 1 } },
    };
    assert.deepEqual(
      attempts(run([job('job_0001', 0, [task(10_000), task(10_000), task(10_000)])], apart)).map((a) => a[3]),
      [10_000, 10_000, 10_000],
    );
  });

  test('a job that starts halfway through another: 15 s and 20 s', () => {
    const r = run([job('job_0001', 0, [task(10_000)]), job('job_0002', 5_000, [task(10_000)])], sharedHost(2, 1));
    assert.deepEqual(attempts(r), [
      ['attempt_0001_m_000000_0', 'w1', 0, 15_000, 'succeeded'],
      ['attempt_0002_m_000000_0', 'w2', 5_000, 20_000, 'succeeded'],
    ]);
  });

  test("a lost worker's attempts leave the host's share", () => {
    // Both maps run at half speed; at 5 s w2 is lost, w1's map has 7.5 s left at full speed (ends
    // 12.5 s) and w2's map re-runs on w1 alone after it (12.5-22.5 s).
    const r = run([job('job_0001', 0, [task(10_000), task(10_000)])], sharedHost(2, 1), {
      failures: { workers: [{ workerId: 'w2', atMs: 5_000 }] },
    });
    assert.deepEqual(attempts(r), [
      ['attempt_0001_m_000001_0', 'w2', 0, 5_000, 'failed'],
      ['attempt_0001_m_000000_0', 'w1', 0, 12_500, 'succeeded'],
      ['attempt_0001_m_000001_1', 'w1', 12_500, 22_500, 'succeeded'],
    ]);
  });

  test('a reduce waiting for the maps takes no share; once released it does', () => {
    // One worker with a map and a reduce slot on a 1-core host. The reduce launches at once
    // (slow start 0) and waits: the maps run at full speed, 0-10 s and 10-20 s; the reduce then
    // works alone, 20-30 s.
    const shape = sharedHost(1, 1, { reduceSlots: 1 });
    const r = run([job('job_0001', 0, [task(10_000), task(10_000)], [task(10_000)])], shape, { reduceSlowStart: 0 });
    assert.deepEqual(attempts(r), [
      ['attempt_0001_m_000000_0', 'w1', 0, 10_000, 'succeeded'],
      ['attempt_0001_m_000001_0', 'w1', 10_000, 20_000, 'succeeded'],
      ['attempt_0001_r_000000_0', 'w1', 0, 30_000, 'succeeded'],
    ]);
    // With two map slots the released reduce shares the core with the second job's map.
    const two = sharedHost(1, 1, { mapSlots: 1, reduceSlots: 1 });
    const r2 = run([job('job_0001', 0, [task(10_000)], [task(10_000)]), job('job_0002', 10_000, [task(10_000)])], two, {
      reduceSlowStart: 0,
    });
    assert.deepEqual(attempts(r2), [
      ['attempt_0001_m_000000_0', 'w1', 0, 10_000, 'succeeded'],
      ['attempt_0001_r_000000_0', 'w1', 0, 30_000, 'succeeded'],
      ['attempt_0002_m_000000_0', 'w1', 10_000, 30_000, 'succeeded'],
    ]);
  });

  test('progress at a heartbeat is the work done, not the time since the start', () => {
    const seen: Array<[number, string, number]> = [];
    const watcher: Policy = {
      name: 'watch',
      consultWhen: 'every-event',
      schedule(s: ClusterSnapshot): readonly Decision[] {
        for (const j of s.jobs) for (const a of j.runningAttempts) seen.push([s.now, a.id, a.progress]);
        return new FifoPolicy().schedule(s);
      },
    };
    simulate({
      workload: { name: 'cpu', jobs: [job('job_0001', 0, [task(10_000), task(10_000)])] },
      cluster: sharedHost(2, 1),
      policy: watcher,
      heartbeatMs: 4_000,
      policyCalls: 'every-event',
    });
    // Heartbeats of w1 at 0, 4, 8 ... s and of w2 at 2, 6, 10 ... s; at 4 s w1 reported 2 s of
    // 10 s done (half speed since 0), w2 at its 2 s heartbeat 1 s.
    const at4 = seen.filter(([t]) => t === 4_000).map(([, id, p]) => [id, p]);
    assert.deepEqual(at4, [
      ['attempt_0001_m_000000_0', 0.2],
      ['attempt_0001_m_000001_0', 0.1],
    ]);
  });

  test('a failed map read part of its input: the share of the work it did', () => {
    // Two maps with 100 MiB of remote input each on a 1-core host; the first is killed by its
    // worker's loss at 5 s, after 2.5 s of its run at half speed.
    const input = { inputBytes: 100 * MiB, replicas: ['w9'] };
    const shape: ClusterShape = {
      ...sharedHost(2, 1),
      workers: [...sharedHost(2, 1).workers, worker('w9', 'r1', { mapSlots: 0, reduceSlots: 0 })],
    };
    const r = run([job('job_0001', 0, [task(9_000, input), task(9_000, input)])], shape, {
      failures: { workers: [{ workerId: 'w1', atMs: 5_000 }] },
      rackMBps: 100,
    });
    const lost = r.run.attempts.find((a) => a.outcome === 'failed')!;
    // Each map's run: 9 s of work plus 1 s reading 100 MiB at 100 MiB/s = 10 s; a quarter done.
    assert.equal(lost.bytesRead, 25 * MiB);
  });
});

describe('without CPU sharing nothing changes', () => {
  const workload = tyrexWorkload({ variant: 'hvw', load: 0.7, seed: 3, scale: 0.1 });
  const base = clusterPreset('tyrex-20');
  const strip = (r: ReturnType<typeof simulate>) => JSON.stringify({ ...r, run: { ...r.run, cluster: '' } });

  test('no hosts listed, or hosts with a core for every slot: the same run as without', () => {
    const options = {
      workload,
      policy: new FifoPolicy(),
      reduceSlowStart: 0.05,
      noise: 0.2,
      failures: { attemptFailureProbability: 0.05 },
    };
    const without = simulate({ ...options, cluster: base });
    const none = simulate({ ...options, policy: new FifoPolicy(), cluster: { ...base, hosts: {} } });
    const plenty = simulate({
      ...options,
      policy: new FifoPolicy(),
      cluster: {
        ...base,
        hosts: Object.fromEntries(base.workers.map((w) => [w.id, { cores: w.mapSlots + w.reduceSlots }])),
      },
    });
    assert.equal(strip(none), strip(without));
    assert.equal(strip(plenty), strip(without));
  });

  test('too few cores: the same jobs take longer', () => {
    const options = { workload, reduceSlowStart: 0.05 };
    const without = simulate({ ...options, policy: new FifoPolicy(), cluster: base });
    const shared = simulate({
      ...options,
      policy: new FifoPolicy(),
      cluster: { ...base, hosts: Object.fromEntries(base.workers.map((w) => [w.id, { cores: 2 }])) },
    });
    const mean = (r: ReturnType<typeof simulate>) =>
      r.run.jobs.reduce((s, j) => s + (j.finishMs! - j.submitMs), 0) / r.run.jobs.length;
    assert.ok(shared.run.jobs.every((j) => j.state === 'succeeded'));
    assert.ok(mean(shared) > mean(without) * 1.5, `${mean(shared)} vs ${mean(without)}`);
  });
});

describe('cluster JSON: hosts', () => {
  const workers = [
    { id: 'w1', rack: 'r1', host: 'box', mapSlots: 6, reduceSlots: 2, memoryMb: 4096, diskMBps: 100 },
    { id: 'w2', rack: 'r1', host: 'box', mapSlots: 6, reduceSlots: 2, memoryMb: 4096, diskMBps: 100 },
    { id: 'w3', rack: 'r1', mapSlots: 6, reduceSlots: 2, memoryMb: 4096, diskMBps: 100 },
  ];

  test("hosts by a worker's host or its id, cores may be fractional; absent: no hosts field", () => {
    const shape = parseClusterJson({ name: 'local', workers, hosts: { box: { cores: 2 }, w3: { cores: 1.5 } } });
    assert.deepEqual(shape.hosts, { box: { cores: 2 }, w3: { cores: 1.5 } });
    assert.equal('hosts' in parseClusterJson({ name: 'local', workers }), false);
    assert.deepEqual(readClusterFile(JSON.stringify({ workers, hosts: { box: { cores: 2 } } }), 'c.json').hosts, {
      box: { cores: 2 },
    });
  });

  const rejects = (value: unknown, field: string, message: RegExp) =>
    assert.throws(
      () => parseClusterJson(value, 'c.json'),
      (err: unknown) =>
        err instanceof MinimrError &&
        err.code === 'EBADCONF' &&
        err.details?.field === field &&
        message.test(err.message),
    );

  test('bad hosts are EBADCONF naming the field', () => {
    rejects({ workers, hosts: [] }, 'hosts', /^c\.json: "hosts" must be an object/);
    rejects(
      { workers, hosts: { box: 2 } },
      'cores',
      /"hosts": "box": "cores" must be a positive number, got undefined/,
    );
    rejects({ workers, hosts: { box: { cores: 0 } } }, 'cores', /"cores" must be a positive number, got 0/);
    rejects({ workers, hosts: { box: { cores: '2' } } }, 'cores', /"cores" must be a positive number, got "2"/);
    rejects({ workers, hosts: { bx: { cores: 2 } } }, 'hosts', /"hosts": "bx" is the host of no worker/);
    rejects({ workers: [{ ...workers[0], host: '' }] }, 'host', /worker "w1": "host" must be a non-empty string/);
  });

  test('the simulator checks hosts of a shape built in code too', () => {
    const shape = { name: 'c', workers: [worker('w1', 'r1')], hosts: { w2: { cores: 1 } } };
    assert.throws(
      () => run([job('job_0001', 0, [task(1_000)])], shape),
      (err: unknown) =>
        err instanceof MinimrError &&
        err.code === 'EBADCONF' &&
        /hosts: "w2" is the host of no worker/.test(err.message),
    );
    const zero = { name: 'c', workers: [worker('w1', 'r1')], hosts: { w1: { cores: 0 } } };
    assert.throws(
      () => run([job('job_0001', 0, [task(1_000)])], zero),
      (err: unknown) =>
        err instanceof MinimrError && err.code === 'EBADCONF' && /cores must be a positive number/.test(err.message),
    );
  });
});
