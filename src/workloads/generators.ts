/**
 * Deterministic workload generators (docs/specs/metrics-and-workloads.md): seed + scale in, a Workload out.
 *
 * Tyrex HVW/MVW/LVW and how the job-size CV^2 is hit: job sizes (total task work) are drawn from a
 * two-phase hyper-exponential with balanced means, whose CV^2 is exactly the target. A sample of 300
 * from a CV^2 = 20 distribution has a wildly varying sample CV^2 (a handful of draws dominate), so the
 * draws are then adjusted with a power transform x -> x^a, a found by bisection, until the SAMPLE's
 * CV^2 equals the target, and rescaled to the mean that gives the paper's CPU-hours. The transform
 * is monotone, so the order of job sizes (and the heavy tail's shape) is kept. Tasks then come from
 * the sizes: a job's input is its map work / tau blocks of 64 MB (tau, the work of one full map, is
 * calibrated by bisection so that the total number of maps matches the paper's), and its reducers
 * are maps / k (k calibrated the same way), at least one. Per-task work keeps the job size exact,
 * so rounding to tasks does not move the CV^2.
 */
import { MinimrError } from '../errors.js';
import type { PoolView } from '../scheduler/index.js';
import { clusterPreset, uniformCluster } from './clusters.js';
import { EventHeap, streamFor } from '../util/index.js';
import type { ClusterShape, JobSpec, PenaltyModel, TaskSpec, Workload } from './types.js';

const MiB = 1024 * 1024;
export const BLOCK_BYTES = 64 * MiB;
const GiB = 1024 * MiB;

function jobId(i: number): string {
  return `job_${String(i + 1).padStart(4, '0')}`;
}

/** Squared coefficient of variation of a sample: Var / mean^2 (population variance). */
export function squaredCv(values: readonly number[]): number {
  const n = values.length;
  if (n === 0) return Number.NaN;
  let sum = 0;
  for (const v of values) sum += v;
  const mean = sum / n;
  let sq = 0;
  for (const v of values) sq += (v - mean) ** 2;
  return sq / n / (mean * mean);
}

function exponential(rand: () => number, mean: number): number {
  return -Math.log(1 - rand()) * mean;
}

/** Hyper-exponential with balanced means (p1/l1 = p2/l2): mean and CV^2 (>= 1) as given. */
export function hyperExponential(rand: () => number, mean: number, cv2: number): number {
  const p1 = 0.5 * (1 + Math.sqrt(Math.max(0, (cv2 - 1) / (cv2 + 1))));
  const branchMean = rand() < p1 ? mean / (2 * p1) : mean / (2 * (1 - p1));
  return exponential(rand, branchMean);
}

/** x -> x^a with a chosen so the sample's CV^2 is `target`, then scaled to `mean`. */
export function fitSampleCv2(values: readonly number[], target: number, mean: number): number[] {
  const transform = (a: number) => values.map((v) => v ** a);
  let lo = 0.01;
  let hi = 8;
  for (let i = 0; i < 100; i++) {
    const mid = (lo + hi) / 2;
    if (squaredCv(transform(mid)) < target) lo = mid;
    else hi = mid;
  }
  const out = transform((lo + hi) / 2);
  const m = out.reduce((s, v) => s + v, 0) / out.length;
  return out.map((v) => (v / m) * mean);
}

/** Makespan of tasks list-scheduled in order on `slots` identical slots (earliest-free first). */
export function listScheduleMs(durations: readonly number[], slots: number): number {
  if (durations.length === 0) return 0;
  if (slots <= 0) return Number.POSITIVE_INFINITY;
  const heap = new EventHeap<null>();
  for (let i = 0; i < Math.min(slots, durations.length); i++) heap.push(0, null);
  let end = 0;
  for (const d of durations) {
    const free = heap.pop()!.time;
    end = Math.max(end, free + d);
    heap.push(free + d, null);
  }
  return end;
}

/** A job's runtime alone on an empty cluster, ignoring locality: maps, then reduces. */
export function estimatedAloneMs(job: JobSpec, cluster: ClusterShape): number {
  const mapSlots = cluster.workers.reduce((s, w) => s + w.mapSlots, 0);
  const reduceSlots = cluster.workers.reduce((s, w) => s + w.reduceSlots, 0);
  return (
    listScheduleMs(
      job.maps.map((t) => t.workMs),
      mapSlots,
    ) +
    listScheduleMs(
      job.reduces.map((t) => t.workMs),
      reduceSlots,
    )
  );
}

export function sizeClassOf(aloneMs: number): 'tiny' | 'short' | 'medium' | 'large' {
  const min = aloneMs / 60_000;
  return min < 1 ? 'tiny' : min < 10 ? 'short' : min < 100 ? 'medium' : 'large';
}

