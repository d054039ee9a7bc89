import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import {
  assertCountsEqual,
  appModule,
  fixtureModule,
  makeText,
  readAll,
  readOutput,
  startTestCluster,
  waitFor,
  type TestCluster,
} from '../helpers/cluster.js';
import { startGate } from '../helpers/gate.js';

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

interface LogEntry {
  readonly msg?: string;
  readonly worker?: string;
  readonly workerId?: string;
  readonly attempt?: string;
  readonly attempts?: readonly string[];
}

/** A logger at `level` whose entries land in `entries` (the JobTracker runs in this process). */
function capturingLogger(entries: LogEntry[], level = 'info') {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) entries.push(JSON.parse(line) as LogEntry);
      done();
    },
  });
  return pino({ level }, sink);
}

/** The blocks each worker holds, as the NameNode lists them. */
async function replicasOf(t: TestCluster, workerId: string): Promise<string[]> {
  const report = await t.cluster.client.fsck('/');
  return report.files
    .flatMap((f) => f.blocks)
    .filter((b) => b.replicas.includes(workerId))
    .map((b) => b.blockId)
    .sort();
}

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

describe('a worker connected but silent (SIGSTOP) is suspect, not lost', () => {
  it(
    'a worker stopped for 10 s with the default expiries: nothing is re-replicated, it gets no new work, ' +
      'reads and writes go around it, and the jobs’ output is right',
    async () => {
      const log: LogEntry[] = [];
      // Heartbeats every 200 ms: suspect after 1 s of silence; task expiry 60 s and datanode expiry 10 min (defaults).
      const t = await startTestCluster({ logger: capturingLogger(log) });
      const jt = t.cluster.jobTracker;
      const victim = t.cluster.workers[1]!;
      try {
        const text = makeText(400_000, 11);
        await t.fs.put(Buffer.from(text), '/in/running.txt');
        const small = makeText(50_000, 12);
        await t.fs.put(Buffer.from(small), '/in/small.txt');
        const heldBefore = await replicasOf(t, victim.workerId);
        assert.ok(heldBefore.length > 0, 'the worker to stop holds replicas');
        const replicationsBefore = jt.namenode.replicationWorkHandedOut;

        // A job running when the worker stops: its attempts there wait for it (the task expiry is a minute away).
        const running = await t.cluster.client.submit(fixtureModule('slow-wordcount'), {
          input: ['/in/running.txt'],
          output: '/out/running',
          params: { mapDelayMs: 100 },
        });
        await waitFor('an attempt on the worker to stop', () =>
          (jt.books.worker(victim.workerId)?.running.size ?? 0) > 0 ? true : undefined,
        );
        const stoppedAt = Date.now();
        victim.process.kill('SIGSTOP');
        try {
          await waitFor('the stopped worker suspect', () => (jt.books.isSuspect(victim.workerId) ? true : undefined));
          // Reads go to the other replica first, writes to other datanodes: neither waits for the stopped one.
          assert.equal((await readAll(t.fs.cat('/in/small.txt'))).toString(), small);
          await t.fs.put(Buffer.from(small), '/in/written-meanwhile.txt');
          const written = await t.cluster.client.fsck('/in/written-meanwhile.txt');
          assert.ok(
            written.files[0]!.blocks.every((b) => !b.replicas.includes(victim.workerId)),
            'no new block on the suspect worker',
          );
          // A job submitted meanwhile runs on the others only.
          const meanwhile = await t.cluster.client.run(appModule('wordcount'), {
            input: ['/in/small.txt'],
            output: '/out/meanwhile',
          });
          assert.equal(meanwhile.state, 'succeeded');
          assertCountsEqual(await readOutput(t.fs, '/out/meanwhile'), small);
          const job = jt.books.job(meanwhile.jobId)!;
          for (const task of [...job.maps, ...job.reduces])
            for (const a of task.attempts)
              assert.notEqual(a.worker.shape.id, victim.workerId, `${a.id} ran on the suspect worker`);
          await sleep(Math.max(0, stoppedAt + 10_000 - Date.now()));
          assert.equal(jt.books.isSuspect(victim.workerId), true, 'still suspect, not lost, after 10 s');
        } finally {
          victim.process.kill('SIGCONT');
        }
        await waitFor('the worker heard from again', () => (jt.books.isSuspect(victim.workerId) ? undefined : true));
        const status = await t.cluster.client.waitForCompletion(running);
        assert.equal(status.state, 'succeeded');
        assertCountsEqual(await readOutput(t.fs, '/out/running'), text);
        assert.equal(jt.namenode.replicationWorkHandedOut, replicationsBefore, 'no block was re-replicated');
        assert.deepEqual(
          log.filter((e) => e.msg === 'worker lost' || e.msg === 'datanode lost'),
          [],
          'the worker was never lost',
        );
        const heldAfter = await replicasOf(t, victim.workerId);
        for (const blockId of heldBefore)
          assert.ok(heldAfter.includes(blockId), `${blockId} kept on the stopped worker`);
        assert.equal((await t.cluster.client.clusterInfo()).workers.length, 3);
      } finally {
        victim.process.kill('SIGCONT');
        await t.stop();
      }
    },
  );

  it('stopped past --task-expiry-ms (set short), its attempts run elsewhere; back, it has the stale ones killed', async () => {
    const log: LogEntry[] = [];
    const gate = await startGate();
    const t = await startTestCluster({ logger: capturingLogger(log), taskExpiryMs: 3000 });
    const jt = t.cluster.jobTracker;
    let stopped: (typeof t.cluster.workers)[number] | undefined;
    try {
      // 4 maps: the stopped worker takes 2 at most, so the others have room to re-run them at once.
      const text = makeText(200_000, 13);
      await t.fs.put(Buffer.from(text), '/in/text.txt');
      const replicationsBefore = jt.namenode.replicationWorkHandedOut;
      // Every map attempt waits at the gate until the test opens it: none can end before the worker is back.
      const jobId = await t.cluster.client.submit(fixtureModule('gated-wordcount'), {
        input: ['/in/text.txt'],
        output: '/out/expired',
        params: { gateUrl: gate.url },
      });
      // A worker running some of them is stopped once all 4 wait at the gate in their task processes: it
      // has read their launches, so what the JobTracker gives up is what runs there.
      const { victim, onVictim } = await waitFor('the 4 maps at the gate', () => {
        const maps = jt.books.job(jobId)?.running.filter((a) => a.task.kind === 'map') ?? [];
        if (maps.length !== 4 || !maps.every((a) => gate.held.has(a.id))) return undefined;
        const victim = t.cluster.workers.find((w) => maps.some((a) => a.worker.shape.id === w.workerId))!;
        const onVictim = maps.filter((a) => a.worker.shape.id === victim.workerId).map((a) => a.id);
        return { victim, onVictim: onVictim.sort() };
      });
      const job = jt.books.job(jobId)!;
      const taskOf = (attemptId: string) => job.maps.find((task) => task.attempts.some((a) => a.id === attemptId))!;
      stopped = victim;
      victim.process.kill('SIGSTOP');
      try {
        const expired = await waitFor('the task expiry', () =>
          log.find((e) => e.msg === 'worker silent past the task expiry: its attempts run again elsewhere'),
        );
        assert.equal(expired.worker, victim.workerId);
        assert.deepEqual([...(expired.attempts ?? [])].sort(), onVictim);
        // Their tasks run again on the other workers (at the gate too).
        await waitFor('the expired tasks running elsewhere', () =>
          onVictim.every((id) =>
            taskOf(id).attempts.some(
              (a) => a.id !== id && a.worker.shape.id !== victim.workerId && gate.held.has(a.id),
            ),
          )
            ? true
            : undefined,
        );
        assert.deepEqual(
          onVictim.filter((id) => gate.gone.has(id)),
          [],
          'the given-up attempts still run on the stopped worker',
        );
      } finally {
        victim.process.kill('SIGCONT');
      }
      // Back, it is told to kill them: their processes end (their requests at the gate close unanswered).
      await waitFor(
        'the stale attempts killed on the worker',
        () => (onVictim.every((id) => gate.gone.has(id)) ? true : undefined),
        20_000,
      );
      const killed = log
        .filter((e) => e.msg === 'killing an attempt given up while its worker was silent (it ran again elsewhere)')
        .map((e) => e.attempt)
        .sort();
      assert.deepEqual(killed, onVictim, 'the JobTracker had each stale attempt killed, once');
      // Nothing else ended them: the worker kills its attempts itself only when it loses the JobTracker.
      assert.deepEqual(
        log.filter((e) => e.msg === 'worker lost'),
        [],
        'the worker stayed connected',
      );
      assert.equal(jt.books.isSuspect(victim.workerId), false, 'the worker was heard from again');
      gate.open();
      const status = await t.cluster.client.waitForCompletion(jobId);
      assert.equal(status.state, 'succeeded');
      assertCountsEqual(await readOutput(t.fs, '/out/expired'), text);
      for (const id of onVictim) {
        const task = taskOf(id);
        const given = task.attempts.find((a) => a.id === id)!;
        assert.equal(given.state, 'killed');
        assert.equal(given.error?.code, 'EWORKERLOST');
        assert.ok(task.successfulAttempt, `${task.id} succeeded`);
        assert.notEqual(task.successfulAttempt.id, id, `${task.id} succeeded by another attempt`);
      }
      assert.equal(jt.namenode.replicationWorkHandedOut, replicationsBefore, 'its blocks were not re-replicated');
      assert.equal((await t.cluster.client.clusterInfo()).workers.length, 3);
    } finally {
      stopped?.process.kill('SIGCONT');
      await t.stop();
      await gate.close();
    }
  });
});
