import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  appModule,
  makeText,
  readAll,
  parseCounts,
  readOutput,
  referenceWordCount,
  startTestCluster,
  type TestCluster,
} from '../helpers/cluster.js';
import { murmur3_32 } from '../../src/util/index.js';

/**
 * Every app on a real cluster of 3 worker processes (2 map slots each), with 64 KiB blocks so that
 * inputs have many more blocks than there are slots. Each output is checked against a reference
 * computed here, without minimr.
 */
describe('apps end to end on a 3-worker cluster', () => {
  let t: TestCluster;
  const text = makeText(1_200_000, 7);

  before(async () => {
    t = await startTestCluster();
    await t.fs.put(Buffer.from(text), '/in/text.txt');
  });
  after(async () => {
    await t?.stop();
  });

  it('has more input blocks than slots', async () => {
    const blocks = await t.fs.getBlocks('/in/text.txt');
    assert.ok(blocks.length > 6, `expected more than 6 blocks, got ${blocks.length}`);
  });

  it('WordCount equals a plain Map count', async () => {
    const status = await t.cluster.client.run(appModule('wordcount'), {
      input: ['/in/text.txt'],
      output: '/out/wc',
      reducers: 3,
    });
    assert.equal(status.state, 'succeeded');
    assert.ok(status.mapsTotal > 6);
    const got = parseCounts((await readOutput(t.fs, '/out/wc')).toString('utf8'));
    const want = referenceWordCount(text);
    assert.equal(got.size, want.size);
    for (const [word, n] of want) assert.equal(got.get(word), n, `count of ${JSON.stringify(word)}`);
    // Each part file is sorted by the key's UTF-8 bytes and holds the keys the default partitioner
    // gives it (MurmurHash3 of those bytes modulo the reducers), though the map's table hashes
    // its keys otherwise.
    const parts = (await t.fs.list('/out/wc')).filter((f) => /part-r/.test(f.path));
    assert.equal(parts.length, 3);
    for (const f of parts) {
      const partition = Number(/part-r-(\d+)$/.exec(f.path)![1]);
      const keys = [...parseCounts((await readAll(t.fs.cat(f.path))).toString('utf8')).keys()].map((k) =>
        Buffer.from(k),
      );
      for (let i = 1; i < keys.length; i++) assert.ok(Buffer.compare(keys[i - 1]!, keys[i]!) < 0, `order in ${f.path}`);
      for (const k of keys) assert.equal(murmur3_32(k) % 3, partition, `partition of ${JSON.stringify(k.toString())}`);
    }
    const stat = await t.fs.stat('/out/wc/_SUCCESS');
    assert.equal(stat.type, 'file');
  });

  it('GrepCount equals a regex count of matching lines', async () => {
    const pattern = 'w1[0-9a-c]\\b';
    const status = await t.cluster.client.run(appModule('grep'), {
      input: ['/in/text.txt'],
      output: '/out/grep',
      params: { pattern },
    });
    assert.equal(status.state, 'succeeded');
    const re = new RegExp(pattern);
    const lines = text.split('\n');
    if (lines.at(-1) === '') lines.pop();
    const want = lines.filter((l) => re.test(l.replace(/\r$/, ''))).length;
    assert.ok(want > 0);
    assert.equal((await readOutput(t.fs, '/out/grep')).toString('utf8'), `${pattern}\t${want}\n`);
  });

  it('Grep (lines) emits exactly the matching lines, in input order', async () => {
    const pattern = 'Straße|日本語';
    await t.cluster.client.run(appModule('grep-lines'), {
      input: ['/in/text.txt'],
      output: '/out/grep-lines',
      params: { pattern },
    });
    const re = new RegExp(pattern);
    const want = text
      .split('\n')
      .map((l) => l.replace(/\r$/, ''))
      .filter((l) => re.test(l));
    const got = (await readOutput(t.fs, '/out/grep-lines')).toString('utf8').split('\n');
    assert.equal(got.pop(), '');
    assert.deepEqual(got, want);
  });

  it('TeraGen -> TeraSort gives the records of the input in Buffer.compare order; TeraValidate agrees', async () => {
    const rows = 30_000;
    await t.cluster.client.run(appModule('teragen'), { output: '/tera/in', params: { rows, maps: 5 } });
    const input = await readOutput(t.fs, '/tera/in');
    assert.equal(input.length, rows * 100);
    const status = await t.cluster.client.run(appModule('terasort'), {
      input: ['/tera/in'],
      output: '/tera/out',
      reducers: 3,
    });
    assert.equal(status.state, 'succeeded');
    const output = await readOutput(t.fs, '/tera/out');
    const records: Buffer[] = [];
    for (let i = 0; i < rows; i++) records.push(input.subarray(i * 100, (i + 1) * 100));
    // Keys only decide the order; equal keys (none expected) would keep any order, so compare keys then bytes.
    records.sort((a, b) => Buffer.compare(a.subarray(0, 10), b.subarray(0, 10)) || Buffer.compare(a, b));
    assert.equal(output.length, input.length);
    const sortedOutput: Buffer[] = [];
    for (let i = 0; i < rows; i++) sortedOutput.push(output.subarray(i * 100, (i + 1) * 100));
    for (let i = 1; i < rows; i++)
      assert.ok(
        Buffer.compare(sortedOutput[i - 1]!.subarray(0, 10), sortedOutput[i]!.subarray(0, 10)) <= 0,
        `order at ${i}`,
      );
    assert.ok(
      Buffer.concat(records).equals(
        Buffer.concat(
          [...sortedOutput].sort(
            (a, b) => Buffer.compare(a.subarray(0, 10), b.subarray(0, 10)) || Buffer.compare(a, b),
          ),
        ),
      ),
    );

    await t.cluster.client.run(appModule('teravalidate'), { input: ['/tera/out'], output: '/tera/validate' });
    const report = (await readOutput(t.fs, '/tera/validate')).toString('utf8');
    assert.match(report, /^misorder\t0$/m);
    assert.match(report, new RegExp(`^rows\\t${rows}$`, 'm'));
  });

  it("TeraSort's sampling reads the records it samples, not its splits' whole blocks", async () => {
    // 4 blocks of 4 MiB; 10 records sampled from each.
    const rows = 4 * 41_943;
    const input = Buffer.alloc(rows * 100);
    for (let i = 0; i < rows; i++) input.writeUInt32BE((i * 2654435761) >>> 0, i * 100);
    await t.fs.put(input, '/tera/sample-in/part-0', { blockSize: 4 * 1024 * 1024 });
    const client = t.cluster.client;
    const before = client.sampleBytesRead;
    const jobId = await client.submit(appModule('terasort'), {
      input: ['/tera/sample-in'],
      output: '/tera/sample-out',
      reducers: 2,
      params: { sampleSize: 40, sampleSplits: 4 },
      conf: { 'job.maxMaps': 1 },
    });
    const read = client.sampleBytesRead - before;
    assert.ok(read > 0 && read < input.length / 4, `sampling read ${read} of ${input.length} bytes`);
    assert.equal((await client.waitForCompletion(jobId)).state, 'succeeded');
  });

  it('Pi (quasi-Monte Carlo) is close to Math.PI and counts every sample', async () => {
    await t.cluster.client.run(appModule('pi'), { output: '/out/pi', params: { maps: 8, samples: 20_000 } });
    const out = (await readOutput(t.fs, '/out/pi')).toString('utf8');
    const pi = Number(/^pi\t(.+)$/m.exec(out)?.[1]);
    assert.ok(Math.abs(pi - Math.PI) < 1e-3, `pi = ${pi}`);
    assert.match(out, /^total\t160000$/m);
  });
});
