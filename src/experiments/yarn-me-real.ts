/**
 * YARN-ME on a real local cluster (issue 14, the real part of `bench:yarn-me`): a mix of TeraSort,
 * WordCount and GrepCount jobs on workers whose memory is a little under two tasks' ideal, so that
 * regular allocation (`yarn`) leaves memory idle that elastic allocation (`yarn-me`) grants; the
 * elastic attempts really run with smaller shuffle buffers and spill.
 *
 * How a run is prepared, as a recurring workload would be:
 * 1. Calibration, twice on a cluster with memory to spare (FIFO, regular grants), the jobs of the
 *    mix one after another (each alone on the cluster, as tasks are profiled): with buffers bigger
 *    than any task needs, then with buffers at `undersizedFraction` of what each task needed. The
 *    JobTracker records both as it records every run (src/runtime/job-profile.ts): its profiles of
 *    `wordcount`, `terasort` and `grep` then have T and a fitted disk rate, the paper's two
 *    profiling runs.
 * 2. Each job of the mix is then configured with the buffers it needs (its true ideal memory: the
 *    smallest with which it does not spill, + the task overhead), and the workers get
 *    `memoryFactor` x the largest map's ideal memory.
 * 3. Measured runs: `repeats` pairs, one run per policy, the order alternating pair by pair, each on
 *    a fresh cluster whose JobTracker starts with the calibration's profiles. After each run every
 *    job's output is checked against a reference computed here from its input (words counted,
 *    lines matched, records sorted), and hashed: every run must write the same bytes.
 * 4. The simulator's prediction of the same workload: the same jobs and arrival times, each task
 *    with the ideal duration, memory and penalty model the profiles give it (what the real policy
 *    is told), on a simulated cluster of the same workers, under the same two policies; once with
 *    a CPU per worker, once with the workers sharing this machine's cores (processor sharing of
 *    cores x throttle: a throttled task works 1/F of its time), as they do. And once with each
 *    task's duration measured in the baseline's runs instead of the profile's: a profile times a job
 *    alone, and in the mix tasks run about 1.3x longer (they share the machine, wait for launches
 *    and fetches); that prediction takes the baseline as measured and predicts what the elastic
 *    policy changes.
 *
 * Figures: each run's average job completion time, memory utilization and elastic attempts;
 * yarn-me minus yarn pair by pair (mean and standard error of the difference and of the ratio);
 * the elastic attempts' spills and every attempt's peak RSS against its grant (counters); and the
 * predicted gain beside the measured one.
 */
import { createHash } from 'node:crypto';
import os from 'node:os';
import { join } from 'node:path';
import { MinimrError } from '../errors.js';
import { computeMetrics, meanAttemptMs, type AttemptRunRecord, type RunRecord } from '../metrics/index.js';
import {
  TASK_OVERHEAD_MB,
  estimatesFor,
  neededBufferBytes,
  type AttemptSummary,
  type JobConf,
  type JobProfile,
} from '../runtime/index.js';
import type { LocalCluster } from '../local/index.js';
import { createPolicy, type PolicyOptions } from '../scheduler/index.js';
import { simulate } from '../sim/index.js';
import type { ClusterShape, JobSpec, TaskSpec, Workload } from '../workloads/index.js';
import type { FsClient } from '../storage/index.js';
import { lineChartFiles, meanWithStandardError, type MeanWithError } from '../util/index.js';
import { realCluster } from './bench-policies.js';
import { runWorkloadOnCluster, type RealJobRun } from './workload-runner.js';

const MiB = 1024 * 1024;
/** GrepCount's pattern in the real runs (the workload runner's default). */
const GREP_PATTERN = 'q[a-e]';

export interface MixJob {
  readonly app: 'wordcount' | 'terasort' | 'grep';
  readonly maps: number;
  readonly reduces: number;
  /** Its maps' input as a multiple of `bytesPerMap` (default 1). */
  readonly splitScale?: number;
  /** Arrival, ms after the first. */
  readonly submitMs: number;
}

/**
 * Memory-heavy, as the paper's mix is (its PageRank and Recommender tasks ask for most of a node):
 * regular allocation must leave memory idle for elastic grants to matter. A TeraSort map buffers
 * about 1.75x its input (4x a WordCount map's bytes here) and a reduce about as much again, so
 * TeraSort tasks ask for about 1.5x the task overhead: two of them do not fit a worker, one leaves
 * 40% of it idle. WordCount and GrepCount combine in a hash table and need little more than the
 * overhead: the two WordCounts and the GrepCount fill some of the gaps, as small jobs do. Arrivals
 * 2 s apart.
 */
