/**
 * The map side's final merge alone: --runs spill files of TeraGen rows (--mb in all, one partition,
 * rows dealt round-robin to the runs and each run sorted), written once as a MapOutputBuffer writes
 * spills, then merged --reps times into one framed output file the way MapOutputBuffer.mergeRuns does
 * (CursorMerge over FileFrameFeeds, encoded records into a FramePacker, writeFramedFile). Prints the
 * median wall and CPU ms of a merge (CPU: process.cpuUsage, libuv's thread pool included) and a
 * SHA-256 of the output.
 *
 * Not an npm script: `npm run build && node dist/benchmarks/spill-merge.js [--mb 16] [--runs 3] [--reps 9]`;
 * add node's `--cpu-prof` to see where a merge's time goes.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import yargs from 'yargs';
import { generateRow } from '../apps/teragen.js';
import { compareByteRanges, compareBytes } from '../src/shuffle/bytes-compare.js';
import { codecByName } from '../src/shuffle/codec.js';
import { copyMerged, CursorMerge, FileFrameFeed, RecordCursor } from '../src/shuffle/run-cursor.js';
import { openSpillFile, viewOf, writeFramedFile, type SegmentSource } from '../src/shuffle/spill-writer.js';

const args = yargs(process.argv.slice(2))
  .option('mb', { type: 'number', default: 16 })
  .option('runs', { type: 'number', default: 3 })
  .option('reps', { type: 'number', default: 9 })
  .option('codec', { choices: ['lz4', 'none'] as const, default: 'lz4' as const })
  .strict()
  .parseSync();

const RECORD = 100;
const KEY = 10;
const codec = codecByName(args.codec);
const rows = Math.floor((args.mb * 2 ** 20) / RECORD);
const input = Buffer.allocUnsafe(rows * RECORD);
for (let r = 0; r < rows; r++) generateRow(r, input, r * RECORD);
const inputView = viewOf(input);

const root = await mkdtemp(join(tmpdir(), 'minimr-spillmerge-'));
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
try {
  const spills: Array<{ path: string; length: number }> = [];
  for (let s = 0; s < args.runs; s++) {
    const mine: number[] = [];
    for (let r = s; r < rows; r += args.runs) mine.push(r);
    mine.sort(
      (a, b) => compareByteRanges(input, a * RECORD, a * RECORD + KEY, input, b * RECORD, b * RECORD + KEY) || a - b,
    );
    const source: SegmentSource = function* (_p, packer) {
      for (const r of mine) {
        packer.addContiguous(input, inputView, r * RECORD, KEY, RECORD - KEY);
        if (packer.frameReady) yield;
      }
    };
    const path = join(root, `spill-${s}.out`);
    const file = openSpillFile(path);
    const stats = await writeFramedFile(file, source, { codec, numSegments: 1 });
    await file.close();
    spills.push({ path, length: stats.segments[0]!.length });
  }
  const walls: number[] = [];
  const cpus: number[] = [];
  const digests = new Set<string>();
  for (let rep = 0; rep < args.reps; rep++) {
    const out = join(root, 'merged.out');
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const source: SegmentSource = (_p, packer) =>
      copyMerged(
        new CursorMerge(
          spills.map(
            (s, order) =>
              new RecordCursor(new FileFrameFeed(s.path, 0, s.length, { name: s.path }, true), 0, order, s.path),
          ),
          compareBytes,
        ),
        packer,
      );
    const file = openSpillFile(out);
    await writeFramedFile(file, source, { codec, numSegments: 1 });
    await file.close();
    const wall = performance.now() - t0;
    const c = process.cpuUsage(c0);
    walls.push(wall);
    cpus.push((c.user + c.system) / 1000);
    digests.add(createHash('sha256').update(readFileSync(out)).digest('hex').slice(0, 16));
    process.stderr.write(`rep ${rep}: wall ${wall.toFixed(0)} ms, cpu ${cpus.at(-1)!.toFixed(0)} ms\n`);
  }
  console.log(
    `merge of ${args.runs} runs, ${args.mb} MB of TeraGen rows, ` +
      `codec ${args.codec}: median of ${args.reps} ` +
      `wall ${median(walls).toFixed(0)} ms, ` +
      `cpu ${median(cpus).toFixed(0)} ms; output ${[...digests].join(' ')}`,
  );
} finally {
  await rm(root, { recursive: true, force: true });
}
