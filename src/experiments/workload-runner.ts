/**
 * Runs a simulator workload on a real local cluster, scaled down, and records the run in the
 * metrics module's RunRecord shape, so a real run and a simulated one are compared by the same
 * code. A workload job becomes a real job of the same app (WordCount, TeraSort, GrepCount, Pi)
 * with its own input file: the number of maps follows the workload (times `mapScale`, capped),
 * each map reads one block of `bytesPerMap`, and arrival times are multiplied by `timeScale`.
 * Relative job sizes, arrival order, pools and app character (map output / input) carry over;
 * absolute durations do not, which is why each job's runtime alone is measured on the same
 * cluster (`measureAlone`), never taken from the workload.
 *
 * A workload with MR-clusters (FAWKES) runs each cluster's jobs on it: the inputs of a cluster's
 * jobs are written under `/workload/NAME/`, the cluster is activated with them as its input (they
 * are copied into `/mrc/NAME/input/` on its core nodes) before the first job arrives, and its jobs
 * read there and write `/mrc/NAME/out/`. A policy that balances the clusters should not deactivate
 * an idle one during the run (FAWKES's `deactivateIdle: false`): the runs alone come after it.
 *
 * The real jobs are the example apps, loaded from the built package by path: resolving them here
 * keeps the runtime free of any knowledge of which apps exist.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MinimrError } from '../errors.js';
import { createLogger, type Logger } from '../log.js';
import type {
  AttemptRunRecord,
  JobRunRecord,
  MigrationRunRecord,
  ReplicationRunRecord,
  RunRecord,
  UtilizationSample,
} from '../metrics/index.js';
import type { AttemptSummary, JobConf, JobStatus, SubmitOptions } from '../runtime/index.js';
import { LocalCluster } from '../local/index.js';
import {
  createPolicy,
  type ClusterSnapshot,
  type Consultation,
  type Decision,
  type Policy,
  type PolicyOptions,
  type SchedulingTrigger,
} from '../scheduler/index.js';
import type { ClusterShape, JobSpec, Workload } from '../workloads/index.js';
import { seededUint32 } from '../util/index.js';

/** dist/apps, beside dist/src: where the built example apps are. */
const APPS_DIR = fileURLToPath(new URL('../../apps/', import.meta.url));

interface RealRunOptions {
  readonly workload: Workload;
  /** Workers of the real cluster: slots and memory must be the same on every worker. */
  readonly cluster: ClusterShape;
  readonly policy: string;
  readonly policyOptions?: PolicyOptions;
  /** Where the cluster keeps its data; a fresh directory per run. */
  readonly dataDir: string;
  /** Input bytes per map (also the block size); default 1 MiB. */
  readonly bytesPerMap?: number;
  /** Input bytes per map of a workload job (its input file's block size), by job id; default `bytesPerMap`. */
  readonly bytesPerMapOf?: (jobId: string) => number | undefined;
  /** Real maps per workload map (default 1), at least 1 and at most `maxMapsPerJob` per job. */
  readonly mapScale?: number;
  readonly maxMapsPerJob?: number;
  /** Most reducers per real job (default 4). */
  readonly maxReducesPerJob?: number;
  /** Real milliseconds per workload millisecond, for arrival times (default 1). */
  readonly timeScale?: number;
  /** Disk rate each worker reports, MB/s (default: the cluster shape's `diskMBps`). */
  readonly diskMBps?: number;
  /** Replicas per input block (default min(3, workers)). */
  readonly replication?: number;
  /**
   * Inputs kept on chosen workers (a private data set), by workload job id: those jobs' input files
   * are written with HDFS-style favored nodes and the given replication.
   */
  readonly privateInputs?: ReadonlyMap<string, { readonly workers: readonly string[]; readonly replication: number }>;
  /**
   * Pattern of the real GrepCount jobs (default 'q[a-e]', which makes them cheap and I/O-ish); a
   * backtracking pattern makes them CPU-bound, as the paper's GrepCount.
   */
  readonly grepPattern?: string;
  /** Measure each job's runtime alone on the empty cluster after the run (default true). */
  readonly measureAlone?: boolean;
  /** Utilization sample period, ms (default 250). */
  readonly sampleEveryMs?: number;
  /** Default 500 ms; workers silent for 5 heartbeats are lost, so keep it generous on a busy machine. */
  readonly heartbeatMs?: number;
  /** Elastic grants are whole multiples of this, MB (the JobTracker's default: 100). */
  readonly memoryStepMb?: number;
  /**
   * `--cpu-throttle` of every worker (default 1), on the 'cpu' basis: each worker as if it had a core
   * of its own, F times slower than this machine's, its tasks mostly asleep (see cpu-throttle.ts).
   */
  readonly cpuThrottle?: number;
  /**
   * Cores of CPU time each worker (with its task processes) may use, by a cgroup quota (Linux, root;
   * see src/runtime/cpu-quota.ts): workers that cannot take CPU from each other, whatever they do.
   */
  readonly cpuQuota?: number;
  /** Settings of a workload job's real job (its shuffle buffers, say), by workload job id. */
  readonly confOf?: (jobId: string) => JobConf | undefined;
  /** Minimum share of every MR-cluster of the workload (default: the workload's own). */
  readonly mrClusterMinNodes?: number;
  /** Runs on the started cluster once the inputs are written, before the first job is submitted. */
  readonly beforeWorkload?: (cluster: LocalCluster) => Promise<void>;
  /** Runs once every job of the workload has ended, before the cluster is stopped (and before the runs alone). */
  readonly afterWorkload?: (cluster: LocalCluster, jobs: readonly RealJobRun[]) => Promise<void>;
  readonly onProgress?: (line: string) => void;
  readonly logger?: Logger;
}