export const DEFAULT_MIX: readonly MixJob[] = [
  { app: 'terasort', maps: 4, reduces: 4, submitMs: 0, splitScale: 4 },
  { app: 'wordcount', maps: 4, reduces: 2, submitMs: 2000 },
  { app: 'terasort', maps: 4, reduces: 4, submitMs: 4000, splitScale: 4 },
  { app: 'terasort', maps: 4, reduces: 4, submitMs: 6000, splitScale: 4 },
  { app: 'grep', maps: 4, reduces: 1, submitMs: 8000 },
  { app: 'terasort', maps: 4, reduces: 4, submitMs: 10000, splitScale: 4 },
  { app: 'terasort', maps: 4, reduces: 4, submitMs: 12000, splitScale: 4 },
  { app: 'wordcount', maps: 4, reduces: 2, submitMs: 14000 },
];

export interface YarnMeRealOptions {
  readonly dataDir: string;
  readonly mix?: readonly MixJob[];
  /** Pairs of measured runs (one per policy). Default 3. */
  readonly repeats?: number;
  /** The baseline and the elastic policy. Default ['yarn', 'yarn-me']. */
  readonly policies?: readonly [string, string];
  readonly policyOptions?: Readonly<Record<string, PolicyOptions>>;
  readonly workers?: number;
  readonly mapSlots?: number;
  readonly reduceSlots?: number;
  /** Input bytes per map (and block size). Default 8 MiB. */
  readonly bytesPerMap?: number;
  /** Worker memory as a multiple of the largest map's ideal memory. Default 1.8. */
  readonly memoryFactor?: number;
  /** Elastic grants are whole multiples of this, MB. Default 10. */
  readonly memoryStepMb?: number;
  /** Buffers of the under-sized calibration run, as a fraction of what each task needed. Default 0.3. */
  readonly undersizedFraction?: number;
  /**
   * `--cpu-throttle` of every worker, on the 'cpu' basis: each worker as if on a core of its own, F times slower than
   * this machine's (see src/runtime/cpu-throttle.ts). Default 8: 4 workers x 3 slots need 6 cores at most, under 8 x
   * this machine's 2.
   */
  readonly cpuThrottle?: number;
  /** Disk rate the workers report, MB/s (the elastic disk share is a part of it). Default 200. */
  readonly diskMBps?: number;
  readonly heartbeatMs?: number;
  /** Profiles of an earlier calibration (a result's `profiles`): the two calibration runs are skipped. */
  readonly calibratedProfiles?: readonly JobProfile[];
  readonly onProgress?: (line: string) => void;
}

export interface AttemptFigures {
  readonly attempts: number;
  readonly elastic: number;
  /** SPILLED_BYTES of the elastic attempts and of the regular ones. */
  readonly elasticSpilledBytes: number;
  readonly regularSpilledBytes: number;
  /** Elastic attempts that spilled more than their output (SPILLS > 1, or a reduce that spilled). */
  readonly elasticSpilling: number;
  /** Largest PEAK_RSS_BYTES / grant over the attempts, and how many were over their grant. */
  readonly maxRssOverGrant: number;
  readonly overGrant: number;
}

export interface MeasuredRun {
  readonly repeat: number;
  readonly policy: string;
  readonly avgJctMs: number;
  readonly makespanMs: number;
  /** Time-weighted mean of memory in use / cluster memory. */
  readonly memoryUtilization: number;
  readonly jctMs: Readonly<Record<string, number>>;
  readonly figures: AttemptFigures;
  /** Jobs whose output matched its reference. */
  readonly outputsOk: number;
  readonly outputProblems: readonly string[];
  readonly outputHashes: Readonly<Record<string, string>>;
  readonly run: RunRecord;
}

export interface Prediction {
  readonly model: string;
  readonly avgJctMs: Readonly<Record<string, number>>;
  /** The elastic policy's elastic attempts. */
  readonly elasticAttempts: number;
  readonly gain: number;
  readonly runs: readonly RunRecord[];
}

/** A paired figure over the pairs of runs: its mean, standard error and number of pairs. */
export type PairedFigure = MeanWithError;

export interface YarnMeRealResult {
  readonly policies: readonly [string, string];
  readonly cluster: ClusterShape;
  readonly settings: Required<
    Omit<YarnMeRealOptions, 'dataDir' | 'onProgress' | 'policyOptions' | 'mix' | 'policies' | 'calibratedProfiles'>
  >;
  /** Whether the calibration ran in this run (else its profiles were given). */
  readonly calibrated: boolean;
  readonly mix: readonly MixJob[];
  /** Per workload job: its buffers and ideal memory in the measured runs. */
  readonly jobs: readonly {
    readonly id: string;
    readonly app: string;
    readonly mapBufferMiB: number;
    readonly reduceBufferMiB: number;
    readonly mapMemoryMb: number;
    readonly reduceMemoryMb: number;
  }[];
  readonly profiles: readonly JobProfile[];
  readonly runs: readonly MeasuredRun[];
  /** Elastic policy minus baseline, pair by pair: average JCT (ms) and the ratio of average JCTs. */
  readonly paired: { readonly jctDiffMs: PairedFigure; readonly jctRatio: PairedFigure };
  /** 1 - mean ratio: the measured cut of the average JCT. */
  readonly measuredGain: number;
  /**
   * The simulator's predictions: from the profiles' task times on workers with CPUs of their own,
   * and sharing this machine's cores; and from the task times measured in the baseline's runs.
   */
  readonly predicted: readonly Prediction[];
  /** Every run wrote the same bytes for every job. */
  readonly outputsIdentical: boolean;
}

