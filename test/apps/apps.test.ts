import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { crc32 } from 'node:zlib';
import { codecs, defineJob, textInput, type AnyJobDefinition, type InputFormat, type SplitInput } from 'minimr';

import wordcount, { forEachWord } from '../../apps/wordcount.js';
import grep, { compileMatcher, requiredLiteral } from '../../apps/grep.js';
import grepLines from '../../apps/grep-lines.js';
import teragen, { generateRow, teragenSplits } from '../../apps/teragen.js';
import terasort, { findPartition, splitPoints } from '../../apps/terasort.js';
import teravalidate, { joinSummaries, summaryCodec, validate, type Summary } from '../../apps/teravalidate.js';
import pi, { countInside } from '../../apps/pi.js';
import { seededRandom } from '../../src/util/index.js';
import {
  chunk,
  fakeMapContext,
  fakePrepareContext,
  fixedRecords,
  generatedInputs,
  runJob,
  runMapTask,
  splitInputOf,
  textRecords,
  type MapInput,
  type Params,
} from './harness.js';

// Compiled to dist/test/apps/, so the sample text is three levels up from here, not two.
const SAMPLE_PATH = fileURLToPath(new URL('../../../apps/data/sample.txt', import.meta.url));
const sample = readFileSync(SAMPLE_PATH, 'utf8');
const sampleLines = textRecords(sample);

const asJob = (j: unknown) => j as AnyJobDefinition;

function textLines(files: Buffer[]): string[] {
  return files.flatMap((f) => {
    const lines = f.toString('utf8').split('\n');
    lines.pop(); // after the final newline
    return lines;
  });
}

/** 32-bit FNV-1a, written out in BigInt arithmetic (the emitKeyBytes key hash). */
function fnv1a32(bytes: number[]): number {
  let h = 2166136261n;
  for (const b of bytes) h = ((h ^ BigInt(b)) * 16777619n) % 2n ** 32n;
  return Number(h);
}

describe('wordcount', () => {
  it('tokenizes on exactly space, tab, LF, CR and FF, like StringTokenizer', () => {
    const words = (text: string): string[] => {
      const bytes = Buffer.from(text, 'utf8');
      const out: string[] = [];
      forEachWord(bytes, (_bytes, start, end) => out.push(bytes.toString('utf8', start, end)), undefined);
      return out;
    };
    // Vertical tab and no-break space are not Java delimiters, so they stay inside words.
    assert.deepEqual(words('  a\tb\r\nc\fd\u000be  \u00a0f '), ['a', 'b', 'c', 'd\u000be', '\u00a0f']);
    assert.deepEqual(words(' \t '), []);
    assert.deepEqual(words('日本語 x'), ['日本語', 'x']);
    assert.deepEqual(words(''), []);
    // Random bytes: every control byte, the five delimiters, ASCII and high bytes; against a split
    // of their latin1 text, each word's `high` the OR of its bytes and `hash` their FNV-1a.
    const random = seededRandom(3);
    const alphabet = [...Array.from({ length: 0x22 }, (_, b) => b), 0x41, 0x7f, 0x80, 0xc3, 0xff];
    for (let round = 0; round < 200; round++) {
      const bytes = Buffer.from(
        Array.from({ length: Math.floor(random() * 40) }, () => alphabet[Math.floor(random() * alphabet.length)]!),
      );
      const got: [string, number, number][] = [];
      forEachWord(
        bytes,
        (_b, start, end, high, hash) => got.push([bytes.toString('latin1', start, end), high, hash >>> 0]),
        undefined,
      );
      const want = bytes
        .toString('latin1')
        .split(/[ \t\n\r\f]+/)
        .filter((w) => w !== '')
        .map((w): [string, number, number] => {
          const wordBytes = [...Buffer.from(w, 'latin1')];
          return [w, wordBytes.reduce((h, b) => h | b, 0), fnv1a32(wordBytes)];
        });
      assert.deepEqual(got, want, bytes.toString('hex'));
    }
  });

  it('counts the sample text like a plain split-and-count', async () => {
    assert.ok(sample.includes('\f'), 'the sample should exercise the form-feed delimiter');
    const expected = new Map<string, number>();
    for (const w of sample.split(/\s+/)) if (w !== '') expected.set(w, (expected.get(w) ?? 0) + 1);

    const result = await runJob(asJob(wordcount), chunk(sampleLines, 4), { reducers: 3 });
    const got = new Map<string, number>();
    for (const line of textLines(result.files)) {
      const [word, count, ...rest] = line.split('\t');
      assert.equal(rest.length, 0, `one tab per line: ${JSON.stringify(line)}`);
      assert.ok(!got.has(word!), `word ${word} output twice`);
      got.set(word!, Number(count));
    }
    assert.equal(got.size, expected.size);
    assert.deepEqual([...got].sort(), [...expected].sort());
    // Each part is sorted by the key's bytes, as the shuffle delivers it.
    for (const part of result.parts) {
      const keys = part.map(([k]) => Buffer.from(k as string));
      for (let i = 1; i < keys.length; i++) assert.ok(Buffer.compare(keys[i - 1]!, keys[i]!) < 0);
    }
  });
});

