/**
 * The map side's spill merge in context: one TeraSort-shaped map (TeraGen rows, 16 MB by default,
 * one partition as in the elasticity profile's 1-reduce runs) collected into a MapOutputBuffer and
 * finished, at buffers given in MiB (default 27 = the profile's ideal, one spill and a rename; 10 =
 * three spills and a merge; 2.7 = 10% of ideal, ten spills). The buffers run interleaved, --reps
 * times each, in one process, so that a shared, noisy machine affects them alike; prints the median
 * wall and CPU time of collect and of finish per buffer size, the median number of full GCs per map
 * (V8's and the GC pacer's), and a SHA-256 of the output data file (which must not depend on the
 * buffer size or the code).
 *
 * A/B: `--against <dir>` also loads another build's shuffle (`<dir>/src/shuffle/index.js`, e.g. a
 * copy of dist/ built from the base commit) and alternates the two implementations rep by rep, in
 * the same process: separate runs drift too much on a shared machine to show a 10% change.
 *
 * Not an npm script:
 * `npm run build && node dist/benchmarks/map-merge.js [--mb 16] [--buffers 27,10,2.7] [--reps 7] [--against DIR]`; as a
 * task process runs:
 * `MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=524288 node --max-semi-space-size=4 --expose-gc
 * dist/benchmarks/map-merge.js`; add `--cpu-prof` (node flag) with `--buffers 10` to profile.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { constants, performance, PerformanceObserver } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import yargs from 'yargs';
import { generateRow } from '../apps/teragen.js';
import * as thisShuffle from '../src/shuffle/index.js';

const args = yargs(process.argv.slice(2))
  .option('mb', { type: 'number', default: 16 })
  .option('buffers', { type: 'string', default: '27,10,2.7' })
  .option('parts', { type: 'number', default: 1 })
  .option('reps', { type: 'number', default: 7 })
  .option('codec', { choices: ['lz4', 'none'] as const, default: 'lz4' as const })
  .option('spill-percent', { type: 'number', default: 0.8 })
  .option('against', { type: 'string', describe: 'dist directory of another build to alternate with' })
  .strict()
  .parseSync();

type Shuffle = typeof thisShuffle;
const impls: Array<{ name: string; shuffle: Shuffle }> = [{ name: 'this', shuffle: thisShuffle }];
if (args.against) {
  const url = pathToFileURL(resolve(args.against, 'src/shuffle/index.js')).href;
  impls.push({ name: args.against, shuffle: (await import(url)) as Shuffle });
}

let fullGcs = 0;
new PerformanceObserver((list) => {
  for (const e of list.getEntries())
    if ((e as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) fullGcs++;
}).observe({ entryTypes: ['gc'] });
const settle = (): Promise<void> => new Promise((r) => setTimeout(r, 20));

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
  fullGcs: number;
}
const cpuMs = (u: NodeJS.CpuUsage): number => (u.user + u.system) / 1000;
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1]!;
};

const key = (mib: number, impl: string): string => `${mib}\u0000${impl}`;
const samples = new Map<string, Sample[]>();
const digests = new Map<string, Set<string>>();
const spills = new Map<string, number>();
const root = await mkdtemp(join(tmpdir(), 'minimr-mapmerge-'));
try {
  for (let rep = 0; rep < args.reps; rep++) {
    for (const mib of buffers) {
      // Alternate which implementation goes first, so neither always runs on the other's garbage.
      for (const impl of rep % 2 === 0 ? impls : [...impls].reverse()) {
        const { MapOutputBuffer, codecByName, createShuffleCounters } = impl.shuffle;
        const dir = join(root, `r${rep}-b${mib}-${impls.indexOf(impl)}`);
        const counters = createShuffleCounters();
        const buffer = new MapOutputBuffer({
          dir,
          numPartitions: args.parts,
          bufferBytes: Math.round(mib * 2 ** 20),
          counters,
          codec: codecByName(args.codec),
          spillPercent: args['spill-percent'],
        });
        const parts = args.parts;
        await settle();
        const gcs0 = fullGcs;
        const c0 = process.cpuUsage();
        const t0 = performance.now();
        for (let r = 0; r < records; r++) {
          const rec = input.subarray(r * RECORD, (r + 1) * RECORD);
          const k = rec.subarray(0, KEY);
          buffer.collect((((k[0]! << 8) | k[1]!) * parts) >>> 16, k, rec.subarray(KEY));
          if (buffer.mustWait) await buffer.waitForRoom();
        }
        const c1 = process.cpuUsage();
        const t1 = performance.now();
        const info = await buffer.finish();
        const t2 = performance.now();
        const c2 = process.cpuUsage();
        await settle();
        const s: Sample = {
          collectWall: t1 - t0,
          collectCpu: cpuMs({ user: c1.user - c0.user, system: c1.system - c0.system }),
          finishWall: t2 - t1,
          finishCpu: cpuMs({ user: c2.user - c1.user, system: c2.system - c1.system }),
          fullGcs: fullGcs - gcs0,
        };
        const id = key(mib, impl.name);
        if (!samples.has(id)) samples.set(id, []);
        samples.get(id)!.push(s);
        spills.set(id, counters.spills);
        if (!digests.has(id)) digests.set(id, new Set());
        digests.get(id)!.add(createHash('sha256').update(readFileSync(info.dataFile)).digest('hex').slice(0, 16));
        await rm(dir, { recursive: true, force: true });
        process.stderr.write(
          `rep ${rep} ${mib} MiB ${impl.name}: ` +
            `collect ${s.collectWall.toFixed(0)} ms ` +
            `(cpu ${s.collectCpu.toFixed(0)}), ` +
            (`finish ${s.finishWall.toFixed(0)} ms ` +
              `(cpu ${s.finishCpu.toFixed(0)}), spills ${counters.spills}, ` +
              `full GCs ${s.fullGcs}\n`),
        );
      }
    }
  }
} finally {
  await rm(root, { recursive: true, force: true });
}
console.log(
  `map of ${args.mb} MB TeraGen rows, ${args.parts} partition(s), ` +
    `codec ${args.codec}, spillPercent ${args['spill-percent']}, ` +
    `medians of ${args.reps}:`,
);
console.log(
  '| buffer MiB | build | spills | collect ms (cpu) | finish ms (cpu) | total ms (cpu) | full GCs | output sha256 |',
);
console.log('|---|---|---|---|---|---|---|---|');
for (const mib of buffers) {
  for (const impl of impls) {
    const id = key(mib, impl.name);
    const xs = samples.get(id)!;
    const m = (f: (s: Sample) => number): string => median(xs.map(f)).toFixed(0);
    console.log(
      `| ${mib} | ${impl.name} | ${spills.get(id)} ` +
        `| ${m((s) => s.collectWall)} (${m((s) => s.collectCpu)}) ` +
        `| ${m((s) => s.finishWall)} (${m((s) => s.finishCpu)}) | ` +
        (`${m((s) => s.collectWall + s.finishWall)} ` +
          `(${m((s) => s.collectCpu + s.finishCpu)}) ` +
          `| ${m((s) => s.fullGcs)} | ${[...digests.get(id)!].join(' ')} |`),
    );
  }
}
