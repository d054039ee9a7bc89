import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FifoPolicy, type ClusterSnapshot, type Decision, type Policy } from '../../src/scheduler/index.js';
import { appModule, makeText, parseCounts, readOutput, referenceWordCount, startTestCluster, type TestCluster } from '../helpers/cluster.js';

/**
 * The decisions beyond launch and kill on a real cluster. A scripted policy wraps FIFO: it migrates
 * the job once, and holds map 0 back until a `replicate` decision has put its input on a worker
 * that did not hold it, then runs it there. The JobTracker must record the migration, copy the
 * blocks, show the new replica in later snapshots, and the map must then read only local bytes.
 */
class PlacementScript implements Policy {
  readonly name = 'placement-script';
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
        if (out.length === 1 || snapshot.trigger.kind === 'job-submitted') out.push({ kind: 'replicate', taskId: m0.id, jobId: job.id, workerId: this.target });
      } else {
        this.sawLocal = true;
        const w = snapshot.workers.find((x) => x.id === this.target)!;
        if (w.freeMapSlots > 0 && w.freeMemoryMb >= m0.memoryMb) {
          out.push({ kind: 'launch', taskId: m0.id, jobId: job.id, workerId: w.id, memoryMb: m0.memoryMb, locality: 'node' });
          return out;
        }
      }
    }
    // Everything else as FIFO would, minus map 0 (held back) and the target's slots it needs.
    const others = { ...snapshot, jobs: snapshot.jobs.map((j) => ({ ...j, pendingTasks: j.pendingTasks.filter((t) => t.id !== m0?.id) })) };
    return [...out, ...this.fifo.schedule(others).filter((d) => !(m0 && d.kind === 'launch' && d.workerId === this.target))];
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
    const status = await t.cluster.client.run(appModule('wordcount'), { input: ['/in/text.txt'], output: '/out/wc', reducers: 2 });
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
    assert.ok((m0.counters.BYTES_READ_LOCAL ?? 0) >= m0Bytes, `local bytes ${m0.counters.BYTES_READ_LOCAL} < split ${m0Bytes}`);
    assert.equal((m0.counters.BYTES_READ_RACK ?? 0) + (m0.counters.BYTES_READ_OFF_RACK ?? 0), 0);

    // Every map's bytes are accounted for in exactly one locality bucket.
    let total = 0;
    for (const a of attempts.filter((x) => x.kind === 'map' && x.state === 'succeeded')) {
      const c = a.counters;
      total += (c.BYTES_READ_LOCAL ?? 0) + (c.BYTES_READ_RACK ?? 0) + (c.BYTES_READ_OFF_RACK ?? 0);
      assert.ok((c.MAP_INPUT_BYTES ?? 0) <= (c.BYTES_READ_LOCAL ?? 0) + (c.BYTES_READ_RACK ?? 0) + (c.BYTES_READ_OFF_RACK ?? 0) + 1);
    }
    assert.ok(total >= Buffer.byteLength(text));
  });
});