function mixWorkload(mix: readonly MixJob[]): Workload {
  const placeholder: TaskSpec = { workMs: 1, memoryMb: 1 };
  return {
    name: 'yarn-me-mix',
    jobs: mix.map((m, i) => ({
      id: `${m.app}-${i + 1}`,
      name: `${m.app}-${i + 1}`,
      app: m.app,
      submitMs: m.submitMs,
      maps: Array.from({ length: m.maps }, () => placeholder),
      reduces: Array.from({ length: m.reduces }, () => placeholder),
    })),
  };
}

/** Each job's part files, concatenated in part order. */
async function readParts(fs: FsClient, dir: string): Promise<Buffer> {
  const parts = (await fs.list(dir))
    .filter((f) => /\/part-[mr]-\d+$/.test(f.path))
    .map((f) => f.path)
    .sort();
  const chunks: Buffer[] = [];
  for (const p of parts) for await (const c of fs.cat(p)) chunks.push(c);
  return Buffer.concat(chunks);
}

async function readFile(fs: FsClient, path: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of fs.cat(path)) chunks.push(c);
  return Buffer.concat(chunks);
}

/** Why a job's output is not what its input says it must be, or null when it is. */
function outputProblem(app: string, input: Buffer, output: Buffer): string | null {
  if (app === 'terasort') {
    const records: Buffer[] = [];
    for (let at = 0; at + 100 <= input.length; at += 100) records.push(input.subarray(at, at + 100));
    records.sort((a, b) => Buffer.compare(a.subarray(0, 10), b.subarray(0, 10)) || Buffer.compare(a, b));
    return output.equals(Buffer.concat(records))
      ? null
      : `output (${output.length} bytes) is not the ${records.length} input records in key order`;
  }
  const text = input.toString('utf8');
  if (app === 'grep') {
    const lines = text.split('\n');
    if (lines[lines.length - 1] === '') lines.pop();
    const re = new RegExp(GREP_PATTERN);
    const expected = `${GREP_PATTERN}\t${lines.filter((l) => re.test(l.replace(/\r$/, ''))).length}\n`;
    return output.toString('utf8') === expected
      ? null
      : `output ${JSON.stringify(output.toString('utf8'))}, expected ${JSON.stringify(expected)}`;
  }
  const expected = new Map<string, number>();
  for (const token of text.split(/[ \t\n\r\f]+/)) if (token) expected.set(token, (expected.get(token) ?? 0) + 1);
  const got = new Map<string, number>();
  for (const line of output.toString('utf8').split('\n')) {
    if (!line) continue;
    const tab = line.lastIndexOf('\t');
    got.set(line.slice(0, tab), Number(line.slice(tab + 1)));
  }
  if (got.size !== expected.size) return `${got.size} words counted, ${expected.size} in the input`;
  for (const [w, n] of expected) if (got.get(w) !== n) return `"${w}" counted ${got.get(w)} times, ${n} in the input`;
  return null;
}

function attemptFigures(attempts: readonly AttemptSummary[]): AttemptFigures {
  const done = attempts.filter((a) => a.state === 'succeeded');
  const elastic = done.filter((a) => a.elastic);
  const spilled = (xs: readonly AttemptSummary[]) => xs.reduce((s, a) => s + (a.counters.SPILLED_BYTES ?? 0), 0);
  const ratios = done.map((a) => (a.counters.PEAK_RSS_BYTES ?? 0) / (a.memoryMb * MiB));
  return {
    attempts: done.length,
    elastic: elastic.length,
    elasticSpilledBytes: spilled(elastic),
    regularSpilledBytes: spilled(done.filter((a) => !a.elastic)),
    elasticSpilling: elastic.filter((a) =>
      a.kind === 'map' ? (a.counters.SPILLS ?? 0) > 1 : (a.counters.SPILLED_BYTES ?? 0) > 0,
    ).length,
    maxRssOverGrant: ratios.length ? Math.max(...ratios) : 0,
    overGrant: ratios.filter((r) => r > 1).length,
  };
}

