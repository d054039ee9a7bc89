/**
 * The example apps on an embedded 2-worker cluster, each against a standard Unix tool doing the
 * same work on the same bytes in the same run (the machine is shared, so only same-run ratios mean
 * much):
 *
 *   WordCount (2 reducers)   vs  tr -s ' \t\r\f' '\n' < f | sort | uniq -c    and vs awk
 *   WordCount, streaming     vs  awk, and vs the JS WordCount of the same run (apps/streaming's Python
 *                                mapper and reducer, the reducer as combiner; `--jobs streaming`)
 *   Grep (GrepCount)         vs  grep -c -F <word>  (literal), grep -c -E <a|b>  (alternation) and
 *                                grep -c -E <a regex with classes and repetition>  (regex)
 *   TeraSort (2 reducers)    vs  sort on the same records as 100-byte text lines (see lib/tera.ts)
 *
 * plus TeraValidate on TeraSort's output (no peer) and the end-to-end latency of a 1 KB WordCount.
 * WordCount runs on each corpus chosen: `standard`, a few thousand distinct words (map-side
 * combining leaves a few thousand records per map), and `zipf`, about a million (the combining
 * table fills and is flushed, the sort buffer spills); only awk is its peer on the zipf corpus (a
 * sort of every word is minutes at 1 GB). Grep runs on the standard corpus.
 * Every output is checked: WordCount's counts and Grep's counts against what the generator wrote
 * and against the peers' own output; TeraSort's output with TeraValidate (order, row count, checksum
 * of the generated records) and record by record against GNU sort's output.
 *
 * minimr time = wall time from submit (which loads the module and runs `prepare`, i.e. TeraSort's
 * sampling) until the client sees the job succeeded (polling every 50 ms). Data loading (`fs put`)
 * is reported but not part of any job time; the peers read the local files, already in the page
 * cache, as minimr reads its blocks. MB = 2^20 bytes.
 *
 * One run of each side can mislead: the machine's speed drifts by 10-20% within minutes, and the
 * two sides run one after the other. `--repeats N` runs every job and its peers N times in all,
 * interleaved, the order alternating from pair to pair (minimr then peers, then peers then minimr,
 * ...), and reports each peer's ratio pair by pair: their median, mean and standard error. The
 * repeats check that the job's output bytes (OUTPUT_BYTES) are the first run's and that the peers
 * exit cleanly; the first run's outputs are checked in full as above.
 *
 * `--size-mb 1024 4096` runs it all once per size, then prints each job's seconds per GB and its
 * tasks' peak RSS at every size side by side (apps-sizes.md and .json in bench-results): flat cost per byte.
 *
 * Run: npm run bench:apps [-- --size-mb 1024 [4096]] [--corpus standard zipf]
 *      [--jobs wordcount streaming grep terasort tiny] [--tiny-runs N] [--tiny-pause-ms MS]
 *      [--keep] [--job-timeout-s 3600] [--node-local-delay-ms 3000] [--repeats 1]
 * The documented full run is the default: 1 GB, both corpora, every job.
 * Writes bench-results/apps.json and apps.md at the package root.
 */
