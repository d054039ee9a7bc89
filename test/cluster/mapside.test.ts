import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { JobClient, JobStatus } from '../../src/runtime/index.js';
import { seededRandom } from '../../src/util/index.js';
import {
  appModule,
  isCode,
  fixtureModule,
  makeText,
  parseCounts,
  readAll,
  referenceWordCount,
  startTestCluster,
  type TestCluster,
} from '../helpers/cluster.js';

/**
 * The map side's two fast paths on a real 3-worker cluster with 64 KiB blocks: whole-split maps
 * (`mapSplit`, the shipped WordCount and Grep) and map-side combining by hash must give the same
 * output bytes as the per-record path (`map` per line, combining at spills only), on input with
 * CRLF lines, empty lines, non-ASCII and invalid UTF-8 tokens, form feeds, lines and a word longer
 * than a block, and no final newline. References are computed here, without minimr.
 */

const NO_HASH = { 'shuffle.map.hashCombinePercent': 0 };

function trickyInput(): Buffer {
  const longLine = Array.from({ length: 30_000 }, (_, i) => `long${i % 500}`).join(' ');
  return Buffer.concat([
    Buffer.from(makeText(300_000, 21)),
    Buffer.from('\n\n\r\n\r\n  \t \n'),
    Buffer.from(`${longLine}\n`),
    Buffer.from(`${'x'.repeat(150_000)} tail\r\n`),
    Buffer.from('Straße naïve 日本語 😀 a\fb c\u000bd\r\n'),
    // Invalid UTF-8: a lone continuation byte, a truncated sequence before a space, a bad lead byte.
    Buffer.from([0x62, 0x61, 0x64, 0x80, 0x20, 0xc3, 0x20, 0xff, 0xfe, 0x41, 0x0a]),
    Buffer.from(makeText(200_000, 22)),
    Buffer.from('last line without newline'),
  ]);
}

/**
 * Lines of words `${prefix}${n}` separated by spaces, n skewed towards 0 (`distinct` * random^power),
 * each line ending in a newline.
 */
function skewedLines(o: {
  seed: number;
  lines: number;
  wordsPerLine: number;
  distinct: number;
  power: number;
  prefix: string;
}): string {
  const random = seededRandom(o.seed);
  const lines = Array.from({ length: o.lines }, () =>
    Array.from({ length: o.wordsPerLine }, () => `${o.prefix}${Math.floor(o.distinct * random() ** o.power)}`).join(
      ' ',
    ),
  );
  return `${lines.join('\n')}\n`;
}

/** Lines as a reader hands them to `map`: split at `\n`, a CRLF line's `\r` dropped, no line after a final newline. */
function referenceLines(text: string): string[] {
  const lines = text.split('\n');
  if (text.endsWith('\n')) lines.pop();
  return lines.map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l));
}