export async function runYarnMeReal(o: YarnMeRealOptions): Promise<YarnMeRealResult> {
  const say = o.onProgress ?? (() => undefined);
  const mix = o.mix ?? DEFAULT_MIX;
  const policies = o.policies ?? (['yarn', 'yarn-me'] as const);
  for (const p of policies) createPolicy(p, o.policyOptions?.[p] ?? {});
  const settings = {
    repeats: o.repeats ?? 3,
    workers: o.workers ?? 4,
    mapSlots: o.mapSlots ?? 2,
    reduceSlots: o.reduceSlots ?? 1,
    bytesPerMap: o.bytesPerMap ?? 8 * MiB,
    memoryFactor: o.memoryFactor ?? 1.8,
    memoryStepMb: o.memoryStepMb ?? 10,
    undersizedFraction: o.undersizedFraction ?? 0.3,
    cpuThrottle: o.cpuThrottle ?? 8,
    heartbeatMs: o.heartbeatMs ?? 1000,
    diskMBps: o.diskMBps ?? 200,
  };
  const workload = mixWorkload(mix);
  const splitOf = new Map(
    workload.jobs.map((spec, i) => [spec.id, Math.round(settings.bytesPerMap * (mix[i]!.splitScale ?? 1))]),
  );
  const bytesPerMapOf = (id: string) => splitOf.get(id)!;
  const shape = (memoryMb: number) =>
    realCluster({
      workers: settings.workers,
      racks: 1,
      mapSlots: settings.mapSlots,
      reduceSlots: settings.reduceSlots,
      memoryMb,
      diskMBps: settings.diskMBps,
      bytesPerMap: settings.bytesPerMap,
      timeScale: 1,
      maxMapsPerJob: 64,
    });
  const common = {
    workload,
    bytesPerMap: settings.bytesPerMap,
    bytesPerMapOf,
    heartbeatMs: settings.heartbeatMs,
    memoryStepMb: settings.memoryStepMb,
    cpuThrottle: settings.cpuThrottle,
    measureAlone: false,
  };
  const seed = (profiles: readonly JobProfile[]) => async (cluster: LocalCluster) => {
    for (const p of profiles) await cluster.jobTracker.profiles.put(p);
  };
  const inputOf = (spec: JobSpec) => spec.maps.length * bytesPerMapOf(spec.id);
  const byApp = (profiles: readonly JobProfile[], app: string) => profiles.find((p) => p.job === app);

  // ---- 1. calibration: the mix with generous buffers, then under-sized ones -------------------
  const generous = 256 * MiB;
  const calibration = shape(4 * (generous / MiB + TASK_OVERHEAD_MB));
  // Each job alone: durations measured under the contention of the whole mix would be the mix's, not the tasks'.
  const oneByOne: Workload = {
    ...workload,
    jobs: workload.jobs.map((j, i) => ({ ...j, submitMs: 0, ...(i > 0 ? { after: workload.jobs[i - 1]!.id } : {}) })),
  };
  let profiles: JobProfile[] = [...(o.calibratedProfiles ?? [])];
  const keepProfiles = async (cluster: LocalCluster) => {
    profiles = cluster.jobTracker.profiles.list();
  };
  if (!o.calibratedProfiles) {
    say(`calibration 1/2: the mix with ${generous / MiB} MiB buffers`);
    await runWorkloadOnCluster({
      ...common,
      workload: oneByOne,
      cluster: calibration,
      policy: 'fifo',
      dataDir: join(o.dataDir, 'calibration-1'),
      confOf: () => ({ 'shuffle.map.bufferBytes': generous, 'shuffle.reduce.bufferBytes': generous }),
      afterWorkload: keepProfiles,
      onProgress: (m) => say(`calibration 1: ${m}`),
    });
  }
  const needs = new Map(
    workload.jobs.map((spec) => {
      const p = byApp(profiles, spec.app);
      if (!p) throw new MinimrError('EBADCONF', `the calibration left no profile of ${spec.app}`);
      const map = Math.ceil(neededBufferBytes(p.map, bytesPerMapOf(spec.id)) / MiB) * MiB;
      const reduce = Math.ceil(neededBufferBytes(p.reduce, inputOf(spec) / spec.reduces.length) / MiB) * MiB;
      return [spec.id, { map, reduce }] as const;
    }),
  );
  const buffers = (id: string, fraction: number): JobConf => {
    const n = needs.get(id)!;
    return {
      'shuffle.map.bufferBytes': Math.max(MiB, Math.round(n.map * fraction)),
      'shuffle.reduce.bufferBytes': Math.max(MiB, Math.round(n.reduce * fraction)),
    };
  };
  if (!o.calibratedProfiles) {
    say(`calibration 2/2: the mix with ${settings.undersizedFraction * 100}% of the buffers each task needs`);
    await runWorkloadOnCluster({
      ...common,
      workload: oneByOne,
      cluster: calibration,
      policy: 'fifo',
      dataDir: join(o.dataDir, 'calibration-2'),
      confOf: (id) => buffers(id, settings.undersizedFraction),
      beforeWorkload: seed(profiles),
      afterWorkload: keepProfiles,
      onProgress: (m) => say(`calibration 2: ${m}`),
    });
  }

  // ---- 2. the jobs at their ideal memory, the workers a little under two maps' worth ----------
  const jobs = workload.jobs.map((spec) => {
    const n = needs.get(spec.id)!;
    return {
      id: spec.id,
      app: spec.app,
      mapBufferMiB: n.map / MiB,
      reduceBufferMiB: n.reduce / MiB,
      mapMemoryMb: n.map / MiB + TASK_OVERHEAD_MB,
      reduceMemoryMb: n.reduce / MiB + TASK_OVERHEAD_MB,
    };
  });
  const largestMap = Math.max(...jobs.map((j) => j.mapMemoryMb));
  const workerMemoryMb =
    Math.floor((settings.memoryFactor * largestMap) / settings.memoryStepMb) * settings.memoryStepMb;
  const cluster = shape(workerMemoryMb);
  say(
    `workers: ${workerMemoryMb} MB each (${settings.memoryFactor} x ` +
      `the largest map's ideal ${largestMap} MB); ` +
      `jobs: ${jobs.map((j) => `${j.id} ${j.mapMemoryMb}/${j.reduceMemoryMb} MB`).join(', ')}`,
  );

  // ---- 3. measured runs, interleaved -----------------------------------------------------------
  const runs: MeasuredRun[] = [];
  for (let repeat = 0; repeat < settings.repeats; repeat++) {
    const order = repeat % 2 === 0 ? policies : ([policies[1], policies[0]] as const);
    for (const policy of order) {
      say(`run ${repeat + 1}/${settings.repeats}: ${policy}`);
      let bytes: { read: JobBytes[]; missing: string[] } = {
        read: [],
        missing: ['the run ended before its outputs were read'],
      };
      const result = await runWorkloadOnCluster({
        ...common,
        cluster,
        policy,
        policyOptions: o.policyOptions?.[policy] ?? {},
        dataDir: join(o.dataDir, `run-${repeat + 1}-${policy}`),
        confOf: (id) => buffers(id, 1),
        beforeWorkload: seed(profiles),
        afterWorkload: async (c, jobRuns) => {
          bytes = await readJobBytes(c.client.fs, jobRuns);
        },
        onProgress: (m) => say(`run ${repeat + 1} ${policy}: ${m}`),
      });
      const checked = checkOutputs(bytes);
      const metrics = computeMetrics(result.run, new Map());
      runs.push({
        repeat,
        policy,
        avgJctMs: metrics.avgJctMs,
        makespanMs: metrics.makespanMs,
        memoryUtilization: metrics.utilization.memory,
        jctMs: Object.fromEntries(metrics.perJob.map((j) => [j.id, j.responseMs])),
        figures: attemptFigures(result.jobRuns.flatMap((j) => j.attempts)),
        outputsOk: checked.ok,
        outputProblems: checked.problems,
        outputHashes: checked.hashes,
        run: result.run,
      });
      say(
        `run ${repeat + 1} ${policy}: average ` +
          `JCT ${(metrics.avgJctMs / 1000).toFixed(1)} s, ` +
          `memory ${(metrics.utilization.memory * 100).toFixed(0)}%, ` +
          `outputs ${checked.ok}/${jobs.length} right`,
      );
    }
  }
  const of = (policy: string) => runs.filter((r) => r.policy === policy).sort((a, b) => a.repeat - b.repeat);
  const base = of(policies[0]);
  const elastic = of(policies[1]);
  const jctRatio = meanWithStandardError(elastic.map((r, i) => r.avgJctMs / base[i]!.avgJctMs));
  const jctDiffMs = meanWithStandardError(elastic.map((r, i) => r.avgJctMs - base[i]!.avgJctMs));
  const hashes = runs.map((r) => JSON.stringify(r.outputHashes));

  // ---- 4. the simulator's prediction -----------------------------------------------------------
  const simJobs = estimatedWorkload(workload, cluster, profiles, jobs, bytesPerMapOf);
  const simulateUnder = {
    policies,
    policyOptions: o.policyOptions,
    heartbeatMs: settings.heartbeatMs,
    memoryStepMb: settings.memoryStepMb,
  };
  // A throttled task works 1/F of its time: F x this machine's cores is how many can work at once.
  const cores = os.cpus().length * settings.cpuThrottle;
  const shared: ClusterShape = {
    ...cluster,
    workers: cluster.workers.map((w) => ({ ...w, host: 'this-machine' })),
    hosts: { 'this-machine': { cores } },
  };
  const predicted = [
    predict('workers with CPUs of their own', simJobs, cluster, simulateUnder),
    predict(
      `the workers sharing ${os.cpus().length} cores x ${settings.cpuThrottle} (the throttle)`,
      simJobs,
      shared,
      simulateUnder,
    ),
    predict(
      `task times measured in the ${policies[0]} runs`,
      withBaselineTaskTimes(
        simJobs,
        base.map((r) => r.run),
      ),
      cluster,
      simulateUnder,
    ),
  ];
  return {
    policies,
    cluster,
    settings,
    calibrated: !o.calibratedProfiles,
    mix,
    jobs,
    profiles,
    runs,
    paired: { jctDiffMs, jctRatio },
    measuredGain: 1 - jctRatio.mean,
    predicted,
    outputsIdentical: hashes.every((h) => h === hashes[0]),
  };
}

