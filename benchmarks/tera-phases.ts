/**
 * Where a TeraSort job's time goes, attempt by attempt: on bench:apps' cluster (2 workers, 1 map +
 * 1 reduce slot each, 64 MB blocks and buffers), with the phase trace on (MINIMR_PHASE_TRACE, see
 * src/util/phase-trace.ts), one TeraSort of --size-mb; then per attempt the wall time and the task
 * process's CPU time of each step:
 *
 *   launch      the JobTracker sent the launch -> the task process was given the attempt
 *   load        the job module imported
 *   collect     input read and records collected, until the first spill starts (maps)
 *   sort        the first buffer generation sorted
 *   spill       the rest of the input collected while that spill is written
 *   tail        the last records collected after the spill was written
 *   merge       the last generation sorted and merged with the spill into the map output
 *   shuffle     map outputs fetched and merged down to the final merge's runs (reduces)
 *   reduce      the final merge, copied into the output file
 *   report      'done' sent -> seen by the JobTracker
 *
 * plus the gap on each worker between an attempt's end and the next one's launch, the CPU time
 * every attempt used (TASK_CPU_MS) against what the two cores could give in the job's wall time,
 * and the CPU a task process used before its attempt (start-up of a fresh process). A step whose
 * CPU is well below its wall time waited (for a core, the disk, another process).
 *
 * `--app wordcount [--corpus zipf]` or `--app grep [--pattern P]` runs that job on bench:apps' standard
 * (or Zipf) corpus instead.
 *
 * Run: npm run bench:tera-phases [-- --size-mb 256] [--reps 1] [--conf k=v ...] [--app terasort|wordcount|grep]
 * Writes bench-results/tera-phases.json and tera-phases.md at the package root.
 */
import yargs from 'yargs';
import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseConfPairs, type AttemptSummary, type JobConf } from '../src/runtime/index.js';
import type { PhaseTraceEvent } from '../src/util/index.js';
import {
  BENCH_CLUSTER,
  finishMachineRecord,
  machineLine,
  machineRecord,
  startBenchCluster,
} from './lib/bench-cluster.js';
import { progressLog } from './lib/shell.js';
import { RECORD, writeTeraInputs } from './lib/tera.js';
import { CORPORA, CORPUS_OPTIONS, writeCorpus } from './lib/corpus.js';

const SELF = fileURLToPath(import.meta.url);
const MB = 1 << 20;
const RESULTS_DIR = resolve(dirname(SELF), '../../bench-results');

const args = yargs(process.argv.slice(2))
  .option('size-mb', { type: 'number', default: 256, describe: 'TeraSort input size' })
  .option('reps', { type: 'number', default: 1, describe: 'jobs run one after another on the same cluster' })
  .option('conf', { type: 'array', string: true, default: [] as string[], describe: 'job settings k=v' })
  .option('app', {
    choices: ['terasort', 'wordcount', 'grep'] as const,
    default: 'terasort' as const,
    describe: "the job: TeraSort on TeraGen records, or WordCount or Grep on one of bench:apps' corpora",
  })
  .option('corpus', {
    choices: CORPORA,
    default: 'standard' as const,
    describe: "WordCount's and Grep's corpus (zipf: a million distinct words; Grep needs standard)",
  })
  .option('pattern', { type: 'string', describe: "Grep's pattern (default: the corpus's literal grep word)" })
  .strict()
  .parseSync();

/** The steps of a map and of a reduce, as (label, trace event that ends it). */
const MAP_STEPS: [string, string][] = [
  ['launch', 't-run'],
  ['load', 't-loaded'],
  ['collect', 'b-sort'],
  ['sort', 'b-sorted'],
  ['spill', 'b-spill-written'],
  ['tail', 't-input-done'],
  ['merge', 'b-merged'],
  ['report', 'jt-finished'],
];
const REDUCE_STEPS: [string, string][] = [
  ['launch', 't-run'],
  ['load', 't-loaded'],
  ['shuffle', 't-shuffled'],
  ['reduce', 't-closed'],
  ['report', 'jt-finished'],
];
/** Events of the task process, whose `cpuMs` is the attempt's process's. */
const TASK_EVENT = /^(t|b)-/;