// ---- apps --------------------------------------------------------------------------------------

interface AppProfile {
  /** Map output / map input. */
  readonly outputRatio: number;
  /** Job output (what the reduces write to the block store) / map output. */
  readonly reduceOutputRatio: number;
  /** Share of a job's work done by its reducers. */
  readonly reduceShare: number;
  /** Mapper penalty when under-sized (YARN-ME: worst 1.5x, WordCount 1.35x). */
  readonly mapPenalty: number;
  /** Whether maps read stored input (Pi generates its own). */
  readonly readsInput: boolean;
}

const APPS: Readonly<Record<string, AppProfile>> = {
  wordcount: { outputRatio: 0.3, reduceOutputRatio: 0.2, reduceShare: 0.05, mapPenalty: 1.35, readsInput: true },
  sort: { outputRatio: 1, reduceOutputRatio: 1, reduceShare: 0.12, mapPenalty: 1.5, readsInput: true },
  grep: { outputRatio: 0.01, reduceOutputRatio: 1, reduceShare: 0.02, mapPenalty: 1.15, readsInput: true },
  pi: { outputRatio: 0, reduceOutputRatio: 0, reduceShare: 0.01, mapPenalty: 1.05, readsInput: false },
  terasort: { outputRatio: 1, reduceOutputRatio: 1, reduceShare: 0.12, mapPenalty: 1.5, readsInput: true },
  grepcount: { outputRatio: 0.01, reduceOutputRatio: 1, reduceShare: 0.04, mapPenalty: 1.15, readsInput: true },
};

const MAP_MEMORY_MB = 1024;
const REDUCE_MEMORY_MB = 2048;
const TASK_OVERHEAD_MB = 100;

function mapTask(app: AppProfile, workMs: number, inputBytes: number): TaskSpec {
  return {
    workMs: Math.max(1, Math.round(workMs)),
    memoryMb: MAP_MEMORY_MB,
    penalty: { kind: 'step', factor: app.mapPenalty, minFraction: 0.1 },
    inputBytes: app.readsInput ? Math.round(inputBytes) : 0,
    outputBytes: Math.round(inputBytes * app.outputRatio),
    ...(app.readsInput ? {} : { replicas: [] }),
  };
}

const REDUCE_PENALTY: PenaltyModel = {
  kind: 'spill',
  rule: 'reduce',
  bufferBytes: (REDUCE_MEMORY_MB - TASK_OVERHEAD_MB) * MiB,
  overheadMb: TASK_OVERHEAD_MB,
  minFraction: 0.1,
};

function reduceTask(workMs: number, outputBytes = 0): TaskSpec {
  return {
    workMs: Math.max(1, Math.round(workMs)),
    memoryMb: REDUCE_MEMORY_MB,
    penalty: REDUCE_PENALTY,
    inputBytes: 0,
    outputBytes: Math.round(outputBytes),
  };
}

/**
 * A MapReduce job whose maps read `inputBytes` in 64 MB blocks, each full block taking
 * `mapBlockMs` (the last, partial block proportionally less), and whose reducers share
 * `reduceWorkMs` evenly. `jitter` spreads per-task work uniformly by +-jitter/2, renormalized.
 */
function mrJob(o: {
  id: string;
  name: string;
  app: string;
  submitMs: number;
  inputBytes: number;
  mapBlockMs: number;
  reduces: number;
  reduceWorkMs: number;
  rand: () => number;
  jitter?: number;
  pool?: string;
  cluster?: string;
  after?: string;
  sizeClass?: string;
  /**
   * Its reduces write the job's output (FAWKES's clusters store it): map output x the app's reduce output ratio, shared
   * evenly.
   */
  writesOutput?: boolean;
}): JobSpec {
  const app = APPS[o.app]!;
  const blocks = Math.max(1, Math.ceil(o.inputBytes / BLOCK_BYTES - 1e-9));
  const jitter = o.jitter ?? 0.3;
  const lengths = Array.from({ length: blocks }, (_, i) =>
    i < blocks - 1 ? BLOCK_BYTES : o.inputBytes - BLOCK_BYTES * (blocks - 1),
  );
  const raw = lengths.map((len) => (len / BLOCK_BYTES) * o.mapBlockMs * (1 + jitter * (o.rand() - 0.5)));
  const rawSum = raw.reduce((s, v) => s + v, 0);
  const target = (o.inputBytes / BLOCK_BYTES) * o.mapBlockMs;
  const maps = raw.map((w, i) => mapTask(app, (w / rawSum) * target, lengths[i]!));
  const jobOutput = o.writesOutput ? o.inputBytes * app.outputRatio * app.reduceOutputRatio : 0;
  const reduces = Array.from({ length: o.reduces }, () =>
    reduceTask(o.reduceWorkMs / o.reduces, jobOutput / o.reduces),
  );
  return {
    id: o.id,
    name: o.name,
    app: o.app,
    submitMs: Math.round(o.submitMs),
    maps,
    reduces,
    ...(o.pool !== undefined ? { pool: o.pool } : {}),
    ...(o.cluster !== undefined ? { cluster: o.cluster } : {}),
    ...(o.after !== undefined ? { after: o.after } : {}),
    ...(o.sizeClass !== undefined ? { sizeClass: o.sizeClass } : {}),
  };
}

