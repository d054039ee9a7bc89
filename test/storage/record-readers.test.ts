import assert from 'node:assert/strict';
import { describe, it, before, after } from 'node:test';
import { isMinimrError } from '../../src/errors.js';
import {
  computeSplits,
  FsClient,
  openFixedRecordChunkReader,
  openFixedRecordReader,
  openLineChunkReader,
  openLineReader,
  type BatchOptions,
  type InputSplit,
  type RecordBatchReader,
  type RecordChunk,
  type RecordChunkReader,
} from '../../src/storage/index.js';
import { pseudoRandomBytes, seededRandom, silentLogger, startCluster, type TestCluster } from './helpers.js';

/**
 * The reference, computed without the reader: Hadoop's records are the `\n`-split lines, CR dropped, no empty record
 * after a final newline.
 */
function referenceLines(content: string): { offsets: number[]; lines: string[] } {
  const raw = content.split('\n');
  if (content.endsWith('\n') || content === '') raw.pop();
  const offsets: number[] = [];
  let offset = 0;
  for (const line of raw) {
    offsets.push(offset);
    offset += Buffer.byteLength(line, 'utf8') + 1;
  }
  return { offsets, lines: raw.map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l)) };
}

const PIECES = ['a', 'b', 'z', ' ', '0', 'é', '€', '😀', '中', 'ß', '\t'];

function randomText(seed: number, lineCount: number, longLineBytes: number): string {
  const random = seededRandom(seed);
  const lines: string[] = [];
  for (let i = 0; i < lineCount; i++) {
    const kind = random();
    let length: number;
    if (kind < 0.1) length = 0;
    else if (kind < 0.8) length = Math.floor(random() * 30);
    else if (kind < 0.95) length = 30 + Math.floor(random() * 200);
    else length = longLineBytes + Math.floor(random() * longLineBytes);
    let line = '';
    for (let j = 0; j < length; j++) line += PIECES[Math.floor(random() * PIECES.length)];
    if (random() < 0.2) line += '\r';
    lines.push(line);
  }
  return lines.join('\n');
}

async function readAll<V>(reader: RecordBatchReader<V>): Promise<{ offsets: number[]; values: V[] }> {
  const offsets: number[] = [];
  const values: V[] = [];
  try {
    for (let batch = await reader.next(); batch !== null; batch = await reader.next()) {
      assert.equal(batch.offsets.length, batch.values.length);
      offsets.push(...batch.offsets);
      values.push(...batch.values);
    }
  } finally {
    await reader.close();
  }
  return { offsets, values };
}

async function linesThroughSplits(
  fs: FsClient,
  path: string,
  options?: BatchOptions,
): Promise<{ offsets: number[]; lines: string[]; splits: number }> {
  const splits = computeSplits(path, await fs.getBlocks(path));
  const offsets: number[] = [];
  const lines: string[] = [];
  for (const split of splits) {
    const got = await readAll(openLineReader(fs, split, options));
    offsets.push(...got.offsets);
    lines.push(...got.values);
  }
  return { offsets, lines, splits: splits.length };
}

/** Every split's chunks, in split order. */
async function chunksThroughSplits(
  fs: FsClient,
  path: string,
  open: (split: InputSplit) => RecordChunkReader,
): Promise<RecordChunk[]> {
  const chunks: RecordChunk[] = [];
  for (const split of computeSplits(path, await fs.getBlocks(path))) {
    const reader = open(split);
    try {
      for (let c = await reader.next(); c !== null; c = await reader.next()) chunks.push(c);
    } finally {
      await reader.close();
    }
  }
  return chunks;
}

