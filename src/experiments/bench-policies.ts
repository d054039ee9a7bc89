/**
 * `minimr bench policies`: one workload under several policies, in the simulator at full scale
 * and, with `--real`, on a real local cluster scaled down, with the same metrics and report
 * writers for both. The real cluster keeps the workload's shape (jobs, apps, arrival order, pools,
 * racks) and scales sizes and times; see runWorkloadOnCluster for how. `realCluster` and
 * `scaleWorkload` are exported for the benchmarks (bench:fair, bench:tyrex), which build the same
 * scaled-down cluster and workload and drive runWorkloadOnCluster themselves.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { MinimrError } from '../errors.js';
import { computeMetrics, metricsTable, writeReport, type PolicyMetrics } from '../metrics/index.js';
import { checkPolicies, type PolicyOptions, type PoolView } from '../scheduler/index.js';
import { loadPolicyPlugins } from '../policy-plugins/index.js';
import {
  defaultClusterFor,
  loadCluster,
  loadWorkload,
  type ClusterShape,
  type SwimOptions,
  type Workload,
} from '../workloads/index.js';
import { comparePolicies, writeComparison, type ComparisonResult } from './compare.js';
import { runWorkloadOnCluster, type RealDecisionRecord } from './workload-runner.js';
import { shortTasksWarning } from './sim-command.js';
import { defaultHeartbeatMs } from '../sim/index.js';

interface RealScaleOptions {
  readonly workers: number;
  readonly racks: number;
  readonly mapSlots: number;
  readonly reduceSlots: number;
  readonly memoryMb: number;
  /** Disk rate each worker reports (improved FAIR's DIOR), MB/s. */
  readonly diskMBps: number;
  readonly bytesPerMap: number;
  /** Real milliseconds per workload millisecond. */
  readonly timeScale: number;
  readonly maxMapsPerJob: number;
}

interface BenchPoliciesOptions {
  /** A workload name (hvw, improved-fair, ...) or a minimr workload / SLS / Rumen trace JSON file. */
  readonly workload: string;
  /** Cluster preset or JSON file for the simulation; default: the workload's own. */
  readonly cluster?: string;
  readonly policies: readonly string[];
  /** Options per policy name, for the simulation. */
  readonly policyOptions?: Readonly<Record<string, PolicyOptions>>;
  /** Options per policy name for the real run (timeouts scaled down, say); default: policyOptions. */
  readonly realPolicyOptions?: Readonly<Record<string, PolicyOptions>>;
  readonly seed?: number;
  readonly load?: number;
  readonly scale?: number;
  /** A swim:FILE workload's options. */
  readonly swim?: SwimOptions;
  readonly sim?: boolean;
  readonly real?: RealScaleOptions;
  readonly out: string;
  readonly dataDir: string;
  readonly progress?: (line: string) => void;
}

interface RealPolicyResult {
  readonly policy: string;
  readonly metrics: PolicyMetrics;
  readonly decisions: readonly RealDecisionRecord[];
  readonly wallMs: number;
}

interface BenchPoliciesResult {
  readonly sim?: ComparisonResult;
  readonly real?: {
    readonly cluster: ClusterShape;
    readonly workload: Workload;
    readonly runtimeAloneMs: Readonly<Record<string, number>>;
    readonly policies: readonly RealPolicyResult[];
  };
  readonly files: readonly string[];
}

/** The real cluster: `workers` alike, dealt into `racks` racks in order (worker-0, worker-1 on rack 1 ...). */
export function realCluster(r: RealScaleOptions): ClusterShape {
  const perRack = Math.ceil(r.workers / r.racks);
  return {
    name: `local-${r.workers}x${r.mapSlots}m${r.reduceSlots}r-${r.racks}racks`,
    workers: Array.from({ length: r.workers }, (_, i) => ({
      id: `worker-${i}`,
      rack: `/rack-${Math.floor(i / perRack) + 1}`,
      mapSlots: r.mapSlots,
      reduceSlots: r.reduceSlots,
      memoryMb: r.memoryMb,
      diskMBps: r.diskMBps,
    })),
  };
}

/**
 * The workload for the real cluster: maps per job scaled by the ratio of map slots (so jobs fill
 * the small cluster as they fill the big one), pools' minimum shares by the same ratio.
 */