function totals(jobs: readonly JobSpec[]): { maps: number; reduces: number; cpuHours: number } {
  let maps = 0;
  let reduces = 0;
  let ms = 0;
  for (const j of jobs) {
    maps += j.maps.length;
    reduces += j.reduces.length;
    for (const t of j.maps) ms += t.workMs;
    for (const t of j.reduces) ms += t.workMs;
  }
  return { maps, reduces, cpuHours: ms / 3_600_000 };
}

function jobWorkMs(job: JobSpec): number {
  let ms = 0;
  for (const t of job.maps) ms += t.workMs;
  for (const t of job.reduces) ms += t.workMs;
  return ms;
}

// ---- Tyrex -------------------------------------------------------------------------------------

export type TyrexVariant = 'hvw' | 'mvw' | 'lvw';

/** The paper's figures for each workload (jobs run back to back on the empty 20-node cluster). */
export const TYREX_TARGETS: Readonly<
  Record<TyrexVariant, { cv2: number; maps: number; reduces: number; cpuHours: number; backToBackHours: number }>
> = {
  hvw: { cv2: 20, maps: 6139, reduces: 788, cpuHours: 63.6, backToBackHours: 3.51 },
  mvw: { cv2: 10, maps: 11866, reduces: 1368, cpuHours: 124.6, backToBackHours: 3.98 },
  lvw: { cv2: 4, maps: 30576, reduces: 3089, cpuHours: 306.9, backToBackHours: 5.31 },
};

export interface TyrexOptions {
  readonly variant: TyrexVariant;
  readonly seed?: number;
  /** Offered load of the busier slot kind: its work / (its slots * arrival span); default 0.7. */
  readonly load?: number;
  /** Jobs = round(300 * scale); totals scale with it. */
  readonly scale?: number;
  /** The cluster the load and the size classes refer to; default tyrex-20. */
  readonly cluster?: ClusterShape;
}

const TYREX_APPS = ['wordcount', 'wordcount', 'sort', 'grep', 'sort', 'wordcount', 'grep', 'pi'] as const;