describe('grep', () => {
  const pattern = 'licen[cs]e';
  const countMatches = (re: RegExp) => sampleLines.filter(([, l]) => re.test(l as string)).length;

  it('counts matching lines', async () => {
    for (const flags of [undefined, 'i']) {
      const params: Params = flags === undefined ? { pattern } : { pattern, flags };
      const result = await runJob(asJob(grep), chunk(sampleLines, 3), { params });
      const expected = countMatches(new RegExp(pattern, flags));
      assert.ok(expected > 0);
      assert.deepEqual(textLines(result.files), [`${pattern}\t${expected}`]);
    }
  });

  it('ignores the g flag, which would make RegExp.test stateful', async () => {
    const result = await runJob(asJob(grep), [sampleLines], { params: { pattern, flags: 'gi' } });
    assert.deepEqual(textLines(result.files), [`${pattern}\t${countMatches(new RegExp(pattern, 'i'))}`]);
  });

  it('prints a zero count when nothing matches', async () => {
    const result = await runJob(asJob(grep), chunk(sampleLines, 2), { params: { pattern: 'no such text anywhere' } });
    assert.deepEqual(textLines(result.files), ['no such text anywhere\t0']);
  });

  it('emits one (pattern, count) per map, 0 included', async () => {
    const re = /licen[cs]e/;
    for (const [i, part] of chunk(sampleLines, 3).entries()) {
      const expected = part.filter(([, l]) => re.test(l as string)).length;
      const { pairs } = await runMapTask(asJob(grep), part, { params: { pattern }, mapIndex: i });
      assert.deepEqual(pairs, [[pattern, expected]]);
    }
    const none = await runMapTask(asJob(grep), sampleLines.slice(0, 50), {
      params: { pattern: 'no such text anywhere' },
    });
    assert.deepEqual(none.pairs, [['no such text anywhere', 0]]);
    // A split that holds no line (e.g. inside one long line) still reports its 0.
    const empty = await runMapTask(asJob(grep), [], { params: { pattern } });
    assert.deepEqual(empty.pairs, [[pattern, 0]]);
  });

  it('carries no count over from an attempt that failed midway', async () => {
    const matching = sampleLines.filter(([, l]) => /licen[cs]e/.test(l as string)).slice(0, 5);
    assert.equal(matching.length, 5);
    const dead = fakeMapContext({ params: { pattern }, attemptId: 'm_0_0' });
    const failing: SplitInput<InputFormat> = {
      async *chunks() {
        yield* splitInputOf(matching, 1).chunks();
        throw new Error('lost the block');
      },
      records: () => splitInputOf(matching).records(),
    };
    await assert.rejects(Promise.resolve(grep.mapSplit!(failing as never, dead.ctx)), /lost the block/);
    assert.deepEqual(dead.pairs, []);
    const retry = await runMapTask(asJob(grep), matching.slice(0, 2), { params: { pattern }, attemptId: 'm_0_1' });
    assert.deepEqual(retry.pairs, [[pattern, 2]]);
  });

  it('counts the lines that match when each is tested alone, for literals and regexes, in chunks of any size', () => {
    const lines = [
      'the end',
      'Straße naïve 日本語',
      '',
      'abc\r',
      'x\ry',
      'a xx',
      'yy b',
      'foo ',
      'foo',
      'THE\tthe',
      'licence\r',
      '\r',
      'é',
      'tail',
    ];
    const text = lines.join('\n');
    const bytes = Buffer.from(text, 'utf8');
    const patterns: [string, string][] = [
      ['the', ''],
      ['Straße', ''],
      ['日本', ''],
      ['e$', ''],
      ['^$', ''],
      ['^T', ''],
      ['a[^x]*b', ''],
      ['a\\s*\\S*b', ''],
      ['c$', ''],
      ['\\r', ''],
      ['x.y', 's'],
      ['foo(?!\\s)', ''],
      ['(?<=o)o$', ''],
      ['\\bthe\\b', 'i'],
      ['', ''],
      ['é', 'u'],
      ['^', 'm'],
      ['l$', ''],
      // Alternations of literals: overlapping, in one line, one never there, an empty alternative, beyond the literal
      // limit.
      ['foo|the', ''],
      ['the|THE', ''],
      ['oo|foo', ''],
      ['日本|naïve|zzz', ''],
      ['xx|', ''],
      ['a|b|c|d|e', ''],
      ['xx|yy', 'i'],
      // Regexes with a literal every match holds (searched for first), and ones whose text only looks like one.
      ['[a-z]+ce$', ''],
      ['li[a-z]{2,5}e', ''],
      ['fo+ ', ''],
      ['the\\tthe', ''],
      ['e\\x6ed', ''],
      ['\\u0074he [ex]', ''],
      ['x{1}\\ry', ''],
      ['(?:ab)c\\r?$', ''],
      ['a(?= xx)', ''],
      ['Stra(ß)e [a-z]+', ''],
      ['日本(語)?', 'u'],
      ['\\u{65}nd', 'u'],
      ['(\\w)\\1 ?b', ''],
      ['ab*c', ''],
      ['th?e', ''],
      ['lic[a-z]nce', ''],
      ['licence\\s*$', 'm'],
    ];
    for (const [p, flags] of patterns) {
      const re = new RegExp(p, flags);
      // Lines as a reader gives them: without the newline and a CRLF line's CR.
      const want = lines.filter((l) => re.test(l.replace(/\r$/, ''))).length;
      const matcher = compileMatcher({ pattern: p, flags });
      // Every must found is in every matching line (the prefilter's premise, checked where it has something to check).
      const must = requiredLiteral(p, flags);
      if (must !== undefined)
        for (const l of lines) if (re.test(l.replace(/\r$/, ''))) assert.ok(l.includes(must), `/${p}/ must ${must}`);
      for (const size of [1, 2, 5, lines.length]) {
        let got = 0;
        for (let i = 0; i < lines.length; i += size) {
          const last = i + size >= lines.length;
          got += matcher.countMatchingLines(
            Buffer.from(lines.slice(i, i + size).join('\n') + (last ? '' : '\n'), 'utf8'),
          );
        }
        assert.equal(got, want, `/${p}/${flags} in chunks of ${size} lines`);
      }
      assert.equal(
        matcher.countMatchingLines(Buffer.concat([bytes, Buffer.from('\n')])),
        want,
        `/${p}/${flags} with a final newline`,
      );
    }
  });

  it('finds the literal every match of a regex holds, and none where a quantifier, class or escape could stand in', () => {
    const cases: [string, string, string | undefined][] = [
      ['[a-z]+ing (the|a) [a-z]+tions', '', 'tions'],
      ['[a-z]+ing [a-z]{2,5} [a-z]+', '', 'ing '],
      ['ab*cd', '', 'cd'],
      ['abc{2,3}d', '', 'ab'],
      ['a\\x41BCDE', '', 'BCDE'],
      ['x\\u{41}yz', 'u', 'yz'],
      ['\\12345ab', '', 'ab'],
      ['[xyz\\]]abc', '', 'abc'],
      ['(?:long literal)ab', '', 'ab'],
      ['abc|defg', '', undefined],
      ['abcd', 'i', undefined],
      ['a.b.c', '', undefined],
    ];
    for (const [pattern, flags, want] of cases)
      assert.equal(requiredLiteral(pattern, flags), want, `/${pattern}/${flags}`);
  });

  it('outputs nothing for input without a split, and the zero line for splits without lines', async () => {
    assert.deepEqual(textLines((await runJob(asJob(grep), [], { params: { pattern } })).files), []);
    assert.deepEqual(textLines((await runJob(asJob(grep), [[], []], { params: { pattern } })).files), [
      `${pattern}\t0`,
    ]);
  });

  it('rejects a missing or invalid pattern clearly', async () => {
    await assert.rejects(runJob(asJob(grep), [sampleLines], { params: {} }), /missing parameter `pattern`/);
    await assert.rejects(
      runJob(asJob(grep), [sampleLines], { params: { pattern: '(' } }),
      /invalid regular expression/,
    );
  });

  it('grep-lines outputs exactly the matching lines, in order', async () => {
    const result = await runJob(asJob(grepLines), chunk(sampleLines, 3), {
      params: { pattern: 'warrant', flags: 'i' },
    });
    const expected = sampleLines.map(([, l]) => l as string).filter((l) => /warrant/i.test(l));
    assert.ok(expected.length > 0);
    assert.deepEqual(textLines(result.files), expected);
    assert.equal(result.parts.length, 3, 'map-only: one part per map');
  });
});