/** A workload job as it ran on the real cluster. */
export interface RealJobRun {
  readonly spec: JobSpec;
  readonly app: RealApp;
  /** Its MR-cluster, when the workload has MR-clusters. */
  readonly cluster?: string;
  /** Block-store paths: its input file (absent for Pi) and output directory. */
  readonly input?: string;
  readonly output: string;
  readonly params: SubmitOptions['params'];
  readonly jobId?: string;
  readonly status?: JobStatus;
  readonly attempts: readonly AttemptSummary[];
}

export interface RealDecisionRecord {
  /** Milliseconds since the run started. */
  readonly timeMs: number;
  readonly trigger: SchedulingTrigger['kind'];
  readonly decision: Decision;
}

interface RealRunResult {
  readonly run: RunRecord;
  /** Runtime alone of each workload job id, measured; empty when `measureAlone` is false. */
  readonly aloneMs: ReadonlyMap<string, number>;
  /**
   * The attempts of those alone runs (job ids are the workload's): task times on an otherwise idle
   * cluster, against which the workload run's attempt times show how much contention stretched them.
   */
  readonly aloneAttempts: readonly AttemptRunRecord[];
  readonly decisions: readonly RealDecisionRecord[];
  /** Workload job id -> real job id. */
  readonly jobIds: ReadonlyMap<string, string>;
  /** Every workload job with its final status and attempts, in workload order. */
  readonly jobRuns: readonly RealJobRun[];
}

/** A policy wrapper that records every non-empty decision list with the time and trigger. */
class RecordingPolicy implements Policy {
  readonly name: string;
  readonly log: RealDecisionRecord[] = [];
  constructor(
    private readonly inner: Policy,
    private readonly t0: () => number,
  ) {
    this.name = inner.name;
  }
  get consultWhen(): Consultation {
    return this.inner.consultWhen;
  }
  schedule(snapshot: ClusterSnapshot): readonly Decision[] {
    const decisions = this.inner.schedule(snapshot);
    for (const decision of decisions)
      this.log.push({ timeMs: snapshot.now - this.t0(), trigger: snapshot.trigger.kind, decision });
    return decisions;
  }
}

export type RealApp = 'wordcount' | 'terasort' | 'grep' | 'pi';