export function tyrexWorkload(options: TyrexOptions): Workload {
  const variant = options.variant;
  const target = TYREX_TARGETS[variant];
  if (!target) throw new MinimrError('EBADCONF', `unknown Tyrex workload "${String(variant)}" (hvw, mvw, lvw)`);
  const seed = options.seed ?? 1;
  const load = options.load ?? 0.7;
  const scale = options.scale ?? 1;
  if (!(load > 0) || !(scale > 0))
    throw new MinimrError('EBADCONF', `tyrex: load and scale must be positive (got ${load}, ${scale})`);
  const cluster = options.cluster ?? clusterPreset('tyrex-20');
  const n = Math.max(2, Math.round(300 * scale));
  const rand = streamFor(seed, `tyrex:${variant}`);

  const meanMs = (target.cpuHours * 3_600_000) / 300;
  const sizes = fitSampleCv2(
    Array.from({ length: n }, () => hyperExponential(rand, 1, target.cv2)),
    target.cv2,
    meanMs,
  );
  const apps = sizes.map(() => TYREX_APPS[Math.floor(rand() * TYREX_APPS.length)]!);
  const jitterDraws = sizes.map(() => Math.floor(rand() * 2 ** 31));

  const mapsFor = (tau: number) =>
    sizes.reduce(
      (s, size, i) => s + Math.max(1, Math.ceil((size * (1 - APPS[apps[i]!]!.reduceShare)) / tau - 1e-9)),
      0,
    );
  const wantMaps = target.maps * (n / 300);
  let lo = 100;
  let hi = 3_600_000;
  for (let i = 0; i < 60; i++) {
    const mid = Math.sqrt(lo * hi);
    if (mapsFor(mid) > wantMaps) lo = mid;
    else hi = mid;
  }
  const tau = hi;
  const mapCounts = sizes.map((size, i) =>
    Math.max(1, Math.ceil((size * (1 - APPS[apps[i]!]!.reduceShare)) / tau - 1e-9)),
  );
  const reducesFor = (k: number) => mapCounts.reduce((s, m) => s + Math.max(1, Math.round(m / k)), 0);
  const wantReduces = target.reduces * (n / 300);
  let klo = 0.5;
  let khi = 10_000;
  for (let i = 0; i < 60; i++) {
    const mid = Math.sqrt(klo * khi);
    if (reducesFor(mid) > wantReduces) klo = mid;
    else khi = mid;
  }
  const k = Math.abs(reducesFor(klo) - wantReduces) < Math.abs(reducesFor(khi) - wantReduces) ? klo : khi;

  const unplaced: JobSpec[] = sizes.map((size, i) => {
    const appName = apps[i]!;
    const app = APPS[appName]!;
    const mapWork = size * (1 - app.reduceShare);
    const job = mrJob({
      id: jobId(i),
      name: `${variant}-${appName}-${i + 1}`,
      app: appName,
      submitMs: 0,
      inputBytes: (mapWork / tau) * BLOCK_BYTES,
      mapBlockMs: tau,
      reduces: Math.max(1, Math.round(mapCounts[i]! / k)),
      reduceWorkMs: size * app.reduceShare,
      rand: streamFor(jitterDraws[i]!, 'jitter'),
    });
    return { ...job, sizeClass: sizeClassOf(estimatedAloneMs(job, cluster)) };
  });
  // Offered load as queueing theory defines it, on the busier slot kind: arrival rate x mean work /
  // capacity. Maps do ~90% of the work on 3/4 of the slots, so a load over all slots together
  // would put the map slots well above the load asked for. (Runtimes alone back to back over the
  // span, the other reading of the paper's "load", leaves the slots ~8% busy at 0.7: no queueing.)
  const mapSlots = cluster.workers.reduce((s, w) => s + w.mapSlots, 0);
  const reduceSlots = cluster.workers.reduce((s, w) => s + w.reduceSlots, 0);
  const work = (kind: 'maps' | 'reduces') =>
    unplaced.reduce((s, j) => s + j[kind].reduce((a, t) => a + t.workMs, 0), 0);
  const meanGapMs =
    Math.max(work('maps') / Math.max(1, mapSlots), work('reduces') / Math.max(1, reduceSlots)) / n / load;
  let t = 0;
  const jobs: JobSpec[] = unplaced.map((job, i) => {
    if (i > 0) t += exponential(rand, meanGapMs);
    return { ...job, submitMs: Math.round(t) };
  });
  const sum = totals(jobs);
  const classes = { tiny: 0, short: 0, medium: 0, large: 0 } as Record<string, number>;
  let backToBackMs = 0;
  for (const j of jobs) {
    classes[j.sizeClass!]!++;
    backToBackMs += estimatedAloneMs(j, cluster);
  }
  return {
    name: `tyrex-${variant}`,
    jobs,
    meta: {
      generator: 'tyrex',
      variant,
      seed,
      load,
      scale,
      jobs: n,
      targetCv2: target.cv2,
      cv2: squaredCv(jobs.map(jobWorkMs)),
      maps: sum.maps,
      reduces: sum.reduces,
      cpuHours: sum.cpuHours,
      backToBackHours: backToBackMs / 3_600_000,
      targetMaps: Math.round(wantMaps),
      targetReduces: Math.round(wantReduces),
      targetCpuHours: target.cpuHours * (n / 300),
      targetBackToBackHours: target.backToBackHours * (n / 300),
      arrivalSpanS: t / 1000,
      tiny: classes.tiny!,
      short: classes.short!,
      medium: classes.medium!,
      large: classes.large!,
      mapBlockS: tau / 1000,
    },
  };
}

// ---- FAWKES ------------------------------------------------------------------------------------

export type FawkesVariant = 'a' | 'b' | 'c' | 'd' | 'e';

export interface FawkesOptions {
  readonly variant: FawkesVariant;
  readonly seed?: number;
  /** Multiplies the number of jobs per MR-cluster (at least one each). */
  readonly scale?: number;
  /** Multiplies job input sizes (small 1 GB, medium 50 GB, large 100 GB); scale down for real runs. */
  readonly sizeScale?: number;
  /** Minimum share of each MR-cluster, in core nodes; default 10. */
  readonly minNodes?: number;
}

/**
 * The static reference cluster of FAWKES's slowdowns (and its JS weight): one MR-cluster at its
 * minimum share, of the fawkes presets' nodes.
 */
export function fawkesReferenceCluster(minNodes = 10): ClusterShape {
  return uniformCluster({
    name: `fawkes-reference-${minNodes}`,
    workers: minNodes,
    perRack: minNodes,
    mapSlots: 6,
    reduceSlots: 2,
    memoryMb: 24 * 1024,
    diskMBps: 100,
  });
}