/** An independent reading of the TeraGen layout. */
function checkRow(rec: Buffer, row: number): void {
  assert.equal(rec.length, 100);
  assert.deepEqual([...rec.subarray(10, 12)], [0x00, 0x11]);
  assert.equal(rec.subarray(12, 44).toString('latin1'), row.toString(16).toUpperCase().padStart(32, '0'));
  assert.deepEqual([...rec.subarray(44, 48)], [0x88, 0x99, 0xaa, 0xbb]);
  const filler = rec.subarray(48, 96).toString('latin1');
  assert.match(filler, /^(?:([0-9A-F])\1\1\1){12}$/);
  assert.deepEqual([...rec.subarray(96, 100)], [0xcc, 0xdd, 0xee, 0xff]);
  // Filler digits are hex digits 20..31 of the random number, whose bytes 10..15 follow the key.
}

async function teragenData(rows: number, maps: number): Promise<Buffer[]> {
  const params = { rows, maps };
  const result = await runJob(asJob(teragen), generatedInputs(asJob(teragen), params), { params });
  return result.files;
}

describe('teragen', () => {
  it('splits rows into contiguous ranges covering all rows', () => {
    const splits = teragenSplits({ rows: 1003, maps: 4 });
    assert.deepEqual(
      splits.map((s) => s.count),
      [251, 251, 251, 250],
    );
    splits.forEach((s, i) => assert.equal(s.start, i === 0 ? 0 : splits[i - 1]!.start + splits[i - 1]!.count));
    assert.throws(() => teragenSplits({ maps: 2 }), /missing parameter `rows`/);
    assert.throws(() => teragenSplits({ rows: '10', maps: 'x' }), /`maps` must be an integer/);
    assert.equal(teragenSplits({ rows: '10', maps: '3' }).length, 3, 'string params from --param are accepted');
  });

  it('writes 100-byte rows with the fixed markers and the row number', async () => {
    const files = await teragenData(1000, 3);
    assert.equal(files.length, 3);
    const all = Buffer.concat(files);
    assert.equal(all.length, 100 * 1000);
    const keys = new Set<string>();
    for (let row = 0; row < 1000; row++) {
      const rec = all.subarray(row * 100, row * 100 + 100);
      checkRow(rec, row);
      keys.add(rec.subarray(0, 10).toString('hex'));
    }
    assert.equal(keys.size, 1000, '80 random bits should not collide in 1000 rows');
  });

  it('is reproducible and independent of the number of maps', async () => {
    const a = Buffer.concat(await teragenData(500, 3));
    const b = Buffer.concat(await teragenData(500, 7));
    assert.ok(a.equals(b));
  });

  it('handles row numbers above 2^32', () => {
    const row = 2 ** 40 + 12345;
    const rec = Buffer.alloc(100);
    generateRow(row, rec);
    checkRow(rec, row);
  });

  it('spreads key bytes evenly', () => {
    const counts = new Array<number>(256).fill(0);
    const rec = Buffer.alloc(100);
    for (let row = 0; row < 25600; row++) {
      generateRow(row, rec);
      counts[rec[0]!]!++;
    }
    // Expected 100 per bucket; a fair generator stays well inside 40..160.
    assert.ok(
      Math.min(...counts) > 40 && Math.max(...counts) < 160,
      `first-byte histogram ${Math.min(...counts)}..${Math.max(...counts)}`,
    );
  });
});

