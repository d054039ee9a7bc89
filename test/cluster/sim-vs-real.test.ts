import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '../../src/log.js';
import { LocalCluster } from '../../src/local/index.js';
import {
  createPolicy,
  type ClusterSnapshot,
  type Consultation,
  type Decision,
  type Policy,
  type PolicyOptions,
  type PoolView,
} from '../../src/scheduler/index.js';
import { Simulator } from '../../src/sim/index.js';
import type { JobSpec, TaskSpec } from '../../src/workloads/index.js';
import { appModule, fixtureModule, makeText } from '../helpers/cluster.js';

/**
 * The same policy object type makes the same decisions on the simulator and on a real cluster,
 * for a tiny workload whose order of events does not depend on timing noise: one worker with two
 * map slots and one reduce slot; job A (pool a) has 4 maps of ~3 s each; job B (pool b, minimum
 * share 1 map slot) arrives 0.5 s later with one short map. FAIR must kill A's newest map at
 * T_min to give B its share, then run B, then A's remaining maps, then the reduces. Decisions are
 * compared as (decision, job, task kind, task index), in order.
 */
const POOLS: PoolView[] = [
  { name: 'a', minMapSlots: 0, minReduceSlots: 0, weight: 1, mode: 'fifo' },
  { name: 'b', minMapSlots: 1, minReduceSlots: 0, weight: 1, mode: 'fifo' },
];
const FAIR_OPTIONS: PolicyOptions = {
  minShareTimeoutMs: 1000,
  fairShareTimeoutMs: 2000,
  nodeLocalDelayMs: 0,
  rackLocalDelayMs: 0,
};
const A_MAP_MS = 3000;
const B_ARRIVES_MS = 500;
const BLOCK = 64 * 1024;

type Step = string;

/** Decisions as "launch A m 2" / "kill A m 1", jobs named by submission order. */
function normalize(
  decisions: readonly Decision[],
  jobOrder: readonly string[],
  attemptTask: (attemptId: string) => string,
): Step[] {
  const letter = (jobId: string) => String.fromCharCode(65 + jobOrder.indexOf(jobId));
  const taskOf = (taskId: string) => {
    const m = /_(m|r)_(\d+)$/.exec(taskId);
    return m ? `${m[1]} ${Number(m[2])}` : taskId;
  };
  const out: Step[] = [];
  for (const d of decisions) {
    if (d.kind === 'launch') out.push(`launch ${letter(d.jobId)} ${taskOf(d.taskId)}`);
    else if (d.kind === 'kill') {
      const taskId = attemptTask(d.attemptId);
      const jobId = jobOrder.find((j) => taskId.includes(j.replace(/^job_/, ''))) ?? '?';
      out.push(`kill ${letter(jobId)} ${taskOf(taskId)}`);
    }
  }
  return out;
}

class Recorder implements Policy {
  readonly name: string;
  readonly decisions: Decision[] = [];
  readonly attemptTask = new Map<string, string>();
  constructor(private readonly inner: Policy) {
    this.name = inner.name;
  }
  get consultWhen(): Consultation {
    return this.inner.consultWhen;
  }
  schedule(snapshot: ClusterSnapshot): readonly Decision[] {
    for (const j of snapshot.jobs) for (const a of j.runningAttempts) this.attemptTask.set(a.id, a.taskId);
    const d = this.inner.schedule(snapshot);
    this.decisions.push(...d);
    return d;
  }
}

describe('simulator and real cluster: same decisions for the same tiny workload', () => {
  let dir: string;
  let cluster: LocalCluster;
  const recorder = new Recorder(createPolicy('fair', FAIR_OPTIONS));
  // Lines per 64 KiB block, for the A maps' delay: ~A_MAP_MS each.
  const textA = makeText(4 * BLOCK - 200, 3);
  const textB = makeText(BLOCK / 2, 4);

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'minimr-sim-vs-real-'));
    cluster = await LocalCluster.start({
      dataDir: dir,
      workers: 1,
      mapSlots: 2,
      reduceSlots: 1,
      blockSize: BLOCK,
      replication: 1,
      heartbeatMs: 250,
      policy: recorder,
      pools: POOLS,
      logger: createLogger('sim-vs-real', process.env.MINIMR_LOG_LEVEL ?? 'error'),
      workerLogLevel: process.env.MINIMR_LOG_LEVEL ?? 'error',
    });
    await cluster.client.fs.put(Buffer.from(textA), '/in/a.txt');
    await cluster.client.fs.put(Buffer.from(textB), '/in/b.txt');
  });
  after(async () => {
    await cluster?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('FAIR: same launches and kills, in the same order', async () => {
    const linesPerMap = textA.split('\n').length / 4;
    // slow-wordcount sleeps mapDelayMs every 100 lines.
    const mapDelayMs = Math.round(A_MAP_MS / (linesPerMap / 100));
    const a = await cluster.client.submit(fixtureModule('slow-wordcount'), {
      input: ['/in/a.txt'],
      output: '/out/a',
      reducers: 1,
      pool: 'a',
      params: { mapDelayMs },
    });
    await new Promise((r) => setTimeout(r, B_ARRIVES_MS));
    const b = await cluster.client.submit(appModule('wordcount'), {
      input: ['/in/b.txt'],
      output: '/out/b',
      reducers: 1,
      pool: 'b',
    });
    const [sa, sb] = await Promise.all([cluster.client.waitForCompletion(a), cluster.client.waitForCompletion(b)]);
    assert.equal(sa.state, 'succeeded');
    assert.equal(sb.state, 'succeeded');
    assert.equal(sa.mapsTotal, 4);
    const real = normalize(recorder.decisions, [a, b], (id) => recorder.attemptTask.get(id) ?? id);

    const map = (workMs: number): TaskSpec => ({
      workMs,
      memoryMb: 200,
      inputBytes: BLOCK,
      outputBytes: BLOCK / 4,
      replicas: ['worker-0'],
    });
    const reduce: TaskSpec = { workMs: 300, memoryMb: 200 };
    const jobs: JobSpec[] = [
      {
        id: 'job_0001',
        name: 'A',
        app: 'wordcount',
        pool: 'a',
        submitMs: 0,
        maps: [map(A_MAP_MS), map(A_MAP_MS), map(A_MAP_MS), map(A_MAP_MS)],
        reduces: [reduce],
      },
      {
        id: 'job_0002',
        name: 'B',
        app: 'wordcount',
        pool: 'b',
        submitMs: B_ARRIVES_MS,
        maps: [map(300)],
        reduces: [reduce],
      },
    ];
    const simPolicy = new Recorder(createPolicy('fair', FAIR_OPTIONS));
    const result = new Simulator({
      workload: { name: 'tiny', jobs, pools: POOLS },
      cluster: {
        name: 'one',
        workers: [{ id: 'worker-0', rack: '/rack-0', mapSlots: 2, reduceSlots: 1, memoryMb: 2048, diskMBps: 100 }],
      },
      policy: simPolicy,
      heartbeatMs: 250,
      recordDecisions: true,
    }).run();
    assert.ok(result.run.jobs.every((j) => j.state === 'succeeded'));
    const sim = normalize(simPolicy.decisions, ['job_0001', 'job_0002'], (id) => simPolicy.attemptTask.get(id) ?? id);

    // The scenario does what it is meant to: a kill of A's newest map, B's map right after.
    assert.ok(sim.includes('kill A m 1'), `simulated decisions: ${sim.join(', ')}`);
    assert.ok(sim.indexOf('launch B m 0') > sim.indexOf('kill A m 1'));
    assert.deepEqual(real, sim);
  });
});
