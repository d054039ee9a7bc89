/**
 * CPU time of the shuffle's parts on TeraSort-shaped data, in one process, without a cluster: what
 * to compare before/after a change to src/shuffle on a machine whose wall time is not reliable
 * (process.cpuUsage: user + system of this process, libuv's thread pool included).
 *
 *   map:    --maps map outputs of --map-mb of 100-byte records each (TeraGen rows, range
 *           partitioned into --parts partitions by the first key bytes, as TeraSort does), collected
 *           into a MapOutputBuffer of --map-buffer-mb and finished (spills + final merge);
 *   reduce: partition 0 of all of them through a ReduceShuffle (local reads) with --reduce-buffer-mb,
 *           then the final merge grouped by key into an identity reduce writing the records format
 *           through OutputWriter to a file (the write path of a reduce task, minus the block store).
 *
 * Map outputs are kept in --dir (default a temp dir) and reused by `--phase reduce`. Prints CPU and
 * wall seconds per part, a SHA-256 of the reduce output (which must not change with the buffers or
 * the code), and peak RSS sampled per phase with the V8 heap and external memory at that moment.
 * Not an npm script: `npm run build && node dist/benchmarks/shuffle-cpu.js [--phase map|reduce|all]`;
 * to match task processes, run it as `MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=524288
 * node --max-semi-space-size=4 --expose-gc dist/benchmarks/shuffle-cpu.js ...` (tasktracker.ts).
 * A/B: build the other version elsewhere and alternate runs on the same --dir.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, existsSync } from 'node:fs';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import yargs from 'yargs';
import { OutputWriter } from '../src/runtime/task/output-writer.js';
import {
  createShuffleCounters,
  groupByKey,
  mapOutputPaths,
  MapOutputBuffer,
  newShuffleSecret,
  ReduceShuffle,
  type MapOutputLocation,
} from '../src/shuffle/index.js';
import { generateRow } from '../apps/teragen.js';

const args = yargs(process.argv.slice(2))
  .option('phase', { choices: ['map', 'reduce', 'all'] as const, default: 'all' as const })
  .option('maps', { type: 'number', default: 4 })
  .option('map-mb', { type: 'number', default: 64 })
  .option('parts', { type: 'number', default: 2 })
  .option('map-buffer-mb', { type: 'number', default: 64 })
  .option('reduce-buffer-mb', { type: 'number', default: 64 })
  .option('dir', { type: 'string' })
  .strict()
  .parseSync();

const JOB = 'job_bench_0001';
const WORKER = 'worker-0';
const RECORD = 100;
const KEY = 10;

interface Clock {
  cpu: NodeJS.CpuUsage;
  wall: number;
}
const start = (): Clock => ({ cpu: process.cpuUsage(), wall: performance.now() });
function lap(c: Clock): { cpuS: number; wallS: number } {
  const d = process.cpuUsage(c.cpu);
  return { cpuS: (d.user + d.system) / 1e6, wallS: (performance.now() - c.wall) / 1000 };
}
const fmt = (t: { cpuS: number; wallS: number }): string => `cpu ${t.cpuS.toFixed(2)} s, wall ${t.wallS.toFixed(2)} s`;

/** VmHWM (peak RSS) and RSS now, MiB, with the V8 heap and external memory now. */
function rssMiB(): string {
  const status = readFileSync('/proc/self/status', 'utf8');
  const kb = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1] ?? 0);
  const mu = process.memoryUsage();
  return (
    `VmHWM ${(kb('VmHWM') / 1024).toFixed(0)} MiB, ` +
    `RSS ${(kb('VmRSS') / 1024).toFixed(0)} MiB ` +
    `(heap ${(mu.heapTotal / 2 ** 20).toFixed(0)}, ` +
    `external ${(mu.external / 2 ** 20).toFixed(0)}, ` +
    `arrayBuffers ${(mu.arrayBuffers / 2 ** 20).toFixed(0)})`
  );
}

/** Largest RSS seen by samplePeak, with the V8 heap and external memory at that moment. */
let peak = { rss: 0, heapTotal: 0, external: 0, arrayBuffers: 0 };
function samplePeak(): void {
  const mu = process.memoryUsage();
  if (mu.rss > peak.rss)
    peak = { rss: mu.rss, heapTotal: mu.heapTotal, external: mu.external, arrayBuffers: mu.arrayBuffers };
}
const peakText = (): string =>
  `sampled peak RSS ${(peak.rss / 2 ** 20).toFixed(0)} MiB ` +
  `(heap ${(peak.heapTotal / 2 ** 20).toFixed(0)}, ` +
  `external ${(peak.external / 2 ** 20).toFixed(0)}, ` +
  `arrayBuffers ${(peak.arrayBuffers / 2 ** 20).toFixed(0)})`;

const attemptOf = (i: number): string => `attempt_bench_0001_m_${String(i).padStart(6, '0')}_0`;