import yargs from 'yargs';
import { createReadStream, mkdirSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { AttemptSummary, JobStatus, SubmitOptions } from '../src/runtime/index.js';
import type { LocalCluster } from '../src/local/index.js';
import {
  BENCH_CLUSTER,
  finishMachineRecord,
  machineLine,
  machineRecord,
  startBenchCluster,
  type MachineRecord,
} from './lib/bench-cluster.js';
import {
  CORPORA,
  CORPUS_OPTIONS,
  headLines,
  writeCorpus,
  type CorpusInfo,
  type CorpusName,
  type GrepCase,
} from './lib/corpus.js';
import { followJob, partFiles, readOutputText, serverSeconds } from './lib/follow-job.js';
import { describeRatios, pairedRatios as summarizeRatios, ratioSummaryJson, runPair } from './lib/paired.js';
import { median, r3, splitLines, timeShell, toolVersion } from './lib/shell.js';
import { RECORD, SequenceDigest, wholeRecords, writeTeraInputs } from './lib/tera.js';
import { streamingJob } from '../src/cli/commands/index.js';
import { existsSync } from 'node:fs';
import { execFileSync } from 'node:child_process';

const SELF = fileURLToPath(import.meta.url);
const MB = 1 << 20;

// ---------------------------------------------------------------- arguments

const JOBS = ['wordcount', 'streaming', 'grep', 'terasort', 'tiny'] as const;
type JobName = (typeof JOBS)[number];

interface Args {
  sizeMb: number;
  /** Every size asked for: more than one, and this process runs one child per size (runSizes). */
  sizes: number[];
  resultsName: string;
  corpora: CorpusName[];
  jobs: Set<JobName>;
  keep: boolean;
  jobTimeoutS: number;
  tinyRuns: number;
  tinyPauseMs: number;
  nodeLocalDelayMs: number;
  repeats: number;
}

function parseArgs(argv: string[]): Args {
  const a = yargs(argv)
    .option('size-mb', {
      type: 'array',
      number: true,
      default: [1024],
      describe: 'input size of each job; several: a run per size, then seconds per GB side by side',
    })
    .option('results-name', { type: 'string', default: 'apps', hidden: true, describe: 'bench-results/NAME.json' })
    .option('corpus', {
      type: 'array',
      choices: CORPORA,
      default: [...CORPORA],
      describe: 'WordCount corpora (Grep runs on standard)',
    })
    .option('jobs', { type: 'array', choices: JOBS, default: [...JOBS], describe: 'jobs to run' })
    .option('keep', { type: 'boolean', default: false, describe: 'keep the work directory' })
    .option('job-timeout-s', { type: 'number', default: 3600 })
    .option('tiny-runs', { type: 'number', default: 5 })
    .option('tiny-pause-ms', {
      type: 'number',
      default: 1000,
      describe: "idle time before each tiny run, as a user's next job finds the cluster (0: back to back)",
    })
    .option('node-local-delay-ms', {
      type: 'number',
      default: BENCH_CLUSTER.nodeLocalDelayMs,
      describe: "FIFO's locality wait (0: a free slot runs another worker's block at once)",
    })
    .option('repeats', {
      type: 'number',
      default: 1,
      describe:
        'runs of every job and of its peers, interleaved: ratios pair by pair, their median, mean and standard error',
    })
    .strict()
    .parseSync();
  if (!Number.isInteger(a.repeats) || a.repeats < 1)
    throw new Error(`--repeats must be a positive integer, got ${a.repeats}`);
  const sizes = (a.sizeMb as number[]).map(Number);
  if (sizes.length === 0 || sizes.some((x) => !(x > 0))) throw new Error(`--size-mb must be positive, got ${a.sizeMb}`);
  return {
    sizeMb: sizes[0]!,
    sizes,
    resultsName: a.resultsName,
    corpora: CORPORA.filter((c) => (a.corpus as string[]).includes(c)),
    jobs: new Set(a.jobs as JobName[]),
    keep: a.keep,
    jobTimeoutS: a.jobTimeoutS,
    tinyRuns: Math.round(a.tinyRuns),
    tinyPauseMs: Math.max(0, Math.round(a.tinyPauseMs)),
    nodeLocalDelayMs: a.nodeLocalDelayMs,
    repeats: a.repeats,
  };
}

/**
 * The Grep case that is a regular expression proper (character classes, repetition, a group): the
 * generator cannot count its lines, so GNU grep's count, made once before the timed runs, is what
 * minimr's output and the timed peers are checked against.
 */
const REAL_REGEX = '[a-z]+ing (a|[a-z]{2,5}) [a-z]+';

function grepCount(pattern: string, path: string): number {
  try {
    return Number(
      execFileSync('grep', ['-c', '-E', '--', pattern, path], {
        encoding: 'utf8',
        env: { ...process.env, LC_ALL: 'C' },
      }),
    );
  } catch (err) {
    // grep exits 1 when no line matches (and prints 0).
    if ((err as { status?: number }).status === 1) return 0;
    throw err;
  }
}

// ---------------------------------------------------------------- progress

const T0 = performance.now();
function log(msg: string): void {
  process.stdout.write(`[${((performance.now() - T0) / 1000).toFixed(1).padStart(6)}s] ${msg}\n`);
}

// ---------------------------------------------------------------- results

interface PeerResult {
  peer: string;
  command: string;
  seconds: number | null;
  error?: string;
  verified: boolean | null;
  note?: string;
  /** With --repeats: the seconds of every run, the first included, in order (pair k with the job's run k). */
  runsSeconds?: number[];
  /** Not a shell command (another minimr job of this run): timed once, not in --repeats. */
  notRepeated?: boolean;
}

interface JobResult {
  job: string;
  app: string;
  inputBytes: number;
  reducers: number;
  /** Wall seconds, submit -> success seen by the client. */
  seconds: number | null;
  /** The JobTracker's own submit -> finish time. */
  serverSeconds: number | null;
  jobId?: string;
  maps?: number;
  counters?: Record<string, number>;
  /** Where its successful map attempts read their input, and their CPU (TASK_CPU_MS) by that. */
  mapLocality?: MapLocality;
  /** The highest PEAK_RSS_BYTES of its successful attempts, by kind, in MiB. */
  peakTaskRssMb?: { map: number | null; reduce: number | null };
  error?: string;
  verified: boolean | null;
  checks: string[];
  peers: PeerResult[];
  /** With --repeats: the seconds of every run, the first included, in order. */
  runsSeconds?: number[];
}

/** A peer's ratios pair by pair (--repeats): minimr's run k over the peer's run k. */
function pairedRatios(job: JobResult, peer: PeerResult) {
  return summarizeRatios(job.runsSeconds, peer.runsSeconds);
}

/**
 * Successful map attempts by where their input was (node-local: a replica on their worker),
 * with the mean task CPU of each group: a map that reads its block over the network costs the
 * reading process more CPU than one reading its worker's replica.
 */
interface MapLocality {
  nodeLocal: number;
  nonLocal: number;
  meanCpuMsNodeLocal: number | null;
  meanCpuMsNonLocal: number | null;
}

function mapLocalityOf(attempts: readonly AttemptSummary[]): MapLocality {
  const maps = attempts.filter((a) => a.kind === 'map' && a.state === 'succeeded');
  const local = maps.filter((a) => a.locality === 'node');
  const remote = maps.filter((a) => a.locality !== 'node');
  const meanCpu = (group: readonly AttemptSummary[]) =>
    group.length === 0
      ? null
      : Math.round(group.reduce((sum, a) => sum + (a.counters.TASK_CPU_MS ?? 0), 0) / group.length);
  return {
    nodeLocal: local.length,
    nonLocal: remote.length,
    meanCpuMsNodeLocal: meanCpu(local),
    meanCpuMsNonLocal: meanCpu(remote),
  };
}

function peakRssMbOf(attempts: readonly AttemptSummary[], kind: 'map' | 'reduce'): number | null {
  const peaks = attempts
    .filter((a) => a.kind === kind && a.state === 'succeeded')
    .map((a) => a.counters.PEAK_RSS_BYTES ?? 0)
    .filter((b) => b > 0);
  return peaks.length === 0 ? null : r3(Math.max(...peaks) / MB);
}

function describeMapLocality(l: MapLocality): string {
  const cpu = (ms: number | null) => (ms === null ? '' : `, mean CPU ${ms} ms`);
  return `${l.nodeLocal} node-local${cpu(l.meanCpuMsNodeLocal)}; ${l.nonLocal} non-local${cpu(l.meanCpuMsNonLocal)}`;
}

// ---------------------------------------------------------------- main

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  if (args.sizes.length > 1) return runSizes(args);
  const targetBytes = Math.round(args.sizeMb * MB);
  const work = await mkdtemp(join(os.tmpdir(), 'minimr-bench-apps-'));
  const local = join(work, 'local');
  await mkdir(local);
  const env = {
    ...machineRecord(),
    sizeMb: args.sizeMb,
    nodeLocalDelayMs: args.nodeLocalDelayMs,
    corpora: {} as Record<
      string,
      { bytes: number; lines: number; words: number; vocabulary: number; distinctWords: number }
    >,
    cluster: BENCH_CLUSTER,
    tools: {
      sort: toolVersion('sort'),
      tr: toolVersion('tr'),
      uniq: toolVersion('uniq'),
      grep: toolVersion('grep'),
      awk: toolVersion('awk', ['-W', 'version']),
    },
  };
  log(
    `minimr apps benchmark: --size-mb ${args.sizeMb}, work ` +
      `dir ${work}; ${env.cpus} CPUs, ` +
      `load ${env.loadavgStart.join(' ')}`,
  );

  const jobs: JobResult[] = [];
  const phases: Record<string, number> = {};
  let tiny:
    | {
        runs: number[];
        serverRuns: number[];
        medianSeconds: number;
        medianServerSeconds: number;
        inputBytes: number;
        pauseMs: number;
        verified: boolean;
      }
    | undefined;
  let cluster: LocalCluster | undefined;
  let failure: string | undefined;

  try {
    // ------------------------------------------------------------ inputs
    // The standard corpus is needed by Grep and the tiny job even when WordCount runs on zipf only.
    const names = new Set<CorpusName>(args.corpora);
    if (args.jobs.has('grep') || args.jobs.has('tiny') || args.jobs.has('streaming')) names.add('standard');
    const corpora = new Map<CorpusName, CorpusInfo>();
    let t = performance.now();
    for (const name of CORPORA.filter((c) => names.has(c))) {
      t = performance.now();
      const corpus = await writeCorpus(join(local, `${name}.txt`), targetBytes, CORPUS_OPTIONS[name]);
      corpora.set(name, corpus);
      phases[`generate ${name} corpus`] = (performance.now() - t) / 1000;
      const distinct = corpus.counts.filter((c) => c > 0).length;
      env.corpora[name] = {
        bytes: corpus.bytes,
        lines: corpus.lines,
        words: corpus.words,
        vocabulary: corpus.vocabulary.length,
        distinctWords: distinct,
      };
      const grepNote = corpus.grep
        ? `; grep literal "${corpus.grep.literal.pattern}" ` +
          `in ${corpus.grep.literal.lines} lines, regex ` +
          `"${corpus.grep.regex.pattern}" in ${corpus.grep.regex.lines}`
        : '';
      log(
        `generated ${name} corpus: ${(corpus.bytes / MB).toFixed(1)} ` +
          `MB, ${corpus.lines} lines, ${corpus.words} words, ` +
          (`${distinct} distinct of ${corpus.vocabulary.length}${grepNote} ` +
            `[${phases[`generate ${name} corpus`]!.toFixed(1)}s]`),
      );
    }
    const rows = Math.floor(targetBytes / RECORD);
    let tera: Awaited<ReturnType<typeof writeTeraInputs>> | undefined;
    if (args.jobs.has('terasort')) {
      t = performance.now();
      tera = await writeTeraInputs(join(local, 'tera.dat'), join(local, 'tera-lines.txt'), rows);
      phases.generateTera = (performance.now() - t) / 1000;
      log(
        `generated ${rows} TeraGen records ` +
          `(${((rows * RECORD) / MB).toFixed(1)} MB) + peer lines, ` +
          `checksum ${tera.checksum} [${phases.generateTera.toFixed(1)}s]`,
      );
    }
    const standard = corpora.get('standard');
    const tinyText = standard ? headLines(await readHead(standard.path, 4096), 1024) : '';
    await writeFile(join(local, 'tiny.txt'), tinyText);

    // ------------------------------------------------------------ cluster
    t = performance.now();
    cluster = await startBenchCluster(join(work, 'cluster'), { nodeLocalDelayMs: args.nodeLocalDelayMs });
    phases.clusterStart = (performance.now() - t) / 1000;
    log(`cluster up: 2 workers [${phases.clusterStart.toFixed(1)}s]`);
    const client = cluster.client;

    const inputs: [string, string][] = [...corpora].map(([name, c]) => [c.path, `/bench/${name}/corpus.txt`]);
    if (tera) inputs.push([tera.recordsPath, '/bench/tera/input.dat']);
    if (args.jobs.has('tiny')) inputs.push([join(local, 'tiny.txt'), '/bench/tiny/tiny.txt']);
    for (const [local_, dst] of inputs) {
      t = performance.now();
      const st = await client.fs.put(local_, dst, { overwrite: true });
      const s = (performance.now() - t) / 1000;
      phases[`put ${dst}`] = s;
      log(
        `put ${dst}: ${(st.length / MB).toFixed(1)} MB in ${s.toFixed(1)}s (${(st.length / MB / s).toFixed(1)} MB/s)`,
      );
    }

    // An app by name (dist/apps/NAME.js), or a module by its absolute path (the streaming module).
    const app = (name: string) =>
      name.startsWith('/') ? name : fileURLToPath(new URL(`../apps/${name}.js`, import.meta.url));

    /** Submits, waits with a time limit, and returns the status and the wall time. */
    async function runTimed(
      label: string,
      appName: string,
      options: SubmitOptions,
    ): Promise<{ status: JobStatus; seconds: number }> {
      const t0 = performance.now();
      const jobId = await client.submit(app(appName), { ...options, overwrite: true });
      log(`${label}: submitted ${jobId} [${((performance.now() - t0) / 1000).toFixed(1)}s after submit started]`);
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        log(`${label}: over --job-timeout-s ${args.jobTimeoutS}; killing ${jobId}`);
        void client.kill(jobId).catch(() => undefined);
      }, args.jobTimeoutS * 1000);
      try {
        return await followJob(client, jobId, label, t0, log);
      } catch (err) {
        if (timedOut)
          throw new Error(`${label}: killed after --job-timeout-s ${args.jobTimeoutS}: ${(err as Error).message}`);
        throw err;
      } finally {
        clearTimeout(timer);
      }
    }

    const partFilesOf = (dir: string) => partFiles(client, dir);
    const readText = (dir: string) => readOutputText(client, dir);

    async function peer(
      result: JobResult,
      name: string,
      command: string,
      verify: () => Promise<string | undefined>,
    ): Promise<void> {
      log(`${result.job}: peer ${name}: ${command}`);
      const p: PeerResult = { peer: name, command, seconds: null, verified: null };
      result.peers.push(p);
      try {
        p.seconds = await timeShell(command, { cwd: local, env: { TMPDIR: local } });
        const problem = await verify();
        p.verified = problem === undefined;
        if (problem) p.note = problem;
        const mbps = result.inputBytes / MB / p.seconds;
        log(
          `${result.job}: peer ${name}: ${p.seconds.toFixed(2)}s ` +
            `(${mbps.toFixed(1)} MB/s), ` +
            `output ${p.verified ? 'verified' : `MISMATCH: ${problem}`}`,
        );
      } catch (err) {
        p.error = (err as Error).message;
        log(`${result.job}: peer ${name} FAILED: ${p.error}`);
      }
    }

    /** What each job was submitted with, for --repeats. */
    const submissions = new Map<JobResult, { appName: string; options: SubmitOptions }>();

    /**
     * --repeats: runs a verified job and its peers N - 1 more times, the order alternating from
     * pair to pair; the job's output bytes must be the first run's, the peers must exit cleanly.
     */
    async function repeatRuns(result: JobResult): Promise<void> {
      const how = submissions.get(result);
      const peers = result.peers.filter((p) => p.verified === true && p.seconds !== null && !p.notRepeated);
      if (args.repeats < 2 || !how || result.verified !== true || result.seconds === null || peers.length === 0) return;
      const runs = [result.seconds];
      result.runsSeconds = runs;
      for (const p of peers) p.runsSeconds = [p.seconds!];
      for (let k = 1; k < args.repeats; k++) {
        const label = `${result.job} run ${k + 1} of ${args.repeats}`;
        const minimr = async (): Promise<void> => {
          const { status, seconds } = await runTimed(label, how.appName, how.options);
          const bytes = status.counters.OUTPUT_BYTES;
          if (bytes !== result.counters?.OUTPUT_BYTES)
            throw new Error(`${label}: ${bytes} output bytes, the first run wrote ${result.counters?.OUTPUT_BYTES}`);
          runs.push(seconds);
          log(`${label}: ${seconds.toFixed(2)}s`);
        };
        const peerRuns = async (): Promise<void> => {
          for (const p of peers) {
            const seconds = await timeShell(p.command, { cwd: local, env: { TMPDIR: local } });
            p.runsSeconds!.push(seconds);
            log(`${label}: peer ${p.peer}: ${seconds.toFixed(2)}s`);
          }
        };
        await runPair(k, minimr, peerRuns);
      }
      for (const p of peers) {
        const s = pairedRatios(result, p)!;
        log(`${result.job} vs ${p.peer}: ratios ${s.ratios.map((r) => r.toFixed(2)).join(', ')}; ${describeRatios(s)}`);
      }
    }

    /** Runs the minimr side of a job; a failure is recorded, not thrown, so the other jobs still run. */
    async function minimrSide(
      result: JobResult,
      appName: string,
      options: SubmitOptions,
      verify: (s: JobStatus) => Promise<string[]>,
    ): Promise<boolean> {
      submissions.set(result, { appName, options });
      try {
        const { status, seconds } = await runTimed(result.job, appName, options);
        result.seconds = seconds;
        result.serverSeconds = serverSeconds(status);
        result.jobId = status.jobId;
        result.maps = status.mapsTotal;
        result.counters = status.counters;
        const attempts = await client.attempts(status.jobId);
        result.mapLocality = mapLocalityOf(attempts);
        result.peakTaskRssMb = { map: peakRssMbOf(attempts, 'map'), reduce: peakRssMbOf(attempts, 'reduce') };
        log(`${result.job}: maps ${describeMapLocality(result.mapLocality)}`);
        const problems = await verify(status);
        result.verified = problems.length === 0;
        log(
          `${result.job}: ` +
            `output ${result.verified ? 'verified' : 'MISMATCH'}: ${result.checks.join('; ')}${problems.length ? ' | ' + problems.join('; ') : ''}`,
        );
        if (problems.length) result.error = problems.join('; ');
        return true;
      } catch (err) {
        result.error = (err as Error).message;
        log(`${result.job}: minimr FAILED: ${result.error}`);
        return false;
      }
    }

    // ------------------------------------------------------------ WordCount
    for (const name of args.jobs.has('wordcount') ? args.corpora : []) {
      const corpus = corpora.get(name)!;
      const file = `${name}.txt`;
      const expectedCounts = new Map(
        corpus.vocabulary.map((w, i) => [w, corpus.counts[i]!] as [string, number]).filter(([, c]) => c > 0),
      );
      const result: JobResult = newResult(
        name === 'standard' ? 'WordCount' : `WordCount (${name})`,
        'wordcount',
        corpus.bytes,
        2,
      );
      jobs.push(result);
      const minimrCounts = new Map<string, number>();
      const out = `/bench/out/wordcount-${name}`;
      await minimrSide(result, 'wordcount', { input: [`/bench/${name}`], output: out, reducers: 2 }, async () => {
        const problems: string[] = [];
        for (const line of splitLines(await readText(out))) {
          const tab = line.indexOf('\t');
          const w = line.slice(0, tab);
          if (minimrCounts.has(w)) problems.push(`word ${w} output twice`);
          minimrCounts.set(w, Number(line.slice(tab + 1)));
        }
        const diff = compareCounts(minimrCounts, expectedCounts);
        result.checks.push(`${minimrCounts.size} words, counts ${diff ? 'differ from' : 'equal'} the generator's`);
        if (diff) problems.push(`vs generator: ${diff}`);
        return problems;
      });
      const verifyPeer = (outFile: string, parse: (line: string) => [string, number]) => async () => {
        const counts = new Map<string, number>();
        for (const line of splitLines(await readFile(join(local, outFile), 'utf8'))) {
          const [w, c] = parse(line);
          counts.set(w, c);
        }
        const problems: string[] = [];
        const vsGen = compareCounts(counts, expectedCounts);
        if (vsGen) problems.push(`vs generator: ${vsGen}`);
        if (minimrCounts.size > 0) {
          const vsMinimr = compareCounts(minimrCounts, counts);
          if (vsMinimr) problems.push(`vs minimr: ${vsMinimr}`);
        }
        return problems.length ? problems.join('; ') : undefined;
      };
      if (name === 'standard') {
        await peer(
          result,
          'tr | sort | uniq -c',
          `tr -s ' \\t\\r\\f' '\\n' < ${file} | sort | uniq -c > wc-sort.out`,
          verifyPeer('wc-sort.out', (line) => {
            const m = /^\s*(\d+) (.*)$/.exec(line);
            if (!m) throw new Error(`unexpected uniq -c line ${JSON.stringify(line)}`);
            return [m[2]!, Number(m[1])];
          }),
        );
      }
      await peer(
        result,
        'awk',
        `awk '{for(i=1;i<=NF;i++)c[$i]++} END{for(w in c) print w"\\t"c[w]}' ${file} > wc-awk.out`,
        verifyPeer('wc-awk.out', (line) => {
          const tab = line.indexOf('\t');
          return [line.slice(0, tab), Number(line.slice(tab + 1))];
        }),
      );
      await rm(join(local, 'wc-sort.out'), { force: true });
      await rm(join(local, 'wc-awk.out'), { force: true });
    }

    // ------------------------------------------------------------ Streaming WordCount
    // The Python WordCount of apps/streaming (mapper, reducer, and the reducer as combiner) on the
    // standard corpus, against awk and against the JS WordCount of this run.
    const standardCorpus = corpora.get('standard');
    if (args.jobs.has('streaming') && standardCorpus) {
      const expectedCounts = new Map(
        standardCorpus.vocabulary
          .map((w, i) => [w, standardCorpus.counts[i]!] as [string, number])
          .filter(([, c]) => c > 0),
      );
      const result = newResult('WordCount (streaming, Python)', 'streaming', standardCorpus.bytes, 2);
      jobs.push(result);
      const python = pythonPath();
      const scripts = fileURLToPath(new URL('../../apps/streaming/', import.meta.url));
      const job = await streamingJob({
        mapper: `${python} mapper.py`,
        reducer: `${python} reducer.py`,
        combiner: `${python} reducer.py`,
        files: [join(scripts, 'mapper.py'), join(scripts, 'reducer.py')],
      });
      const out = '/bench/out/wordcount-streaming';
      const counts = new Map<string, number>();
      const options: SubmitOptions = {
        input: ['/bench/standard'],
        output: out,
        reducers: 2,
        params: job.params,
        conf: job.conf,
        streaming: job.streaming,
      };
      await minimrSide(result, job.modulePath, options, async () => {
        const problems: string[] = [];
        for (const line of splitLines(await readText(out))) {
          const tab = line.indexOf('\t');
          counts.set(line.slice(0, tab), Number(line.slice(tab + 1)));
        }
        const diff = compareCounts(counts, expectedCounts);
        result.checks.push(`${counts.size} words, counts ${diff ? 'differ from' : 'equal'} the generator's`);
        if (diff) problems.push(`vs generator: ${diff}`);
        return problems;
      });
      const js = jobs.find((j) => j.job === 'WordCount');
      if (js?.seconds && js.verified) {
        result.peers.push({
          peer: 'minimr WordCount (JS)',
          command: 'apps/wordcount.js, this run',
          seconds: js.seconds,
          verified: true,
          notRepeated: true,
        });
        if (result.seconds) log(`${result.job}: ${(result.seconds / js.seconds).toFixed(2)}x the JS WordCount's time`);
      }
      await peer(
        result,
        'awk',
        `awk '{for(i=1;i<=NF;i++)c[$i]++} END{for(w in c) print w"\\t"c[w]}' standard.txt > wc-awk.out`,
        async () => {
          const awk = new Map<string, number>();
          for (const line of splitLines(await readFile(join(local, 'wc-awk.out'), 'utf8'))) {
            const tab = line.indexOf('\t');
            awk.set(line.slice(0, tab), Number(line.slice(tab + 1)));
          }
          return compareCounts(awk, expectedCounts);
        },
      );
      await rm(join(local, 'wc-awk.out'), { force: true });
    }

    // ------------------------------------------------------------ Grep
    const grepCases: [string, GrepCase, string][] =
      standard?.grep && args.jobs.has('grep')
        ? [
            [
              'Grep (literal)',
              standard.grep.literal,
              `grep -c -F -- '${standard.grep.literal.pattern}' standard.txt > grep.out`,
            ],
            [
              'Grep (alternation)',
              standard.grep.regex,
              `grep -c -E -- '${standard.grep.regex.pattern}' standard.txt > grep.out`,
            ],
            [
              'Grep (regex)',
              { pattern: REAL_REGEX, words: [], lines: grepCount(REAL_REGEX, standard.path) },
              `grep -c -E -- '${REAL_REGEX}' standard.txt > grep.out`,
            ],
          ]
        : [];
    for (const [job, grepCase, command] of grepCases) {
      const result: JobResult = newResult(job, 'grep', standard!.bytes, 1);
      jobs.push(result);
      const { pattern, lines: want } = grepCase;
      let minimrCount: number | undefined;
      await minimrSide(
        result,
        'grep',
        { input: ['/bench/standard'], output: '/bench/out/grep', params: { pattern } },
        async () => {
          const lines = splitLines(await readText('/bench/out/grep'));
          const expected = `${pattern}\t${want}`;
          if (lines.length === 1 && lines[0]!.startsWith(`${pattern}\t`))
            minimrCount = Number(lines[0]!.slice(pattern.length + 1));
          const reference = grepCase.words.length > 0 ? 'generator' : 'grep -c -E before the runs';
          result.checks.push(`count ${minimrCount ?? JSON.stringify(lines)} (${reference}: ${want})`);
          return lines.length === 1 && lines[0] === expected
            ? []
            : [`output ${JSON.stringify(lines)}, expected ${JSON.stringify([expected])}`];
        },
      );
      await peer(result, command.split(' --')[0]!, command, async () => {
        const got = Number((await readFile(join(local, 'grep.out'), 'utf8')).trim());
        if (got !== want) return `grep says ${got}, reference ${want}`;
        if (minimrCount !== undefined && got !== minimrCount) return `grep says ${got}, minimr ${minimrCount}`;
        return undefined;
      });
    }

    // ------------------------------------------------------------ TeraSort + TeraValidate
    if (tera) {
      const result: JobResult = newResult('TeraSort', 'terasort', rows * RECORD, 2);
      jobs.push(result);
      let minimrDigest: string | undefined;
      const sorted = await minimrSide(
        result,
        'terasort',
        { input: ['/bench/tera/input.dat'], output: '/bench/out/terasort', reducers: 2 },
        async (status) => {
          const problems: string[] = [];
          const digest = new SequenceDigest();
          for (const p of await partFilesOf('/bench/out/terasort')) {
            for await (const chunk of wholeRecords(client.fs.cat(p), RECORD)) digest.addRecords(chunk);
          }
          minimrDigest = digest.digest();
          result.checks.push(`${digest.records} records out`);
          if (digest.records !== rows) problems.push(`${digest.records} records out, ${rows} in`);
          result.checks.push(`${status.reducesTotal} parts`);
          return problems;
        },
      );

      const validate: JobResult = newResult('TeraValidate', 'teravalidate', rows * RECORD, 1);
      if (sorted) {
        jobs.push(validate);
        await minimrSide(
          validate,
          'teravalidate',
          { input: ['/bench/out/terasort'], output: '/bench/out/teravalidate' },
          async () => {
            const lines = splitLines(await readText('/bench/out/teravalidate'));
            const want = ['misorder\t0', `rows\t${rows}`, `checksum\t${tera.checksum}`];
            validate.checks.push(lines.join(', ').replace(/\t/g, ' '));
            const problems = want.filter((w) => !lines.includes(w)).map((w) => `missing ${JSON.stringify(w)}`);
            if (lines.some((l) => l.startsWith('error\t'))) problems.push('error lines present');
            // TeraValidate's verdict is TeraSort's verdict too.
            if (problems.length) {
              result.verified = false;
              result.error = `TeraValidate: ${problems.join('; ')}`;
            } else {
              result.checks.push('TeraValidate: sorted, same rows and checksum as generated');
            }
            return problems;
          },
        );
      }

      await peer(result, 'sort', `sort -o tera-sorted.txt tera-lines.txt`, async () => {
        const digest = new SequenceDigest();
        for await (const chunk of wholeRecords(
          createReadStream(join(local, 'tera-sorted.txt'), { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>,
          RECORD,
        )) {
          digest.addLines(chunk);
        }
        if (digest.records !== rows) return `${digest.records} lines out, ${rows} in`;
        if (minimrDigest !== undefined) {
          const same = digest.digest() === minimrDigest;
          result.checks.push(`record order ${same ? 'identical to' : 'DIFFERENT from'} GNU sort's`);
          if (!same) {
            result.verified = false;
            return 'minimr and GNU sort put the records in different orders';
          }
        }
        return undefined;
      });
    }

    for (const result of jobs) await repeatRuns(result);

    // ------------------------------------------------------------ tiny job latency
    if (args.jobs.has('tiny')) {
      log(`tiny job: WordCount of ${Buffer.byteLength(tinyText)} bytes, 1 untimed + ${args.tinyRuns} timed runs`);
      const expected = new Map<string, number>();
      for (const w of tinyText.split(/[ \t\n]+/)) if (w) expected.set(w, (expected.get(w) ?? 0) + 1);
      const runs: number[] = [];
      const serverRuns: number[] = [];
      let verified = true;
      for (let i = -1; i < args.tinyRuns; i++) {
        // The cluster idle for a while, as between a user's jobs: its workers' spare processes are started then.
        if (i >= 0 && args.tinyPauseMs > 0) await new Promise((resolve) => setTimeout(resolve, args.tinyPauseMs));
        const { status, seconds } = await runTimed(`tiny ${i < 0 ? 'warm-up' : i + 1}`, 'wordcount', {
          input: ['/bench/tiny'],
          output: '/bench/out/tiny',
        });
        if (i < 0) {
          const got = new Map<string, number>();
          for (const line of splitLines(await readText('/bench/out/tiny'))) {
            const tab = line.indexOf('\t');
            got.set(line.slice(0, tab), Number(line.slice(tab + 1)));
          }
          verified = compareCounts(got, expected) === undefined;
          log(`tiny job output ${verified ? 'verified' : 'MISMATCH'}`);
          continue;
        }
        runs.push(seconds);
        serverRuns.push(serverSeconds(status) ?? NaN);
      }
      tiny = {
        runs: runs.map(r3),
        serverRuns: serverRuns.map(r3),
        medianSeconds: r3(median(runs)),
        medianServerSeconds: r3(median(serverRuns)),
        inputBytes: Buffer.byteLength(tinyText),
        pauseMs: args.tinyPauseMs,
        verified,
      };
      log(
        `tiny job: median ${tiny.medianSeconds}s end to end ` +
          `(server ${tiny.medianServerSeconds}s); ` +
          `runs ${tiny.runs.join(', ')}`,
      );
    }
  } catch (err) {
    failure = (err as Error).stack ?? String(err);
    log(`FAILED: ${failure}`);
  } finally {
    if (cluster) {
      log('stopping cluster');
      await cluster.stop().catch((err: unknown) => log(`cluster stop failed: ${(err as Error).message}`));
    }
    if (!args.keep) await rm(work, { recursive: true, force: true });
    else log(`kept ${work}`);
  }
  finishMachineRecord(env);

  // ---------------------------------------------------------------- report
  const md = renderMarkdown(env, jobs, tiny, phases, failure);
  const outDir = resolve(dirname(SELF), '..', '..', 'bench-results');
  mkdirSync(outDir, { recursive: true });
  const json = {
    env,
    phasesSeconds: Object.fromEntries(Object.entries(phases).map(([k, v]) => [k, r3(v)])),
    jobs: jobs.map((j) => ({
      ...j,
      seconds: j.seconds === null ? null : r3(j.seconds),
      serverSeconds: j.serverSeconds === null ? null : r3(j.serverSeconds),
      mbPerSecond: j.seconds ? r3(j.inputBytes / MB / j.seconds) : null,
      peers: j.peers.map((p) => ({
        ...p,
        seconds: p.seconds === null ? null : r3(p.seconds),
        mbPerSecond: p.seconds ? r3(j.inputBytes / MB / p.seconds) : null,
        ratio: p.seconds && j.seconds ? r3(j.seconds / p.seconds) : null,
        ...ratioSummaryJson(pairedRatios(j, p)),
      })),
    })),
    tinyJob: tiny ?? null,
    failure: failure ?? null,
  };
  writeFileSync(resolve(outDir, `${args.resultsName}.json`), JSON.stringify(json, null, 2) + '\n');
  writeFileSync(resolve(outDir, `${args.resultsName}.md`), md);
  process.stdout.write('\n' + md);
  process.stdout.write(`\nwrote ${resolve(outDir, `${args.resultsName}.json`)} and ${args.resultsName}.md\n`);
  const bad =
    failure !== undefined ||
    jobs.some((j) => j.verified !== true || j.peers.some((p) => p.verified !== true)) ||
    tiny?.verified === false;
  if (bad) process.exitCode = 1;
}