export function realAppOf(job: JobSpec): RealApp {
  switch (job.app) {
    case 'wordcount':
      return 'wordcount';
    case 'sort':
    case 'terasort':
      return 'terasort';
    case 'grep':
    case 'grepcount':
      return 'grep';
    case 'pi':
      return 'pi';
    default:
      throw new MinimrError(
        'EBADCONF',
        `job ${job.id}: app "${job.app}" has no real counterpart (wordcount, sort, terasort, grep, grepcount, pi)`,
        { jobId: job.id },
      );
  }
}

/**
 * Deterministic input text, one map's worth per call: made-up words from a small vocabulary
 * (skewed: the min of two uniform picks, so a few words are frequent), lines of up to 80 bytes.
 */
function textChunk(bytes: number, next: () => number, vocabulary: readonly Buffer[]): Buffer {
  const out = Buffer.alloc(bytes, 0x20);
  let at = 0;
  let line = 0;
  for (;;) {
    const w = vocabulary[Math.min(next() % vocabulary.length, next() % vocabulary.length)]!;
    if (at + w.length + 1 > bytes) break;
    w.copy(out, at);
    at += w.length;
    line += w.length + 1;
    out[at++] = line > 80 ? 0x0a : 0x20;
    if (line > 80) line = 0;
  }
  out[bytes - 1] = 0x0a;
  return out;
}

function vocabularyFor(next: () => number): Buffer[] {
  return Array.from({ length: 2000 }, (_, i) => {
    const w = Buffer.alloc(3 + (i % 7));
    for (let k = 0; k < w.length; k++) w[k] = 97 + (next() % 26);
    return w;
  });
}

/** 100-byte TeraSort records, one map's worth per call: 10 random key bytes, then filler and CRLF. */
function teraChunk(bytes: number, next: () => number): Buffer {
  const rows = Math.max(1, Math.floor(bytes / 100));
  const out = Buffer.alloc(rows * 100, 0x41);
  for (let r = 0; r < rows; r++) {
    for (let i = 0; i < 10; i++) out[r * 100 + i] = next() & 0xff;
    out[r * 100 + 98] = 0x0d;
    out[r * 100 + 99] = 0x0a;
  }
  return out;
}

interface RealJobPlan {
  readonly spec: JobSpec;
  readonly app: RealApp;
  readonly maps: number;
  readonly reduces: number;
  readonly input?: string;
  /** Its MR-cluster (its input is copied to `/mrc/NAME/input/` at activation, and read there). */
  readonly cluster?: string;
}

/** Where a job of an MR-cluster reads its input and writes (`kind`: out, alone): the cluster's namespace. */
function mrClusterPath(cluster: string, kind: 'input' | 'out' | 'alone', jobId: string): string {
  return `/mrc/${cluster}/${kind}/${jobId}`;
}

/**
 * Activates the workload's MR-clusters with their jobs' inputs (`withInput`: those whose jobs read files), one after
 * another, each until it is active.
 */
async function activateMrClusters(
  client: LocalCluster['client'],
  specs: NonNullable<Workload['mrClusters']>,
  withInput: ReadonlySet<string>,
  minNodes: number | undefined,
  progress: (line: string) => void,
): Promise<void> {
  for (const spec of specs) {
    const row = await client.mrcActivate(
      spec.name,
      minNodes ?? spec.minNodes,
      withInput.has(spec.name) ? `/workload/${spec.name}` : undefined,
    );
    progress(`MR-cluster ${spec.name}: ${row.queued ?? row.state}`);
    const deadline = Date.now() + 600_000;
    for (;;) {
      const now = (await client.mrcList()).clusters.find((c) => c.name === spec.name);
      if (now?.state === 'active') break;
      if (Date.now() > deadline)
        throw new MinimrError(
          'ETIMEOUT',
          `MR-cluster ${spec.name} is still ${now?.state ?? 'gone'} after ` +
            `10 minutes${now?.queued ? `: ${now.queued}` : ''}`,
        );
      await new Promise((r) => setTimeout(r, 200));
    }
    progress(`MR-cluster ${spec.name} active`);
  }
}

function clampInt(x: number, lo: number, hi: number): number {
  return Math.max(lo, Math.min(hi, Math.round(x)));
}