async function runMaps(root: string): Promise<void> {
  const records = Math.floor((args['map-mb'] * 2 ** 20) / RECORD);
  const input = Buffer.allocUnsafe(records * RECORD);
  let total = { cpuS: 0, wallS: 0 };
  for (let m = 0; m < args.maps; m++) {
    for (let r = 0; r < records; r++) generateRow(m * records + r, input, r * RECORD);
    const counters = createShuffleCounters();
    const buffer = new MapOutputBuffer({
      dir: mapOutputPaths(root, JOB, attemptOf(m)).dir,
      numPartitions: args.parts,
      bufferBytes: args['map-buffer-mb'] * 2 ** 20,
      counters,
    });
    const c = start();
    const parts = args.parts;
    for (let r = 0; r < records; r++) {
      const rec = input.subarray(r * RECORD, (r + 1) * RECORD);
      const key = rec.subarray(0, KEY);
      buffer.collect((((key[0]! << 8) | key[1]!) * parts) >>> 16, key, rec.subarray(KEY));
      if (buffer.mustWait) await buffer.waitForRoom();
      if ((r & 0x3fff) === 0) samplePeak();
    }
    const collected = lap(c);
    const collectPeak = peakText();
    peak = { rss: 0, heapTotal: 0, external: 0, arrayBuffers: 0 };
    const sampler = setInterval(samplePeak, 5);
    await buffer.finish();
    clearInterval(sampler);
    const t = lap(c);
    process.stderr.write(`  collect: ${collectPeak}; finish: ${peakText()}\n`);
    peak = { rss: 0, heapTotal: 0, external: 0, arrayBuffers: 0 };
    total = { cpuS: total.cpuS + t.cpuS, wallS: total.wallS + t.wallS };
    process.stderr.write(
      `map ${m}: ${fmt(t)} (collect ${fmt(collected)}); ` +
        `spills ${counters.spills}, ` +
        `spilled ${(counters.spilledBytes / 2 ** 20).toFixed(1)} ` +
        `MiB; ${rssMiB()}\n`,
    );
  }
  console.log(
    `map total (${args.maps} x ${args['map-mb']} MB, ` +
      `buffer ${args['map-buffer-mb']} MB): ${fmt(total)}; per map ` +
      `cpu ${(total.cpuS / args.maps).toFixed(2)} s`,
  );
}

async function runReduce(root: string): Promise<void> {
  const locations: MapOutputLocation[] = [];
  for (let m = 0; m < args.maps; m++)
    locations.push({ mapIndex: m, attemptId: attemptOf(m), workerId: WORKER, host: '127.0.0.1', dataPort: 1 });
  const counters = createShuffleCounters();
  const shuffle = new ReduceShuffle({
    jobId: JOB,
    // Every map output is local here: the secret is never sent.
    shuffleSecret: newShuffleSecret(),
    reduceIndex: 0,
    locations,
    local: { workerId: WORKER, rootDir: root },
    workDir: join(root, JOB, 'attempt_bench_0001_r_000000_0.reduce'),
    bufferBytes: args['reduce-buffer-mb'] * 2 ** 20,
    counters,
  });
  const outPath = join(root, 'reduce-output');
  const fh = await open(outPath, 'w');
  const hash = createHash('sha256');
  let pos = 0;
  const sink = {
    async write(chunk: Buffer) {
      hash.update(chunk);
      for (let off = 0; off < chunk.length; ) {
        const { bytesWritten } = await fh.write(chunk, off, chunk.length - off, pos);
        off += bytesWritten;
        pos += bytesWritten;
      }
    },
    close: () => fh.close(),
    abort: () => fh.close(),
    garbageBytes: 0,
  };
  const output = new OutputWriter({ kind: 'records' } as never, sink);
  try {
    const c = start();
    const sampler = setInterval(samplePeak, 10);
    const records = await shuffle.run();
    clearInterval(sampler);
    const fetched = lap(c);
    const fetchPeak = peakText();
    peak = { rss: 0, heapTotal: 0, external: 0, arrayBuffers: 0 };
    const c2 = start();
    const grouping = createShuffleCounters();
    let n = 0;
    for (const group of groupByKey(records, undefined, grouping)) {
      for (const v of group.values) output.emit(group.key, v);
      if (output.needsFlush) await output.flush();
      if ((++n & 0xffff) === 0) samplePeak();
    }
    await output.close();
    const merged = lap(c2);
    const total = lap(c);
    console.log(
      `reduce (${args.maps} maps, buffer ${args['reduce-buffer-mb']} ` +
        `MB): fetch+merges ${fmt(fetched)}; final ` +
        `merge+reduce+write ${fmt(merged)}; total ${fmt(total)}`,
    );
    console.log(
      `  records ${output.records}, ` +
        `output ${(pos / 2 ** 20).toFixed(1)} MiB ` +
        `sha256 ${hash.digest('hex').slice(0, 16)}; ` +
        `spilled ${(counters.spilledBytes / 2 ** 20).toFixed(1)} MiB, ` +
        `merge passes ${counters.mergePasses}, peak ` +
        `buffer ${(counters.peakBufferBytes / 2 ** 20).toFixed(1)} MiB`,
    );
    console.log(`  ${rssMiB()}\n  fetch + merges: ${fetchPeak}\n  final merge: ${peakText()}`);
  } finally {
    await shuffle.close();
    await rm(outPath, { force: true });
  }
}

const root = args.dir ?? (await mkdtemp(join(tmpdir(), 'minimr-shufcpu-')));
mkdirSync(root, { recursive: true });
try {
  if (args.phase !== 'reduce') await runMaps(root);
  if (args.phase !== 'map') {
    if (!existsSync(mapOutputPaths(root, JOB, attemptOf(args.maps - 1)).dataFile))
      throw new Error(`no map outputs in ${root}: run --phase map first`);
    await runReduce(root);
  }
} finally {
  if (!args.dir) await rm(root, { recursive: true, force: true });
}
