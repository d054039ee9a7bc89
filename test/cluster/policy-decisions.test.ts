import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FifoPolicy, type ClusterSnapshot, type Decision, type Policy } from '../../src/scheduler/index.js';
import {
  appModule,
  makeText,
  parseCounts,
  readOutput,
  referenceWordCount,
  startTestCluster,
  type TestCluster,
} from '../helpers/cluster.js';

/**
 * The decisions beyond launch and kill on a real cluster. A scripted policy wraps FIFO: it migrates
 * the job once, and holds map 0 back until a `replicate` decision has put its input on a worker
 * that did not hold it, then runs it there. The JobTracker must record the migration, copy the
 * blocks, show the new replica in later snapshots, and the map must then read only local bytes.
 */
class PlacementScript implements Policy {
  readonly name = 'placement-script';
  readonly consultWhen = 'every-event';
  private readonly fifo = new FifoPolicy();
  target: string | undefined;
  migrated = false;
  sawLocal = false;
  readonly inputBytesOf = new Map<string, number>();

  schedule(snapshot: ClusterSnapshot): readonly Decision[] {
    const job = snapshot.jobs[0];
    if (!job) return [];
    const out: Decision[] = [];
    if (!this.migrated) {
      this.migrated = true;
      out.push({ kind: 'migrate', jobId: job.id, toPartition: 1, partialSizeMs: job.stats.completedMapMs, timerMs: 0 });
    }
    const m0 = job.pendingTasks.find((t) => t.kind === 'map' && t.index === 0);
    if (m0) {
      this.inputBytesOf.set(m0.id, m0.inputBytes);
      this.target ??= snapshot.workers.find((w) => !m0.preferredWorkers.includes(w.id))?.id;
      assert.ok(this.target, 'some worker must lack a replica of map 0 (replication 2 on 3 workers)');
      if (!m0.preferredWorkers.includes(this.target)) {
        if (out.length === 1 || snapshot.trigger.kind === 'job-submitted')
          out.push({ kind: 'replicate', taskId: m0.id, jobId: job.id, workerId: this.target });
      } else {
        this.sawLocal = true;
        const w = snapshot.workers.find((x) => x.id === this.target)!;
        if (w.freeMapSlots > 0 && w.freeMemoryMb >= m0.memoryMb) {
          out.push({
            kind: 'launch',
            taskId: m0.id,
            jobId: job.id,
            workerId: w.id,
            memoryMb: m0.memoryMb,
            locality: 'node',
          });
          return out;
        }
      }
    }
    // Everything else as FIFO would, minus map 0 (held back) and the target's slots it needs.
    const others = {
      ...snapshot,
      jobs: snapshot.jobs.map((j) => ({ ...j, pendingTasks: j.pendingTasks.filter((t) => t.id !== m0?.id) })),
    };
    return [
      ...out,
      ...this.fifo.schedule(others).filter((d) => !(m0 && d.kind === 'launch' && d.workerId === this.target)),
    ];
  }
}

describe('migrate, replicate and read locality on a real cluster', () => {
  let t: TestCluster;
  const policy = new PlacementScript();
  const text = makeText(400_000, 11);

  before(async () => {
    t = await startTestCluster({ policy });
    await t.fs.put(Buffer.from(text), '/in/text.txt');
  });
  after(async () => {
    await t?.stop();
  });

  it('records the migration, places the replica, and the held-back map reads only local bytes', async () => {
    const status = await t.cluster.client.run(appModule('wordcount'), {
      input: ['/in/text.txt'],
      output: '/out/wc',
      reducers: 2,
    });
    assert.equal(status.state, 'succeeded');
    const got = parseCounts((await readOutput(t.fs, '/out/wc')).toString('utf8'));
    assert.deepEqual(got, referenceWordCount(text));

    assert.equal(status.partition, 1);
    assert.equal(status.migrations.length, 1);
    assert.deepEqual({ from: status.migrations[0]!.from, to: status.migrations[0]!.to }, { from: 0, to: 1 });
    assert.ok(policy.sawLocal, 'a later snapshot showed map 0 as local on the target worker');
    assert.ok((status.counters.PLACEMENT_BYTES ?? 0) > 0);

    const attempts = await t.cluster.client.attempts(status.jobId);
    const m0 = attempts.find((a) => a.kind === 'map' && /_m_000000_/.test(a.attemptId) && a.state === 'succeeded');
    assert.ok(m0);
    assert.equal(m0.workerId, policy.target);
    const m0Bytes = [...policy.inputBytesOf.values()][0]!;
    // A split's reader may run past its end to finish its last line, so local bytes >= split length.
    assert.ok(
      (m0.counters.BYTES_READ_LOCAL ?? 0) >= m0Bytes,
      `local bytes ${m0.counters.BYTES_READ_LOCAL} < split ${m0Bytes}`,
    );
    assert.equal((m0.counters.BYTES_READ_RACK ?? 0) + (m0.counters.BYTES_READ_OFF_RACK ?? 0), 0);

    // Every map's bytes are accounted for in exactly one locality bucket.
    let total = 0;
    for (const a of attempts.filter((x) => x.kind === 'map' && x.state === 'succeeded')) {
      const c = a.counters;
      total += (c.BYTES_READ_LOCAL ?? 0) + (c.BYTES_READ_RACK ?? 0) + (c.BYTES_READ_OFF_RACK ?? 0);
      assert.ok(
        (c.MAP_INPUT_BYTES ?? 0) <=
          (c.BYTES_READ_LOCAL ?? 0) + (c.BYTES_READ_RACK ?? 0) + (c.BYTES_READ_OFF_RACK ?? 0) + 1,
      );
    }
    assert.ok(total >= Buffer.byteLength(text));
  });
});