/** The part of a status and attempt list the run record needs, with times relative to `t0`. */
function jobRecord(
  spec: JobSpec,
  status: JobStatus | undefined,
  attempts: readonly AttemptSummary[],
  t0: number,
): JobRunRecord {
  const rel = (t: number) => t - t0;
  const ok = (a: AttemptSummary) => a.state === 'succeeded' && a.finishTime !== undefined;
  const maps = attempts.filter((a) => a.kind === 'map');
  const reduces = attempts.filter((a) => a.kind === 'reduce');
  const submit = status ? rel(status.submitTime) : spec.submitMs;
  const mapEnd =
    maps.filter(ok).length === (status?.mapsTotal ?? -1) && maps.length > 0
      ? Math.max(...maps.filter(ok).map((a) => rel(a.finishTime!)))
      : null;
  const first = (xs: AttemptSummary[]) => (xs.length ? Math.min(...xs.map((a) => rel(a.startTime))) : null);
  const reduceEnd =
    status?.state === 'succeeded' && reduces.length > 0
      ? Math.max(...reduces.filter(ok).map((a) => rel(a.finishTime!)))
      : null;
  const migrations: MigrationRunRecord[] = (status?.migrations ?? []).map((m) => ({
    timeMs: rel(m.time),
    from: m.from,
    to: m.to,
    partialSizeMs: m.partialSizeMs,
    timerMs: m.timerMs,
  }));
  return {
    id: spec.id,
    name: spec.name,
    app: spec.app,
    pool: spec.pool ?? 'default',
    cluster: spec.cluster ?? 'default',
    submitMs: submit,
    finishMs: status?.state === 'succeeded' && status.finishTime !== undefined ? rel(status.finishTime) : null,
    state:
      status?.state === 'succeeded'
        ? 'succeeded'
        : status?.state === 'failed' || status?.state === 'killed'
          ? 'failed'
          : 'unfinished',
    mapsTotal: status?.mapsTotal ?? spec.maps.length,
    reducesTotal: status?.reducesTotal ?? spec.reduces.length,
    mapPhase:
      maps.length || (status?.mapsTotal ?? 0) > 0
        ? { requestMs: submit, firstStartMs: first(maps), endMs: mapEnd }
        : null,
    reducePhase:
      (status?.reducesTotal ?? 0) > 0 && mapEnd !== null
        ? { requestMs: mapEnd, firstStartMs: first(reduces), endMs: reduceEnd }
        : null,
    partition: status?.partition ?? 0,
    migrations,
  };
}

function attemptRecord(
  jobId: string,
  a: AttemptSummary,
  migrations: readonly MigrationRunRecord[],
  t0: number,
  endMs: number,
): AttemptRunRecord {
  const c = a.counters;
  const local = c.BYTES_READ_LOCAL ?? 0;
  const rack = c.BYTES_READ_RACK ?? 0;
  const offRack = c.BYTES_READ_OFF_RACK ?? 0;
  const start = a.startTime - t0;
  let partition = 0;
  for (const m of migrations) if (m.timeMs <= start) partition = m.to;
  const cause =
    a.state === 'killed'
      ? a.error?.code === 'EKILLED'
        ? `policy-kill: ${a.error.message}`
        : 'worker-lost'
      : a.state === 'failed'
        ? 'task-error'
        : undefined;
  return {
    id: a.attemptId,
    jobId,
    taskId: a.taskId,
    kind: a.kind,
    workerId: a.workerId,
    startMs: start,
    endMs: a.finishTime !== undefined ? a.finishTime - t0 : endMs,
    outcome: a.state === 'running' ? 'killed' : a.state,
    ...(cause ? { cause } : {}),
    locality: a.locality,
    partition,
    inputBytes: a.inputBytes,
    bytesRead: local + rack + offRack,
    remoteNodeBytes: rack + offRack,
    remoteRackBytes: offRack,
    memoryMb: a.memoryMb,
    idealMemoryMb: a.idealMemoryMb,
  };
}

/**
 * Runs `workload` on a fresh local cluster under `policy`, then (unless told not to) each job alone
 * on the same cluster, and returns the run record, the runtimes alone and the policy's decisions.
 */
