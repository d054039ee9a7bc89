/**
 * Runs one workload under several policies (fresh policy object per run) and computes the
 * comparison figures, with each job's runtime alone simulated once and shared.
 */
import {
  computeMetrics,
  jobDurations,
  perJobAgreement,
  writeReport,
  type MetricsOptions,
  type PolicyMetrics,
  type RunRecord,
} from '../metrics/index.js';
import { MinimrError } from '../errors.js';
import { FifoPolicy, checkPolicies, createPolicy, type Policy, type PolicyOptions } from '../scheduler/index.js';
import {
  Simulator,
  pickSettings,
  type DecisionRecord,
  type FailureSettings,
  type SimSettings,
  type SimulationOptions,
  type SimulationStats,
} from '../sim/index.js';
import type { ClusterShape, Workload } from '../workloads/index.js';

export interface PolicyFactory {
  readonly name: string;
  readonly create: () => Policy;
}

export interface CompareOptions extends Partial<SimSettings> {
  readonly workload: Workload;
  readonly cluster: ClusterShape;
  /** Registered names (created with createPolicy) or factories. */
  readonly policies: ReadonlyArray<string | PolicyFactory>;
  /** Options per registered policy name. */
  readonly policyOptions?: Readonly<Record<string, PolicyOptions>>;
  /** The policy the others' per-job agreement is measured against; default: the first listed. */
  readonly reference?: string;
  readonly failures?: FailureSettings;
  readonly metrics?: MetricsOptions;
  /** Keep each run's full record and decision log in the result (default true). */
  readonly keepRuns?: boolean;
  readonly onProgress?: (message: string) => void;
}

export interface PolicyResult {
  readonly policy: string;
  readonly metrics: PolicyMetrics;
  readonly stats: SimulationStats;
  readonly wallMs: number;
  /** Share of the reference run's finished jobs this run finished within 10% of their duration there. */
  readonly agreement: number;
  readonly run?: RunRecord;
  readonly decisions?: readonly DecisionRecord[];
  /** Set when the run ended in a deadlock the policy reported (kept even without the run). */
  readonly deadlock?: RunRecord['deadlock'];
}

export interface ComparisonResult {
  readonly workload: string;
  readonly cluster: string;
  readonly seed: number;
  readonly workloadMeta: Readonly<Record<string, string | number | boolean>>;
  /** The policy whose run the per-job agreement of each is measured against. */
  readonly reference: string;
  readonly runtimeAloneMs: Readonly<Record<string, number>>;
  readonly policies: readonly PolicyResult[];
}

/**
 * Each job's response time when it runs alone on the empty cluster, simulated with the same model
 * (same seed, so the same per-attempt noise and replica placement) under FIFO, without failure
 * injection. Results are memoized in `cache` by job id.
 */
export function runtimesAlone(
  workload: Workload,
  cluster: ClusterShape,
  settings: Partial<SimSettings> = {},
  cache: Map<string, number> = new Map(),
  onJob?: (done: number, total: number) => void,
): Map<string, number> {
  workload.jobs.forEach((job, i) => {
    if (cache.has(job.id)) return;
    const alone: Workload = {
      name: `${workload.name}:${job.id}`,
      jobs: [{ ...job, submitMs: 0, after: undefined }],
      ...(workload.pools ? { pools: workload.pools } : {}),
    };
    const result = new Simulator({
      ...settings,
      workload: alone,
      cluster,
      policy: new FifoPolicy(),
      recordDecisions: false,
      policyCalls: 'when-useful',
    }).run();
    const rec = result.run.jobs[0]!;
    if (rec.finishMs !== null) cache.set(job.id, rec.finishMs - rec.submitMs);
    onJob?.(i + 1, workload.jobs.length);
  });
  return cache;
}

export function comparePolicies(options: CompareOptions): ComparisonResult {
  const names = options.policies.map((p) => (typeof p === 'string' ? p : p.name));
  const reference = options.reference ?? names[0] ?? '';
  if (!names.includes(reference))
    throw new MinimrError(
      'EBADCONF',
      `the reference policy ${reference} is not one of the policies compared (${names.join(', ')})`,
    );
  // Every name and its options before the runtime-alone baseline, which may take minutes.
  checkPolicies(
    options.policies.flatMap((p) => (typeof p === 'string' ? [p] : [])),
    (p) => options.policyOptions?.[p] ?? {},
  );
  const settings = pickSettings(options);
  const log = options.onProgress ?? (() => {});
  const keep = options.keepRuns ?? true;
  log(`runtime alone of ${options.workload.jobs.length} jobs`);
  const { policyCalls: _calls, ...aloneSettings } = settings;
  const alone = runtimesAlone(options.workload, options.cluster, aloneSettings, new Map(), (done, total) => {
    if (done % 100 === 0 || done === total) log(`  runtime alone: ${done}/${total}`);
  });
  const results: Array<Omit<PolicyResult, 'agreement'>> = [];
  for (const p of options.policies) {
    const name = typeof p === 'string' ? p : p.name;
    const policy = typeof p === 'string' ? createPolicy(p, options.policyOptions?.[p] ?? {}) : p.create();
    log(`simulating ${options.workload.name} under ${name}`);
    const simOptions: SimulationOptions = {
      ...settings,
      workload: options.workload,
      cluster: options.cluster,
      policy,
      recordDecisions: keep,
      ...(options.failures ? { failures: options.failures } : {}),
      onProgress: (pr) =>
        log(`  ${name}: t=${(pr.simMs / 1000).toFixed(0)} s, ${pr.jobsDone}/${pr.jobsTotal} jobs, ${pr.events} events`),
    };
    const started = performance.now();
    const result = new Simulator(simOptions).run();
    const wallMs = performance.now() - started;
    const metrics = computeMetrics(result.run, alone, options.metrics);
    results.push({
      policy: name,
      metrics,
      stats: result.stats,
      wallMs,
      ...(keep ? { run: result.run, decisions: result.decisions } : {}),
      ...(result.run.deadlock ? { deadlock: result.run.deadlock } : {}),
    });
  }
  const referenceDurations = jobDurations(results.find((r) => r.policy === reference)!.metrics.perJob);
  return {
    workload: options.workload.name,
    cluster: options.cluster.name,
    seed: settings.seed ?? 1,
    workloadMeta: options.workload.meta ?? {},
    reference,
    runtimeAloneMs: Object.fromEntries(alone),
    policies: results.map((r) => ({
      ...r,
      agreement: perJobAgreement(jobDurations(r.metrics.perJob), referenceDurations),
    })),
  };
}

/**
 * results.json (metrics, stats and per-job agreement with the reference per policy, no attempt
 * lists), results.md and the two SVGs with their CSVs (`logScale`: the slowdown CDF's x axis).
 */
export async function writeComparison(
  outDir: string,
  result: ComparisonResult,
  options: { logScale?: boolean } = {},
): Promise<string[]> {
  const json = {
    workload: result.workload,
    cluster: result.cluster,
    seed: result.seed,
    workloadMeta: result.workloadMeta,
    reference: result.reference,
    policies: result.policies.map((p) => ({
      policy: p.policy,
      agreement: p.agreement,
      metrics: p.metrics,
      stats: p.stats,
      wallMs: Math.round(p.wallMs),
    })),
  };
  return writeReport(
    outDir,
    result.policies.map((p) => ({ policy: p.policy, metrics: p.metrics, agreement: p.agreement })),
    json,
    `${result.workload} on ${result.cluster} (seed ${result.seed})`,
    { reference: result.reference },
    options,
  );
}