type Size = 'small' | 'medium' | 'large';
const FAWKES_BYTES: Readonly<Record<Size, number>> = { small: 1 * GiB, medium: 50 * GiB, large: 100 * GiB };
const FAWKES_REDUCES: Readonly<Record<Size, number>> = { small: 2, medium: 20, large: 40 };
const MAP_BLOCK_MS: Readonly<Record<string, number>> = {
  wordcount: 40_000,
  sort: 20_000,
  grep: 15_000,
  pi: 30_000,
  terasort: 15_000,
  grepcount: 40_000,
};

export function fawkesWorkload(options: FawkesOptions): Workload {
  const variant = options.variant;
  if (!['a', 'b', 'c', 'd', 'e'].includes(variant))
    throw new MinimrError('EBADCONF', `unknown FAWKES workload "wkld-${String(variant)}" (wkld-a .. wkld-e)`);
  const seed = options.seed ?? 1;
  const scale = options.scale ?? 1;
  const sizeScale = options.sizeScale ?? 1;
  const rand = streamFor(seed, `fawkes:${variant}`);
  const count = (n: number) => Math.max(1, Math.round(n * scale));
  const jobs: JobSpec[] = [];
  const add = (cluster: string, app: string, size: Size, submitMs: number, after?: string): string => {
    const id = jobId(jobs.length);
    const mapWork = ((FAWKES_BYTES[size] * sizeScale) / BLOCK_BYTES) * MAP_BLOCK_MS[app]!;
    const share = APPS[app]!.reduceShare;
    jobs.push(
      mrJob({
        id,
        name: `${cluster}-${app}-${size}-${jobs.length + 1}`,
        app,
        submitMs,
        inputBytes: FAWKES_BYTES[size] * sizeScale,
        mapBlockMs: MAP_BLOCK_MS[app]!,
        reduces: FAWKES_REDUCES[size],
        reduceWorkMs: (mapWork * share) / (1 - share),
        rand,
        pool: cluster,
        cluster,
        sizeClass: size,
        writesOutput: true,
        ...(after !== undefined ? { after } : {}),
      }),
    );
    return id;
  };
  const mixed = (): Size => {
    const u = rand();
    return u < 0.9 ? 'small' : u < 0.95 ? 'medium' : 'large';
  };
  const poisson = (n: number, meanGapMs: number, startMs: number, each: (t: number) => void) => {
    let t = startMs;
    for (let i = 0; i < n; i++) {
      if (i > 0) t += exponential(rand, meanGapMs);
      each(t);
    }
  };
  const clusters = ['c-1', 'c-2', 'c-3'];
  switch (variant) {
    case 'a':
      clusters.forEach((c, k) => {
        for (let i = 0; i < count(50); i++) add(c, 'wordcount', 'small', k * 100_000);
      });
      break;
    case 'b':
    case 'c': {
      const app = variant === 'b' ? 'wordcount' : 'sort';
      clusters.forEach((c, k) => {
        const sizes: Size[] = [
          ...Array<Size>(count(90)).fill('small'),
          ...Array<Size>(count(5)).fill('medium'),
          ...Array<Size>(count(5)).fill('large'),
        ];
        for (const size of sizes) add(c, app, size, k * 100_000);
      });
      break;
    }
    case 'd': {
      poisson(count(165), 30_000, 0, (t) => add('c-1', rand() < 0.5 ? 'wordcount' : 'sort', 'small', t));
      // Bursty: bursts of 10-30 jobs at once, bursts ~10 minutes apart.
      let left = count(188);
      let t = 0;
      while (left > 0) {
        const burst = Math.min(left, 10 + Math.floor(rand() * 21));
        for (let i = 0; i < burst; i++) add('c-2', rand() < 0.5 ? 'wordcount' : 'sort', mixed(), t);
        left -= burst;
        t += exponential(rand, 600_000);
      }
      poisson(count(555), 10_000, 0, (t2) => add('c-3', rand() < 0.5 ? 'wordcount' : 'sort', 'small', t2));
      break;
    }
    case 'e': {
      poisson(count(359), 15_000, 0, (t) => add('c-1', rand() < 0.5 ? 'wordcount' : 'sort', mixed(), t));
      // A BTWorld-like pipeline: each job starts when the previous one has finished.
      let previous: string | undefined;
      const stages = ['grep', 'sort', 'wordcount'];
      for (let i = 0; i < count(26); i++)
        previous = add('c-2', stages[i % stages.length]!, i % 5 === 4 ? 'medium' : 'small', 0, previous);
      poisson(count(559), 8_000, 0, (t) => add('c-3', rand() < 0.5 ? 'wordcount' : 'sort', 'small', t));
      break;
    }
  }
  // Submission order is arrival order (stable for equal times), pipelines after their predecessor.
  const order = jobs.map((j, i) => ({ j, i })).sort((x, y) => x.j.submitMs - y.j.submitMs || x.i - y.i);
  const renamed = new Map(order.map(({ j }, i) => [j.id, jobId(i)]));
  const sorted = order.map(({ j }) => ({
    ...j,
    id: renamed.get(j.id)!,
    ...(j.after !== undefined ? { after: renamed.get(j.after)! } : {}),
  }));
  // A pipeline stage must follow its predecessor in the list.
  const pos = new Map(sorted.map((j, i) => [j.id, i]));
  sorted.sort((x, y) => {
    const px = x.after !== undefined ? Math.max(pos.get(x.id)!, pos.get(x.after)! + 0.5) : pos.get(x.id)!;
    const py = y.after !== undefined ? Math.max(pos.get(y.id)!, pos.get(y.after)! + 0.5) : pos.get(y.id)!;
    return px - py;
  });
  const minNodes = options.minNodes ?? 10;
  const reference = fawkesReferenceCluster(minNodes);
  const withReference = sorted.map((j) => ({ ...j, referenceMs: Math.round(estimatedAloneMs(j, reference)) }));
  const sum = totals(withReference);
  // Each cluster's jobs read parts of one data set: as big as its biggest job's input.
  const dataSet = (name: string) =>
    Math.max(
      0,
      ...withReference
        .filter((j) => j.cluster === name)
        .map((j) => j.maps.reduce((b, t) => b + (t.inputBytes ?? 0), 0)),
    );
  return {
    name: `fawkes-wkld-${variant}`,
    jobs: withReference,
    pools: clusters.map((name): PoolView => ({ name, minMapSlots: 0, minReduceSlots: 0, weight: 1, mode: 'fifo' })),
    mrClusters: clusters.map((name) => ({ name, minNodes, inputBytes: dataSet(name) })),
    meta: {
      generator: 'fawkes',
      variant,
      seed,
      scale,
      sizeScale,
      minNodes,
      jobs: sorted.length,
      maps: sum.maps,
      reduces: sum.reduces,
      cpuHours: sum.cpuHours,
    },
  };
}