interface Step {
  step: string;
  wallMs: number;
  /** CPU of the task process over the step; null for steps that end outside it. */
  cpuMs: number | null;
  /** The attempt's peak RSS (MiB) at the step's end, when the step ends in the task process. */
  peakMiB: number | null;
}

interface AttemptTimeline {
  attempt: string;
  kind: 'map' | 'reduce';
  worker: string;
  /** ms since the job's first launch. */
  launchedAt: number;
  endedAt: number;
  steps: Step[];
  /** Task process CPU before it was given the attempt (a fresh process's start-up). */
  processCpuBeforeMs: number | null;
  warm: boolean;
  /** ms between the end of the previous attempt of the same kind on this worker and this launch. */
  gapMs: number | null;
  taskCpuMs: number;
  taskMs: number;
  /** PEAK_RSS_BYTES in MiB, and the first step at whose end the trace saw that peak. */
  peakMiB: number;
  peakStep: string | null;
}

function shortId(attempt: string): string {
  return attempt.replace(/^attempt_\d+_\d+_/, '');
}

/** One attempt's steps from its trace events (in time order). */
function timeline(events: PhaseTraceEvent[], summary: AttemptSummary, t0: number): AttemptTimeline {
  const steps = summary.kind === 'map' ? MAP_STEPS : REDUCE_STEPS;
  const at = (name: string) => events.find((e) => e.event === name);
  const launch = at('jt-launch');
  const run = at('w-run');
  const out: Step[] = [];
  let prev = launch;
  for (const [step, end] of steps) {
    const e = at(end);
    if (!e || !prev) continue;
    const bothTask = TASK_EVENT.test(prev.event) && TASK_EVENT.test(e.event);
    out.push({
      step,
      wallMs: e.t - prev.t,
      cpuMs: bothTask ? e.cpuMs - prev.cpuMs : null,
      peakMiB: TASK_EVENT.test(e.event) ? e.peakMiB : null,
    });
    prev = e;
  }
  const start = at('t-run');
  return {
    attempt: shortId(summary.attemptId),
    kind: summary.kind,
    worker: summary.workerId,
    launchedAt: launch ? launch.t - t0 : NaN,
    endedAt: (at('jt-finished')?.t ?? NaN) - t0,
    steps: out,
    processCpuBeforeMs: start ? start.cpuMs : null,
    warm: run?.warm === true,
    gapMs: null,
    taskCpuMs: summary.counters.TASK_CPU_MS ?? 0,
    taskMs: summary.counters.TASK_MS ?? 0,
    peakMiB: Math.round((summary.counters.PEAK_RSS_BYTES ?? 0) / 2 ** 20),
    peakStep: peakStep(out),
  };
}

/** The step during which the attempt's traced peak RSS was reached (ties: the first). */
function peakStep(steps: readonly Step[]): string | null {
  let best: Step | null = null;
  for (const s of steps) if (s.peakMiB !== null && (best === null || s.peakMiB > best.peakMiB!)) best = s;
  return best?.step ?? null;
}

/**
 * Trace events by attempt: the task process's own (buffer events carry no attempt id) go to the attempt its process
 * runs.
 */
function eventsByAttempt(events: PhaseTraceEvent[]): Map<string, PhaseTraceEvent[]> {
  const byAttempt = new Map<string, PhaseTraceEvent[]>();
  const running = new Map<number, string>();
  for (const e of events) {
    if (e.event === 't-run' && e.attempt) running.set(e.pid, e.attempt);
    const attempt = e.attempt ?? (TASK_EVENT.test(e.event) ? running.get(e.pid) : undefined);
    if (!attempt) continue;
    if (!byAttempt.has(attempt)) byAttempt.set(attempt, []);
    byAttempt.get(attempt)!.push(e);
  }
  return byAttempt;
}

const r0 = (x: number | null) => (x === null || !Number.isFinite(x) ? '' : String(Math.round(x)));
const s2 = (ms: number) => (ms / 1000).toFixed(2);