describe('terasort', () => {
  it('prepare picks reducers-1 sorted split points from the sample', async () => {
    const data = Buffer.concat(await teragenData(5000, 2));
    const records = fixedRecords(data, 100).map(([, r]) => r as Buffer);
    const shared = await terasort.prepare!(fakePrepareContext({ reducers: 4, records }));
    const points = shared.splitPoints as string[];
    assert.equal(points.length, 3);
    const sorted = [...points].sort((a, b) => Buffer.compare(Buffer.from(a, 'hex'), Buffer.from(b, 'hex')));
    assert.deepEqual(points, sorted);
    assert.ok(points.every((p) => p.length === 20));
    const one = await terasort.prepare!(fakePrepareContext({ reducers: 1, records }));
    assert.deepEqual(one.splitPoints, []);
  });

  it(
    'split points are those of the sample sorted with ' +
      'Buffer.compare: bytes above 0x7f, keys that are prefixes of ' +
      'others, duplicates',
    () => {
      let seed = 5;
      const next = (): number => (seed = (seed * 1103515245 + 12345) >>> 0);
      const keys: Buffer[] = [];
      for (let i = 0; i < 5000; i++) {
        const key = Buffer.alloc(1 + (next() % 10));
        for (let j = 0; j < key.length; j++) key[j] = next() >>> 24;
        keys.push(key, key.subarray(0, key.length >> 1));
        if (i % 7 === 0) keys.push(Buffer.from(key));
      }
      const reference = keys.slice().sort(Buffer.compare);
      for (const partitions of [1, 2, 7, 64]) {
        const step = reference.length / partitions;
        const want = Array.from({ length: Math.max(0, partitions - 1) }, (_, i) =>
          reference[Math.min(reference.length - 1, Math.round(step * (i + 1)))]!.toString('hex'),
        );
        assert.deepEqual(
          splitPoints(keys, partitions).map((p) => p.toString('hex')),
          want,
          `${partitions} partitions`,
        );
      }
    },
  );

  it('partition is monotone and matches a linear scan, including ties with split points', () => {
    const rec = Buffer.alloc(100);
    const keys: Buffer[] = [];
    for (let row = 0; row < 3000; row++) {
      generateRow(row, rec);
      keys.push(Buffer.from(rec.subarray(0, 10)));
    }
    const points = splitPoints(keys.slice(0, 500), 8);
    // Keys that share the 6-byte prefix with a split point and differ after it, plus the points
    // themselves and shorter keys: the cases the numeric-prefix shortcut must get right.
    for (const p of points) {
      keys.push(p, Buffer.from(p.subarray(0, 6)), Buffer.concat([p.subarray(0, 9), Buffer.from([0])]));
      const up = Buffer.from(p);
      up[9] = 0xff;
      keys.push(up);
    }
    keys.push(Buffer.alloc(10, 0), Buffer.alloc(10, 0xff), Buffer.alloc(0));
    const shared = { splitPoints: points.map((p) => p.toString('hex')) };
    const ctx = fakeMapContext({ shared }).ctx;
    const prefixes = Float64Array.from(points, (p) => p.readUIntBE(0, 6));
    const sortedKeys = keys.slice().sort(Buffer.compare);
    let prev = 0;
    for (const key of sortedKeys) {
      const linear = points.filter((p) => Buffer.compare(p, key) <= 0).length;
      const got = terasort.partition!(key, 8, ctx);
      assert.equal(got, linear, `key ${key.toString('hex')}`);
      assert.ok(got >= prev, 'monotone in the key');
      prev = got;
      if (key.length >= 6) assert.equal(findPartition(key, points, prefixes), linear);
    }
    assert.throws(() => terasort.partition!(keys[0]!, 3, ctx), /computed 8 partitions but the job runs 3/);
    assert.throws(() => terasort.partition!(keys[0]!, 3, fakeMapContext({ shared: {} }).ctx), /splitPoints is missing/);
  });

  it('sorts TeraGen output into a total order across reducers', async () => {
    const data = Buffer.concat(await teragenData(4000, 3));
    const inputs = chunk(fixedRecords(data, 100), 3);
    const records = inputs.flat().map(([, r]) => r as Buffer);
    const shared = await terasort.prepare!(fakePrepareContext({ reducers: 4, records }));
    const result = await runJob(asJob(terasort), inputs, { reducers: 4, shared });
    assert.equal(result.files.length, 4);
    const out = Buffer.concat(result.files);
    assert.equal(out.length, data.length);
    const outRecs = fixedRecords(out, 100).map(([, r]) => (r as Buffer).toString('hex'));
    const expected = records.map((r) => r.toString('hex')).sort();
    assert.deepEqual(outRecs, expected);
    // Balanced enough that sampling did its job: no part under half its fair share.
    for (const f of result.files) assert.ok(f.length / 100 > 1000 / 2, `part of ${f.length / 100} records`);
  });
});