// ---------------------------------------------------------------- several sizes

/** What the side-by-side table reads of a size's apps-SIZE.json. */
interface SizeRun {
  sizeMb: number;
  jobs: {
    job: string;
    inputBytes: number;
    seconds: number | null;
    runsSeconds?: number[];
    verified: boolean | null;
    peakTaskRssMb?: { map: number | null; reduce: number | null };
  }[];
}

/**
 * `--size-mb A B ...`: the whole benchmark once per size, each in a child process of its own (a
 * fresh cluster, corpora of that size), then each job's seconds per GB (GB = 2^30 bytes; the median
 * of its runs) and its tasks' peak RSS at every size side by side: whether the cost per byte stays
 * flat as the input grows, and the memory with it.
 */
async function runSizes(args: Args): Promise<void> {
  const { spawnSync } = await import('node:child_process');
  const outDir = resolve(dirname(SELF), '..', '..', 'bench-results');
  const runs: SizeRun[] = [];
  const rest = removeSizeArgs(process.argv.slice(2));
  for (const sizeMb of args.sizes) {
    const name = `${args.resultsName}-${sizeMb}`;
    log(`--size-mb ${sizeMb}: node ${SELF} --size-mb ${sizeMb} ${rest.join(' ')}`);
    // Not an earlier run's results, if this one fails before writing its own.
    await rm(resolve(outDir, `${name}.json`), { force: true });
    const child = spawnSync(process.execPath, [SELF, '--size-mb', String(sizeMb), '--results-name', name, ...rest], {
      stdio: 'inherit',
    });
    if (child.status !== 0) process.exitCode = 1;
    // A run that failed before writing its results shows as dashes.
    const text = await readFile(resolve(outDir, `${name}.json`), 'utf8').catch(() => '{"jobs":[]}');
    runs.push({ sizeMb, jobs: (JSON.parse(text) as { jobs: SizeRun['jobs'] }).jobs });
  }
  const md = renderSizes(runs);
  const report = resolve(outDir, `${args.resultsName}-sizes`);
  writeFileSync(`${report}.json`, JSON.stringify(runs, null, 2) + '\n');
  writeFileSync(`${report}.md`, md);
  process.stdout.write('\n' + md + `\nwrote ${report}.json and .md\n`);
}