interface JobBytes {
  readonly id: string;
  readonly app: string;
  readonly input: Buffer;
  readonly output: Buffer;
}

/**
 * Each succeeded job's input and output, read while the cluster is up; checked only once it is
 * stopped: the references are seconds of CPU work that would hold up the JobTracker's heartbeats,
 * which share this thread.
 */
async function readJobBytes(
  fs: FsClient,
  jobRuns: readonly RealJobRun[],
): Promise<{ read: JobBytes[]; missing: string[] }> {
  const read: JobBytes[] = [];
  const missing: string[] = [];
  for (const j of jobRuns) {
    if (j.status?.state !== 'succeeded' || !j.input) missing.push(`${j.spec.id}: ${j.status?.state ?? 'not run'}`);
    else
      read.push({
        id: j.spec.id,
        app: j.app,
        input: await readFile(fs, j.input),
        output: await readParts(fs, j.output),
      });
  }
  return { read, missing };
}

function checkOutputs(jobs: { read: JobBytes[]; missing: string[] }): {
  ok: number;
  problems: string[];
  hashes: Record<string, string>;
} {
  const problems = [...jobs.missing];
  const hashes: Record<string, string> = {};
  let ok = 0;
  for (const j of jobs.read) {
    hashes[j.id] = createHash('sha256').update(j.output).digest('hex');
    const problem = outputProblem(j.app, j.input, j.output);
    if (problem) problems.push(`${j.id}: ${problem}`);
    else ok++;
  }
  return { ok, problems, hashes };
}