export function scaleWorkload(
  workload: Workload,
  sim: ClusterShape,
  real: ClusterShape,
): { workload: Workload; mapScale: number; privateInputs: Map<string, { workers: string[]; replication: number }> } {
  const slots = (c: ClusterShape, k: 'mapSlots' | 'reduceSlots') => c.workers.reduce((s, w) => s + w[k], 0);
  const mapScale = slots(real, 'mapSlots') / Math.max(1, slots(sim, 'mapSlots'));
  const reduceScale = slots(real, 'reduceSlots') / Math.max(1, slots(sim, 'reduceSlots'));
  const pools: PoolView[] | undefined = workload.pools?.map((p) => ({
    ...p,
    minMapSlots: Math.round(p.minMapSlots * mapScale),
    minReduceSlots: Math.round(p.minReduceSlots * reduceScale),
  }));
  // Inputs the workload places on chosen workers go to the real workers of the same racks (racks
  // matched in order of first appearance), with the same number of replicas.
  const racksOf = (c: ClusterShape) => [...new Set(c.workers.map((w) => w.rack))];
  const simRacks = racksOf(sim);
  const realRacks = racksOf(real);
  const rackOfSimWorker = new Map(sim.workers.map((w) => [w.id, w.rack]));
  const privateInputs = new Map<string, { workers: string[]; replication: number }>();
  for (const job of workload.jobs) {
    if (job.maps.length === 0 || !job.maps.every((m) => m.replicas !== undefined && m.replicas.length > 0)) continue;
    const racks = new Set(
      job.maps
        .flatMap((m) => m.replicas!.map((id) => rackOfSimWorker.get(id)))
        .filter((r): r is string => r !== undefined),
    );
    const realRackNames = new Set([...racks].map((r) => realRacks[simRacks.indexOf(r) % realRacks.length]!));
    const workers = real.workers.filter((w) => realRackNames.has(w.rack)).map((w) => w.id);
    if (workers.length > 0)
      privateInputs.set(job.id, { workers, replication: Math.min(job.maps[0]!.replicas!.length, workers.length) });
  }
  return { workload: { ...workload, ...(pools ? { pools } : {}) }, mapScale, privateInputs };
}

export async function benchPolicies(o: BenchPoliciesOptions): Promise<BenchPoliciesResult> {
  const log = o.progress ?? (() => undefined);
  if (o.policies.length === 0) throw new MinimrError('EBADCONF', 'give at least one policy (--policies fifo,fair,...)');
  // Plug-ins loaded and every name and option checked, for the simulator and the real runs, before any run.
  await loadPolicyPlugins(o.policies, (p) => o.policyOptions?.[p] ?? {});
  if (o.real) checkPolicies(o.policies, (p) => o.realPolicyOptions?.[p] ?? o.policyOptions?.[p] ?? {}, 'cluster');
  const workload = await loadWorkload(o.workload, o);
  const simCluster = await loadCluster(o.cluster ?? defaultClusterFor(workload.name));
  const short = shortTasksWarning(workload, defaultHeartbeatMs(simCluster.workers.length));
  if (short) log(short);
  const files: string[] = [];
  let sim: ComparisonResult | undefined;
  if (o.sim ?? true) {
    sim = comparePolicies({
      workload,
      cluster: simCluster,
      policies: o.policies,
      ...(o.policyOptions ? { policyOptions: o.policyOptions } : {}),
      ...(o.seed !== undefined ? { seed: o.seed } : {}),
      keepRuns: false,
      onProgress: (m) => log(`sim: ${m}`),
    });
    files.push(...(await writeComparison(join(o.out, 'sim'), sim)));
  }
  let real: BenchPoliciesResult['real'];
  if (o.real) {
    const cluster = realCluster(o.real);
    const scaled = scaleWorkload(workload, simCluster, cluster);
    const policies: RealPolicyResult[] = [];
    let alone: ReadonlyMap<string, number> | undefined;
    for (const [i, policy] of o.policies.entries()) {
      log(`real: ${workload.name} under ${policy} on ${cluster.name}`);
      const started = Date.now();
      const result = await runWorkloadOnCluster({
        workload: scaled.workload,
        cluster,
        policy,
        policyOptions: o.realPolicyOptions?.[policy] ?? o.policyOptions?.[policy] ?? {},
        dataDir: join(o.dataDir, `real-${i}-${policy}`),
        bytesPerMap: o.real.bytesPerMap,
        mapScale: scaled.mapScale,
        maxMapsPerJob: o.real.maxMapsPerJob,
        timeScale: o.real.timeScale,
        privateInputs: scaled.privateInputs,
        // Runtimes alone are a property of the jobs and the cluster, not of the policy: measured once.
        measureAlone: alone === undefined,
        onProgress: (m) => log(`real ${policy}: ${m}`),
      });
      alone ??= result.aloneMs;
      policies.push({
        policy,
        metrics: computeMetrics(result.run, alone),
        decisions: result.decisions,
        wallMs: Date.now() - started,
      });
    }
    real = { cluster, workload: scaled.workload, runtimeAloneMs: Object.fromEntries(alone ?? new Map()), policies };
    const json = {
      workload: workload.name,
      cluster: cluster.name,
      scale: o.real,
      mapScale: scaled.mapScale,
      runtimeAloneMs: real.runtimeAloneMs,
      policies: policies.map((p) => ({
        policy: p.policy,
        metrics: p.metrics,
        wallMs: p.wallMs,
        decisions: p.decisions.length,
      })),
    };
    files.push(
      ...(await writeReport(
        join(o.out, 'real'),
        policies,
        json,
        `${workload.name} on a real ${cluster.name} (scaled down)`,
      )),
    );
  }
  await mkdir(o.out, { recursive: true });
  const summary = [
    `# ${workload.name}: ${o.policies.join(', ')}`,
    '',
    ...(sim ? [`## Simulator (${simCluster.name})`, '', metricsTable(sim.policies)] : []),
    ...(real ? [`## Real local cluster (${real.cluster.name}, scaled down)`, '', metricsTable(real.policies)] : []),
  ].join('\n');
  const summaryPath = join(o.out, 'summary.md');
  await writeFile(summaryPath, summary);
  files.push(summaryPath);
  return { ...(sim ? { sim } : {}), ...(real ? { real } : {}), files };
}