/** The arguments without `--size-mb` and its values (and `--results-name`), for a child run of one size. */
function removeSizeArgs(argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--size-mb' || a === '--results-name') {
      while (i + 1 < argv.length && !argv[i + 1]!.startsWith('--')) i++;
    } else if (!a.startsWith('--size-mb=') && !a.startsWith('--results-name=')) out.push(a);
  }
  return out;
}

function renderSizes(runs: SizeRun[]): string {
  const GB = 2 ** 30;
  const perGb = (j: SizeRun['jobs'][number]) => {
    const seconds = j.runsSeconds?.length ? median(j.runsSeconds) : j.seconds;
    return seconds === null || seconds === undefined ? null : seconds / (j.inputBytes / GB);
  };
  const f = (x: number | null | undefined, digits = 2) => (x === null || x === undefined ? '—' : x.toFixed(digits));
  const names = [...new Set(runs.flatMap((r) => r.jobs.map((j) => j.job)))];
  const sizes = runs.map((r) => `${r.sizeMb} MB`);
  const lines = [
    '# minimr apps: seconds per GB by input size',
    '',
    'Each size a run of its own (fresh cluster and corpora). s/GB: the median of the runs of that size over its input ' +
      "in GB (2^30 bytes); vs first: s/GB over the first size's. Peak RSS: the highest of the job's successful map " +
      'and reduce attempts (MiB).',
    '',
    `| job | ${sizes.map((s) => `s/GB at ${s}`).join(' | ')} | ${sizes
      .slice(1)
      .map((s) => `vs first at ${s}`)
      .join(' | ')} | ${sizes.map((s) => `peak RSS map/reduce at ${s}`).join(' | ')} |`,
    `|---|${sizes.map(() => '---:').join('|')}|${sizes
      .slice(1)
      .map(() => '---:')
      .join('|')}|${sizes.map(() => '---:').join('|')}|`,
  ];
  for (const name of names) {
    const at = runs.map((r) => r.jobs.find((j) => j.job === name));
    const rates = at.map((j) => (j && j.verified === true ? perGb(j) : null));
    const first = rates[0];
    lines.push(
      `| ${name} | ${rates.map((x) => f(x)).join(' | ')} | ${rates
        .slice(1)
        .map((x) => (x !== null && first ? f(x / first, 3) : '—'))
        .join(
          ' | ',
        )} | ${at.map((j) => `${f(j?.peakTaskRssMb?.map, 0)} / ${f(j?.peakTaskRssMb?.reduce, 0)}`).join(' | ')} |`,
    );
  }
  return lines.join('\n') + '\n';
}