/** The same jobs for the simulator, each task with the estimates the profiles give the real policy. */
function estimatedWorkload(
  workload: Workload,
  cluster: ClusterShape,
  profiles: readonly JobProfile[],
  jobs: YarnMeRealResult['jobs'],
  bytesPerMapOf: (jobId: string) => number,
): Workload {
  const maxMemory = Math.max(...cluster.workers.map((w) => w.memoryMb));
  const simJobs: JobSpec[] = workload.jobs.map((spec) => {
    const j = jobs.find((x) => x.id === spec.id)!;
    const conf: JobConf = {
      'shuffle.map.bufferBytes': j.mapBufferMiB * MiB,
      'shuffle.reduce.bufferBytes': j.reduceBufferMiB * MiB,
    };
    const verdict = estimatesFor(
      profiles.find((p) => p.job === spec.app),
      {
        conf,
        mapInputBytes: spec.maps.map(() => bytesPerMapOf(spec.id)),
        reducers: spec.reduces.length,
        mapMemoryMb: j.mapMemoryMb,
        reduceMemoryMb: j.reduceMemoryMb,
      },
      maxMemory,
    );
    if (!verdict.estimates)
      throw new MinimrError(
        'EINTERNAL',
        `no estimates for ${spec.id}: ` +
          `profile ${verdict.use.state}${verdict.use.state === 'rejected' ? ` (${verdict.use.reason})` : ''}`,
      );
    const task = (
      e: { idealDurationMs?: number; penalty?: TaskSpec['penalty'] },
      memoryMb: number,
      inputBytes: number,
    ): TaskSpec => ({
      workMs: Math.max(1, Math.round(e.idealDurationMs ?? 1)),
      memoryMb,
      ...(e.penalty ? { penalty: e.penalty } : {}),
      inputBytes,
    });
    return {
      ...spec,
      maps: verdict.estimates.maps.map((e) => task(e, j.mapMemoryMb, bytesPerMapOf(spec.id))),
      reduces: spec.reduces.map(() => task(verdict.estimates!.reduce, j.reduceMemoryMb, 0)),
    };
  });
  return { ...workload, jobs: simJobs };
}

/**
 * The workload with each task's ideal duration the mean duration of its job's regular attempts of
 * its kind in the baseline's runs, penalty models and memory unchanged. A profile times a job alone;
 * in the mix, tasks share the machine with others and wait for launches and fetches, which the
 * simulator does not model: the baseline's runs measure that, and the elastic policy's gain is
 * then predicted from what it changes (grants, spills, order).
 */
