/**
 * The shuffle's memory-bounded external merge sort (issue "Shuffle: memory-bounded external merge
 * sort that spills to disk"), on an embedded 2-worker cluster (1 map + 1 reduce slot each,
 * replication 1, 64 MB blocks):
 *
 *   1. TeraSort of --size-mb of TeraGen records (default 1024), 2 reducers, with map and reduce
 *      buffers of 64 MB, then of 16 MB; beside each, in the same run, `LC_ALL=C sort -S 64M
 *      --parallel=2` (-S 16M) on the same records as 100-byte text lines (lib/tera.ts). Wall times
 *      and the ratio minimr / GNU sort. minimr's output is verified with TeraValidate (order, row
 *      count, checksum of the generated records) and record by record against GNU sort's output.
 *   2. Per run: the job's shuffle counters (SPILLED_BYTES, SPILLS, MERGE_PASSES, SHUFFLE_BYTES_*),
 *      split by phase from the attempts, and the peak RSS of every task process (PEAK_RSS_BYTES),
 *      per phase max and median, against the bound buffer + TASK_OVERHEAD_MB (100 MiB).
 *   3. The elasticity profiles (profileJob) of WordCount on a generated text corpus and of TeraSort
 *      on TeraGen records, each --profile-mb (default 64) put with --profile-block-mb blocks
 *      (default 16) and run with 4 maps, at 100/75/50/25/10% of ideal memory; SVGs to
 *      bench-results/profile-<app>.svg, the tables into the report.
 *   4. Targets, PASS/FAIL with the numbers: TeraSort within 2x GNU sort's wall time given the same
 *      memory; penalty at 10% of ideal memory <= 1.5x (maps) and <= 2x (reduces); every task's
 *      peak RSS <= its buffer + 100 MiB.
 *
 * minimr time = wall time from submit (module load and TeraSort's sampling `prepare` included)
 * until the client sees success (polling every 50 ms); data loading is reported separately. GNU
 * sort reads a local file already in the page cache and writes a local file, temp files in the
 * work directory. A watchdog kills a job that runs over --job-timeout-s or has had no attempt
 * running for --stall-s (a task no worker can take), so the run reports instead of hanging.
 * MB = MiB = 2^20 bytes.
 *
 * With --repeats N, each case then runs N - 1 more pairs of minimr and GNU sort, the order
 * alternating, and its ratio target is judged on the median of the pairs' ratios (lib/paired.ts);
 * the repeats check the output bytes, the first run everything above.
 *
 * Run: npm run bench:shuffle [-- --size-mb 1024] [--skip-profile] [--keep] [--job-timeout-s 3600]
 *        [--stall-s 120] [--profile-mb 64] [--profile-block-mb 16] [--repeats 1]
 * Writes bench-results/shuffle.json, shuffle.md, shuffle-terasort.svg and profile-<app>.svg.
 * Exit code 1 when something failed or an output did not verify; targets missed are reported
 * (FAIL) but do not change the exit code.
 */