/**
 * A private data set arriving with its job (`inputPlacement`): written with one replica, owing a
 * second. The script places map 0's owed replica, then asks for one more copy of it (no longer
 * owed: an extra copy). The JobTracker must show the owed replicas in snapshots, record the causes,
 * and when the job ends (before its long window) write every other owed replica on a rack-mate,
 * so each block ends with two replicas.
 */
class OwedReplicaScript implements Policy {
  readonly name = 'owed-replica-script';
  readonly consultWhen = 'every-event';
  private readonly fifo = new FifoPolicy();
  /** unplacedReplicas of every pending map in the first snapshot of the job. */
  firstOwed: number[] | undefined;
  placedOn: string | undefined;
  extraOn: string | undefined;

  schedule(snapshot: ClusterSnapshot): readonly Decision[] {
    const job = snapshot.jobs[0];
    if (!job) return [];
    const maps = job.pendingTasks.filter((t) => t.kind === 'map');
    this.firstOwed ??= maps.map((t) => t.unplacedReplicas ?? 0);
    const m0 = maps.find((t) => t.index === 0);
    const out: Decision[] = [];
    const lacking = (t: NonNullable<typeof m0>) =>
      snapshot.workers.find((w) => !t.preferredWorkers.includes(w.id) && w.id !== this.placedOn)?.id;
    if (m0 && this.placedOn === undefined) {
      this.placedOn = lacking(m0);
      out.push({ kind: 'replicate', taskId: m0.id, jobId: job.id, workerId: this.placedOn! });
    } else if (m0 && this.extraOn === undefined && m0.preferredWorkers.includes(this.placedOn!)) {
      assert.equal(m0.unplacedReplicas ?? 0, 0, 'a placed replica is no longer owed');
      this.extraOn = lacking(m0);
      out.push({ kind: 'replicate', taskId: m0.id, jobId: job.id, workerId: this.extraOn! });
    }
    // Map 0 waits for its two copies; everything else runs as FIFO would.
    const others = {
      ...snapshot,
      jobs: snapshot.jobs.map((j) => ({
        ...j,
        pendingTasks: j.pendingTasks.filter((t) => t.id !== m0?.id || this.extraOn !== undefined),
      })),
    };
    return [...out, ...this.fifo.schedule(others)];
  }
}