describe('input splits and record readers', () => {
  let cluster: TestCluster;
  let fs: FsClient;
  before(async () => {
    cluster = await startCluster(['r1', 'r2']);
    fs = new FsClient({ namenode: cluster.namenode, logger: silentLogger });
  });
  after(async () => {
    await cluster.close();
  });

  it('computeSplits: one split per block with its locations', async () => {
    await fs.put(pseudoRandomBytes(250), '/splits/f', { blockSize: 100, replication: 2 });
    const blocks = await fs.getBlocks('/splits/f');
    const splits = computeSplits('/splits/f', blocks);
    assert.deepEqual(
      splits.map((s) => [s.start, s.length, s.fileLength]),
      [
        [0, 100, 250],
        [100, 100, 250],
        [200, 50, 250],
      ],
    );
    for (const [i, split] of splits.entries()) {
      assert.deepEqual(
        split.preferredWorkers,
        blocks[i]!.locations.map((l) => l.workerId),
      );
      assert.deepEqual([...split.preferredRacks].sort(), ['r1', 'r2']);
    }
    assert.deepEqual(computeSplits('/empty', []), []);
  });

  for (const blockSize of [64, 1000]) {
    for (const [name, seed, trailingNewline] of [
      ['no final newline', 1, false],
      ['final newline', 2, true],
    ] as const) {
      it(`lines: block size ${blockSize}, ${name}: every line exactly once, in order, with byte offsets`, async () => {
        // Fewer lines for tiny blocks: every block is a PUT with fsyncs, and the layout variety is the same.
        let content = randomText(seed * 100 + blockSize, blockSize < 100 ? 150 : 400, blockSize * 2);
        if (trailingNewline) content += '\n';
        const path = `/lines/${blockSize}-${seed}.txt`;
        await fs.put(Buffer.from(content, 'utf8'), path, { blockSize, replication: 1 });
        const expected = referenceLines(content);
        for (const options of [{}, { maxRecords: 3 }, { maxBytes: 10 }]) {
          const got = await linesThroughSplits(fs, path, options);
          assert.ok(got.splits > 5);
          assert.deepEqual(got.lines, expected.lines, JSON.stringify(options));
          assert.deepEqual(got.offsets, expected.offsets);
        }
      });
    }
  }

  it(
    'lines: edge layouts (newline at block ends, line starting on a ' +
      'boundary, only newlines, one huge line, empty file)',
    async () => {
      const cases: Record<string, string> = {
        boundaryNewlines: Array.from({ length: 10 }, (_, i) => String(i).repeat(63)).join('\n') + '\n',
        boundaryStarts: Array.from({ length: 10 }, (_, i) => String(i).repeat(64)).join('\n'),
        onlyNewlines: '\n'.repeat(200),
        crlf: 'one\r\ntwo\r\n\r\nthree\r\n'.repeat(30),
        hugeLine: '€'.repeat(1000),
        hugeThenShort: `${'x'.repeat(500)}\nshort\n${'y'.repeat(300)}`,
        single: 'x',
        lone: '\n',
        empty: '',
      };
      for (const [name, content] of Object.entries(cases)) {
        const path = `/edge/${name}`;
        await fs.put(Buffer.from(content, 'utf8'), path, { blockSize: 64, replication: 1 });
        const expected = referenceLines(content);
        const got = await linesThroughSplits(fs, path);
        assert.deepEqual(got.lines, expected.lines, name);
        assert.deepEqual(got.offsets, expected.offsets, name);
      }
    },
  );

  for (const blockSize of [64, 1000]) {
    it(
      `line chunks: block size ${blockSize}: whole lines only, the ` +
        `splits' chunks back to back are the file, cut into the line ` +
        `reader's lines`,
      async () => {
        const content = Buffer.from(randomText(blockSize + 7, blockSize < 100 ? 150 : 400, blockSize * 2), 'utf8');
        const path = `/chunks/${blockSize}.txt`;
        await fs.put(content, path, { blockSize, replication: 1 });
        const chunks = await chunksThroughSplits(fs, path, (split) => openLineChunkReader(fs, split));
        assert.ok(chunks.length > 5);
        let at = 0;
        for (const c of chunks) {
          assert.equal(c.offset, at, 'each chunk starts where the one before ended');
          assert.ok(c.offset === 0 || content[c.offset - 1] === 0x0a, 'a chunk starts at a line start');
          const end = c.offset + c.bytes.length;
          assert.ok(
            c.bytes[c.bytes.length - 1] === 0x0a || end === content.length,
            'a chunk ends after a newline or at the end of the file',
          );
          assert.ok(c.bytes.equals(content.subarray(c.offset, end)));
          at = end;
        }
        assert.equal(at, content.length);
        // Cut at newlines (CR dropped), the chunks give exactly the line reader's lines.
        const fromChunks = chunks.flatMap((c) => referenceLines(c.bytes.toString('utf8')).lines);
        assert.deepEqual(fromChunks, (await linesThroughSplits(fs, path)).lines);
      },
    );
  }

  it('fixed record chunks: whole records, back to back, the file', async () => {
    const data = pseudoRandomBytes(100 * 57, 250);
    await fs.put(data, '/chunks/fixed', { blockSize: 250, replication: 1 });
    const chunks = await chunksThroughSplits(fs, '/chunks/fixed', (split) =>
      openFixedRecordChunkReader(fs, split, 100),
    );
    let at = 0;
    for (const c of chunks) {
      assert.equal(c.offset, at);
      assert.equal(c.bytes.length % 100, 0);
      at += c.bytes.length;
    }
    assert.ok(Buffer.concat(chunks.map((c) => c.bytes)).equals(data));
  });

  it('lines: closing a reader early stops reading', async () => {
    const content = 'line\n'.repeat(10_000);
    await fs.put(Buffer.from(content), '/early', { blockSize: 40_000, replication: 1 });
    const [split] = computeSplits('/early', await fs.getBlocks('/early'));
    const reader = openLineReader(fs, split!, { maxRecords: 10 });
    const batch = await reader.next();
    assert.deepEqual(batch?.values, Array(10).fill('line'));
    await reader.close();
    assert.equal(await reader.next(), null);
  });

  for (const blockSize of [64, 250, 1000]) {
    it(
      `fixed records: block size ${blockSize}, record length 100: ` + `each record once, offsets multiples of 100`,
      async () => {
        const data = pseudoRandomBytes(100 * 57, blockSize);
        const path = `/fixed/${blockSize}`;
        await fs.put(data, path, { blockSize, replication: 1 });
        const offsets: number[] = [];
        const records: Buffer[] = [];
        for (const split of computeSplits(path, await fs.getBlocks(path))) {
          for (const options of [{}, { maxRecords: 2 }]) {
            const got = await readAll(openFixedRecordReader(fs, split, 100, options));
            if (Object.keys(options).length === 0) {
              offsets.push(...got.offsets);
              records.push(...got.values);
            }
            for (const o of got.offsets)
              assert.ok(o >= split.start && o < split.start + split.length, 'records start inside their split');
          }
        }
        assert.deepEqual(
          offsets,
          Array.from({ length: 57 }, (_, i) => i * 100),
        );
        assert.equal(records.length, 57);
        records.forEach((record, i) =>
          assert.equal(Buffer.compare(record, data.subarray(i * 100, i * 100 + 100)), 0, `record ${i}`),
        );
      },
    );
  }

  describe('chunks read from a local replica with reuseBuffers', () => {
    // Blocks of 3 MiB + 1000 bytes are three 1 MiB disk reads and a short one: lines and records span
    // reads and blocks, and one line is longer than a block.
    const blockSize = 3 * 1024 * 1024 + 1000;
    let local: FsClient;
    before(() => {
      const node = cluster.datanodes[0]!;
      local = new FsClient({
        namenode: cluster.namenode,
        client: { workerId: node.address.workerId, rack: node.address.rack },
        localStore: node.store,
        logger: silentLogger,
      });
    });

    /**
     * Each chunk checked against the file as it is handed out (before the next is asked for), and the 1 MiB read
     * buffers the chunks were in (not the copies partial lines or records were joined in).
     */
    async function checkChunks(
      content: Buffer,
      path: string,
      open: (split: InputSplit) => RecordChunkReader,
    ): Promise<{ chunks: number; buffers: number; splits: number }> {
      const splits = computeSplits(path, await local.getBlocks(path));
      const buffers = new Set<ArrayBufferLike>();
      let at = 0;
      let chunks = 0;
      for (const split of splits) {
        assert.deepEqual(
          split.preferredWorkers,
          [cluster.datanodes[0]!.address.workerId],
          'the blocks are on the local replica',
        );
        const reader = open(split);
        try {
          for (let c = await reader.next(); c !== null; c = await reader.next()) {
            assert.equal(c.offset, at, 'each chunk starts where the one before ended');
            assert.ok(
              c.bytes.equals(content.subarray(c.offset, c.offset + c.bytes.length)),
              `chunk at ${c.offset} is the file's bytes`,
            );
            at += c.bytes.length;
            chunks++;
            if (c.bytes.buffer.byteLength >= 1 << 20) buffers.add(c.bytes.buffer);
          }
        } finally {
          await reader.close();
        }
      }
      assert.equal(at, content.length, 'the chunks back to back are the file');
      return { chunks, buffers: buffers.size, splits: splits.length };
    }

    it(
      'lines: every chunk is the file as handed out, lines cut by ' +
        'reads and blocks and longer than a block included',
      async () => {
        const random = seededRandom(77);
        const parts: string[] = [];
        for (let bytes = 0; bytes < 9 * 1024 * 1024; ) {
          const long = random() < 0.002;
          const line = long
            ? 'L'.repeat(blockSize + 12345)
            : 'é€x\t'.repeat(Math.floor(random() * 40)) + (random() < 0.2 ? '\r' : '');
          parts.push(line);
          bytes += Buffer.byteLength(line) + 1;
        }
        parts.push('x'.repeat(blockSize + 1), 'tail without newline');
        const content = Buffer.from(parts.join('\n'), 'utf8');
        await local.put(content, '/reuse/lines.txt', { blockSize, replication: 1 });
        const reused = await checkChunks(content, '/reuse/lines.txt', (split) =>
          openLineChunkReader(local, split, { reuseBuffers: true }),
        );
        assert.ok(reused.splits >= 3 && reused.chunks > 5, `${reused.splits} splits, ${reused.chunks} chunks`);
      },
    );

    it(
      'fixed records: records that span reads and blocks are whole ' +
        'and right, and the reads go into the same two buffers',
      async () => {
        const data = pseudoRandomBytes(100 * 200_000, 4242);
        await local.put(data, '/reuse/fixed', { blockSize, replication: 1 });
        const reused = await checkChunks(data, '/reuse/fixed', (split) =>
          openFixedRecordChunkReader(local, split, 100, { reuseBuffers: true }),
        );
        const fresh = await checkChunks(data, '/reuse/fixed', (split) => openFixedRecordChunkReader(local, split, 100));
        // Without reuse every read is a buffer of its own (more than two a split); with it, a split's reads go into
        // two, over and over.
        assert.ok(
          fresh.buffers > 2 * fresh.splits,
          `without reuse: ${fresh.buffers} buffers for ${fresh.splits} splits`,
        );
        assert.ok(
          reused.buffers <= 2 * reused.splits,
          `with reuse: ${reused.buffers} buffers for ${reused.splits} splits`,
        );
      },
    );
  });

  it('fixed records: a trailing partial record is EBADJOB naming the path', async () => {
    await fs.put(pseudoRandomBytes(250), '/fixed/partial', { blockSize: 100, replication: 1 });
    const [split] = computeSplits('/fixed/partial', await fs.getBlocks('/fixed/partial'));
    assert.throws(
      () => openFixedRecordReader(fs, split!, 100),
      (err) => isMinimrError(err, 'EBADJOB') && err.details.path === '/fixed/partial',
    );
  });
});