/** Independent reference: sum mod 2^64 of (FNV-1a32 << 32 | CRC-32) over every record, in BigInt. */
function referenceChecksum(records: Buffer[]): string {
  let sum = 0n;
  for (const r of records) {
    let h = 0x811c9dc5;
    for (const b of r) h = Number((BigInt(h ^ b) * 0x01000193n) & 0xffffffffn);
    sum = (sum + ((BigInt(h) << 32n) | BigInt(crc32(r) >>> 0))) & 0xffffffffffffffffn;
  }
  return sum.toString(16).padStart(16, '0');
}

function validationLines(files: Buffer[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const line of textLines(files)) {
    const tab = line.indexOf('\t');
    const k = line.slice(0, tab);
    out.set(k, [...(out.get(k) ?? []), line.slice(tab + 1)]);
  }
  return out;
}

describe('teravalidate', () => {
  async function sortedParts(rows: number, reducers: number): Promise<{ input: Buffer; parts: Buffer[] }> {
    const input = Buffer.concat(await teragenData(rows, 2));
    const inputs = chunk(fixedRecords(input, 100), 2);
    const shared = await terasort.prepare!(
      fakePrepareContext({ reducers, records: inputs.flat().map(([, r]) => r as Buffer) }),
    );
    const result = await runJob(asJob(terasort), inputs, { reducers, shared });
    return { input, parts: result.files };
  }

  /** Each part file is read as `splitsPerFile` splits with file offsets, in part order. */
  function splitsOf(parts: Buffer[], splitsPerFile: number): MapInput[] {
    return parts.flatMap((p) => chunk(fixedRecords(p, 100), splitsPerFile));
  }

  it('accepts sorted output and reproduces the input checksum', async () => {
    const { input, parts } = await sortedParts(3000, 3);
    const expectedSum = referenceChecksum(fixedRecords(input, 100).map(([, r]) => r as Buffer));
    const result = await runJob(asJob(teravalidate), splitsOf(parts, 2));
    const lines = textLines(result.files);
    assert.deepEqual(lines.slice(0, 4), ['misorder\t0', 'rows\t3000', `checksum\t${expectedSum}`, 'splits\t6']);
    assert.equal(lines.length, 4, 'no error lines');
  });

  it('emits one summary per split from cleanupMap, and none for an empty split', async () => {
    const recs = fixedRecords(Buffer.concat(await teragenData(700, 2)), 100);
    const split = recs.slice(100, 400); // starts at byte 10000, not at 0
    const { pairs } = await runMapTask(asJob(teravalidate), split, { mapIndex: 3 });
    assert.equal(pairs.length, 1);
    const [key, s] = pairs[0]! as [string, Summary];
    assert.equal(key, 'teravalidate');
    const keys = split.map(([, r]) => (r as Buffer).subarray(0, 10));
    let misorder = 0;
    for (let i = 1; i < keys.length; i++) if (Buffer.compare(keys[i - 1]!, keys[i]!) > 0) misorder++;
    assert.equal(s.mapIndex, 3);
    assert.equal(s.start, 10000);
    assert.equal(s.end, 40000);
    assert.equal(s.count, 300);
    assert.equal(s.misorder, misorder);
    assert.ok(s.firstKey.equals(keys[0]!) && s.lastKey.equals(keys[299]!));
    // Copies, not views: the reader may reuse a record's memory after map returns.
    assert.notEqual(s.lastKey.buffer, (split[299]![1] as Buffer).buffer);
    const sum = BigInt(`0x${referenceChecksum(split.map(([, r]) => r as Buffer))}`);
    assert.equal(s.sumHi, Number(sum >> 32n));
    assert.equal(s.sumLo, Number(sum & 0xffffffffn));
    assert.deepEqual((await runMapTask(asJob(teravalidate), [])).pairs, []);
  });

  it('reports a gap inside a split and ignores what a dead attempt left behind', async () => {
    const recs = fixedRecords(Buffer.concat(await teragenData(300, 1)), 100);
    const dead = fakeMapContext({ attemptId: 'm_0_0' });
    for (const [k, v] of recs.slice(0, 10)) teravalidate.map!(k, v as Buffer, dead.ctx);
    const withGap = recs.filter((_, i) => i !== 120);
    const { pairs } = await runMapTask(asJob(teravalidate), withGap, { attemptId: 'm_0_1' });
    assert.equal(pairs.length, 2, 'a new run after the gap');
    const v = validate(pairs.map(([, s]) => s as Summary));
    assert.equal(v.rows, 299);
    assert.equal(v.splits, 1);
    // (TeraGen's keys are unsorted, so a boundary misorder may be reported after the gap too.)
    assert.equal(v.errors[0], 'split 0: bytes [12000, 12100) missing or read twice');
  });

  it('finds misorders inside a split and across splits, with the same checksum for unsorted input', async () => {
    const input = Buffer.concat(await teragenData(2000, 2));
    const recs = fixedRecords(input, 100);
    const result = await runJob(asJob(teravalidate), chunk(recs, 4));
    const v = validationLines(result.files);
    const keys = recs.map(([, r]) => (r as Buffer).subarray(0, 10));
    let expectedMisorder = 0;
    for (let i = 1; i < keys.length; i++) if (Buffer.compare(keys[i - 1]!, keys[i]!) > 0) expectedMisorder++;
    assert.ok(expectedMisorder > 500);
    assert.deepEqual(v.get('misorder'), [String(expectedMisorder)]);
    assert.deepEqual(v.get('rows'), ['2000']);
    assert.deepEqual(v.get('checksum'), [referenceChecksum(recs.map(([, r]) => r as Buffer))]);
  });

  it('catches parts that are sorted inside but overlap at a boundary', async () => {
    const { parts } = await sortedParts(1000, 2);
    const swapped = [parts[1]!, parts[0]!];
    const v = validationLines((await runJob(asJob(teravalidate), splitsOf(swapped, 1))).files);
    assert.deepEqual(v.get('misorder'), ['1']);
    assert.equal(v.get('error')?.length, 1);
    assert.match(v.get('error')![0]!, /^misorder between split 0 byte \d+ \([0-9a-f]{20}\) and split 1 byte 0/);
  });

  it('joins per-record summaries in any order', () => {
    const rec = Buffer.alloc(100);
    const summaries: Summary[] = [];
    const keys: Buffer[] = [];
    for (let i = 0; i < 200; i++) {
      generateRow(i, rec);
      const key = Buffer.from(rec.subarray(0, 10));
      keys.push(key);
      summaries.push({
        mapIndex: 0,
        start: i * 100,
        end: i * 100 + 100,
        count: 1,
        misorder: 0,
        sumLo: i,
        sumHi: 0,
        firstKey: key,
        lastKey: key,
      });
    }
    let expectedMisorder = 0;
    for (let i = 1; i < keys.length; i++) if (Buffer.compare(keys[i - 1]!, keys[i]!) > 0) expectedMisorder++;
    // A deterministic shuffle; summaries are mutated by joining, so each run gets fresh copies.
    const order = summaries.map((_, i) => (i * 73) % 200);
    const fresh = (idx: number[]) => idx.map((i) => summaryCodec.decode(summaryCodec.encode(summaries[i]!)));
    for (const idx of [order, order.slice().reverse(), summaries.map((_, i) => i)]) {
      const joined = joinSummaries(fresh(idx));
      assert.equal(joined.length, 1);
      assert.equal(joined[0]!.count, 200);
      assert.equal(joined[0]!.misorder, expectedMisorder);
      assert.equal(joined[0]!.sumLo, (199 * 200) / 2);
      assert.ok(joined[0]!.firstKey.equals(keys[0]!) && joined[0]!.lastKey.equals(keys[199]!));
    }
    // A missing record is reported, not silently bridged.
    const gap = validate(fresh(summaries.map((_, i) => i).filter((i) => i !== 50)));
    assert.equal(gap.rows, 199);
    assert.match(gap.errors[0]!, /split 0: bytes \[5000, 5100\) missing/);
  });
});

