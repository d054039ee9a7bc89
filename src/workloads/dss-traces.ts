/**
 * DSS's uniform traces, as the YARN-ME paper's simulator generates them
 * (`samples/traces/trace-generator.py JOBS START_MIN START_MAX unif TASKS_MIN TASKS_MAX unif
 * MEM_MIN MEM_MAX unif DUR_MIN DUR_MAX unif SEED` of github.com/epfl-labos/DSS): one task group
 * per job; each job's arrival (s), task count, task duration (s) and task memory (100 MB units)
 * drawn uniformly from its range and truncated to an integer. The draws come from NumPy's seeded
 * MT19937 in the generator's order (all arrivals, then all task counts, durations, memories), and
 * the text is the generator's own (its whitespace, its constant `job.end.ms` of 200000 and host),
 * so a seed gives the very file DSS's script prints: the two simulators can run the same file, and
 * it is read back with parseSlsTrace (`minimr sim --workload FILE`) like any DSS trace.
 */
import { Mt19937 } from '../util/index.js';

/** An inclusive-exclusive range [min, max) that a uniform draw is truncated from, as the script's. */
export type DssRange = readonly [min: number, max: number];

export interface DssUniformTraceOptions {
  readonly jobs: number;
  /** Arrival, seconds (the paper's sweeps: [0, 1000]). */
  readonly arrivalS: DssRange;
  /** Tasks per job ([1, T]). */
  readonly tasks: DssRange;
  /** Task memory in units of 100 MB, as the script's argument ([10, M x 10] for M GB). */
  readonly memory100Mb: DssRange;
  /** Task duration, seconds ([1, D]). */
  readonly durationS: DssRange;
  /** NumPy's seed, an integer in [0, 2^32). */
  readonly seed: number;
}

/** One job of a DSS uniform trace, in the units the trace file uses. */
export interface DssTraceJob {
  readonly id: string;
  readonly startMs: number;
  readonly tasks: number;
  readonly taskMs: number;
  readonly taskMemoryMb: number;
}

/** The jobs a DSS uniform trace holds, drawn as DSS's generator draws them. */
export function dssUniformJobs(options: DssUniformTraceOptions): DssTraceJob[] {
  const rng = new Mt19937(options.seed);
  const draw = ([min, max]: DssRange): number[] =>
    Array.from({ length: options.jobs }, () => Math.trunc(rng.uniform(min, max)));
  const starts = draw(options.arrivalS);
  const tasks = draw(options.tasks);
  const durations = draw(options.durationS);
  const memories = draw(options.memory100Mb);
  return starts.map((start, i) => ({
    id: `job_${i}`,
    startMs: start * 1000,
    tasks: tasks[i]!,
    taskMs: durations[i]! * 1000,
    taskMemoryMb: memories[i]! * 100,
  }));
}

/** The trace file's text, byte for byte what DSS's trace-generator.py prints for the same arguments. */
export function dssUniformTrace(options: DssUniformTraceOptions): string {
  return dssUniformJobs(options)
    .map(
      (job) =>
        `{\t"am.type" : "mapreduce",\n` +
        `\t"job.start.ms" : ${job.startMs},\n` +
        `\t"job.end.ms" : 200000,\n` +
        `\t"job.queue.name" : "sls_queue_1",\n` +
        `\t"job.id" : "${job.id}",\n` +
        `\t"job.user" : "default",\n` +
        `\t"job.tasks" : [\n` +
        `{"c.host" : "/default-rack/node2354434", "c.dur" : ${job.taskMs}, "c.prio" : 20, ` +
        `"c.mem" : ${job.taskMemoryMb}, "c.type" : "reduce", "c.nr" : ${job.tasks}}\n` +
        `]\n}\n`,
    )
    .join('');
}

/**
 * The paper's uniform configuration T tasks per job, M GB per task, D s per task: 100 jobs
 * arriving over 1,000 s (`trace-generator.py 100 0 1000 unif 1 T unif 10 M*10 unif 1 D unif SEED`).
 */
export function dssUniformConfiguration(
  tasksPerJob: number,
  taskMemoryGb: number,
  taskDurationS: number,
  seed: number,
): DssUniformTraceOptions {
  return {
    jobs: 100,
    arrivalS: [0, 1000],
    tasks: [1, tasksPerJob],
    memory100Mb: [10, taskMemoryGb * 10],
    durationS: [1, taskDurationS],
    seed,
  };
}
