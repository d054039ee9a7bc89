/**
 * `minimr sweep`: many simulations, (workload, seed, policy) each, as a researcher's parameter
 * sweep (the YARN-ME paper swept 20,000 generated traces per distribution). A sweep is a list of
 * units with stable keys; each unit is one simulation, independent of the others, so they run on
 * every core (worker threads, sweep-thread.ts) or as the maps of a minimr job (apps/sweep-slice.ts),
 * and each finished unit is appended to the results file as one JSON line. A sweep run again with
 * the same results file skips the units already there: an interrupted sweep resumes where it
 * stopped, and gives the same lines (a unit's figures depend on its key alone; only its wall time
 * differs).
 *
 * A unit's figures are the average job completion time, the makespan and the jobs left unfinished.
 * `summarise` compares each policy with a baseline on the same (workload, seed): the share of
 * traces where it is faster (ratio of average JCT below 1) and at or below 0.7, the YARN-ME paper's
 * figures.
 */
import { performance } from 'node:perf_hooks';
import { MinimrError } from '../errors.js';
import { createPolicy, type PolicyOptions } from '../scheduler/index.js';
import { DSS_NODE_HEARTBEAT_MS, modelsYarn } from './sim-command.js';
import { loadPolicyPlugins } from '../policy-plugins/index.js';
import { simulate } from '../sim/index.js';
import { defaultClusterFor, loadCluster, loadWorkload, meganode } from '../workloads/index.js';

/** What to sweep: every workload x seed x policy (and the meganode bound, when asked). */
export interface SweepSpec {
  /** Workload names or files, as `minimr sim --workload` takes them. */
  readonly workloads: readonly string[];
  readonly seeds: readonly number[];
  readonly policies: readonly string[];
  /** Options per policy name. */
  readonly policyOptions?: Readonly<Record<string, PolicyOptions>>;
  /** A cluster preset or file; default: each workload's own. */
  readonly cluster?: string;
  /** Also run this policy on the cluster pooled into one node (YARN-ME's meganode bound: srjf). */
  readonly meganodePolicy?: string;
  /** A generated YARN-ME trace's step penalty factor (the paper: 1.5 and 3; default 3). */
  readonly penalty?: number;
  /**
   * 'dss': yarn and yarn-me allocate as DSS, the YARN-ME paper's simulator, does (their `compat` option:
   * ApplicationMasters, one container per node heartbeat, ...), with its 1 s node heartbeat, as
   * `minimr sim --compat dss`: the setting to compare with the paper's figures.
   */
  readonly compat?: 'dss';
}

export interface SweepUnit {
  /** Stable across runs: what a resumed sweep matches finished units by. */
  readonly key: string;
  readonly workload: string;
  readonly seed: number;
  readonly policy: string;
  readonly meganode: boolean;
}

export interface SweepResult extends SweepUnit {
  readonly jobs: number;
  readonly unfinished: number;
  readonly avgJctS: number;
  readonly makespanS: number;
  readonly wallS: number;
}

/** The units of a sweep, in order: workload, then seed, then policy (meganode last). */
export function sweepUnits(spec: SweepSpec): SweepUnit[] {
  if (spec.workloads.length === 0) throw new MinimrError('EBADCONF', 'a sweep needs a workload (--workload)');
  if (spec.seeds.length === 0) throw new MinimrError('EBADCONF', 'a sweep needs seeds (--seeds)');
  if (spec.policies.length === 0) throw new MinimrError('EBADCONF', 'a sweep needs a policy (--policy)');
  const units: SweepUnit[] = [];
  for (const workload of spec.workloads) {
    for (const seed of spec.seeds) {
      const runs = [
        ...spec.policies.map((policy) => ({ policy, meganode: false })),
        ...(spec.meganodePolicy ? [{ policy: spec.meganodePolicy, meganode: true }] : []),
      ];
      for (const { policy, meganode } of runs) {
        const key = `${workload}|${seed}|${policy}${meganode ? '|meganode' : ''}`;
        units.push({ key, workload, seed, policy, meganode });
      }
    }
  }
  return units;
}

/** Every policy a sweep runs: its policies, then its meganode policy. */
export function sweepPolicies(spec: SweepSpec): string[] {
  return [...spec.policies, ...(spec.meganodePolicy ? [spec.meganodePolicy] : [])];
}

/**
 * Loads the sweep's policy plug-ins and checks every policy name and option before a sweep starts (a
 * misspelt name fails at once, not after hours). Each worker thread runs it too: plug-ins are
 * registered per thread.
 */
export async function checkSweepSpec(spec: SweepSpec): Promise<void> {
  await loadPolicyPlugins(sweepPolicies(spec), (p) => unitPolicyOptions(spec, p));
  if (spec.penalty !== undefined && !(Number.isFinite(spec.penalty) && spec.penalty >= 1))
    throw new MinimrError('EBADCONF', `--penalty ${spec.penalty}: a step penalty factor is a number >= 1`);
}

