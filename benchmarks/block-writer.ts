/**
 * A reduce's output path alone: --mb of output written in chunks of --chunk-bytes (OutputWriter's
 * size for 100-byte records) through an FsClient file writer into the local block store
 * (replication 1, 64 MiB blocks: three fsyncs and a commit per block), in a process started with
 * a task process's flags and malloc settings (tasktracker.ts), pacing full GCs by what the writer
 * leaves to the GC as a task does (flushOutput in task-process.ts). The peer, in the same run:
 * the same chunks written with FileHandle.write to one plain file, fsynced at the end.
 *
 * Reported per repeat (writer and plain alternate, each in a fresh process): CPU (user + system,
 * libuv's thread pool included), wall time, full GCs (the paced ones: --trace-gc would show them as
 * "testing"), the writer's garbage bytes, and peak RSS (VmHWM); then the medians and the ratio of
 * the writer's CPU to the plain file's. Writes through the page cache cost system time that
 * varies with the machine's dirty-page writeback, so compare within a run.
 *
 * Run: npm run bench:block-writer [-- --mb 512 --repeats 3 --chunk-bytes 1048500]
 * Writes bench-results/block-writer.json and block-writer.md at the package root.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, open, rm } from 'node:fs/promises';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { constants, PerformanceObserver, performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import yargs from 'yargs';
import { noteTransientBytes } from '../src/shuffle/index.js';
import { FsClient, LocalDiskBlockStore, Namenode } from '../src/storage/index.js';
import { createLogger } from '../src/log.js';
import { finishMachineRecord, machineLine, machineRecord } from './lib/bench-cluster.js';
import { readStatusKb } from './lib/proc-rss.js';
import { median, progressLog } from './lib/shell.js';

const SELF = fileURLToPath(import.meta.url);
const MB = 1 << 20;

const args = yargs(process.argv.slice(2))
  .option('mb', { type: 'number', default: 512, describe: 'bytes written per measurement, MiB' })
  .option('repeats', { type: 'number', default: 3 })
  .option('chunk-bytes', { type: 'number', default: 1_048_500, describe: 'bytes per write call' })
  .option('child', { choices: ['writer', 'plain'] as const, describe: 'internal: one measurement in this process' })
  .strict()
  .parseSync();

interface Measurement {
  kind: 'writer' | 'plain';
  repeat: number;
  cpuMs: number;
  wallMs: number;
  fullGcs: number;
  garbageMb: number;
  peakRssMb: number;
}

function peakRssMb(): number {
  return (readStatusKb(process.pid, 'VmHWM') ?? process.resourceUsage().maxRSS) / 1024;
}

/** One measurement in this (task-like) process; prints it as one JSON line. */
async function child(kind: 'writer' | 'plain'): Promise<void> {
  const dir = await mkdtemp(join(os.tmpdir(), 'minimr-bench-block-writer-'));
  let fullGcs = 0;
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries())
      if ((e as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) fullGcs++;
  });
  observer.observe({ entryTypes: ['gc'] });
  const chunk = Buffer.alloc(args.chunkBytes, 0x41);
  const writes = Math.ceil((args.mb * MB) / chunk.length);
  let garbage = 0;
  let namenode: Namenode | undefined;
  try {
    let run: () => Promise<void>;
    if (kind === 'writer') {
      const logger = createLogger('bench', 'silent');
      namenode = new Namenode({ dbPath: join(dir, 'namenode'), logger, defaultBlockSize: 64 * MB });
      await namenode.open();
      const store = new LocalDiskBlockStore({ dir: join(dir, 'blocks'), workerId: 'w1' });
      await store.open();
      namenode.registerDatanode({ workerId: 'w1', host: '127.0.0.1', dataPort: 1, rack: 'r1' }, []);
      const fs = new FsClient({ namenode, logger, client: { workerId: 'w1', rack: 'r1' }, localStore: store });
      run = async () => {
        const writer = await fs.createWriter('/out/part-r-00000', { replication: 1 });
        for (let i = 0; i < writes; i++) {
          const before = writer.garbageBytes;
          await writer.write(chunk);
          noteTransientBytes(writer.garbageBytes - before);
        }
        await writer.close();
        garbage = writer.garbageBytes;
      };
    } else {
      run = async () => {
        const fh = await open(join(dir, 'plain.out'), 'w');
        let pos = 0;
        for (let i = 0; i < writes; i++) {
          for (let off = 0; off < chunk.length; ) {
            const { bytesWritten } = await fh.write(chunk, off, chunk.length - off, pos);
            off += bytesWritten;
            pos += bytesWritten;
          }
        }
        await fh.sync();
        await fh.close();
      };
    }
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await run();
    const wallMs = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    await new Promise((r) => setTimeout(r, 20)); // let the last GC entries arrive
    observer.disconnect();
    const m: Omit<Measurement, 'repeat'> = {
      kind,
      cpuMs: (cpu.user + cpu.system) / 1000,
      wallMs,
      fullGcs,
      garbageMb: garbage / MB,
      peakRssMb: peakRssMb(),
    };
    process.stdout.write(`${JSON.stringify(m)}\n`);
  } finally {
    await namenode?.close();
    await rm(dir, { recursive: true, force: true });
  }
}

