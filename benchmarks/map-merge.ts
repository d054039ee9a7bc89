/**
 * The map side's spill merge in isolation: one TeraSort-shaped map (TeraGen rows, 16 MB by default,
 * one partition as in the elasticity profile's 1-reduce runs) collected into a MapOutputBuffer and
 * finished, at buffers given in MiB (default 27 = the profile's ideal, one spill and a rename; 10 =
 * three spills and a merge; 2.7 = 10% of ideal). The buffers run interleaved, --reps times each, in
 * one process, so that a shared, noisy machine affects them alike; prints the median wall and CPU
 * time of collect and of finish per buffer size, and a SHA-256 of the output data file (which must
 * not depend on the buffer size or the code).
 *
 * Not an npm script: `npm run build && node dist/benchmarks/map-merge.js [--mb 16] [--buffers 27,10,2.7] [--reps 7]`;
 * as a task process runs: `MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=524288 node --max-semi-space-size=4
 * --expose-gc dist/benchmarks/map-merge.js`; add `--cpu-prof` (node flag) with `--buffers 10` to profile.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import yargs from 'yargs';
import { generateRow } from '../apps/teragen.js';
import { codecByName, createShuffleCounters, MapOutputBuffer } from '../src/shuffle/index.js';

const args = yargs(process.argv.slice(2))
  .option('mb', { type: 'number', default: 16 })
  .option('buffers', { type: 'string', default: '27,10,2.7' })
  .option('parts', { type: 'number', default: 1 })
  .option('reps', { type: 'number', default: 7 })
  .option('codec', { choices: ['lz4', 'none'] as const, default: 'lz4' as const })
  .option('spill-percent', { type: 'number', default: 0.8 })
  .strict()
  .parseSync();

const RECORD = 100;
const KEY = 10;
const records = Math.floor((args.mb * 2 ** 20) / RECORD);
const input = Buffer.allocUnsafe(records * RECORD);
for (let r = 0; r < records; r++) generateRow(r, input, r * RECORD);
const buffers = args.buffers.split(',').map(Number);

interface Sample {
  collectWall: number;
  collectCpu: number;
  finishWall: number;
  finishCpu: number;
}
const cpuMs = (u: NodeJS.CpuUsage): number => (u.user + u.system) / 1000;
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1]!;
};

const root = await mkdtemp(join(tmpdir(), 'minimr-mapmerge-'));
const samples = new Map<number, Sample[]>(buffers.map((b) => [b, []]));
const digests = new Map<number, Set<string>>(buffers.map((b) => [b, new Set()]));
const spills = new Map<number, number>();
try {
  for (let rep = 0; rep < args.reps; rep++) {
    for (const mib of buffers) {
      const dir = join(root, `r${rep}-b${mib}`);
      const counters = createShuffleCounters();
      const buffer = new MapOutputBuffer({ dir, numPartitions: args.parts, bufferBytes: Math.round(mib * 2 ** 20), counters, codec: codecByName(args.codec), spillPercent: args['spill-percent'] });
      const parts = args.parts;
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      for (let r = 0; r < records; r++) {
        const rec = input.subarray(r * RECORD, (r + 1) * RECORD);
        const key = rec.subarray(0, KEY);
        buffer.collect((((key[0]! << 8) | key[1]!) * parts) >>> 16, key, rec.subarray(KEY));
        if (buffer.mustWait) await buffer.waitForRoom();
      }
      const c1 = process.cpuUsage();
      const t1 = performance.now();
      const info = await buffer.finish();
      const t2 = performance.now();
      const c2 = process.cpuUsage();
      const s: Sample = {
        collectWall: t1 - t0,
        collectCpu: cpuMs({ user: c1.user - c0.user, system: c1.system - c0.system }),
        finishWall: t2 - t1,
        finishCpu: cpuMs({ user: c2.user - c1.user, system: c2.system - c1.system }),
      };
      samples.get(mib)!.push(s);
      spills.set(mib, counters.spills);
      digests.get(mib)!.add(createHash('sha256').update(readFileSync(info.dataFile)).digest('hex').slice(0, 16));
      await rm(dir, { recursive: true, force: true });
      process.stderr.write(
        `rep ${rep} ${mib} MiB: collect ${s.collectWall.toFixed(0)} ms (cpu ${s.collectCpu.toFixed(0)}), finish ${s.finishWall.toFixed(0)} ms (cpu ${s.finishCpu.toFixed(0)}), spills ${counters.spills}\n`,
      );
    }
  }
} finally {
  await rm(root, { recursive: true, force: true });
}
console.log(`map of ${args.mb} MB TeraGen rows, ${args.parts} partition(s), codec ${args.codec}, medians of ${args.reps}:`);
console.log('| buffer MiB | spills | collect ms (cpu) | finish ms (cpu) | total ms (cpu) | output sha256 |');
console.log('|---|---|---|---|---|---|');
for (const mib of buffers) {
  const xs = samples.get(mib)!;
  const m = (f: (s: Sample) => number): string => median(xs.map(f)).toFixed(0);
  console.log(
    `| ${mib} | ${spills.get(mib)} | ${m((s) => s.collectWall)} (${m((s) => s.collectCpu)}) | ${m((s) => s.finishWall)} (${m((s) => s.finishCpu)}) | ` +
      `${m((s) => s.collectWall + s.finishWall)} (${m((s) => s.collectCpu + s.finishCpu)}) | ${[...digests.get(mib)!].join(' ')} |`,
  );
}
