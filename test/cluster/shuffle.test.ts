import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  profileJob,
  profileMarkdown,
  profileChart,
  type AttemptSummary,
  type JobConf,
  type ProfilePoint,
} from '../../src/runtime/index.js';
import { lineChart } from '../../src/util/index.js';
import {
  appModule,
  fixtureModule,
  makeText,
  parseCounts,
  readOutput,
  referenceWordCount,
  startTestCluster,
  waitFor,
  type TestCluster,
} from '../helpers/cluster.js';

const KiB = 1024;
const MiB = 1024 * KiB;

async function filesUnder(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir, { recursive: true, withFileTypes: true }))
      .filter((e) => e.isFile())
      .map((e) => join(e.parentPath, e.name));
  } catch (err) {
    // Gone (or going) while we looked: nothing left.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

function buffers(bytes: number, extra: JobConf = {}): JobConf {
  return {
    'shuffle.map.bufferBytes': Math.max(64 * KiB, Math.floor(bytes)),
    'shuffle.reduce.bufferBytes': Math.max(64 * KiB, Math.floor(bytes)),
    ...extra,
  };
}

function counter(attempts: AttemptSummary[], kind: 'map' | 'reduce', name: string): number {
  return attempts
    .filter((a) => a.kind === kind && a.state === 'succeeded')
    .reduce((s, a) => s + (a.counters[name] ?? 0), 0);
}

/**
 * The external sort on a real cluster: buffers far smaller than the data must change how much is
 * spilled and merged, never the output.
 */
describe('memory-bounded shuffle on a 3-worker cluster', () => {
  let t: TestCluster;
  const text = makeText(3_000_000, 17);
  const textBytes = Buffer.byteLength(text);
  const rows = 40_000;

  before(async () => {
    t = await startTestCluster({ blockSize: 1024 * KiB });
    await t.fs.put(Buffer.from(text), '/in/text.txt');
    await t.cluster.client.run(appModule('teragen'), { output: '/tera/in', params: { rows, maps: 4 } });
  });
  after(async () => {
    await t?.stop();
  });

  it('WordCount output is byte-identical with buffers of the whole data, 1/8 and 1/64 of it', async () => {
    const outputs: Buffer[] = [];
    const spilled: number[] = [];
    for (const [i, fraction] of [1, 1 / 8, 1 / 64].entries()) {
      const status = await t.cluster.client.run(appModule('wordcount'), {
        input: ['/in/text.txt'],
        output: `/out/wc-${i}`,
        reducers: 2,
        conf: buffers(textBytes * 4 * fraction),
      });
      outputs.push(await readOutput(t.fs, `/out/wc-${i}`));
      spilled.push(status.counters.SPILLS ?? 0);
    }
    assert.ok(
      outputs[0]!.equals(outputs[1]!) && outputs[0]!.equals(outputs[2]!),
      'outputs differ between buffer sizes',
    );
    assert.deepEqual(parseCounts(outputs[0]!.toString('utf8')), referenceWordCount(text));
    assert.ok(spilled[2]! > spilled[0]!, `small buffers must spill more (spills: ${spilled.join(', ')})`);
  });

  it('TeraSort output is byte-identical with buffers of the whole data, 1/8 and 1/64 of it, and sorted', async () => {
    const dataBytes = rows * 100;
    const outputs: Buffer[] = [];
    const groups: number[] = [];
    let smallest: AttemptSummary[] = [];
    let smallestBuffer = 0;
    for (const [i, fraction] of [1, 1 / 8, 1 / 64].entries()) {
      const conf = buffers(dataBytes * 2 * fraction);
      const status = await t.cluster.client.run(appModule('terasort'), {
        input: ['/tera/in'],
        output: `/tera/out-${i}`,
        reducers: 2,
        conf,
      });
      outputs.push(await readOutput(t.fs, `/tera/out-${i}`));
      groups.push(status.counters.REDUCE_INPUT_GROUPS ?? -1);
      if (fraction < 0.1) {
        smallest = await t.cluster.client.attempts(status.jobId);
        smallestBuffer = conf['shuffle.map.bufferBytes']!;
      }
    }
    assert.ok(
      outputs[0]!.equals(outputs[1]!) && outputs[0]!.equals(outputs[2]!),
      'outputs differ between buffer sizes',
    );
    const input = await readOutput(t.fs, '/tera/in');
    const want: Buffer[] = [];
    for (let i = 0; i < rows; i++) want.push(input.subarray(i * 100, (i + 1) * 100));
    want.sort((a, b) => Buffer.compare(a.subarray(0, 10), b.subarray(0, 10)) || Buffer.compare(a, b));
    const keysOut = Array.from({ length: rows }, (_, i) => outputs[0]!.subarray(i * 100, i * 100 + 10));
    assert.deepEqual(
      keysOut,
      want.map((r) => r.subarray(0, 10)),
    );
    // The reduce copies the merged records out as they are and counts a group per distinct key.
    const distinctKeys = new Set(want.map((r) => r.toString('hex', 0, 10))).size;
    assert.deepEqual(groups, [distinctKeys, distinctKeys, distinctKeys], 'reduce input groups = distinct keys');
    assert.ok(
      counter(smallest, 'map', 'SPILLS') > smallest.filter((a) => a.kind === 'map' && a.state === 'succeeded').length,
      'maps spilled more than once',
    );
    assert.ok(counter(smallest, 'reduce', 'SPILLED_BYTES') > 0, 'reduces wrote runs to disk');
    for (const a of smallest.filter((x) => x.state === 'succeeded')) {
      assert.ok(
        (a.counters.PEAK_BUFFER_BYTES ?? 0) <= smallestBuffer,
        `${a.attemptId} held ${a.counters.PEAK_BUFFER_BYTES} bytes in a ${smallestBuffer}-byte buffer`,
      );
    }
  });

  it(
    'TeraSort of records with repeated keys, its reduces reading ' +
      'runs on disk: every record out, in key order, and one reduce ' +
      'input group per distinct key',
    async () => {
      // 6000 records with keys drawn from 700, each record's tail saying which record it is.
      const n = 6000;
      const input = Buffer.alloc(n * 100);
      let seed = 99;
      const next = (): number => (seed = (seed * 1103515245 + 12345) >>> 0);
      for (let i = 0; i < n; i++) {
        const k = (next() >>> 16) % 700;
        input.writeUInt32BE((k * 2654435761) >>> 0, i * 100);
        input.writeUInt32BE(k, i * 100 + 4);
        input.writeUInt16BE(k & 0xffff, i * 100 + 8);
        input.write(String(i).padStart(90, '.'), i * 100 + 10, 'latin1');
      }
      await t.fs.put(input, '/tera/dup-in');
      const status = await t.cluster.client.run(appModule('terasort'), {
        input: ['/tera/dup-in'],
        output: '/tera/dup-out',
        reducers: 2,
        conf: buffers(64 * KiB),
      });
      assert.ok(
        counter(await t.cluster.client.attempts(status.jobId), 'reduce', 'SPILLED_BYTES') > 0,
        'the reduces read runs on disk',
      );
      const out = await readOutput(t.fs, '/tera/dup-out');
      const records = (b: Buffer): string[] =>
        Array.from({ length: b.length / 100 }, (_, i) => b.toString('latin1', i * 100, (i + 1) * 100));
      const got = records(out);
      const want = records(input).sort();
      assert.equal(got.length, n);
      assert.deepEqual([...got].sort(), want, 'every record once');
      for (let i = 1; i < got.length; i++)
        assert.ok(
          Buffer.compare(
            Buffer.from(got[i - 1]!.slice(0, 10), 'latin1'),
            Buffer.from(got[i]!.slice(0, 10), 'latin1'),
          ) <= 0,
          `key order at record ${i}`,
        );
      assert.equal(status.counters.REDUCE_INPUT_GROUPS, new Set(want.map((r) => r.slice(0, 10))).size);
    },
  );

  it(
    'maps whose output takes two generations of their buffer ' +
      'publish two runs: same bytes out as with one merged run, equal ' +
      'keys in map then input order, less written',
    async () => {
      // Two files of 3000 records (two maps), keys drawn from 300: many equal keys within and across maps.
      const n = 3000;
      const files: Buffer[] = [];
      let seed = 7;
      const next = (): number => (seed = (seed * 1103515245 + 12345) >>> 0);
      for (let f = 0; f < 2; f++) {
        const part = Buffer.alloc(n * 100);
        for (let i = 0; i < n; i++) {
          const k = (next() >>> 16) % 300;
          part.writeUInt32BE((k * 2654435761) >>> 0, i * 100);
          part.writeUInt32BE(k, i * 100 + 4);
          part.writeUInt16BE(k, i * 100 + 8);
          part.write(`${f}:${i}`.padStart(90, '.'), i * 100 + 10, 'latin1');
        }
        files.push(part);
        await t.fs.put(part, `/tera/two-runs/part-${f}`);
      }
      // Stable sort by key of the maps' records in map order: what the reduce must see.
      const all = Buffer.concat(files);
      const want = Array.from({ length: 2 * n }, (_, i) => all.subarray(i * 100, (i + 1) * 100)).sort((a, b) =>
        Buffer.compare(a.subarray(0, 10), b.subarray(0, 10)),
      );
      // 3000 records of 132 bytes with their metadata: two generations of a 384 KiB buffer. The
      // reduce budget of 64 KiB sends runs to disk; of 16 MiB keeps them in memory.
      const outputs: Buffer[] = [];
      const mapWrites: number[] = [];
      for (const [runs, reduceBytes] of [
        [1, 16 * 1024 * KiB],
        [2, 16 * 1024 * KiB],
        [2, 64 * KiB],
      ] as const) {
        const conf: JobConf = {
          'shuffle.map.bufferBytes': 384 * KiB,
          'shuffle.reduce.bufferBytes': reduceBytes,
          'shuffle.map.outputRuns': runs,
        };
        const output = `/tera/two-runs-out-${runs}-${reduceBytes}`;
        const status = await t.cluster.client.run(appModule('terasort'), {
          input: ['/tera/two-runs'],
          output,
          reducers: 2,
          conf,
        });
        const attempts = await t.cluster.client.attempts(status.jobId);
        assert.equal(counter(attempts, 'map', 'SPILLS'), 4, 'each map filled its buffer twice');
        mapWrites.push(counter(attempts, 'map', 'SPILLED_BYTES'));
        // Spilled, or (from a map on the reduce's worker) read in place in the map's file.
        if (reduceBytes < MiB)
          assert.ok(
            counter(attempts, 'reduce', 'SPILLED_BYTES') + counter(attempts, 'reduce', 'SHUFFLE_BYTES_IN_PLACE') > 0,
            'the reduces read runs on disk',
          );
        outputs.push(await readOutput(t.fs, output));
      }
      assert.ok(outputs[0]!.equals(Buffer.concat(want)), 'one run: the stable sort of the input');
      assert.ok(outputs[1]!.equals(outputs[0]!) && outputs[2]!.equals(outputs[0]!), 'two runs: the same bytes');
      // One run: the first generation is written as a spill, then again in the merged output.
      assert.ok(mapWrites[1]! < 0.8 * mapWrites[0]!, `two runs write less (${mapWrites.join(', ')})`);
    },
  );

  it('merges in several passes when the runs exceed the merge factor, with the same output', async () => {
    const base = await t.cluster.client.run(appModule('terasort'), {
      input: ['/tera/in'],
      output: '/tera/fanin-base',
      reducers: 1,
      conf: buffers(16 * 1024 * KiB),
    });
    const status = await t.cluster.client.run(appModule('terasort'), {
      input: ['/tera/in'],
      output: '/tera/fanin-2',
      reducers: 1,
      conf: buffers(64 * KiB, { 'shuffle.merge.factor': 2 }),
    });
    assert.equal(base.state, 'succeeded');
    assert.ok(
      (status.counters.MERGE_PASSES ?? 0) > 0,
      `expected intermediate merge passes, got ${status.counters.MERGE_PASSES}`,
    );
    assert.ok((await readOutput(t.fs, '/tera/fanin-base')).equals(await readOutput(t.fs, '/tera/fanin-2')));
  });

  it(
    'profiles a job: ideal memory, penalty per memory fraction, and ' +
      'a model whose computed spills match the measured ones',
    async () => {
      const profile = await profileJob(t.cluster.client, {
        modulePath: appModule('terasort'),
        input: ['/tera/in'],
        workDir: '/profile-test',
        maps: 2,
        fractions: [1, 0.5, 0.1],
      });
      assert.deepEqual(
        profile.points.map((p) => p.fraction),
        [1, 0.5, 0.1],
      );
      const [ideal, half, tenth] = profile.points as [ProfilePoint, ProfilePoint, ProfilePoint];
      assert.equal(ideal.mapSpills, 1, 'at ideal memory a map spills exactly once (its output)');
      assert.ok(tenth.mapSpills > 1, 'at 10% a map spills several times');
      assert.ok(tenth.mapSpilledBytes > ideal.mapSpilledBytes);
      // The model computes spilled bytes from sizes and spill rules alone; they must agree with the counters.
      for (const p of [half, tenth]) {
        const measuredMap = p.mapSpilledBytes - ideal.mapSpilledBytes;
        const measuredReduce = p.reduceSpilledBytes - ideal.reduceSpilledBytes;
        assert.ok(
          Math.abs(measuredMap - p.mapModelSpilledBytes) <= 0.1 * Math.max(measuredMap, p.mapModelSpilledBytes) + 4096,
          `map spill at ${p.fraction}: ${measuredMap} vs ${p.mapModelSpilledBytes}`,
        );
        assert.ok(
          Math.abs(measuredReduce - p.reduceModelSpilledBytes) <=
            0.1 * Math.max(measuredReduce, p.reduceModelSpilledBytes) + 4096,
          `reduce spill at ${p.fraction}: ${measuredReduce} vs ${p.reduceModelSpilledBytes}`,
        );
      }
      assert.match(profileMarkdown(profile), /\| 10\.0% \|/);
      assert.match(lineChart(profileChart(profile)), /^<svg/);
      assert.deepEqual(await t.fs.list('/profile-test'), [], 'profile runs leave no output behind');
    },
  );

  it(
    'a corrupted map output segment is detected, the map re-runs, ' + 'and the job succeeds with the right output',
    async () => {
      const client = t.cluster.client;
      // Map 0 is slow, so the other maps' outputs sit on disk, waiting, while we damage one of them.
      const jobId = await client.submit(fixtureModule('slow-wordcount'), {
        input: ['/in/text.txt'],
        output: '/out/corrupt-segment',
        reducers: 1,
        params: { mapDelayMs: 400, slowMapIndex: 0 },
      });
      const victim = await waitFor('a finished map other than map 0', async () =>
        (await client.attempts(jobId)).find(
          (a) => a.kind === 'map' && a.state === 'succeeded' && !/_m_000000_/.test(a.attemptId),
        ),
      );
      const dataFile = join(t.dir, victim.workerId, 'shuffle', jobId, victim.attemptId, 'file.out');
      const bytes = await readFile(dataFile);
      bytes[Math.floor(bytes.length / 2)] ^= 0x5a;
      await writeFile(dataFile, bytes);
      const status = await client.waitForCompletion(jobId);
      assert.equal(status.state, 'succeeded');
      const attempts = await client.attempts(jobId);
      const mapTask = victim.attemptId.replace(/^attempt_/, 'task_').replace(/_\d+$/, '');
      assert.ok(attempts.filter((a) => a.taskId === mapTask).length >= 2, 'the damaged map was run again');
      assert.ok(
        attempts.some((a) => a.kind === 'reduce' && a.error?.code === 'EFETCH'),
        'the reduce reported the fetch failure',
      );
      assert.deepEqual(
        parseCounts((await readOutput(t.fs, '/out/corrupt-segment')).toString('utf8')),
        referenceWordCount(text),
      );
    },
  );

  it('leaves no temp files behind for a killed task process or a killed job', async () => {
    const client = t.cluster.client;
    const jobId = await client.submit(fixtureModule('slow-wordcount'), {
      input: ['/in/text.txt'],
      output: '/out/killed-tasks',
      reducers: 1,
      params: { mapDelayMs: 100 },
      conf: buffers(64 * KiB),
    });
    // Kill one task process outright (as the OOM killer would): the worker must clean up after it.
    const running = await waitFor('a running map with spills', async () =>
      (await client.attempts(jobId)).find(
        (a) => a.kind === 'map' && a.state === 'running' && (a.counters.SPILLS ?? 0) > 0,
      ),
    );
    const index = Number(running.workerId.replace('worker-', ''));
    const workerPid = t.cluster.workers[index]!.process.pid!;
    const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(workerPid)])
      .toString()
      .trim()
      .split(/\s+/)
      .map(Number);
    for (const pid of children) {
      const env = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
      if (env.includes('task-process')) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
    await waitFor('the killed attempt to be reported', async () =>
      (await client.attempts(jobId)).some((a) => a.state === 'failed' || a.state === 'killed') ? true : undefined,
    );
    await client.kill(jobId);
    const shuffleDirs = t.cluster.workers.map((w) => join(t.dir, w.workerId, 'shuffle', jobId));
    await waitFor(
      "every worker to drop the job's shuffle files",
      async () => {
        const left = (await Promise.all(shuffleDirs.map(filesUnder))).flat();
        return left.length === 0 ? true : undefined;
      },
      10_000,
    );
  });
});