// ---- YARN-ME -----------------------------------------------------------------------------------

export interface YarnMeOptions {
  readonly kind: 'uniform' | 'exponential';
  readonly seed?: number;
  /** Jobs = round(100 * scale). */
  readonly scale?: number;
  /** Upper ends of the trace's ranges; drawn from the paper's sweep ranges when absent. */
  readonly maxTasks?: number;
  readonly maxMemoryGb?: number;
  readonly maxDurationS?: number;
  /** Penalty of an under-sized task (1.5 or 3 in the paper); default 3. */
  readonly penalty?: number;
  /** Arrivals uniform in [0, arrivalWindowMs]; default 1000 s (the DSS setting: heavily overloaded). */
  readonly arrivalWindowMs?: number;
  /**
   * Instead of a window: stretch arrivals so that the offered memory load, sum of tasks * memory *
   * duration / (clusterMemoryMb * window), is this.
   */
  readonly load?: number;
  readonly clusterMemoryMb?: number;
}

/**
 * The DSS simulator's traces: one phase per job (maps without stored input), tasks of a job alike.
 * uniform: tasks ~ U{1..T}, memory ~ U[1, M] GB, duration ~ U[1, D] s;
 * exponential: tasks = 1 + Exp(mean (T-1)/3) capped at T, duration = 50 s + Exp(mean (D-50)/3)
 * capped at D, memory as in uniform. Memory is rounded up to 100 MB steps; minimum allocation 10%.
 */