async function main(): Promise<void> {
  const log = progressLog();
  const env = machineRecord();
  const work = await mkdtemp(join(os.tmpdir(), 'minimr-bench-tera-phases-'));
  const traceFile = join(work, 'trace.jsonl');
  // The JobTracker (this process) and the workers (its children) read it at each step.
  process.env.MINIMR_PHASE_TRACE = traceFile;
  const conf = parseConfPairs(args.conf);
  const rows = Math.floor((args.sizeMb * MB) / RECORD);
  const jobs: {
    jobId: string;
    seconds: number;
    serverSeconds: number;
    attempts: AttemptTimeline[];
    mapCpuMs: number;
    reduceCpuMs: number;
  }[] = [];
  log(`tera-phases: --size-mb ${args.sizeMb}, ${env.cpus} CPUs, load ${env.loadavgStart.join(' ')}, work dir ${work}`);
  const cluster = await startBenchCluster(join(work, 'cluster'));
  try {
    const params: Record<string, string> = {};
    if (args.app === 'terasort') {
      await writeTeraInputs(join(work, 'tera.dat'), join(work, 'tera-lines.txt'), rows);
      await cluster.client.fs.put(join(work, 'tera.dat'), '/tera/input.dat', { overwrite: true });
      log(`put ${rows} TeraGen records`);
    } else {
      if (args.app === 'grep' && args.corpus !== 'standard') throw new Error('--app grep needs --corpus standard');
      const corpus = await writeCorpus(join(work, 'corpus.txt'), args.sizeMb * MB, CORPUS_OPTIONS[args.corpus]);
      await cluster.client.fs.put(join(work, 'corpus.txt'), '/tera/input.dat', { overwrite: true });
      if (args.app === 'grep') params.pattern = args.pattern ?? corpus.grep!.literal.pattern;
      log(`put ${corpus.bytes} bytes of corpus${params.pattern ? `; pattern ${params.pattern}` : ''}`);
    }
    const app = fileURLToPath(new URL(`../apps/${args.app}.js`, import.meta.url));
    for (let rep = 0; rep < args.reps; rep++) {
      await rm(traceFile, { force: true });
      const t0 = performance.now();
      const status = await cluster.client.run(app, {
        input: ['/tera/input.dat'],
        output: '/tera/out',
        reducers: args.app === 'grep' ? 1 : 2,
        overwrite: true,
        conf,
        params,
      });
      const seconds = (performance.now() - t0) / 1000;
      if (status.state !== 'succeeded') throw new Error(`${args.app} ${status.jobId} ${status.state}`);
      const summaries = await cluster.client.attempts(status.jobId);
      const events = (await readFile(traceFile, 'utf8'))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as PhaseTraceEvent);
      // The raw events of the last job, for what the tables leave out.
      mkdirSync(RESULTS_DIR, { recursive: true });
      writeFileSync(
        join(RESULTS_DIR, 'tera-phases-trace.jsonl'),
        events.map((e) => JSON.stringify(e)).join('\n') + '\n',
      );
      const byAttempt = eventsByAttempt(events);
      const first = Math.min(...events.filter((e) => e.event === 'jt-launch').map((e) => e.t));
      const attempts = summaries
        .filter((s) => s.state === 'succeeded')
        .map((s) => timeline(byAttempt.get(s.attemptId) ?? [], s, first))
        .sort((a, b) => a.launchedAt - b.launchedAt);
      const lastEnd = new Map<string, number>();
      for (const a of attempts) {
        const key = `${a.worker}/${a.kind}`;
        const end = lastEnd.get(key);
        if (end !== undefined) a.gapMs = a.launchedAt - end;
        lastEnd.set(key, a.endedAt);
      }
      const cpu = (kind: string) => attempts.filter((a) => a.kind === kind).reduce((s, a) => s + a.taskCpuMs, 0);
      const job = {
        jobId: status.jobId,
        seconds,
        serverSeconds: ((status.finishTime ?? 0) - status.submitTime) / 1000,
        attempts,
        mapCpuMs: cpu('map'),
        reduceCpuMs: cpu('reduce'),
      };
      jobs.push(job);
      log(
        `${args.app} ${status.jobId}: ${seconds.toFixed(2)} s; task CPU: ` +
          `maps ${s2(job.mapCpuMs)} s, reduces ${s2(job.reduceCpuMs)} s`,
      );
    }
  } finally {
    await cluster.stop();
    await rm(work, { recursive: true, force: true });
  }
  finishMachineRecord(env);
  writeResults(env, jobs, conf);
}