async function measure(kind: 'writer' | 'plain', repeat: number): Promise<Measurement> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      '--max-semi-space-size=4',
      '--expose-gc',
      SELF,
      '--child',
      kind,
      '--mb',
      String(args.mb),
      '--chunk-bytes',
      String(args.chunkBytes),
    ],
    { env: { ...process.env, MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '524288' }, maxBuffer: 1 << 20 },
  );
  const line = stdout.trim().split('\n').pop()!;
  return { ...(JSON.parse(line) as Omit<Measurement, 'repeat'>), repeat };
}

async function main(): Promise<void> {
  const log = progressLog();
  const env = machineRecord();
  log(
    `block writer: ${args.mb} MiB in ${args.chunkBytes}-byte ` +
      `writes, ${args.repeats} repeats; ` +
      `load ${env.loadavgStart.join(' ')}`,
  );
  const runs: Measurement[] = [];
  for (let r = 1; r <= args.repeats; r++) {
    for (const kind of ['writer', 'plain'] as const) {
      const m = await measure(kind, r);
      runs.push(m);
      log(
        `${kind} ${r}: cpu ${m.cpuMs.toFixed(0)} ms, ` +
          `wall ${m.wallMs.toFixed(0)} ms, ${m.fullGcs} full GCs, ` +
          `garbage ${m.garbageMb.toFixed(1)} MiB, peak ` +
          `RSS ${m.peakRssMb.toFixed(1)} MiB`,
      );
    }
  }
  finishMachineRecord(env);
  const med = (kind: string, f: (m: Measurement) => number) => median(runs.filter((m) => m.kind === kind).map(f));
  const summary = {
    writerCpuMs: med('writer', (m) => m.cpuMs),
    plainCpuMs: med('plain', (m) => m.cpuMs),
    writerFullGcs: med('writer', (m) => m.fullGcs),
    writerGarbageMb: med('writer', (m) => m.garbageMb),
    writerPeakRssMb: med('writer', (m) => m.peakRssMb),
    plainPeakRssMb: med('plain', (m) => m.peakRssMb),
  };
  const ratio = summary.writerCpuMs / summary.plainCpuMs;
  const root = resolve(dirname(SELF), '..', '..');
  const outDir = join(root, 'bench-results');
  mkdirSync(outDir, { recursive: true });
  writeFileSync(
    join(outDir, 'block-writer.json'),
    JSON.stringify(
      { env, options: { mb: args.mb, repeats: args.repeats, chunkBytes: args.chunkBytes }, runs, summary, ratio },
      null,
      2,
    ),
  );
  const md = [
    '# Block writer vs a plain file: a reduce output path',
    '',
    machineLine(env),
    '',
    `${args.mb} MiB in writes of ${args.chunkBytes} bytes; writer: ` +
      `FsClient into the local block store (replication 1, 64 MiB ` +
      `blocks), GCs paced by its garbage as in a task; plain: ` +
      `FileHandle.write to one file, fsync at the end. Each ` +
      `measurement in a fresh process with a task's flags.`,
    '',
    '| repeat | path | CPU ms | wall ms | full GCs | garbage MiB | peak RSS MiB |',
    '|---:|---|---:|---:|---:|---:|---:|',
    ...runs.map(
      (m) =>
        `| ${m.repeat} | ${m.kind} | ${m.cpuMs.toFixed(0)} ` +
        `| ${m.wallMs.toFixed(0)} | ${m.fullGcs} ` +
        `| ${m.garbageMb.toFixed(1)} | ${m.peakRssMb.toFixed(1)} |`,
    ),
    '',
    `Medians: writer ${summary.writerCpuMs.toFixed(0)} ms of CPU ` +
      `(${summary.writerFullGcs} full ` +
      `GCs, ${summary.writerGarbageMb.toFixed(1)} MiB left to the GC, ` +
      `peak RSS ${summary.writerPeakRssMb.toFixed(1)} MiB), plain ` +
      `file ${summary.plainCpuMs.toFixed(0)} ms (peak ` +
      `RSS ${summary.plainPeakRssMb.toFixed(1)} MiB): **writer / plain ` +
      `CPU ${ratio.toFixed(2)}x**.`,
    '',
  ].join('\n');
  writeFileSync(join(outDir, 'block-writer.md'), md);
  log(`writer / plain CPU ${ratio.toFixed(2)}x; wrote ${join(outDir, 'block-writer.json')} and block-writer.md`);
}

if (args.child) await child(args.child);
else await main();