describe('pi', () => {
  it('estimates pi within 1e-3 with 10 maps x 10000 samples', async () => {
    const params = { maps: 10, samples: 10000 };
    const result = await runJob(asJob(pi), generatedInputs(asJob(pi), params), { params });
    const v = validationLines(result.files);
    assert.deepEqual([...v.keys()], ['pi', 'inside', 'total']);
    assert.equal(v.get('total')![0], '100000');
    const estimate = Number(v.get('pi')![0]);
    assert.ok(Math.abs(estimate - Math.PI) < 1e-3, `pi estimate ${estimate}`);
    assert.equal(estimate, (4 * Number(v.get('inside')![0])) / 100000);
  });

  it('matches a direct radical-inverse Halton computation', () => {
    const radicalInverse = (i: number, base: number) => {
      let f = 1;
      let r = 0;
      while (i > 0) {
        f /= base;
        r += f * (i % base);
        i = Math.floor(i / base);
      }
      return r;
    };
    for (const offset of [0, 12345, 2 ** 40]) {
      let inside = 0;
      for (let i = offset + 1; i <= offset + 5000; i++) {
        const x = radicalInverse(i, 2) - 0.5;
        const y = radicalInverse(i, 3) - 0.5;
        if (x * x + y * y <= 0.25) inside++;
      }
      // Incremental and direct sums round differently; only a point on the circle could differ.
      assert.ok(Math.abs(countInside(offset, 5000).inside - inside) <= 1, `offset ${offset}`);
    }
  });

  it('rejects missing parameters clearly', () => {
    assert.throws(() => generatedInputs(asJob(pi), { maps: 2 }), /missing parameter `samples`/);
    assert.throws(() => generatedInputs(asJob(pi), { maps: 0, samples: 5 }), /`maps` must be an integer >= 1/);
  });
});