export function yarnMeTrace(options: YarnMeOptions): Workload {
  const { kind } = options;
  if (kind !== 'uniform' && kind !== 'exponential')
    throw new MinimrError('EBADCONF', `unknown YARN-ME trace kind "${String(kind)}" (uniform, exponential)`);
  const seed = options.seed ?? 1;
  const scale = options.scale ?? 1;
  const rand = streamFor(seed, `yarn-me:${kind}`);
  const between = (lo: number, hi: number) => lo + rand() * (hi - lo);
  const maxTasks = Math.round(options.maxTasks ?? (kind === 'uniform' ? between(200, 400) : between(20, 220)));
  const maxMemoryGb = options.maxMemoryGb ?? between(2, 10);
  const maxDurationS = options.maxDurationS ?? between(kind === 'uniform' ? 200 : 100, 500);
  const penalty = options.penalty ?? 3;
  const n = Math.max(1, Math.round(100 * scale));
  const unitArrivals = Array.from({ length: n }, () => rand()).sort((a, b) => a - b);
  const drafts = unitArrivals.map((unit, i) => {
    const tasks =
      kind === 'uniform'
        ? 1 + Math.floor(rand() * maxTasks)
        : Math.min(maxTasks, 1 + Math.floor(exponential(rand, (maxTasks - 1) / 3)));
    const memoryMb = Math.ceil((1024 * between(1, maxMemoryGb)) / 100) * 100;
    const seconds =
      kind === 'uniform'
        ? between(1, maxDurationS)
        : Math.min(maxDurationS, 50 + exponential(rand, (maxDurationS - 50) / 3));
    const task: TaskSpec = {
      workMs: Math.round(seconds * 1000),
      memoryMb,
      penalty: { kind: 'step', factor: penalty, minFraction: 0.1 },
      inputBytes: 0,
      outputBytes: 0,
      replicas: [],
    };
    return { unit, tasks, task, i };
  });
  let window = options.arrivalWindowMs ?? 1_000_000;
  if (options.load !== undefined) {
    if (!(options.load > 0) || !(options.clusterMemoryMb !== undefined && options.clusterMemoryMb > 0)) {
      throw new MinimrError('EBADCONF', 'yarn-me: load needs a positive load and clusterMemoryMb');
    }
    const mbMs = drafts.reduce((s, d) => s + d.tasks * d.task.memoryMb * d.task.workMs, 0);
    window = mbMs / (options.load * options.clusterMemoryMb);
  }
  const jobs: JobSpec[] = drafts.map(({ unit, tasks, task, i }) => ({
    id: jobId(i),
    name: `yarn-me-${kind}-${i + 1}`,
    app: 'yarn-me',
    submitMs: Math.round(unit * window),
    maps: Array.from({ length: tasks }, () => task),
    reduces: [],
  }));
  const sum = totals(jobs);
  return {
    name: `yarn-me-${kind}`,
    jobs,
    meta: {
      generator: 'yarn-me',
      kind,
      seed,
      scale,
      jobs: n,
      maxTasks,
      maxMemoryGb,
      maxDurationS,
      penalty,
      arrivalWindowS: window / 1000,
      tasks: sum.maps,
      cpuHours: sum.cpuHours,
    },
  };
}

// ---- improved FAIR -----------------------------------------------------------------------------

export interface ImprovedFairOptions {
  readonly seed?: number;
  /** Multiplies the 10 GB per job. */
  readonly scale?: number;
  /** When WordCount arrives; default 20 s: TeraSort and GrepCount fill the cluster and are still mapping. */
  readonly wordcountAtMs?: number;
  /**
   * Where WordCount's input lives: it is the user's private data set, arriving with the job and
   * uploaded to these workers (default: rack03 of improved-fair-12, w0009..w0012), dealt
   * round-robin; [] spreads it over the cluster like the other inputs.
   */
  readonly privateWorkers?: readonly string[];
  /** Replicas of the private data set (default 2). */
  readonly privateReplication?: number;
  /**
   * Of those, the replicas the upload has written when WordCount arrives (default 1); the rest
   * are owed, and a policy may place them for `placementWindowMs` (default 15 s: T_min + T_fair
   * of the bench, so both preemptions fall in it), after which they go to the holder's rack-mates.
   */
  readonly uploadedReplicas?: number;
  readonly placementWindowMs?: number;
}

/**
 * TeraSort (I/O-bound: map output = input, short maps) and GrepCount (CPU-bound: output 1%, long
 * maps) fill the 96 map slots of improved-fair-12, then WordCount arrives. With the preset's
 * 50 MB/s disks and 8 maps per node, n (1 + lambda) MID / DIOR is 20.5 s for TeraSort (> its 15 s
 * maps: I/O-bound) and 10.3 s for GrepCount (< 40 s: CPU-bound). Each job has its own pool;
 * WordCount's pool has a minimum share of 32 map slots, its fair share of 96. WordCount reads a
 * private data set kept on one rack's nodes (the "user's private data set" of
 * docs/specs/fair-and-improved-fair.md), so where the
 * kills free slots decides whether its maps read locally or over the network. The data set arrives
 * with the job: one replica of each block is written, the second is owed (`inputPlacement`), and
 * improved FAIR places it on a node its kills free; under FAIR it lands on the rack when the
 * window closes. Either way the upload writes two replicas per block.
 */