import yargs from 'yargs';
import { createReadStream, mkdirSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import {
  TASK_OVERHEAD_MB,
  profileJob,
  profileMarkdown,
  profileChart,
  type AttemptSummary,
  type ElasticityProfile,
  type JobStatus,
  type SubmitOptions,
} from '../src/runtime/index.js';
import type { LocalCluster } from '../src/local/index.js';
import { lineChartFiles } from '../src/util/index.js';
import {
  BENCH_CLUSTER,
  finishMachineRecord,
  machineLine,
  machineRecord,
  startBenchCluster,
  type MachineRecord,
} from './lib/bench-cluster.js';
import { writeCorpus } from './lib/corpus.js';
import { followJob, partFiles, readOutputText, serverSeconds } from './lib/follow-job.js';
import { describeRatios, pairedRatios, ratioSummaryJson, runPair } from './lib/paired.js';
import { median, r3, splitLines, timeShell, toolVersion } from './lib/shell.js';
import { RECORD, SequenceDigest, wholeRecords, writeTeraInputs } from './lib/tera.js';
import { ProcRssSampler, type ProcSample } from './lib/proc-rss.js';
import { JobWatchdog } from './lib/watchdog.js';

const SELF = fileURLToPath(import.meta.url);
const MB = 1 << 20;
const BUFFERS_MB = [64, 16] as const;
const FRACTIONS = [1, 0.75, 0.5, 0.25, 0.1];
const PROFILE_MAPS = 4;
const TARGET_RATIO = 2;
const TARGET_MAP_PENALTY = 1.5;
const TARGET_REDUCE_PENALTY = 2;

// ---------------------------------------------------------------- arguments

interface Args {
  sizeMb: number;
  skipProfile: boolean;
  keep: boolean;
  jobTimeoutS: number;
  stallS: number;
  profileMb: number;
  profileBlockMb: number;
  repeats: number;
}

function parseArgs(argv: string[]): Args {
  const a = yargs(argv)
    .option('size-mb', { type: 'number', default: 1024, describe: 'TeraSort input size' })
    .option('skip-profile', { type: 'boolean', default: false })
    .option('keep', { type: 'boolean', default: false })
    .option('job-timeout-s', { type: 'number', default: 3600 })
    .option('stall-s', { type: 'number', default: 120, describe: 'kill a job with no attempt running for this long' })
    .option('profile-mb', { type: 'number', default: 64 })
    .option('profile-block-mb', { type: 'number', default: 16 })
    .option('repeats', {
      type: 'number',
      default: 1,
      describe: 'runs of each TeraSort case and of its GNU sort, interleaved: ratios pair by pair (lib/paired.ts)',
    })
    .strict()
    .parseSync();
  if (!Number.isInteger(a.repeats) || a.repeats < 1)
    throw new Error(`--repeats must be a positive integer, got ${a.repeats}`);
  return {
    sizeMb: a.sizeMb,
    skipProfile: a.skipProfile,
    keep: a.keep,
    jobTimeoutS: a.jobTimeoutS,
    stallS: a.stallS,
    profileMb: a.profileMb,
    profileBlockMb: a.profileBlockMb,
    repeats: a.repeats,
  };
}

// ---------------------------------------------------------------- progress

const T0 = performance.now();
function log(msg: string): void {
  process.stdout.write(`[${((performance.now() - T0) / 1000).toFixed(1).padStart(6)}s] ${msg}\n`);
}

// ---------------------------------------------------------------- results

type Phase = 'map' | 'reduce';

interface PhaseCounters {
  attempts: number;
  spilledBytes: number;
  spills: number;
  mergePasses: number;
  shuffleBytesLocal: number;
  shuffleBytesRemote: number;
  /** Largest PEAK_BUFFER_BYTES of the phase's attempts. */
  peakBufferBytes: number;
}

interface AttemptRow {
  attemptId: string;
  kind: Phase;
  workerId: string;
  state: string;
  memoryMb: number;
  /** The attempt's buffer: the configured one, or less when granted less memory than ideal. */
  bufferMb: number;
  boundMb: number;
  wallMs: number | null;
  taskMs: number | null;
  peakRssMb: number | null;
  /** VmHWM of the attempt's task process sampled from /proc (lib/proc-rss.ts), when matched. */
  sampledHwmMb: number | null;
  peakBufferMb: number | null;
  spilledMb: number;
  spills: number;
  mergePasses: number;
  /** null when the attempt reported no PEAK_RSS_BYTES. */
  withinBound: boolean | null;
}

interface RssGroup {
  phase: Phase;
  attempts: number;
  /** Attempts that reported no PEAK_RSS_BYTES. */
  missing: number;
  bufferMb: number;
  boundMb: number;
  medianMb: number | null;
  maxMb: number | null;
  /** bound - max, MiB (negative: over the bound). */
  marginMb: number | null;
  pass: boolean | null;
  over: string[];
  /** The same from the /proc VmHWM samples of the attempts that could be matched to a process. */
  sampled: {
    matched: number;
    medianMb: number | null;
    maxMb: number | null;
    marginMb: number | null;
    pass: boolean | null;
  };
}

interface GnuSortResult {
  command: string;
  seconds: number | null;
  verified: boolean | null;
  note?: string;
  error?: string;
  /** With --repeats: every run's seconds, the first included (pair k with minimr's run k). */
  runsSeconds?: number[];
}

interface SortRun {
  bufferMb: number;
  inputBytes: number;
  jobId?: string;
  seconds: number | null;
  serverSeconds: number | null;
  maps?: number;
  reduces?: number;
  counters?: Record<string, number>;
  phases?: Record<Phase, PhaseCounters>;
  attempts: AttemptRow[];
  rss: RssGroup[];
  /** Sampled VmHWM of the worker processes themselves during the run (what ru_maxrss of a forked task inherits). */
  workerPeakMb?: Record<string, number>;
  validateSeconds: number | null;
  verified: boolean | null;
  checks: string[];
  error?: string;
  gnu: GnuSortResult;
  /** With --repeats: every run's seconds, the first included. */
  runsSeconds?: number[];
}

interface ProfileResult {
  app: string;
  inputPath: string;
  inputBytes: number;
  blockMb: number;
  seconds: number | null;
  profile?: ElasticityProfile;
  /** Smallest fraction profiled (0.1 normally) and the penalties there. */
  lowFraction?: number;
  mapPenalty?: number;
  reducePenalty?: number;
  svg?: string;
  error?: string;
}

interface Target {
  name: string;
  measured: string;
  target: string;
  pass: boolean | null;
}

// ---------------------------------------------------------------- main

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const work = await mkdtemp(join(os.tmpdir(), 'minimr-bench-shuffle-'));
  const local = join(work, 'local');
  await mkdir(local);
  const outDir = resolve(dirname(SELF), '..', '..', 'bench-results');
  mkdirSync(outDir, { recursive: true });
  const env = {
    ...machineRecord(),
    args,
    taskOverheadMb: TASK_OVERHEAD_MB,
    cluster: BENCH_CLUSTER,
    tools: { sort: toolVersion('sort') },
  };
  log(
    `minimr shuffle benchmark: ` +
      `--size-mb ${args.sizeMb}${args.skipProfile ? ', --skip-profile' : `, profiles on ${args.profileMb} MB in ${args.profileBlockMb} MB blocks`}, ` +
      `work dir ${work}; ${env.cpus} CPUs, load ${env.loadavgStart.join(' ')}`,
  );

  const runs: SortRun[] = [];
  const profiles: ProfileResult[] = [];
  const phases: Record<string, number> = {};
  let cluster: LocalCluster | undefined;
  let watchdog: JobWatchdog | undefined;
  let sampler: ProcRssSampler | undefined;
  let failure: string | undefined;
  const rows = Math.floor((args.sizeMb * MB) / RECORD);

  try {
    // ------------------------------------------------------------ inputs
    let t = performance.now();
    const tera = await writeTeraInputs(join(local, 'tera.dat'), join(local, 'tera-lines.txt'), rows);
    phases.generateTera = (performance.now() - t) / 1000;
    log(
      `generated ${rows} TeraGen records ` +
        `(${((rows * RECORD) / MB).toFixed(1)} MB) + GNU sort lines, ` +
        `checksum ${tera.checksum} [${phases.generateTera.toFixed(1)}s]`,
    );

    const profileBytes = Math.round(args.profileMb * MB);
    let corpusPath: string | undefined;
    let profileTeraPath: string | undefined;
    if (!args.skipProfile) {
      t = performance.now();
      const corpus = await writeCorpus(join(local, 'profile-corpus.txt'), profileBytes);
      corpusPath = corpus.path;
      const profileRows = Math.floor(profileBytes / RECORD);
      const pt = await writeTeraInputs(
        join(local, 'profile-tera.dat'),
        join(local, 'profile-tera-lines.txt'),
        profileRows,
      );
      profileTeraPath = pt.recordsPath;
      await rm(pt.linesPath, { force: true });
      phases.generateProfileInputs = (performance.now() - t) / 1000;
      log(
        `generated profile inputs: corpus ${(corpus.bytes / MB).toFixed(1)} MB (${corpus.lines} lines), ` +
          (`${profileRows} TeraGen records ` +
            `(${((profileRows * RECORD) / MB).toFixed(1)} MB) ` +
            `[${phases.generateProfileInputs.toFixed(1)}s]`),
      );
    }

    // ------------------------------------------------------------ cluster
    t = performance.now();
    cluster = await startBenchCluster(join(work, 'cluster'));
    phases.clusterStart = (performance.now() - t) / 1000;
    const client = cluster.client;
    const info = await client.clusterInfo();
    log(
      `cluster ` +
        `up: ${info.workers.map((w) => `${w.workerId} (${w.memoryMb} MB)`).join(', ')}, ` +
        `policy ${info.policy} [${phases.clusterStart.toFixed(1)}s]`,
    );
    watchdog = new JobWatchdog(client, { jobTimeoutS: args.jobTimeoutS, stallS: args.stallS, log });
    const liveCluster = cluster;
    sampler = new ProcRssSampler(() => liveCluster.workers.map((w) => ({ workerId: w.workerId, pid: w.process.pid })));
    sampler.start();
    if (!sampler.available) log('no /proc: task RSS is reported from PEAK_RSS_BYTES only');

    const put = async (src: string, dst: string, blockSize?: number) => {
      const t1 = performance.now();
      const st = await client.fs.put(src, dst, { overwrite: true, ...(blockSize ? { blockSize } : {}) });
      const s = (performance.now() - t1) / 1000;
      phases[`put ${dst}`] = s;
      log(
        `put ${dst}: ${(st.length / MB).toFixed(1)} ` +
          `MB${blockSize ? ` in ${(blockSize / MB).toFixed(0)} MB blocks` : ''} ` +
          `in ${s.toFixed(1)}s (${(st.length / MB / s).toFixed(1)} MB/s)`,
      );
    };
    await put(tera.recordsPath, '/bench/tera/input.dat');
    const profileBlock = Math.round(args.profileBlockMb * MB);
    if (corpusPath) await put(corpusPath, '/bench/profile/text/corpus.txt', profileBlock);
    if (profileTeraPath) await put(profileTeraPath, '/bench/profile/tera/input.dat', profileBlock);

    const app = (name: string) => fileURLToPath(new URL(`../apps/${name}.js`, import.meta.url));

    /** Submits, waits, and returns the status and the wall time; a watchdog kill shows up as the reason. */
    async function runTimed(
      label: string,
      appName: string,
      options: SubmitOptions,
    ): Promise<{ status: JobStatus; seconds: number }> {
      const t0 = performance.now();
      const jobId = await client.submit(app(appName), { ...options, overwrite: true });
      log(`${label}: submitted ${jobId} [${((performance.now() - t0) / 1000).toFixed(1)}s after submit started]`);
      try {
        return await followJob(client, jobId, label, t0, log);
      } catch (err) {
        const why = watchdog?.reasonFor(jobId);
        throw Object.assign(
          new Error(`${label} (${jobId}): ${(err as Error).message}${why ? ` [watchdog: ${why}]` : ''}`),
          { jobId },
        );
      }
    }

    const partFilesOf = (dir: string) => partFiles(client, dir);
    const readText = (dir: string) => readOutputText(client, dir);

    /** Counters, per-phase sums and peak RSS of a TeraSort run, from its attempts. */
    async function collectAttempts(run: SortRun, label: string, status: JobStatus): Promise<void> {
      run.jobId = status.jobId;
      run.counters = status.counters;
      run.maps ??= status.mapsTotal;
      run.reduces ??= status.reducesTotal;
      const attempts = await client.attempts(status.jobId);
      // Let the last task processes exit and be seen gone, then match processes to attempts.
      await new Promise((r) => setTimeout(r, 500));
      sampler?.sample();
      const matched = sampler?.available ? sampler.attribute(attempts) : new Map<string, ProcSample>();
      run.workerPeakMb = sampler?.available
        ? Object.fromEntries(Object.entries(sampler.workerPeaks()).map(([k, v]) => [k, r3(v / MB)]))
        : undefined;
      run.attempts = attempts.map((a) => attemptRow(a, run.bufferMb, matched.get(a.attemptId)));
      run.phases = { map: phaseCounters(attempts, 'map'), reduce: phaseCounters(attempts, 'reduce') };
      run.rss = (['map', 'reduce'] as const).map((phase) => rssGroup(run.attempts, phase, run.bufferMb));
      const c = status.counters;
      log(
        `${label}: counters SPILLED_BYTES ${mib(c.SPILLED_BYTES)} MB, ` +
          `SPILLS ${c.SPILLS ?? 0}, MERGE_PASSES ${c.MERGE_PASSES ?? 0}, ` +
          (`SHUFFLE_BYTES_LOCAL ${mib(c.SHUFFLE_BYTES_LOCAL)} MB, ` +
            `SHUFFLE_BYTES_REMOTE ${mib(c.SHUFFLE_BYTES_REMOTE)} MB, ` +
            `PEAK_BUFFER_BYTES ${mib(c.PEAK_BUFFER_BYTES)} MB; `) +
          `${attempts.length} attempts (${attempts.filter((a) => a.state !== 'succeeded').length} not succeeded)`,
      );
      for (const g of run.rss) log(`${label}: ${rssLine(g)}`);
      if (run.workerPeakMb)
        log(
          `${label}: worker processes' own peak RSS (VmHWM): ${Object.entries(run.workerPeakMb)
            .map(([k, v]) => `${k} ${v.toFixed(1)} MiB`)
            .join(', ')}`,
        );
    }

    // ------------------------------------------------------------ TeraSort at 64 MB and 16 MB
    for (const bufferMb of BUFFERS_MB) {
      const label = `TeraSort ${bufferMb} MB`;
      const output = `/bench/out/terasort-${bufferMb}`;
      const sortedFile = `tera-sorted-${bufferMb}.txt`;
      const command = `sort -S ${bufferMb}M --parallel=2 -T . -o ${sortedFile} tera-lines.txt`;
      const run: SortRun = {
        bufferMb,
        inputBytes: rows * RECORD,
        seconds: null,
        serverSeconds: null,
        attempts: [],
        rss: [],
        validateSeconds: null,
        verified: null,
        checks: [],
        gnu: { command: `LC_ALL=C ${command}`, seconds: null, verified: null },
      };
      runs.push(run);
      let minimrDigest: string | undefined;

      // minimr
      sampler?.reset();
      try {
        const { status, seconds } = await runTimed(label, 'terasort', {
          input: ['/bench/tera/input.dat'],
          output,
          reducers: 2,
          conf: { 'shuffle.map.bufferBytes': bufferMb * MB, 'shuffle.reduce.bufferBytes': bufferMb * MB },
        });
        run.seconds = seconds;
        run.serverSeconds = serverSeconds(status);
        run.jobId = status.jobId;
        run.maps = status.mapsTotal;
        run.reduces = status.reducesTotal;
        await collectAttempts(run, label, status);

        // verification 1: record count and record-order digest (compared with GNU sort's below)
        const digest = new SequenceDigest();
        for (const p of await partFilesOf(output)) {
          for await (const chunk of wholeRecords(client.fs.cat(p), RECORD)) digest.addRecords(chunk);
        }
        minimrDigest = digest.digest();
        const problems: string[] = [];
        run.checks.push(`${digest.records} records out in ${(await partFilesOf(output)).length} parts`);
        if (digest.records !== rows) problems.push(`${digest.records} records out, ${rows} in`);

        // verification 2: TeraValidate
        const v = await runTimed(`TeraValidate ${bufferMb} MB`, 'teravalidate', {
          input: [output],
          output: `/bench/out/teravalidate-${bufferMb}`,
        });
        run.validateSeconds = v.seconds;
        const lines = splitLines(await readText(`/bench/out/teravalidate-${bufferMb}`));
        const want = ['misorder\t0', `rows\t${rows}`, `checksum\t${tera.checksum}`];
        const missing = want.filter((w) => !lines.includes(w));
        run.checks.push(
          `TeraValidate: ${lines
            .filter((l) => !l.startsWith('error\t'))
            .join(', ')
            .replace(/\t/g, ' ')}`,
        );
        if (missing.length) problems.push(`TeraValidate: missing ${missing.map((m) => JSON.stringify(m)).join(', ')}`);
        if (lines.some((l) => l.startsWith('error\t'))) problems.push('TeraValidate: error lines present');
        run.verified = problems.length === 0;
        if (problems.length) run.error = problems.join('; ');
        log(
          `${label}: ` +
            `output ${run.verified ? 'verified' : 'MISMATCH'}: ${run.checks.join('; ')}${problems.length ? ' | ' + problems.join('; ') : ''}`,
        );
      } catch (err) {
        run.error = (err as Error).message;
        run.verified = false;
        log(`${label}: minimr FAILED: ${run.error}`);
        // A failed job's attempts still tell how much memory its tasks took.
        const jobId = run.jobId ?? (err as { jobId?: string }).jobId;
        if (jobId && run.attempts.length === 0) {
          await collectAttempts(run, `${label} (failed job)`, await client.status(jobId)).catch((e: unknown) =>
            log(`${label}: could not read the attempts of ${jobId}: ${(e as Error).message}`),
          );
        }
      }

      // GNU sort with the same memory
      log(`${label}: peer LC_ALL=C ${command}`);
      try {
        run.gnu.seconds = await timeShell(command, { cwd: local, env: { TMPDIR: local } });
        const digest = new SequenceDigest();
        for await (const chunk of wholeRecords(
          createReadStream(join(local, sortedFile), { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>,
          RECORD,
        )) {
          digest.addLines(chunk);
        }
        const problems: string[] = [];
        if (digest.records !== rows) problems.push(`${digest.records} lines out, ${rows} in`);
        if (minimrDigest !== undefined) {
          const same = digest.digest() === minimrDigest;
          run.checks.push(`record order ${same ? 'identical to' : 'DIFFERENT from'} GNU sort's`);
          if (!same) {
            run.verified = false;
            run.error = [run.error, 'minimr and GNU sort put the records in different orders']
              .filter(Boolean)
              .join('; ');
            problems.push('record order differs from minimr');
          }
        }
        run.gnu.verified = problems.length === 0;
        if (problems.length) run.gnu.note = problems.join('; ');
        log(
          `${label}: GNU sort ${run.gnu.seconds.toFixed(2)}s, ` +
            `output ${run.gnu.verified ? 'verified' : `MISMATCH: ${run.gnu.note}`}` +
            (run.seconds !== null ? `; minimr/sort = ${(run.seconds / run.gnu.seconds).toFixed(2)}x` : ''),
        );
      } catch (err) {
        run.gnu.error = (err as Error).message;
        log(`${label}: GNU sort FAILED: ${run.gnu.error}`);
      }

      // --repeats: more pairs, the order alternating; the output bytes must be the first run's.
      if (
        args.repeats > 1 &&
        run.verified === true &&
        run.gnu.verified === true &&
        run.seconds !== null &&
        run.gnu.seconds !== null
      ) {
        const mine = (run.runsSeconds = [run.seconds]);
        const theirs = (run.gnu.runsSeconds = [run.gnu.seconds]);
        for (let k = 1; k < args.repeats; k++) {
          const pair = `${label} run ${k + 1} of ${args.repeats}`;
          await runPair(
            k,
            async () => {
              const { status, seconds } = await runTimed(pair, 'terasort', {
                input: ['/bench/tera/input.dat'],
                output,
                reducers: 2,
                conf: { 'shuffle.map.bufferBytes': bufferMb * MB, 'shuffle.reduce.bufferBytes': bufferMb * MB },
              });
              if (status.counters.OUTPUT_BYTES !== run.counters?.OUTPUT_BYTES)
                throw new Error(
                  `${pair}: ${status.counters.OUTPUT_BYTES} output bytes, the ` +
                    `first run wrote ${run.counters?.OUTPUT_BYTES}`,
                );
              mine.push(seconds);
            },
            async () => {
              theirs.push(await timeShell(command, { cwd: local, env: { TMPDIR: local } }));
            },
          );
          log(`${pair}: minimr ${mine.at(-1)!.toFixed(2)}s, GNU sort ${theirs.at(-1)!.toFixed(2)}s`);
        }
        log(`${label}: minimr/sort ${describeRatios(pairedRatios(mine, theirs)!)}`);
      }
      if (!args.keep) {
        await rm(join(local, sortedFile), { force: true });
        await client.fs.remove(output, { recursive: true }).catch(() => undefined);
      }
    }

    // ------------------------------------------------------------ elasticity profiles
    if (!args.skipProfile) {
      for (const [appName, inputPath] of [
        ['wordcount', '/bench/profile/text/corpus.txt'],
        ['terasort', '/bench/profile/tera/input.dat'],
      ] as const) {
        const st = await client.fs.stat(inputPath);
        const result: ProfileResult = {
          app: appName,
          inputPath,
          inputBytes: st.length,
          blockMb: args.profileBlockMb,
          seconds: null,
        };
        profiles.push(result);
        const t1 = performance.now();
        log(
          `profile ${appName}: ${(st.length / MB).toFixed(1)} MB ` +
            `input, ${PROFILE_MAPS} maps, fractions ${FRACTIONS.join(', ')}`,
        );
        try {
          const profile = await profileJob(client, {
            modulePath: app(appName),
            input: [inputPath],
            workDir: `/profile-tmp/${appName}`,
            fractions: FRACTIONS,
            maps: PROFILE_MAPS,
            onProgress: (m) => log(`profile ${appName}: ${m}`),
          });
          result.seconds = (performance.now() - t1) / 1000;
          result.profile = profile;
          const ideal = profile.points.find((p) => p.fraction === 1)!;
          const low = [...profile.points].sort((a, b) => a.fraction - b.fraction)[0]!;
          result.lowFraction = low.fraction;
          result.mapPenalty = low.mapMs / ideal.mapMs;
          result.reducePenalty = low.reduceMs / ideal.reduceMs;
          const svgName = `profile-${appName}.svg`;
          for (const [name, text] of lineChartFiles(`profile-${appName}`, profileChart(profile)))
            writeFileSync(resolve(outDir, name), text);
          result.svg = svgName;
          log(
            `profile ${appName}: done in ${result.seconds.toFixed(1)}s; ` +
              `at ${pct(low.fraction)} of ideal memory map ` +
              `penalty ${result.mapPenalty.toFixed(2)}x ` +
              (`(target <= ${TARGET_MAP_PENALTY}x), reduce ` +
                `penalty ${result.reducePenalty.toFixed(2)}x (target ` +
                `<= ${TARGET_REDUCE_PENALTY}x); wrote ${svgName}`),
          );
        } catch (err) {
          result.seconds = (performance.now() - t1) / 1000;
          const msg = (err as Error).message;
          const jobId = (err as { details?: { jobId?: string } }).details?.jobId;
          const why = jobId ? watchdog.reasonFor(jobId) : undefined;
          result.error = `${msg}${why ? ` [watchdog: ${why}]` : ''}`;
          log(`profile ${appName} FAILED: ${result.error}`);
        }
      }
    }
  } catch (err) {
    failure = (err as Error).stack ?? String(err);
    log(`FAILED: ${failure}`);
  } finally {
    watchdog?.stop();
    sampler?.stop();
    if (cluster) {
      log('stopping cluster');
      await cluster.stop().catch((err: unknown) => log(`cluster stop failed: ${(err as Error).message}`));
    }
    if (!args.keep) await rm(work, { recursive: true, force: true });
    else log(`kept ${work}`);
  }
  finishMachineRecord(env);

  // ---------------------------------------------------------------- targets
  const targets: Target[] = [];
  for (const r of runs) {
    const ratio = r.seconds !== null && r.gnu.seconds ? r.seconds / r.gnu.seconds : null;
    const paired = pairedRatios(r.runsSeconds, r.gnu.runsSeconds);
    targets.push({
      name: `TeraSort ${f(r.inputBytes / MB, 0)} MB, ${r.bufferMb} MB buffers vs sort -S ${r.bufferMb}M`,
      measured: paired
        ? `minimr/sort ${describeRatios(paired)}`
        : ratio === null
          ? 'not measured'
          : `${f(r.seconds)} s / ${f(r.gnu.seconds)} s = ${f(ratio)}x`,
      target: `<= ${TARGET_RATIO}x${paired ? ' (the median)' : ''}`,
      pass: paired ? paired.median <= TARGET_RATIO : ratio === null ? null : ratio <= TARGET_RATIO,
    });
  }
  for (const p of profiles) {
    const at = p.lowFraction !== undefined ? pct(p.lowFraction) : '10%';
    targets.push({
      name: `${p.app} map penalty at ${at} of ideal memory`,
      measured: p.mapPenalty === undefined ? 'not measured' : `${f(p.mapPenalty)}x`,
      target: `<= ${TARGET_MAP_PENALTY}x`,
      pass: p.mapPenalty === undefined ? null : p.mapPenalty <= TARGET_MAP_PENALTY,
    });
    targets.push({
      name: `${p.app} reduce penalty at ${at} of ideal memory`,
      measured: p.reducePenalty === undefined ? 'not measured' : `${f(p.reducePenalty)}x`,
      target: `<= ${TARGET_REDUCE_PENALTY}x`,
      pass: p.reducePenalty === undefined ? null : p.reducePenalty <= TARGET_REDUCE_PENALTY,
    });
  }
  for (const r of runs) {
    for (const g of r.rss) {
      targets.push({
        name: `TeraSort ${r.bufferMb} MB buffers: peak RSS of ${g.phase} tasks`,
        measured:
          g.maxMb === null
            ? 'not measured'
            : `max ${f(g.maxMb, 1)} MiB of ${f(g.boundMb, 0)} MiB (margin ${f(g.marginMb, 1)} MiB)`,
        target: `<= buffer + ${TASK_OVERHEAD_MB} MiB`,
        pass: g.pass,
      });
    }
  }
  log('targets:');
  for (const t of targets) log(`  ${passWord(t.pass)}  ${t.name}: ${t.measured} (target ${t.target})`);

  // ---------------------------------------------------------------- report
  const chart = runs.some((r) => r.seconds !== null || r.gnu.seconds !== null)
    ? lineChartFiles('shuffle-terasort', {
        title: `TeraSort ${f((rows * RECORD) / MB, 0)} MB: wall time vs sort memory`,
        xLabel: 'buffer per task / sort -S (MB)',
        yLabel: 'wall time (s)',
        series: [
          {
            name: 'minimr TeraSort',
            points: runs.filter((r) => r.seconds !== null).map((r) => [r.bufferMb, r.seconds!] as const),
          },
          {
            name: 'GNU sort',
            points: runs.filter((r) => r.gnu.seconds !== null).map((r) => [r.bufferMb, r.gnu.seconds!] as const),
            dashed: true,
          },
        ],
      })
    : undefined;
  for (const [name, text] of chart ?? []) writeFileSync(resolve(outDir, name), text);
  const md = renderMarkdown(env, rows, runs, profiles, targets, phases, failure, chart !== undefined);
  const json = {
    env,
    phasesSeconds: Object.fromEntries(Object.entries(phases).map(([k, v]) => [k, r3(v)])),
    terasort: runs.map((r) => ({
      ...r,
      seconds: nr3(r.seconds),
      serverSeconds: nr3(r.serverSeconds),
      validateSeconds: nr3(r.validateSeconds),
      mbPerSecond: r.seconds ? r3(r.inputBytes / MB / r.seconds) : null,
      gnu: {
        ...r.gnu,
        seconds: nr3(r.gnu.seconds),
        mbPerSecond: r.gnu.seconds ? r3(r.inputBytes / MB / r.gnu.seconds) : null,
      },
      ratio: r.seconds !== null && r.gnu.seconds ? r3(r.seconds / r.gnu.seconds) : null,
      ...ratioSummaryJson(pairedRatios(r.runsSeconds, r.gnu.runsSeconds)),
    })),
    profiles: profiles.map((p) => ({
      ...p,
      seconds: nr3(p.seconds),
      mapPenalty: p.mapPenalty === undefined ? null : r3(p.mapPenalty),
      reducePenalty: p.reducePenalty === undefined ? null : r3(p.reducePenalty),
    })),
    targets,
    watchdogKills: watchdog?.kills ?? [],
    failure: failure ?? null,
  };
  writeFileSync(resolve(outDir, 'shuffle.json'), JSON.stringify(json, null, 2) + '\n');
  writeFileSync(resolve(outDir, 'shuffle.md'), md);
  process.stdout.write('\n' + md);
  process.stdout.write(
    `\nwrote ${resolve(outDir, 'shuffle.json')} and shuffle.md${chart ? ', shuffle-terasort.svg' : ''}${profiles
      .filter((p) => p.svg)
      .map((p) => `, ${p.svg}`)
      .join('')}\n`,
  );
  const bad =
    failure !== undefined ||
    runs.some((r) => r.verified !== true || r.gnu.verified !== true) ||
    profiles.some((p) => p.error !== undefined);
  if (bad) process.exitCode = 1;
}

// ---------------------------------------------------------------- helpers

const mib = (bytes: number | undefined): string => ((bytes ?? 0) / MB).toFixed(1);
const pct = (x: number): string => `${Number((x * 100).toFixed(1))}%`;
const nr3 = (x: number | null): number | null => (x === null ? null : r3(x));
const passWord = (p: boolean | null): string => (p === true ? 'PASS' : p === false ? 'FAIL' : 'n/a ');

function f(x: number | null | undefined, digits = 2): string {
  return x === null || x === undefined || !Number.isFinite(x) ? '—' : x.toFixed(digits);
}

function attemptRow(a: AttemptSummary, configuredBufferMb: number, sample: ProcSample | undefined): AttemptRow {
  // An attempt granted less than ideal memory gets a buffer of (granted - overhead), see
  // attemptShuffleSettings; its bound is then its own grant.
  const bufferMb =
    a.memoryMb > 0 && a.memoryMb - TASK_OVERHEAD_MB < configuredBufferMb
      ? Math.max(1, a.memoryMb - TASK_OVERHEAD_MB)
      : configuredBufferMb;
  const boundMb = bufferMb + TASK_OVERHEAD_MB;
  const rss = a.counters.PEAK_RSS_BYTES;
  const peakRssMb = rss !== undefined && rss > 0 ? rss / MB : null;
  return {
    attemptId: a.attemptId,
    kind: a.kind,
    workerId: a.workerId,
    state: a.state,
    memoryMb: a.memoryMb,
    bufferMb,
    boundMb,
    wallMs: a.finishTime !== undefined ? a.finishTime - a.startTime : null,
    taskMs: a.counters.TASK_MS ?? null,
    peakRssMb,
    sampledHwmMb: sample ? sample.hwmBytes / MB : null,
    peakBufferMb: a.counters.PEAK_BUFFER_BYTES !== undefined ? a.counters.PEAK_BUFFER_BYTES / MB : null,
    spilledMb: (a.counters.SPILLED_BYTES ?? 0) / MB,
    spills: a.counters.SPILLS ?? 0,
    mergePasses: a.counters.MERGE_PASSES ?? 0,
    withinBound: peakRssMb === null ? null : peakRssMb <= boundMb,
  };
}

function phaseCounters(attempts: AttemptSummary[], phase: Phase): PhaseCounters {
  const mine = attempts.filter((a) => a.kind === phase && a.state === 'succeeded');
  const sum = (name: string) => mine.reduce((s, a) => s + (a.counters[name] ?? 0), 0);
  return {
    attempts: mine.length,
    spilledBytes: sum('SPILLED_BYTES'),
    spills: sum('SPILLS'),
    mergePasses: sum('MERGE_PASSES'),
    shuffleBytesLocal: sum('SHUFFLE_BYTES_LOCAL'),
    shuffleBytesRemote: sum('SHUFFLE_BYTES_REMOTE'),
    peakBufferBytes: Math.max(0, ...mine.map((a) => a.counters.PEAK_BUFFER_BYTES ?? 0)),
  };
}

/** Every attempt of the phase that ran (any end state) must stay within its bound. */
function rssGroup(rows: AttemptRow[], phase: Phase, bufferMb: number): RssGroup {
  const mine = rows.filter((r) => r.kind === phase);
  const measured = mine.filter((r) => r.peakRssMb !== null);
  const rss = measured.map((r) => r.peakRssMb!);
  const boundMb = bufferMb + TASK_OVERHEAD_MB;
  const maxMb = rss.length ? Math.max(...rss) : null;
  // Margin against each attempt's own bound (they differ only when the scheduler granted less).
  const marginMb = measured.length ? Math.min(...measured.map((r) => r.boundMb - r.peakRssMb!)) : null;
  const over = measured
    .filter((r) => r.withinBound === false)
    .map((r) => `${r.attemptId} ${f(r.peakRssMb, 1)} MiB > ${f(r.boundMb, 0)} MiB`);
  const sampledRows = mine.filter((r) => r.sampledHwmMb !== null);
  const hwm = sampledRows.map((r) => r.sampledHwmMb!);
  const sampledMargin = sampledRows.length ? Math.min(...sampledRows.map((r) => r.boundMb - r.sampledHwmMb!)) : null;
  const sampled = {
    matched: sampledRows.length,
    medianMb: hwm.length ? median(hwm) : null,
    maxMb: hwm.length ? Math.max(...hwm) : null,
    marginMb: sampledMargin,
    pass: sampledMargin === null ? null : sampledMargin >= 0,
  };
  return {
    phase,
    attempts: mine.length,
    missing: mine.length - measured.length,
    bufferMb,
    boundMb,
    medianMb: rss.length ? median(rss) : null,
    maxMb,
    marginMb,
    pass: measured.length === 0 || measured.length < mine.length ? (over.length ? false : null) : over.length === 0,
    over,
    sampled,
  };
}

function rssLine(g: RssGroup): string {
  return (
    `${passWord(g.pass)} ${g.phase} peak RSS: ${g.attempts} ` +
    `attempts, median ${f(g.medianMb, 1)} MiB, max ${f(g.maxMb, 1)} ` +
    `MiB, ` +
    `bound ${g.bufferMb} + ${TASK_OVERHEAD_MB} = ${g.boundMb} MiB, margin ${f(g.marginMb, 1)} MiB` +
    (g.missing ? `; ${g.missing} attempts reported no PEAK_RSS_BYTES` : '') +
    (g.over.length ? `; over: ${g.over.join(', ')}` : '') +
    (g.sampled.matched
      ? ` | /proc VmHWM of ${g.sampled.matched} matched task processes: ` +
        `median ${f(g.sampled.medianMb, 1)} MiB, ` +
        `max ${f(g.sampled.maxMb, 1)} MiB, ` +
        `margin ${f(g.sampled.marginMb, 1)} MiB ` +
        `(${passWord(g.sampled.pass).trim()})`
      : ' | no task process matched in /proc')
  );
}

function renderMarkdown(
  env: MachineRecord & {
    args: Args;
    tools: Record<string, string>;
  },
  rows: number,
  runs: SortRun[],
  profiles: ProfileResult[],
  targets: Target[],
  phases: Record<string, number>,
  failure: string | undefined,
  chart: boolean,
): string {
  const inputMb = (rows * RECORD) / MB;
  const lines: string[] = [
    '# minimr shuffle: external merge sort under a memory bound',
    '',
    machineLine(env),
    `Embedded cluster: 2 worker processes, 1 map + 1 reduce slot ` +
      `each, replication 1, 64 MB blocks. ` +
      `--size-mb ${env.args.sizeMb}; MB = MiB = 2^20 bytes.`,
    '',
    '## Targets',
    '',
    '| | target | measured | criterion |',
    '|---|---|---|---|',
    ...targets.map((t) => `| ${passWord(t.pass).trim()} | ${t.name} | ${t.measured} | ${t.target} |`),
    '',
    `## TeraSort ${f(inputMb, 1)} MB (${rows} records, 2 reducers) vs GNU sort with the same memory`,
    '',
    '| buffers (map, reduce) | minimr s | minimr MB/s | ' +
      'TeraValidate s | verified | GNU sort | sort s | sort MB/s | ' +
      'ratio minimr/sort |',
    '|---:|---:|---:|---:|---|---|---:|---:|---:|',
    ...runs.map((r) => {
      const paired = pairedRatios(r.runsSeconds, r.gnu.runsSeconds);
      const ratio = paired
        ? describeRatios(paired)
        : f(r.seconds !== null && r.gnu.seconds ? r.seconds / r.gnu.seconds : null);
      const ok = r.verified === true ? 'yes' : r.verified === false ? '**NO**' : '—';
      return (
        `| ${r.bufferMb} MB ` +
        `| ${r.seconds === null ? 'FAILED' : f(r.seconds)} ` +
        `| ${r.seconds ? f(inputMb / r.seconds, 1) : '—'} ` +
        `| ${f(r.validateSeconds)} | ${ok} | ` +
        (`\`sort -S ${r.bufferMb}M ` +
          `--parallel=2\`${r.gnu.verified === false ? ' ✗' : ''} ` +
          `| ${r.gnu.error ? 'FAILED' : f(r.gnu.seconds)} ` +
          `| ${r.gnu.seconds ? f(inputMb / r.gnu.seconds, 1) : '—'} ` +
          `| ${ratio} |`)
      );
    }),
    '',
    ...(runs.some((r) => r.runsSeconds)
      ? [
          "Seconds and MB/s are the first run's. Every run, in order (run " +
            'k of minimr paired with run k of GNU sort; odd pairs ran GNU ' +
            'sort first):',
          ...runs
            .filter((r) => r.runsSeconds)
            .map(
              (r) =>
                `- ${r.bufferMb} MB: ` +
                `minimr ${r.runsSeconds!.map((s) => f(s)).join(', ')}; GNU ` +
                `sort ${(r.gnu.runsSeconds ?? []).map((s) => f(s)).join(', ')}`,
            ),
          '',
        ]
      : []),
    ...(chart ? ['Wall time vs memory: shuffle-terasort.svg.', ''] : []),
    '### Shuffle counters (sums over the succeeded attempts of each phase; job counters sum all attempts)',
    '',
    '| buffers | maps | reduces | map SPILLS | map SPILLED MB | map ' +
      'MERGE_PASSES | map PEAK_BUFFER MB | reduce SPILLED MB | reduce ' +
      'MERGE_PASSES | reduce PEAK_BUFFER MB | SHUFFLE_BYTES_LOCAL MB | ' +
      'SHUFFLE_BYTES_REMOTE MB | job SPILLED_BYTES MB | job SPILLS | ' +
      'job MERGE_PASSES |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...runs.map((r) => {
      if (!r.phases || !r.counters)
        return `| ${r.bufferMb} MB | — | — | — | — | — | — | — | — | — | — | — | — | — | — |`;
      const m = r.phases.map;
      const d = r.phases.reduce;
      const c = r.counters;
      return (
        `| ${r.bufferMb} MB | ${r.maps} | ${r.reduces} | ${m.spills} ` +
        `| ${mib(m.spilledBytes)} | ${m.mergePasses} ` +
        `| ${mib(m.peakBufferBytes)} | ` +
        (`${mib(d.spilledBytes)} | ${d.mergePasses} ` +
          `| ${mib(d.peakBufferBytes)} | ${mib(d.shuffleBytesLocal)} ` +
          `| ${mib(d.shuffleBytesRemote)} | `) +
        `${mib(c.SPILLED_BYTES)} | ${c.SPILLS ?? 0} | ${c.MERGE_PASSES ?? 0} |`
      );
    }),
    '',
    `### Peak RSS of the task processes (PEAK_RSS_BYTES) vs buffer + ${TASK_OVERHEAD_MB} MiB (TASK_OVERHEAD_MB)`,
    '',
    '| buffers | phase | attempts | PEAK_RSS median MiB | PEAK_RSS ' +
      'max MiB | bound MiB | margin MiB | result | VmHWM matched | ' +
      'VmHWM median MiB | VmHWM max MiB | VmHWM margin MiB | VmHWM ' +
      'result |',
    '|---:|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---|',
    ...runs.flatMap((r) =>
      r.rss.map(
        (g) =>
          `| ${r.bufferMb} MB | ${g.phase} ` +
          `| ${g.attempts}${g.missing ? ` (${g.missing} without RSS)` : ''} ` +
          `| ${f(g.medianMb, 1)} | ${f(g.maxMb, 1)} | ${g.boundMb} ` +
          `| ${f(g.marginMb, 1)} ` +
          `| ${passWord(g.pass).trim()}${g.over.length ? `: ${g.over.join(', ')}` : ''} ` +
          `| ${g.sampled.matched} | ${f(g.sampled.medianMb, 1)} ` +
          `| ${f(g.sampled.maxMb, 1)} | ${f(g.sampled.marginMb, 1)} ` +
          `| ${passWord(g.sampled.pass).trim()} |`,
      ),
    ),
    '',
    "Margin = the smallest (bound - peak RSS) over the phase's " +
      "attempts; the bound is the attempt's buffer (its grant minus " +
      'the overhead when granted less than ideal) + the overhead. ' +
      'Every attempt is checked, whatever its end state; the targets ' +
      'use PEAK_RSS_BYTES. ' +
      ('VmHWM columns: an independent measurement, the peak RSS of ' +
        "each task process's own address space sampled from /proc every " +
        '100 ms and matched to its attempt by worker and exit time ' +
        '(lib/proc-rss.ts). ') +
      ('They differ from PEAK_RSS_BYTES when that counter comes from ' +
        'getrusage ru_maxrss (process.resourceUsage().maxRSS): on Linux ' +
        'a forked child inherits in ru_maxrss the peak of the worker it ' +
        "was forked from, so it is at least the worker's RSS at fork " +
        'time.'),
    '',
    ...runs
      .filter((r) => r.workerPeakMb)
      .map(
        (r) =>
          `Worker processes' own peak RSS (VmHWM) during the ${r.bufferMb} MB run: ${Object.entries(r.workerPeakMb!)
            .map(([k, v]) => `${k} ${v.toFixed(1)} MiB`)
            .join(', ')}.`,
      ),
    '',
  ];
  for (const r of runs) {
    if (r.attempts.length === 0) continue;
    lines.push(
      `<details><summary>Attempts of TeraSort with ${r.bufferMb} MB buffers (${r.jobId})</summary>`,
      '',
      '| attempt | worker | state | grant MB | wall ms | TASK_MS | ' +
        'PEAK_RSS MiB | VmHWM MiB | bound MiB | PEAK_BUFFER MiB | spills ' +
        '| spilled MiB | merge passes |',
      '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
      ...r.attempts.map(
        (a) =>
          `| ${a.attemptId} | ${a.workerId} | ${a.state} | ${a.memoryMb} ` +
          `| ${a.wallMs ?? '—'} | ${a.taskMs ?? '—'} ` +
          `| ${f(a.peakRssMb, 1)}${a.withinBound === false ? ' ✗' : ''} ` +
          `| ${f(a.sampledHwmMb, 1)} | ${a.boundMb} ` +
          `| ${f(a.peakBufferMb, 1)} | ${a.spills} | ${f(a.spilledMb, 1)} ` +
          `| ${a.mergePasses} |`,
      ),
      '',
      '</details>',
      '',
    );
  }
  lines.push(
    'Verification:',
    ...runs.map(
      (r) =>
        `- ${r.bufferMb} ` +
        `MB: ${r.verified === true ? 'OK' : r.verified === false ? 'FAILED' : 'not verified'} ` +
        `(${r.checks.join('; ')})${r.error ? ` — ${r.error}` : ''}${r.gnu.error ? `; GNU sort FAILED: ${r.gnu.error}` : r.gnu.note ? `; GNU sort: ${r.gnu.note}` : ''}`,
    ),
    '',
  );
  lines.push(
    "minimr s = wall time from submit (module load and TeraSort's " +
      'sampling `prepare` included) until the client sees success, ' +
      'polling every 50 ms; TeraValidate runs afterwards and is not ' +
      'included. ' +
      ('GNU sort runs as `LC_ALL=C sort -S <buffer>M --parallel=2 -T ' +
        '<work dir> -o <file>` on the same records as 100-byte text ' +
        'lines (20 hex digits of the key, row number, filler), read from ' +
        'a local file in the page cache; ') +
      ('hex keeps the byte order, so both outputs must list the ' +
        'records in the same order, and they are compared record by ' +
        'record (SHA-256 over key + row number of every record, in ' +
        'order). ') +
      ('Same memory: each minimr task gets the buffer (2 map tasks and ' +
        '2 reduce tasks run at once, one of each per worker), GNU sort ' +
        'gets -S of the same size for its 2 threads.'),
    '',
  );

  lines.push('## Elasticity profiles', '');
  if (profiles.length === 0) lines.push('Not run (--skip-profile).', '');
  for (const p of profiles) {
    lines.push(
      `Input: ${f(p.inputBytes / MB, 1)} MB in ${p.blockMb} MB blocks ` +
        `(\`${p.inputPath}\`), ${PROFILE_MAPS} maps + 1 reduce per ` +
        `point; profile took ${f(p.seconds, 1)} s.`,
      '',
    );
    if (p.profile) {
      lines.push(profileMarkdown(p.profile), '');
      lines.push(
        `Penalty at ${pct(p.lowFraction!)} of ideal memory: ` +
          `map ${f(p.mapPenalty)}x (target ` +
          `<= ${TARGET_MAP_PENALTY}x: ${passWord(p.mapPenalty! <= TARGET_MAP_PENALTY).trim()}), ` +
          (`reduce ${f(p.reducePenalty)}x (target ` +
            `<= ${TARGET_REDUCE_PENALTY}x: ${passWord(p.reducePenalty! <= TARGET_REDUCE_PENALTY).trim()}). ` +
            `Plot: ${p.svg}.`),
        '',
      );
      const pts = p.profile.points;
      lines.push(
        `Measured per point (mean per map): map ` +
          `SPILLS ${pts.map((x) => f(x.mapSpills, 1)).join(' / ')}, map ` +
          `MERGE_PASSES ${pts.map((x) => f(x.mapMergePasses, 1)).join(' / ')}, ` +
          `reduce MERGE_PASSES ${pts.map((x) => x.reduceMergePasses).join(' / ')} ` +
          `(at ${pts.map((x) => pct(x.fraction)).join(' / ')}).`,
        '',
      );
    } else {
      lines.push(`### Elasticity profile of ${p.app}: FAILED`, '', '```', p.error ?? 'unknown error', '```', '');
    }
  }
  lines.push(
    `Tools: ${Object.entries(env.tools)
      .map(([k, v]) => `${k}: ${v}`)
      .join('; ')}.`,
    '',
  );
  lines.push(
    `Other phases (s): ${Object.entries(phases)
      .map(([k, v]) => `${k} ${v.toFixed(1)}`)
      .join(', ')}.`,
    '',
  );
  if (failure) lines.push('**The run failed:**', '', '```', failure, '```', '');
  return lines.join('\n');
}

await main();