export async function runWorkloadOnCluster(o: RealRunOptions): Promise<RealRunResult> {
  const log = o.logger ?? createLogger('workload', process.env.MINIMR_LOG_LEVEL ?? 'warn');
  const progress = o.onProgress ?? (() => undefined);
  const workers = o.cluster.workers;
  if (workers.length === 0) throw new MinimrError('EBADCONF', `cluster ${o.cluster.name} has no workers`);
  const w0 = workers[0]!;
  if (
    workers.some((w) => w.mapSlots !== w0.mapSlots || w.reduceSlots !== w0.reduceSlots || w.memoryMb !== w0.memoryMb)
  ) {
    throw new MinimrError(
      'EBADCONF',
      `a real local cluster has the same slots and memory on every worker; ${o.cluster.name} does not`,
    );
  }
  const bytesPerMap = o.bytesPerMap ?? 1 << 20;
  const mapScale = o.mapScale ?? 1;
  const maxMaps = o.maxMapsPerJob ?? 64;
  const maxReduces = o.maxReducesPerJob ?? 4;
  const timeScale = o.timeScale ?? 1;
  const mrClusters = o.workload.mrClusters ?? [];
  const clusterOf = (spec: JobSpec): string | undefined =>
    spec.cluster !== undefined && mrClusters.some((c) => c.name === spec.cluster) ? spec.cluster : undefined;
  const plans: RealJobPlan[] = o.workload.jobs.map((spec) => {
    const app = realAppOf(spec);
    const cluster = clusterOf(spec);
    return {
      spec,
      app,
      maps: clampInt(spec.maps.length * mapScale, 1, maxMaps),
      reduces: app === 'grep' || app === 'pi' ? 1 : clampInt(spec.reduces.length, 1, maxReduces),
      ...(app === 'pi'
        ? {}
        : { input: cluster !== undefined ? `/workload/${cluster}/${spec.id}` : `/workload/${spec.id}` }),
      ...(cluster !== undefined ? { cluster } : {}),
    };
  });
  const after = new Map(o.workload.jobs.filter((j) => j.after !== undefined).map((j) => [j.id, j.after!]));

  await mkdir(o.dataDir, { recursive: true });
  let t0 = 0;
  const recorder = new RecordingPolicy(createPolicy(o.policy, o.policyOptions ?? {}, 'cluster'), () => t0);
  const racks = workers.map((w) => w.rack);
  const cluster = await LocalCluster.start({
    dataDir: join(o.dataDir, 'cluster'),
    workers: workers.length,
    mapSlots: w0.mapSlots,
    reduceSlots: w0.reduceSlots,
    memoryMb: w0.memoryMb,
    rackOf: (i) => racks[i]!,
    diskMBpsOf: (i) => o.diskMBps ?? workers[i]!.diskMBps,
    ...(o.cpuThrottle !== undefined ? { throttleOf: () => o.cpuThrottle!, throttleBasis: 'cpu' as const } : {}),
    ...(o.cpuQuota !== undefined ? { cpuQuotaOf: () => o.cpuQuota } : {}),
    ...(o.memoryStepMb !== undefined ? { memoryStepMb: o.memoryStepMb } : {}),
    blockSize: bytesPerMap,
    replication: o.replication ?? Math.min(3, workers.length),
    heartbeatMs: o.heartbeatMs ?? 500,
    policy: recorder,
    pools: o.workload.pools ?? [],
    logger: log,
  });
  try {
    const client = cluster.client;
    progress(
      `writing inputs of ${plans.length} jobs (${bytesPerMap} bytes ` +
        `per map${o.bytesPerMapOf ? ' unless the job says' : ''})`,
    );
    for (const [i, p] of plans.entries()) {
      if (!p.input) continue;
      const next = seededUint32(1000 + i);
      const vocabulary = vocabularyFor(next);
      const own = o.privateInputs?.get(p.spec.id);
      const bytes = o.bytesPerMapOf?.(p.spec.id) ?? bytesPerMap;
      const writer = await client.fs.createWriter(p.input, {
        overwrite: true,
        ...(bytes !== bytesPerMap ? { blockSize: bytes } : {}),
        ...(own ? { favoredWorkers: own.workers, replication: own.replication } : {}),
      });
      // One block at a time, yielding in between: the JobTracker shares this thread and must keep
      // answering heartbeats while inputs are written.
      for (let m = 0; m < p.maps; m++) {
        await writer.write(p.app === 'terasort' ? teraChunk(bytes, next) : textChunk(bytes, next, vocabulary));
        await new Promise((r) => setImmediate(r));
      }
      await writer.close();
    }
    if (mrClusters.length > 0) {
      const withInput = new Set(plans.flatMap((p) => (p.cluster !== undefined && p.input ? [p.cluster] : [])));
      await activateMrClusters(client, mrClusters, withInput, o.mrClusterMinNodes, progress);
    }
    const outputOf = (p: RealJobPlan, kind: 'out' | 'alone'): string =>
      p.cluster !== undefined ? mrClusterPath(p.cluster, kind, p.spec.id) : `/${kind}/${p.spec.id}`;
    const submitOptions = (p: RealJobPlan, output: string): SubmitOptions => ({
      input: p.input ? [p.cluster !== undefined ? mrClusterPath(p.cluster, 'input', p.spec.id) : p.input] : [],
      output,
      ...(p.cluster !== undefined ? { mrCluster: p.cluster } : {}),
      reducers: p.reduces,
      overwrite: true,
      pool: p.spec.pool,
      weight: p.spec.weight,
      conf: o.confOf?.(p.spec.id),
      // The placement window is a span of the workload's time, scaled like the arrivals.
      ...(p.spec.inputPlacement
        ? {
            inputPlacement: {
              replication: p.spec.inputPlacement.replication,
              windowMs: Math.round(p.spec.inputPlacement.windowMs * timeScale),
            },
          }
        : {}),
      // TeraSort's split-point sample is taken at submission: a small one keeps submissions prompt.
      params:
        p.app === 'grep'
          ? { pattern: o.grepPattern ?? 'q[a-e]' }
          : p.app === 'pi'
            ? { maps: p.maps, samples: 200_000 }
            : p.app === 'terasort'
              ? { sampleSize: 2000, sampleSplits: 4 }
              : {},
    });
    const modulePath = (app: RealApp) => join(APPS_DIR, `${app}.js`);
    await o.beforeWorkload?.(cluster);

    // ---- the workload, jobs submitted at their scaled arrival times -----------------------------
    const jobIds = new Map<string, string>();
    const finished = new Map<string, JobStatus>();
    const samples: UtilizationSample[] = [];
    const jt = cluster.jobTracker;
    t0 = Date.now();
    const sampler = setInterval(() => {
      const s = jt.snapshot({ kind: 'tick' });
      let maps = 0;
      let reduces = 0;
      let mem = 0;
      let elastic = 0;
      const byPartition: number[] = [];
      for (const j of s.jobs) {
        for (const a of j.runningAttempts) {
          if (a.kind === 'map') maps++;
          else reduces++;
          mem += a.memoryMb;
          if (a.elastic) elastic++;
          byPartition[j.partition] = (byPartition[j.partition] ?? 0) + 1;
        }
      }
      samples.push({
        timeMs: Date.now() - t0,
        mapSlotsUsed: maps,
        reduceSlotsUsed: reduces,
        memoryUsedMb: mem,
        mapSlots: s.workers.reduce((a, w) => a + w.mapSlots, 0),
        reduceSlots: s.workers.reduce((a, w) => a + w.reduceSlots, 0),
        memoryMb: s.workers.reduce((a, w) => a + w.memoryMb, 0),
        elasticAttempts: elastic,
        partitionSlotsUsed: Array.from(byPartition, (v) => v ?? 0),
        workers: s.workers.length,
      });
    }, o.sampleEveryMs ?? 250);
    try {
      const done = new Map<string, Promise<void>>();
      // Submissions go in workload order: a job's submission can take a while (TeraSort samples its
      // input first), and a later job must not overtake it and take the cluster in its place.
      let previousSubmission: Promise<unknown> = Promise.resolve();
      const runOne = async (p: RealJobPlan): Promise<void> => {
        const dep = after.get(p.spec.id);
        const wait = Math.max(0, t0 + p.spec.submitMs * timeScale - Date.now());
        await new Promise((r) => setTimeout(r, wait));
        if (dep) await done.get(dep);
        const submission = previousSubmission.then(() =>
          client.submit(modulePath(p.app), submitOptions(p, outputOf(p, 'out'))),
        );
        previousSubmission = submission.catch(() => undefined);
        const jobId = await submission;
        jobIds.set(p.spec.id, jobId);
        progress(
          `${((Date.now() - t0) / 1000).toFixed(1)} s: ` +
            `submitted ${p.spec.id} (${p.app}, ${p.maps} maps, ${p.reduces} ` +
            `reduces) as ${jobId}`,
        );
        const status = await client.waitForCompletion(jobId, { pollMs: 100 });
        finished.set(p.spec.id, status);
        progress(
          `${((Date.now() - t0) / 1000).toFixed(1)} s: ${p.spec.id} ${status.state} (${finished.size}/${plans.length})`,
        );
      };
      for (const p of plans) done.set(p.spec.id, runOne(p));
      await Promise.all(done.values());
    } finally {
      clearInterval(sampler);
    }
    const endMs = Date.now() - t0;
    const decisions = recorder.log.slice();

    const jobs: JobRunRecord[] = [];
    const attempts: AttemptRunRecord[] = [];
    const replications: ReplicationRunRecord[] = [];
    const jobRuns: RealJobRun[] = [];
    for (const p of plans) {
      const jobId = jobIds.get(p.spec.id);
      const status = finished.get(p.spec.id);
      const list = jobId ? await client.attempts(jobId) : [];
      const record = jobRecord(p.spec, status, list, t0);
      jobs.push(record);
      for (const a of list) attempts.push(attemptRecord(p.spec.id, a, record.migrations, t0, endMs));
      const options = submitOptions(p, outputOf(p, 'out'));
      jobRuns.push({
        spec: p.spec,
        app: p.app,
        ...(p.cluster !== undefined ? { cluster: p.cluster } : {}),
        ...(options.input?.[0] !== undefined ? { input: options.input[0] } : {}),
        output: options.output,
        params: options.params,
        ...(jobId ? { jobId } : {}),
        ...(status ? { status } : {}),
        attempts: list,
      });
    }
    await o.afterWorkload?.(cluster, jobRuns);
    for (const r of jt.placementLog) {
      const spec = [...jobIds].find(([, real]) => real === r.jobId)?.[0] ?? r.jobId;
      replications.push({
        timeMs: r.time - t0,
        jobId: spec,
        taskId: r.taskId,
        workerId: r.workerId,
        bytes: r.bytes,
        crossRack: r.crossRack,
        cause: r.cause,
      });
    }
    const run: RunRecord = {
      policy: recorder.name,
      workload: o.workload.name,
      cluster: o.cluster.name,
      seed: Number(o.workload.meta?.seed ?? 0),
      endMs,
      jobs,
      attempts,
      replications,
      utilization: samples,
    };

    // ---- each job alone on the empty cluster ---------------------------------------------------
    const aloneMs = new Map<string, number>();
    const aloneAttempts: AttemptRunRecord[] = [];
    if (o.measureAlone ?? true) {
      for (const p of plans) {
        const status = await client.run(modulePath(p.app), submitOptions(p, outputOf(p, 'alone')), { pollMs: 50 });
        if (status.state === 'succeeded' && status.finishTime !== undefined)
          aloneMs.set(p.spec.id, status.finishTime - status.submitTime);
        for (const a of await client.attempts(status.jobId))
          aloneAttempts.push(attemptRecord(p.spec.id, a, [], status.submitTime, status.finishTime ?? a.startTime));
        progress(`alone: ${p.spec.id} ${(aloneMs.get(p.spec.id) ?? NaN) / 1000} s`);
      }
    }
    return { run, aloneMs, aloneAttempts, decisions, jobIds, jobRuns };
  } finally {
    await cluster.stop();
  }
}