export function withBaselineTaskTimes(workload: Workload, baseline: readonly RunRecord[]): Workload {
  const regularByJob = new Map<string, AttemptRunRecord[]>();
  for (const run of baseline) {
    for (const a of run.attempts) {
      if (a.memoryMb < a.idealMemoryMb) continue;
      const list = regularByJob.get(a.jobId);
      if (list) list.push(a);
      else regularByJob.set(a.jobId, [a]);
    }
  }
  const timed = (jobId: string, kind: 'map' | 'reduce', t: TaskSpec): TaskSpec => {
    const measuredMs = meanAttemptMs(regularByJob.get(jobId) ?? [], kind);
    return Number.isFinite(measuredMs) ? { ...t, workMs: Math.max(1, Math.round(measuredMs)) } : t;
  };
  return {
    ...workload,
    jobs: workload.jobs.map((j) => ({
      ...j,
      maps: j.maps.map((t) => timed(j.id, 'map', t)),
      reduces: j.reduces.map((t) => timed(j.id, 'reduce', t)),
    })),
  };
}

function predict(
  model: string,
  workload: Workload,
  cluster: ClusterShape,
  o: {
    readonly policies: readonly [string, string];
    readonly policyOptions: YarnMeRealOptions['policyOptions'];
    readonly heartbeatMs: number;
    readonly memoryStepMb: number;
  },
): Prediction {
  const avgJctMs: Record<string, number> = {};
  const runs: RunRecord[] = [];
  let elasticAttempts = 0;
  for (const p of o.policies) {
    const r = simulate({
      workload,
      cluster,
      // As the real cluster runs it: the JobTracker has no ApplicationMaster, so neither has the prediction.
      policy: createPolicy(p, o.policyOptions?.[p] ?? {}, 'cluster'),
      heartbeatMs: o.heartbeatMs,
      memoryStepMb: o.memoryStepMb,
      sampleEveryMs: 250,
      recordDecisions: false,
    });
    avgJctMs[p] = computeMetrics(r.run, new Map()).avgJctMs;
    runs.push(r.run);
    if (p === o.policies[1]) elasticAttempts = r.run.attempts.filter((a) => a.memoryMb < a.idealMemoryMb).length;
  }
  return { model, avgJctMs, elasticAttempts, gain: 1 - avgJctMs[o.policies[1]]! / avgJctMs[o.policies[0]]!, runs };
}

const s1 = (ms: number) => (ms / 1000).toFixed(1);
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

/** The report: settings, jobs, runs, paired differences, counters, prediction and verdict. */
export function yarnMeRealMarkdown(r: YarnMeRealResult): string {
  const [base, elastic] = r.policies;
  const w = r.cluster.workers[0]!;
  const lines = [
    `## Real cluster: ${base} vs ${elastic}`,
    '',
    `${r.cluster.workers.length} workers x (${w.mapSlots} map ` +
      `+ ${w.reduceSlots} reduce slots, ${w.memoryMb} MB), memory ` +
      `step ${r.settings.memoryStepMb} MB, ` +
      `--cpu-throttle ${r.settings.cpuThrottle}, ` +
      `heartbeat ${r.settings.heartbeatMs} ms; ${r.settings.repeats} ` +
      `pairs of runs, the order alternating.`,
    '',
    '| job | arrives s | maps x MiB | reduces | map buffer MiB (ideal MB) | reduce buffer MiB (ideal MB) |',
    '|---|---:|---:|---:|---:|---:|',
    ...r.jobs.map(
      (j, i) =>
        `| ${j.id} | ${s1(r.mix[i]!.submitMs)} | ${r.mix[i]!.maps} ` +
        `x ${(r.settings.bytesPerMap * (r.mix[i]!.splitScale ?? 1)) / MiB} ` +
        `| ${r.mix[i]!.reduces} | ${j.mapBufferMiB} (${j.mapMemoryMb}) ` +
        `| ${j.reduceBufferMiB} (${j.reduceMemoryMb}) |`,
    ),
    '',
    '| run | policy | avg JCT s | makespan s | memory used | ' +
      'attempts | elastic | elastic spilling | spilled MiB elastic / ' +
      'regular | max peak RSS / grant | over grant | outputs right |',
    '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...r.runs.map(
      (x) =>
        `| ${x.repeat + 1} | ${x.policy} | ${s1(x.avgJctMs)} ` +
        `| ${s1(x.makespanMs)} | ${pct(x.memoryUtilization)} ` +
        `| ${x.figures.attempts} | ${x.figures.elastic} ` +
        `| ${x.figures.elasticSpilling} ` +
        `| ${(x.figures.elasticSpilledBytes / MiB).toFixed(0)} ` +
        `/ ${(x.figures.regularSpilledBytes / MiB).toFixed(0)} ` +
        `| ${x.figures.maxRssOverGrant.toFixed(2)} ` +
        `| ${x.figures.overGrant} | ${x.outputsOk}/${r.jobs.length} |`,
    ),
    '',
    `${elastic} minus ${base}, pair by pair: average ` +
      `JCT ${r.paired.jctDiffMs.mean >= 0 ? '+' : ''}${s1(r.paired.jctDiffMs.mean)} ` +
      `s (standard error ${s1(r.paired.jctDiffMs.standardError)} s); ` +
      `ratio ${r.paired.jctRatio.mean.toFixed(3)} (standard ` +
      `error ${r.paired.jctRatio.standardError.toFixed(3)}), n ` +
      `= ${r.paired.jctRatio.n}.`,
    '',
    `| | ${base} avg JCT s | ${elastic} avg JCT s | cut of the average JCT |`,
    '|---|---:|---:|---:|',
    `| measured (mean of ${r.paired.jctRatio.n} pairs) ` +
      `| ${s1(mean(r.runs.filter((x) => x.policy === base).map((x) => x.avgJctMs)))} ` +
      `| ${s1(mean(r.runs.filter((x) => x.policy === elastic).map((x) => x.avgJctMs)))} ` +
      `| ${pct(r.measuredGain)} |`,
    ...r.predicted.map(
      (p) =>
        `| predicted, ${p.model} (${p.elasticAttempts} elastic ` +
        `attempts) | ${s1(p.avgJctMs[base]!)} ` +
        `| ${s1(p.avgJctMs[elastic]!)} | ${pct(p.gain)} |`,
    ),
    '',
    `Targets: ${elastic} cuts the average JCT by >= ` +
      `20%: ${r.measuredGain >= 0.2 ? 'met' : 'not met'} ` +
      `(${pct(r.measuredGain)}); predicted gain within 10 points of ` +
      `the measured ` +
      `one: ${r.predicted
        .map(
          (p) =>
            `${Math.abs(p.gain - r.measuredGain) <= 0.1 ? 'met' : 'not met'} with ${p.model} (${((p.gain - r.measuredGain) * 100).toFixed(1)} points)`,
        )
        .join(', ')}; ` +
      `every attempt within its ` +
      `grant: ${r.runs.every((x) => x.figures.overGrant === 0) ? 'yes' : 'no'}; ` +
      `outputs equal to the ` +
      `references: ${r.runs.every((x) => x.outputsOk === r.jobs.length) ? 'yes' : 'no'}, ` +
      `and identical across ` +
      `runs: ${r.outputsIdentical ? 'yes' : 'no'}.`,
    ...r.runs.flatMap((x) => x.outputProblems.map((p) => `- run ${x.repeat + 1} ${x.policy}: ${p}`)),
  ];
  return lines.join('\n');
}