// ---------------------------------------------------------------- helpers

/**
 * Debian's python3 where there is one: tasks may run as `nobody` (a worker running as root), who
 * cannot enter a pyenv or a virtualenv under /root; else the first on PATH.
 */
function pythonPath(): string {
  return existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
}

function newResult(job: string, app: string, inputBytes: number, reducers: number): JobResult {
  return { job, app, inputBytes, reducers, seconds: null, serverSeconds: null, verified: null, checks: [], peers: [] };
}

/** undefined when equal, else a short description of the first differences. */
function compareCounts(got: Map<string, number>, want: Map<string, number>): string | undefined {
  const diffs: string[] = [];
  for (const [w, c] of want) if (got.get(w) !== c) diffs.push(`${w}: ${got.get(w) ?? 'missing'} != ${c}`);
  for (const [w, c] of got) if (!want.has(w)) diffs.push(`${w}: ${c} unexpected`);
  if (diffs.length === 0) return undefined;
  return `${diffs.length} differences, e.g. ${diffs.slice(0, 3).join(', ')}`;
}

async function readHead(path: string, bytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let got = 0;
  for await (const c of createReadStream(path, { start: 0, end: bytes - 1 }) as AsyncIterable<Buffer>) {
    chunks.push(c);
    got += c.length;
  }
  return Buffer.concat(chunks, got).toString('latin1');
}