describe("map side: whole-split maps and hash combining give the per-record path's output", () => {
  let t: TestCluster;
  let client: JobClient;
  const input = trickyInput();
  const text = input.toString('utf8');

  before(async () => {
    t = await startTestCluster();
    client = t.cluster.client;
    await t.fs.put(input, '/in/tricky.txt');
  });
  after(async () => {
    await t?.stop();
  });

  /** Part files of a job's output, in order. */
  async function parts(dir: string): Promise<Buffer[]> {
    const files = (await t.fs.list(dir))
      .filter((f) => /\/part-r-\d+$/.test(f.path))
      .map((f) => f.path)
      .sort();
    return Promise.all(files.map(async (f) => readAll(t.fs.cat(f))));
  }

  async function run(
    module: string,
    output: string,
    options: { conf?: Record<string, number>; params?: Record<string, string>; reducers?: number; input?: string } = {},
  ): Promise<JobStatus> {
    const status = await client.run(module, {
      input: [options.input ?? '/in/tricky.txt'],
      output,
      overwrite: true,
      reducers: options.reducers ?? 3,
      ...(options.conf ? { conf: options.conf } : {}),
      ...(options.params ? { params: options.params } : {}),
    });
    assert.equal(status.state, 'succeeded');
    return status;
  }

  it('has a line longer than a block and more blocks than slots', async () => {
    const blocks = await t.fs.getBlocks('/in/tricky.txt');
    assert.ok(blocks.length > 6);
    assert.ok(Math.max(...referenceLines(text).map((l) => Buffer.byteLength(l))) > 2 * blocks[0]!.length);
  });

  it(
    'WordCount: mapSplit + hash table, mapSplit alone, map + hash ' +
      'table and map alone write the same bytes, equal to a plain ' +
      'count',
    async () => {
      const fast = await run(appModule('wordcount'), '/out/wc-fast');
      await run(appModule('wordcount'), '/out/wc-split-sort', { conf: NO_HASH });
      await run(fixtureModule('wordcount-lines'), '/out/wc-lines-hash');
      const slow = await run(fixtureModule('wordcount-lines'), '/out/wc-lines-sort', { conf: NO_HASH });
      const reference = await parts('/out/wc-lines-sort');
      assert.equal(reference.length, 3);
      for (const dir of ['/out/wc-fast', '/out/wc-split-sort', '/out/wc-lines-hash']) {
        const got = await parts(dir);
        assert.equal(got.length, reference.length, dir);
        got.forEach((part, i) =>
          assert.ok(part.equals(reference[i]!), `${dir} part ${i} differs from the per-record path's`),
        );
      }
      const counts = parseCounts(Buffer.concat(reference).toString('utf8'));
      const want = referenceWordCount(text);
      assert.equal(counts.size, want.size);
      for (const [word, n] of want) assert.equal(counts.get(word), n, `count of ${JSON.stringify(word)}`);
      assert.ok(
        want.has('\ufffd') && want.has('bad\ufffd') && want.has('x'.repeat(150_000)),
        'invalid UTF-8 and the long word are in the input',
      );
      // The same records were read; the table took every word and passed on far fewer.
      assert.equal(fast.counters.MAP_INPUT_RECORDS, slow.counters.MAP_INPUT_RECORDS);
      assert.equal(fast.counters.MAP_INPUT_RECORDS, referenceLines(text).length);
      const words = [...want.values()].reduce((a, b) => a + b, 0);
      assert.equal(fast.counters.HASH_COMBINE_INPUT_RECORDS, words);
      assert.ok(
        fast.counters.HASH_COMBINE_OUTPUT_RECORDS! < words / 5,
        `${fast.counters.HASH_COMBINE_OUTPUT_RECORDS} of ${words} records passed on`,
      );
      assert.equal(slow.counters.HASH_COMBINE_INPUT_RECORDS, undefined, 'no table with hashCombinePercent 0');
    },
  );

  it(
    'Grep: scanning chunks counts the lines that testing each line ' +
      'counts (literal, regex, anchors, lookaround, flags)',
    async () => {
      const lines = referenceLines(text);
      // Each against the count computed here; a literal, a regex and a lookaround also against the
      // per-record path on the cluster.
      const cases = [
        ['Straße', '', true],
        ['w1[0-9a-c]\\b', '', true],
        ['^$', '', false],
        ['e$', '', false],
        ['(?<!w)1\\b', '', true],
        ['the', 'i', false],
        ['\\s$', '', false],
        ['Straße|w1', '', true],
      ] as const;
      for (const [pattern, flags, perRecord] of cases) {
        const params = { pattern, flags };
        const re = new RegExp(pattern, flags);
        const want = lines.filter((l) => re.test(l)).length;
        await run(appModule('grep'), '/out/grep-fast', { params, reducers: 1 });
        const [fast] = await parts('/out/grep-fast');
        assert.equal(fast!.toString('utf8'), `${pattern}\t${want}\n`, `/${pattern}/${flags}`);
        if (!perRecord) continue;
        await run(fixtureModule('grep-lines-count'), '/out/grep-lines', { params, reducers: 1 });
        const [slow] = await parts('/out/grep-lines');
        assert.ok(fast!.equals(slow!), `/${pattern}/${flags}: same bytes as per line`);
      }
    },
  );

  it(
    'with a small buffer the hash table fills, flushes through the ' +
      'sort buffer within its share, and the output is the same',
    async () => {
      // Skewed words from 20,000: each 1 MiB split holds several times the distinct words a 128 KiB
      // table has room for, and enough repeats that combining pays.
      const many = skewedLines({ seed: 5, lines: 40_000, wordsPerLine: 10, distinct: 20_000, power: 3, prefix: 'k' });
      await t.fs.put(Buffer.from(many), '/in/many.txt', { blockSize: 1024 * 1024 });
      const bufferBytes = 256 * 1024;
      const status = await run(appModule('wordcount'), '/out/wc-small', {
        input: '/in/many.txt',
        conf: { 'shuffle.map.bufferBytes': bufferBytes },
      });
      await run(fixtureModule('wordcount-lines'), '/out/wc-small-lines', {
        input: '/in/many.txt',
        conf: { 'shuffle.map.bufferBytes': bufferBytes, ...NO_HASH },
      });
      const got = await parts('/out/wc-small');
      const reference = await parts('/out/wc-small-lines');
      got.forEach((part, i) => assert.ok(part.equals(reference[i]!), `part ${i}`));
      const counts = parseCounts(Buffer.concat(got).toString('utf8'));
      const want = referenceWordCount(many);
      assert.equal(counts.size, want.size);
      for (const [word, n] of want) assert.equal(counts.get(word), n);
      const maps = (await client.attempts(status.jobId)).filter((a) => a.kind === 'map' && a.state === 'succeeded');
      for (const m of maps) {
        assert.ok(
          m.counters.HASH_COMBINE_FLUSHES! > 1,
          `map ${m.attemptId} flushed ${m.counters.HASH_COMBINE_FLUSHES} times`,
        );
        assert.ok(
          m.counters.PEAK_HASH_COMBINE_BYTES! <= bufferBytes / 2,
          `table peak ${m.counters.PEAK_HASH_COMBINE_BYTES}`,
        );
        assert.ok(m.counters.PEAK_BUFFER_BYTES! <= bufferBytes / 2, `sort buffer peak ${m.counters.PEAK_BUFFER_BYTES}`);
      }
    },
  );

  it('a key larger than the whole map buffer spills alone: the job succeeds with the right count', async () => {
    const huge = 'h'.repeat(3 * 1024 * 1024);
    const content = `small ${huge} small\n${huge}\nend\n`;
    await t.fs.put(Buffer.from(content), '/in/huge.txt');
    const conf = { 'shuffle.map.bufferBytes': 1024 * 1024, 'shuffle.reduce.bufferBytes': 1024 * 1024 };
    const status = await run(appModule('wordcount'), '/out/wc-huge', { input: '/in/huge.txt', conf, reducers: 1 });
    const counts = parseCounts(Buffer.concat(await parts('/out/wc-huge')).toString('utf8'));
    assert.deepEqual([...counts].sort(), [...referenceWordCount(content)].sort());
    assert.equal(counts.get(huge), 2);
    assert.ok(status.counters.SPILLS! >= 2, 'the huge records were spills of their own');
  });

  it(
    'the client samples a whole-split map for skew.strategy cms: ' +
      'its first records of a few splits, and the output is the same',
    async () => {
      const status = await client.run(appModule('wordcount'), {
        input: ['/in/tricky.txt'],
        output: '/out/wc-cms',
        overwrite: true,
        reducers: 3,
        conf: { 'skew.strategy': 'cms', 'skew.partitionFactor': 2, 'skew.sampleRecords': 500, 'skew.sampleSplits': 5 },
      });
      assert.equal(status.state, 'succeeded');
      assert.ok(
        status.skew!.sampledRecords! > 0 && status.skew!.sampledRecords! <= 500,
        `sampled ${status.skew!.sampledRecords}`,
      );
      const counts = parseCounts(Buffer.concat(await parts('/out/wc-cms')).toString('utf8'));
      assert.deepEqual([...counts].sort(), [...referenceWordCount(text)].sort());
    },
  );

  it('a job with both map and mapSplit is EBADJOB', async () => {
    await assert.rejects(
      client.submit(fixtureModule('both-map-functions'), { input: ['/in/tricky.txt'], output: '/out/both' }),
      isCode('EBADJOB', /both `map` and `mapSplit`/),
    );
  });

  it(
    'a wrong emitKeyBytes keyHash costs combining, never output; one ' +
      'not a 32-bit integer fails the job with ETASK',
    async () => {
      const shape = { seed: 9, lines: 20_000, wordsPerLine: 8, distinct: 3_000, power: 2, prefix: 'h' };
      const content = skewedLines(shape);
      await t.fs.put(Buffer.from(content), '/in/words.txt', { blockSize: 256 * 1024 });
      const wrong = await run(fixtureModule('wordcount-key-hashes'), '/out/wc-wrong-hashes', {
        input: '/in/words.txt',
        params: { keyHash: 'position' },
      });
      const right = await run(appModule('wordcount'), '/out/wc-right-hashes', { input: '/in/words.txt' });
      const got = await parts('/out/wc-wrong-hashes');
      const reference = await parts('/out/wc-right-hashes');
      assert.equal(got.length, 3);
      got.forEach((part, i) => assert.ok(part.equals(reference[i]!), `part ${i}`));
      assert.deepEqual(
        [...parseCounts(Buffer.concat(got).toString('utf8'))].sort(),
        [...referenceWordCount(content)].sort(),
      );
      // Filed under a new hash at every occurrence, no word met its entry again: the table combined
      // nothing (and turned itself off), where the right hashes combined nearly every word.
      const words = shape.lines * shape.wordsPerLine;
      assert.equal(wrong.counters.HASH_COMBINE_INPUT_RECORDS, words);
      assert.ok(
        wrong.counters.HASH_COMBINE_OUTPUT_RECORDS! > words * 0.9,
        `${wrong.counters.HASH_COMBINE_OUTPUT_RECORDS}`,
      );
      assert.ok(
        right.counters.HASH_COMBINE_OUTPUT_RECORDS! < words / 10,
        `${right.counters.HASH_COMBINE_OUTPUT_RECORDS}`,
      );

      const jobId = await client.submit(fixtureModule('wordcount-key-hashes'), {
        input: ['/in/words.txt'],
        output: '/out/wc-fraction-hashes',
        params: { keyHash: 'fraction' },
      });
      await assert.rejects(
        client.waitForCompletion(jobId),
        isCode('EJOBFAILED', /emitKeyBytes: keyHash 0\.5 is not a 32-bit integer/),
      );
      assert.equal((await client.status(jobId)).error?.details?.cause, 'ETASK');
    },
  );

  it('a combiner that changes the key fails the job with EBADJOB as the cause', async () => {
    const jobId = await client.submit(fixtureModule('key-changing-combiner'), {
      input: ['/in/tricky.txt'],
      output: '/out/bad-combiner',
    });
    await assert.rejects(
      client.waitForCompletion(jobId),
      isCode('EJOBFAILED', /combiner emitted the key "(even|odd)!".*must keep its key/),
    );
    assert.equal((await client.status(jobId)).error?.details?.cause, 'EBADJOB');
  });

  it(
    'a mapSplit that throws is retried 4 times, then fails the job ' +
      'with its message; one that fails once per task is retried and ' +
      'succeeds',
    async () => {
      const jobId = await client.submit(fixtureModule('failing-map-split'), {
        input: ['/in/tricky.txt'],
        output: '/out/failing-split',
      });
      await assert.rejects(
        client.waitForCompletion(jobId),
        isCode('EJOBFAILED', /task task_\S+_m_\d+ failed 4 times.*boom in mapSplit on purpose/),
      );
      await assert.rejects(t.fs.stat('/out/failing-split'), isCode('ENOENT'));
      const flaky = await client.run(fixtureModule('failing-map-split'), {
        input: ['/in/tricky.txt'],
        output: '/out/flaky-split',
        params: { firstAttemptOnly: 1 },
      });
      assert.equal(flaky.state, 'succeeded');
      assert.equal(flaky.failedAttempts, flaky.mapsTotal);
      const newlines = input.reduce((n, b) => (b === 0x0a ? n + 1 : n), 0);
      assert.equal(Buffer.concat(await parts('/out/flaky-split')).toString('utf8'), `lines\t${newlines}\n`);
    },
  );
});