describe('harness', () => {
  it('runs cleanupMap once per map after its last record and cleanupReduce once per reducer', async () => {
    const events: string[] = [];
    const job = defineJob({
      name: 'hooks',
      input: textInput(),
      mapKey: codecs.text,
      mapValue: codecs.text,
      map(_offset, line, ctx) {
        events.push(`map ${ctx.mapIndex} ${line}`);
      },
      cleanupMap(ctx) {
        events.push(`cleanupMap ${ctx.mapIndex} ${ctx.split?.start}`);
        ctx.emit(`m${ctx.mapIndex}`, 'x');
      },
      reduce(key, _values, ctx) {
        events.push(`reduce ${ctx.reduceIndex} ${key}`);
      },
      cleanupReduce(ctx) {
        events.push(`cleanupReduce ${ctx.reduceIndex}`);
        ctx.emit('end', String(ctx.reduceIndex));
      },
    });
    const splits = [
      { path: '/in', start: 0, length: 4 },
      { path: '/in', start: 4, length: 2 },
    ];
    const result = await runJob(asJob(job), [textRecords('a\nb\n'), textRecords('c\n')], { reducers: 1, splits });
    assert.deepEqual(events, [
      'map 0 a',
      'map 0 b',
      'cleanupMap 0 0',
      'map 1 c',
      'cleanupMap 1 4',
      'reduce 0 m0',
      'reduce 0 m1',
      'cleanupReduce 0',
    ]);
    assert.deepEqual(textLines(result.files), ['end\t0']);
  });
});