function renderMarkdown(
  env: MachineRecord & {
    sizeMb: number;
    nodeLocalDelayMs: number;
    corpora: Record<string, { lines: number; words: number; vocabulary: number; distinctWords: number }>;
    tools: Record<string, string>;
  },
  jobs: JobResult[],
  tiny:
    | {
        runs: number[];
        medianSeconds: number;
        medianServerSeconds: number;
        inputBytes: number;
        pauseMs: number;
        verified: boolean;
      }
    | undefined,
  phases: Record<string, number>,
  failure: string | undefined,
): string {
  const f = (x: number | null, digits = 2) => (x === null || !Number.isFinite(x) ? '—' : x.toFixed(digits));
  const mb = (bytes: number) => bytes / MB;
  const rows: string[] = [];
  for (const j of jobs) {
    const minimrS = j.error && j.seconds === null ? `FAILED` : f(j.seconds);
    const minimrRate = j.seconds ? f(mb(j.inputBytes) / j.seconds, 1) : '—';
    const mark = j.verified === true ? '' : j.verified === false ? ' ✗' : '';
    const peers = j.peers.length ? j.peers : [undefined];
    for (const p of peers) {
      const peerS = p ? (p.error ? 'FAILED' : f(p.seconds)) : '—';
      const peerRate = p?.seconds ? f(mb(j.inputBytes) / p.seconds, 1) : '—';
      const ratios = p ? pairedRatios(j, p) : undefined;
      const ratio = ratios ? describeRatios(ratios) : p?.seconds && j.seconds ? f(j.seconds / p.seconds, 1) : '—';
      const pmark = p && p.verified === false ? ' ✗' : '';
      // A pipe inside a table cell must be escaped, even in a code span.
      const peerName = p ? '`' + p.peer.replace(/\|/g, '\\|') + '`' + pmark : '—';
      rows.push(
        `| ${j.job}${mark} | ${f(mb(j.inputBytes), 1)} | ${minimrS} ` +
          `| ${minimrRate} | ${peerName} | ${peerS} | ${peerRate} ` +
          `| ${ratio} |`,
      );
    }
  }
  const lines = [
    '# minimr apps vs Unix peers',
    '',
    machineLine(env),
    `Embedded cluster: 2 worker processes, 1 map + 1 reduce slot ` +
      `each, replication 1, 64 MB blocks, FIFO with ` +
      `a ${env.nodeLocalDelayMs} ms locality wait. ` +
      `--size-mb ${env.sizeMb}; MB = 2^20 bytes.`,
    `Corpora: ${Object.entries(env.corpora)
      .map(
        ([name, c]) =>
          `${name}: ${c.lines} lines, ${c.words} ` +
          `words, ${c.distinctWords} distinct (Zipf over a vocabulary ` +
          `of ${c.vocabulary})`,
      )
      .join('; ')}. WordCount without a corpus name ran on the standard corpus, as did Grep.`,
    '',
    '| job | input MB | minimr s | minimr MB/s | peer | peer s | peer MB/s | ratio (minimr/peer) |',
    '|---|---:|---:|---:|---|---:|---:|---:|',
    ...rows,
    '',
    ...(jobs.some((j) => j.runsSeconds)
      ? [
          "Seconds and MB/s are the first run's. Every run, in order (run " +
            'k of a job paired with run k of its peers; odd pairs ran the ' +
            'peers first):',
          ...jobs.flatMap((j) =>
            j.runsSeconds
              ? [
                  `- ${j.job}: minimr ${j.runsSeconds.map((s) => f(s)).join(', ')}; ${j.peers
                    .filter((p) => p.runsSeconds)
                    .map((p) => `\`${p.peer.replace(/\|/g, '\\|')}\` ${p.runsSeconds!.map((s) => f(s)).join(', ')}`)
                    .join('; ')}`,
                ]
              : [],
          ),
          '',
        ]
      : []),
    tiny
      ? `Tiny job (WordCount of ${tiny.inputBytes} bytes) on the warm ` +
        `cluster: median ${tiny.medianSeconds.toFixed(3)} s end to end ` +
        (`(JobTracker ` +
          `submit->finish ${tiny.medianServerSeconds.toFixed(3)} s) ` +
          `over ${tiny.runs.length} ` +
          `runs, ${tiny.pauseMs > 0 ? `each after ${tiny.pauseMs} ms idle` : 'back to back'}: ` +
          `${tiny.runs.map((x) => x.toFixed(3)).join(', ')} s`) +
        (tiny.verified ? '.' : ' — OUTPUT MISMATCH.')
      : 'Tiny job: not run.',
    '',
    'Map locality (successful map attempts; mean TASK_CPU_MS):',
    ...jobs.filter((j) => j.mapLocality).map((j) => `- ${j.job}: ${describeMapLocality(j.mapLocality!)}`),
    '',
    "Peak RSS of the job's tasks (the highest PEAK_RSS_BYTES of its successful attempts, MiB):",
    ...jobs
      .filter((j) => j.peakTaskRssMb)
      .map((j) => `- ${j.job}: maps ${f(j.peakTaskRssMb!.map, 0)}, reduces ${f(j.peakTaskRssMb!.reduce, 0)}`),
    '',
    'Verification:',
    ...jobs.map(
      (j) =>
        `- ${j.job}: ${j.verified === true ? 'OK' : j.verified === false ? 'MISMATCH' : 'not verified'}` +
        (j.checks.length ? ` (${j.checks.join('; ')})` : '') +
        (j.error ? ` — ${j.error}` : '') +
        j.peers
          .map(
            (p) =>
              `; peer \`${p.peer}\` ${p.error ? `FAILED: ${p.error}` : p.verified ? 'output agrees' : `MISMATCH: ${p.note}`}`,
          )
          .join(''),
    ),
    '',
    'minimr s = wall time from submit (module load and `prepare`, ' +
      "i.e. TeraSort's sampling, included) until the client sees " +
      'success, polling every 50 ms. ' +
      ('Peers run under LC_ALL=C on the same bytes, read from a local ' +
        'file in the page cache, output written to a local file. ') +
      ("TeraSort's peer sorts the same records as 100-byte text lines " +
        '(20 hex digits of the key, the row number, filler, newline), ') +
      ('since GNU sort needs lines and the binary keys may contain ' +
        'newlines; hex keeps the byte order, so both outputs must list ' +
        'the records in the same order, and they are compared record by ' +
        'record. ') +
      "TeraValidate (order, row count and checksum of TeraSort's output) has no peer.",
    '',
    'Peer commands (in the data directory):',
    ...jobs.flatMap((j) => j.peers.map((p) => `- ${j.job}: \`${p.command}\``)),
    '',
    `Tools: ${Object.entries(env.tools)
      .map(([k, v]) => `${k}: ${v}`)
      .join('; ')}.`,
    '',
    `Other phases (s): ${Object.entries(phases)
      .map(([k, v]) => `${k} ${v.toFixed(1)}`)
      .join(', ')}.`,
    '',
  ];
  if (failure) lines.push('**The run failed:**', '', '```', failure, '```', '');
  return lines.join('\n');
}

await main();