/** A policy's options in a sweep: its own, with `compat` for the policies that model YARN when the spec says. */
function unitPolicyOptions(spec: SweepSpec, policy: string): PolicyOptions {
  const own = spec.policyOptions?.[policy] ?? {};
  return spec.compat !== undefined && modelsYarn(policy) ? { compat: spec.compat, ...own } : own;
}

/** Runs one unit: its workload generated (or read) with its seed, simulated under its policy. */
export async function runSweepUnit(spec: SweepSpec, unit: SweepUnit): Promise<SweepResult> {
  const started = performance.now();
  const workload = await loadWorkload(unit.workload, {
    seed: unit.seed,
    ...(spec.penalty !== undefined ? { penaltyFactor: spec.penalty } : {}),
  });
  const shape = await loadCluster(spec.cluster ?? defaultClusterFor(unit.workload), {});
  const { run } = simulate({
    workload,
    cluster: unit.meganode ? meganode(shape) : shape,
    policy: createPolicy(unit.policy, unitPolicyOptions(spec, unit.policy)),
    seed: unit.seed,
    recordDecisions: false,
    ...(spec.compat === 'dss' ? { heartbeatMs: DSS_NODE_HEARTBEAT_MS } : {}),
  });
  const done = run.jobs.filter((j) => j.finishMs !== null);
  const jct = done.reduce((sum, j) => sum + (j.finishMs! - j.submitMs), 0);
  return {
    ...unit,
    jobs: run.jobs.length,
    unfinished: run.jobs.length - done.length,
    avgJctS: done.length > 0 ? jct / done.length / 1000 : Number.NaN,
    makespanS: run.endMs / 1000,
    wallS: (performance.now() - started) / 1000,
  };
}

/** Each finished unit's line of a results file, by key (a torn last line, from an interruption, is dropped). */
export function finishedUnits(text: string): Map<string, SweepResult> {
  const done = new Map<string, SweepResult>();
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      const result = JSON.parse(line) as SweepResult;
      if (typeof result.key === 'string') done.set(result.key, result);
    } catch {
      // a line cut short when the sweep was stopped: its unit runs again
    }
  }
  return done;
}

export interface SweepComparison {
  readonly workload: string;
  readonly policy: string;
  readonly against: string;
  /** Traces where both ran and finished every job. */
  readonly traces: number;
  /** Of those, the share where `policy`'s average JCT is below `against`'s. */
  readonly faster: number;
  /** The share at or below 0.7 of `against`'s (the YARN-ME paper's bar). */
  readonly atMost07: number;
  readonly medianRatio: number;
}

/**
 * Each policy against `baseline`, and against the meganode bound when the sweep ran it, per
 * workload: on the same trace (workload, seed), the ratio of average JCTs.
 */
export function summarise(results: Iterable<SweepResult>, baseline: string): SweepComparison[] {
  const byTrace = new Map<string, Map<string, SweepResult>>();
  for (const r of results) {
    const trace = `${r.workload}|${r.seed}`;
    const runs = byTrace.get(trace) ?? new Map<string, SweepResult>();
    runs.set(r.meganode ? 'meganode' : r.policy, r);
    byTrace.set(trace, runs);
  }
  const pairs = new Map<string, { workload: string; policy: string; against: string; ratios: number[] }>();
  for (const runs of byTrace.values()) {
    for (const [name, run] of runs) {
      if (name === 'meganode') continue;
      for (const against of [baseline, 'meganode']) {
        const other = runs.get(against);
        if (!other || against === name || run.unfinished > 0 || other.unfinished > 0) continue;
        const id = `${run.workload}|${name}|${against}`;
        const pair = pairs.get(id) ?? { workload: run.workload, policy: name, against, ratios: [] };
        pair.ratios.push(run.avgJctS / other.avgJctS);
        pairs.set(id, pair);
      }
    }
  }
  return [...pairs.values()].map(({ workload, policy, against, ratios }) => {
    const sorted = [...ratios].sort((a, b) => a - b);
    return {
      workload,
      policy,
      against,
      traces: ratios.length,
      faster: ratios.filter((r) => r < 1).length / ratios.length,
      atMost07: ratios.filter((r) => r <= 0.7).length / ratios.length,
      medianRatio: sorted[Math.floor((sorted.length - 1) / 2)]!,
    };
  });
}

/** The comparisons as a Markdown table. */
export function sweepTable(rows: readonly SweepComparison[]): string {
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
  return [
    '| workload | policy | against | traces | faster | ratio <= 0.7 | median ratio |',
    '|---|---|---|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.workload} | ${r.policy} | ${r.against} | ${r.traces} | ${pct(r.faster)} | ${pct(r.atMost07)} | ` +
        `${r.medianRatio.toFixed(3)} |`,
    ),
  ].join('\n');
}