function writeResults(
  env: ReturnType<typeof machineRecord>,
  jobs: {
    jobId: string;
    seconds: number;
    serverSeconds: number;
    attempts: AttemptTimeline[];
    mapCpuMs: number;
    reduceCpuMs: number;
  }[],
  conf: JobConf,
): void {
  const out = RESULTS_DIR;
  mkdirSync(out, { recursive: true });
  writeFileSync(
    join(out, 'tera-phases.json'),
    JSON.stringify({ env, cluster: BENCH_CLUSTER, sizeMb: args.sizeMb, conf, jobs }, null, 2),
  );
  const md: string[] = [`# ${args.app}, attempt by attempt`, '', machineLine(env), ''];
  md.push(
    `Cluster: ${BENCH_CLUSTER.workers} ` +
      `workers, ${BENCH_CLUSTER.mapSlots} map ` +
      `+ ${BENCH_CLUSTER.reduceSlots} reduce slot ` +
      `each, ${BENCH_CLUSTER.blockSizeMb} MB blocks; ` +
      `--size-mb ${args.sizeMb}; conf ${JSON.stringify(conf)}.`,
  );
  md.push(
    'Each cell: wall ms / CPU ms of the task process in that step ' +
      '(no CPU: the step ends outside the process). gap: ms from the ' +
      "previous attempt's end on that worker to this launch. before: " +
      'CPU ms the process used before it was given the attempt (a ' +
      "fresh process's start-up). peak: the attempt's PEAK_RSS_BYTES, and the step at whose end the " +
      'trace first saw its highest VmHWM.',
    '',
  );
  for (const job of jobs) {
    const cores = env.cpus;
    const total = job.mapCpuMs + job.reduceCpuMs;
    md.push(`## ${job.jobId}: ${job.seconds.toFixed(2)} s (JobTracker ${job.serverSeconds.toFixed(2)} s)`, '');
    md.push(
      `Task CPU: maps ${s2(job.mapCpuMs)} s, ` +
        `reduces ${s2(job.reduceCpuMs)} s, together ${s2(total)} s ` +
        `= ${((total / 1000 / job.serverSeconds / cores) * 100).toFixed(0)}% ` +
        `of ${cores} cores over the job.`,
      '',
    );
    for (const kind of ['map', 'reduce'] as const) {
      const list = job.attempts.filter((a) => a.kind === kind);
      const steps = (kind === 'map' ? MAP_STEPS : REDUCE_STEPS).map(([s]) => s);
      md.push(
        `| ${kind} | worker | launched s | gap ms | before ms | ${steps.join(' | ')} | task ms / CPU ms | peak MiB (step) |`,
      );
      md.push(`|---|---|---:|---:|---:|${steps.map(() => '---:').join('|')}|---:|---:|`);
      for (const a of list) {
        const cells = steps.map((s) => {
          const st = a.steps.find((x) => x.step === s);
          return st ? `${r0(st.wallMs)}${st.cpuMs === null ? '' : ` / ${r0(st.cpuMs)}`}` : '';
        });
        md.push(
          `| ${a.attempt} | ${a.worker} | ${s2(a.launchedAt)} ` +
            `| ${r0(a.gapMs)} ` +
            `| ${r0(a.processCpuBeforeMs)}${a.warm ? ' (warm)' : ''} ` +
            `| ${cells.join(' | ')} | ${a.taskMs} / ${a.taskCpuMs} | ${a.peakMiB} (${a.peakStep ?? '?'}) |`,
        );
      }
      md.push('');
    }
  }
  writeFileSync(join(out, 'tera-phases.md'), md.join('\n') + '\n');
  process.stdout.write(md.join('\n') + `\n\nwrote ${join(out, 'tera-phases.json')} and tera-phases.md\n`);
}

await main();