describe('owed replicas of a private data set on a real cluster', () => {
  let t: TestCluster;
  const policy = new OwedReplicaScript();
  const text = makeText(400_000, 12);

  before(async () => {
    t = await startTestCluster({ policy });
    await t.fs.put(Buffer.from(text), '/in/private.txt', { replication: 1 });
  });
  after(async () => {
    await t?.stop();
  });

  it('places, copies extra, and completes the rest on a rack-mate when the job ends', async () => {
    const status = await t.cluster.client.run(appModule('wordcount'), {
      input: ['/in/private.txt'],
      output: '/out/private',
      reducers: 1,
      inputPlacement: { replication: 2, windowMs: 600_000 },
    });
    assert.equal(status.state, 'succeeded');
    assert.deepEqual(parseCounts((await readOutput(t.fs, '/out/private')).toString('utf8')), referenceWordCount(text));
    const blocks = await t.fs.getBlocks('/in/private.txt');
    assert.ok(blocks.length >= 3, `blocks: ${blocks.length}`);
    assert.deepEqual(
      policy.firstOwed,
      blocks.map(() => 1),
      'every map owed one replica at first',
    );

    const log = t.cluster.jobTracker.placementLog;
    const deadline = Date.now() + 10_000;
    while (log.filter((r) => r.cause === 'completed').length < blocks.length - 1 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    const m0 = log.filter((r) => /_m_000000$/.test(r.taskId));
    assert.deepEqual(
      m0.map((r) => [r.cause, r.workerId]),
      [
        ['placed', policy.placedOn],
        ['extra', policy.extraOn],
      ],
    );
    const completed = log.filter((r) => r.cause === 'completed');
    assert.equal(completed.length, blocks.length - 1, 'one completion per other block');
    assert.ok(completed.every((r) => !/_m_000000$/.test(r.taskId)));
    // Extra copies are counted as placement traffic; completions belong to the upload, not the job.
    assert.equal(
      status.counters.PLACEMENT_BYTES,
      m0.reduce((s, r) => s + r.bytes, 0),
    );

    const after = Date.now() + 10_000;
    let replicas: number[] = [];
    while (Date.now() < after) {
      replicas = (await t.fs.getBlocks('/in/private.txt')).map((b) => b.locations.length);
      if (replicas.slice(1).every((n) => n === 2)) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.deepEqual(
      replicas,
      [3, ...blocks.slice(1).map(() => 2)],
      'block 0: holder, placed and extra; the rest: holder and completed',
    );
  });
});

/**
 * A replicate for a map whose input has no live replica: nothing can be copied, so the books refuse it
 * (the target must never join the map's preferred workers: a later snapshot would show a remote read as
 * local), and a policy that asks for it has broken the contract: the JobTracker stops scheduling.
 */
class ReplicateFromNowhere implements Policy {
  readonly name = 'replicate-from-nowhere';
  readonly consultWhen = 'every-event';
  asked = false;
  /** Map 0's preferred workers in every snapshot after the replicate. */
  readonly seen: string[][] = [];

  schedule(snapshot: ClusterSnapshot): readonly Decision[] {
    const job = snapshot.jobs[0];
    const m0 = job?.pendingTasks.find((t) => t.kind === 'map' && t.index === 0);
    if (!job || !m0) return [];
    if (this.asked) {
      this.seen.push([...m0.preferredWorkers]);
      return [];
    }
    this.asked = true;
    return [{ kind: 'replicate', taskId: m0.id, jobId: job.id, workerId: 'worker-1' }];
  }
}

describe('replicate with no live source on a real cluster', () => {
  let t: TestCluster;
  const policy = new ReplicateFromNowhere();

  before(async () => {
    t = await startTestCluster({ policy });
    await t.fs.put(Buffer.from(makeText(100_000, 13)), '/in/lost.txt', {
      replication: 1,
      favoredWorkers: ['worker-0'],
    });
    await t.cluster.killWorker(0);
    const deadline = Date.now() + 10_000;
    while (
      t.cluster.jobTracker.snapshot({ kind: 'tick' }).workers.some((w) => w.id === 'worker-0') &&
      Date.now() < deadline
    )
      await new Promise((r) => setTimeout(r, 50));
  });
  after(async () => {
    await t?.stop();
  });

  it('copies nothing: the replicate is refused as invalid, and scheduling stops saying so', async () => {
    const jobId = await t.cluster.client.submit(appModule('wordcount'), {
      input: ['/in/lost.txt'],
      output: '/out/lost',
      reducers: 1,
    });
    const deadline = Date.now() + 5_000;
    let status = await t.cluster.client.status(jobId);
    while (status.schedulingStopped === undefined && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      status = await t.cluster.client.status(jobId);
    }
    await t.cluster.client.kill(jobId);
    assert.ok(policy.asked);
    assert.match(
      status.schedulingStopped ?? '',
      /rule valid-decisions: decision 0: task \S+_m_000000 has no stored input to replicate; decision \{"kind":"replicate"/,
    );
    assert.deepEqual(policy.seen, [], 'a policy that broke the contract is not asked again');
    assert.deepEqual(t.cluster.jobTracker.placementLog, []);
  });
});
