import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { JobConf, JobStatus } from '../../src/runtime/index.js';
import { sketchSeeds } from '../../src/skew/index.js';
import { seededRandom, zipfSampler } from '../../src/util/index.js';
import {
  appModule,
  parseCounts,
  readAll,
  readOutput,
  referenceWordCount,
  startTestCluster,
  type TestCluster,
} from '../helpers/cluster.js';

/** About `bytes` of text whose words follow a Zipf law with exponent `s` over `vocabulary` words. */
function zipfText(bytes: number, s: number, vocabulary: number, seed: number): string {
  const next = seededRandom(seed);
  const rank = zipfSampler(vocabulary, s, next);
  const lines: string[] = [];
  let size = 0;
  while (size < bytes) {
    const words = Array.from({ length: 1 + Math.floor(next() * 12) }, () => `w${rank().toString(36)}`);
    const line = words.join(' ');
    lines.push(line);
    size += line.length + 1;
  }
  return `${lines.join('\n')}\n`;
}

/** Lines of all part files, sorted: the job's output independent of which reducer wrote what. */
function sortedLines(output: Buffer): string[] {
  return output
    .toString('utf8')
    .split('\n')
    .filter((l) => l !== '')
    .sort();
}

/**
 * Virtual partitions and the three assignment strategies on a real 3-worker cluster, one worker
 * throttled 2x, WordCount on Zipf (s = 1.1) words.
 */
describe('skew strategies end to end', () => {
  let t: TestCluster;
  const text = zipfText(600_000, 1.1, 3000, 11);
  const reference = [...referenceWordCount(text)].map(([w, n]) => `${w}\t${n}`).sort();
  const outputs = new Map<string, Buffer>();
  const statuses = new Map<string, JobStatus>();

  async function run(name: string, conf?: JobConf): Promise<void> {
    const status = await t.cluster.client.run(appModule('wordcount'), {
      input: ['/in/zipf.txt'],
      output: `/out/${name}`,
      reducers: 3,
      conf,
    });
    assert.equal(status.state, 'succeeded');
    outputs.set(name, await readOutput(t.fs, `/out/${name}`));
    statuses.set(name, status);
  }

  before(async () => {
    t = await startTestCluster({ throttleOf: (i) => (i === 2 ? 2 : 1) });
    await t.fs.put(Buffer.from(text), '/in/zipf.txt');
    await run('default');
    await run('hash1', { 'skew.strategy': 'hash', 'skew.partitionFactor': 1 });
    await run('hash4', { 'skew.strategy': 'hash', 'skew.partitionFactor': 4 });
    await run('simple4', { 'skew.strategy': 'simple', 'skew.partitionFactor': 4 });
    await run('cms4', {
      'skew.strategy': 'cms',
      'skew.partitionFactor': 4,
      'skew.sampleRecords': 2000,
      'skew.sampleSplits': 4,
    });
  });
  after(async () => {
    await t?.stop();
  });

  it('hash with any factor gives output byte-identical to the default partitioning', () => {
    assert.ok(outputs.get('default')!.length > 0);
    assert.ok(outputs.get('hash1')!.equals(outputs.get('default')!));
    assert.ok(outputs.get('hash4')!.equals(outputs.get('default')!));
  });

  it('every strategy gives the reference counts, and the same lines as the others', () => {
    for (const [name, out] of outputs) {
      assert.deepEqual(sortedLines(out), reference, `${name} differs from the reference`);
      const got = parseCounts(out.toString('utf8'));
      assert.equal(got.size, reference.length);
    }
  });

  it('each part file is sorted by key bytes, also when a reduce merges several partitions', async () => {
    for (const name of outputs.keys()) {
      for (const f of (await t.fs.list(`/out/${name}`)).filter((f) => /part-r/.test(f.path))) {
        const keys = [...parseCounts((await readAll(t.fs.cat(f.path))).toString('utf8')).keys()].map((k) =>
          Buffer.from(k),
        );
        for (let i = 1; i < keys.length; i++)
          assert.ok(Buffer.compare(keys[i - 1]!, keys[i]!) < 0, `order in ${f.path}`);
      }
    }
  });

  it('reduces read every partition exactly once, and their inputs add up to the job input', () => {
    for (const [name, status] of statuses) {
      const skew = status.skew!;
      assert.ok(skew, `${name} has a skew status`);
      const factor = name === 'default' || name === 'hash1' ? 1 : 4;
      assert.equal(skew.partitions, 3 * factor);
      const all = skew.reducers.flatMap((r) => r.partitions).sort((a, b) => a - b);
      assert.deepEqual(
        all,
        Array.from({ length: skew.partitions }, (_, p) => p),
        `${name}: partitions dropped or repeated`,
      );
      if (skew.strategy === 'hash')
        for (const r of skew.reducers) assert.ok(r.partitions.every((p) => p % 3 === r.index));
      const records = skew.reducers.reduce((n, r) => n + (r.inputRecords ?? 0), 0);
      assert.equal(records, status.counters.REDUCE_INPUT_RECORDS);
      assert.ok(skew.reducers.every((r) => typeof r.workerId === 'string' && (r.inputBytes ?? 0) > 0));
      assert.ok(status.counters.SKEW_ASSIGNMENT_MS! >= 0 && status.counters.REDUCE_PHASE_MS! > 0);
      assert.ok(skew.reducePhaseMs! > 0);
    }
  });

  it('cms partitions with the chosen sketch row and reports the sample', () => {
    const skew = statuses.get('cms4')!.skew!;
    assert.equal(skew.strategy, 'cms');
    assert.ok(Number.isInteger(skew.row) && skew.row! >= 0 && skew.row! < 4);
    assert.equal(skew.seed, sketchSeeds(4)[skew.row!]);
    assert.equal(skew.rowMakespans!.length, 4);
    assert.equal(Math.min(...skew.rowMakespans!), skew.rowMakespans![skew.row!]);
    assert.ok(skew.sampledRecords! > 0 && skew.sampledRecords! <= 2000);
  });

  it('throttled tasks sleep, and a job with its own partitioner cannot use cms', async () => {
    const throttled = (await t.cluster.client.attempts(statuses.get('default')!.jobId)).filter(
      (a) => a.workerId === 'worker-2' && a.state === 'succeeded',
    );
    assert.ok(throttled.length > 0);
    assert.ok(throttled.some((a) => (a.counters.THROTTLE_SLEEP_MS ?? 0) > 0));
    await assert.rejects(
      t.cluster.client.run(appModule('terasort'), {
        input: ['/in/zipf.txt'],
        output: '/out/tera',
        reducers: 2,
        conf: { 'skew.strategy': 'cms' },
      }),
      { code: 'EBADJOB' },
    );
  });
});