function mean(xs: readonly number[]): number {
  return xs.reduce((s, x) => s + x, 0) / xs.length;
}

/**
 * The result as JSON: each run's jobs and attempts (their times, workers and grants) instead of its whole record, each
 * prediction's jobs.
 */
export function yarnMeRealJson(r: YarnMeRealResult): unknown {
  const { runs, predicted, ...rest } = r;
  return {
    ...rest,
    runs: runs.map(({ run, ...x }) => ({
      ...x,
      jobs: run.jobs,
      attempts: run.attempts.map(({ id, jobId, kind, workerId, startMs, endMs, outcome, memoryMb, idealMemoryMb }) => ({
        id,
        jobId,
        kind,
        workerId,
        startMs,
        endMs,
        outcome,
        memoryMb,
        idealMemoryMb,
      })),
    })),
    predicted: predicted.map(({ runs: simRuns, ...p }) => ({ ...p, jobs: simRuns.map((x) => x.jobs) })),
  };
}

/** Memory in use and elastic attempts over time, first pair of runs and the prediction: SVGs and their CSVs. */
export function yarnMeRealSvgs(r: YarnMeRealResult): Record<string, string> {
  const first = r.runs.filter((x) => x.repeat === 0);
  const series = (
    run: RunRecord,
    name: string,
    value: (s: RunRecord['utilization'][number]) => number,
    dashed = false,
  ) => ({
    name,
    dashed,
    points: run.utilization.map((s) => [s.timeMs / 1000, value(s)] as const),
  });
  const memory = (s: RunRecord['utilization'][number]) => (s.memoryMb > 0 ? (100 * s.memoryUsedMb) / s.memoryMb : 0);
  return Object.fromEntries([
    ...lineChartFiles('yarn-me-real-memory', {
      title: 'Memory in use on the real cluster (first pair of runs) and in the prediction',
      xLabel: 's',
      yLabel: '% of cluster memory',
      series: [
        ...first.map((x) => series(x.run, x.policy, memory)),
        ...r.predicted[1]!.runs.map((run, i) => series(run, `${r.policies[i]} (sim)`, memory, true)),
      ],
    }),
    ...lineChartFiles('yarn-me-real-elastic', {
      title: 'Elastic attempts running (first pair of runs) and in the prediction',
      xLabel: 's',
      yLabel: 'elastic attempts',
      series: [
        ...first.map((x) => series(x.run, x.policy, (s) => s.elasticAttempts)),
        ...r.predicted[1]!.runs.map((run, i) => series(run, `${r.policies[i]} (sim)`, (s) => s.elasticAttempts, true)),
      ],
    }),
  ]);
}