export function improvedFairWorkload(options: ImprovedFairOptions = {}): Workload {
  const seed = options.seed ?? 1;
  const scale = options.scale ?? 1;
  const at = options.wordcountAtMs ?? 20_000;
  const rand = streamFor(seed, 'improved-fair');
  const bytes = 10 * GiB * scale;
  const job = (i: number, app: string, submitMs: number, blockMs: number, reduces: number, reduceWorkMs: number) =>
    mrJob({
      id: jobId(i),
      name: app,
      app,
      submitMs,
      inputBytes: bytes,
      mapBlockMs: blockMs,
      reduces,
      reduceWorkMs: reduceWorkMs * scale,
      rand,
      jitter: 0.2,
      pool: app,
    });
  const holders = options.privateWorkers ?? ['w0009', 'w0010', 'w0011', 'w0012'];
  const replication = Math.min(options.privateReplication ?? 2, holders.length);
  const uploaded = Math.min(options.uploadedReplicas ?? 1, replication);
  const wordcount = job(2, 'wordcount', at, 35_000, 6, 6 * 30_000);
  const privateWordcount: JobSpec =
    holders.length === 0
      ? wordcount
      : {
          ...wordcount,
          maps: wordcount.maps.map((m, i) => ({
            ...m,
            replicas: Array.from({ length: uploaded }, (_, k) => holders[(i + k) % holders.length]!),
          })),
          ...(uploaded < replication
            ? { inputPlacement: { replication, windowMs: options.placementWindowMs ?? 15_000 } }
            : {}),
        };
  const jobs = [
    job(0, 'terasort', 0, 15_000, 12, 12 * 60_000),
    job(1, 'grepcount', 0, 40_000, 1, 10_000),
    privateWordcount,
  ];
  const pools: PoolView[] = [
    { name: 'terasort', minMapSlots: 0, minReduceSlots: 0, weight: 1, mode: 'fifo' },
    { name: 'grepcount', minMapSlots: 0, minReduceSlots: 0, weight: 1, mode: 'fifo' },
    { name: 'wordcount', minMapSlots: 32, minReduceSlots: 0, weight: 1, mode: 'fifo' },
  ];
  const sum = totals(jobs);
  return {
    name: 'improved-fair',
    jobs,
    pools,
    meta: { generator: 'improved-fair', seed, scale, maps: sum.maps, reduces: sum.reduces, cpuHours: sum.cpuHours },
  };
}

// ---- by name -----------------------------------------------------------------------------------

export interface NamedWorkloadOptions {
  readonly seed?: number;
  readonly scale?: number;
  readonly load?: number;
  /** The YARN-ME traces' step penalty factor (default 3). */
  readonly penaltyFactor?: number;
}

export const WORKLOAD_NAMES = [
  'hvw',
  'mvw',
  'lvw',
  'wkld-a',
  'wkld-b',
  'wkld-c',
  'wkld-d',
  'wkld-e',
  'yarn-me-uniform',
  'yarn-me-exp',
  'improved-fair',
] as const;

/** The cluster preset each named workload is meant for. */
export function defaultClusterFor(name: string): string {
  if (['hvw', 'mvw', 'lvw'].includes(name)) return 'tyrex-20';
  if (['wkld-a', 'wkld-b', 'wkld-c'].includes(name)) return 'fawkes-60';
  if (['wkld-d', 'wkld-e'].includes(name)) return 'fawkes-48';
  if (name.startsWith('yarn-me')) return 'yarn-me-100';
  if (name === 'improved-fair') return 'improved-fair-12';
  return 'tyrex-20';
}

export function namedWorkload(name: string, o: NamedWorkloadOptions = {}): Workload {
  const common = {
    ...(o.seed !== undefined ? { seed: o.seed } : {}),
    ...(o.scale !== undefined ? { scale: o.scale } : {}),
  };
  switch (name) {
    case 'hvw':
    case 'mvw':
    case 'lvw':
      return tyrexWorkload({ variant: name, ...common, ...(o.load !== undefined ? { load: o.load } : {}) });
    case 'wkld-a':
    case 'wkld-b':
    case 'wkld-c':
    case 'wkld-d':
    case 'wkld-e':
      return fawkesWorkload({ variant: name.slice(5) as FawkesVariant, ...common });
    case 'yarn-me-uniform':
    case 'yarn-me-exp': {
      const penalty = o.penaltyFactor !== undefined ? { penalty: o.penaltyFactor } : {};
      return yarnMeTrace({ kind: name === 'yarn-me-uniform' ? 'uniform' : 'exponential', ...common, ...penalty });
    }
    case 'improved-fair':
      return improvedFairWorkload(common);
    default:
      throw new MinimrError(
        'EBADCONF',
        `unknown workload "${name}"; known: ${WORKLOAD_NAMES.join(', ')}, or a trace/workload JSON file`,
      );
  }
}
