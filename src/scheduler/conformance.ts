/**
 * The policy contract as a suite a program runs: `checkConformance` drives a policy definition through a
 * fixed set of snapshots (an empty cluster, one job, many jobs, a full cluster, pools, a worker lost,
 * reduces, tight memory, elastic tasks, time passing) and returns every contract rule it breaks, with the
 * scenario and the decision that broke it. The same suite runs in the tests against every built-in policy
 * and in `minimr policy check FILE` against a plug-in, so a plug-in is held to exactly what the built-ins
 * are. It is part of the public API (`minimr/scheduler`) and, like a policy, does no I/O: it only calls the
 * policy, with the clocks replaced by recording functions while it does (restored afterwards).
 *
 * The decision checks are the books' own (`validateDecisions`): a list this suite accepts is one the
 * JobTracker and the simulator carry out. A few of their problems get rules of their own (a launch on a
 * full or unknown worker) because a plug-in author looks for them by name.
 */
import { isDeepStrictEqual } from 'node:util';
import type { PolicyDefinition, PolicyOptions } from './options.js';
import type {
  AttemptView,
  ClusterSnapshot,
  Consultation,
  Decision,
  JobView,
  PenaltyModel,
  Policy,
  PoolView,
  SchedulingTrigger,
  TaskView,
  WorkerView,
} from './types.js';
import { validateDecisions } from './validate.js';

/** The rules of the contract, by stable name; `CONFORMANCE_RULES` says what each asks. */
export type ConformanceRule =
  | 'creates-with-defaults'
  | 'has-schedule'
  | 'has-name'
  | 'consult-when'
  | 'does-not-throw'
  | 'returns-array'
  | 'well-formed-decisions'
  | 'valid-decisions'
  | 'launch-on-full-worker'
  | 'launch-on-unknown-worker'
  | 'reads-clock'
  | 'mutates-snapshot'
  | 'deterministic'
  | 'uses-idle-cluster';

export const CONFORMANCE_RULES: Readonly<Record<ConformanceRule, string>> = {
  'creates-with-defaults': 'create(options) returns a policy object for the options given (none: its defaults)',
  'has-schedule': 'the policy has a schedule(snapshot) method (its decide function)',
  'has-name': 'the policy has a non-empty string name',
  'consult-when': 'consultWhen is every-event, after-change, after-change-if-a-task-fits or at-heartbeats',
  'does-not-throw': 'schedule never throws',
  'returns-array': 'schedule returns an array of decisions',
  'well-formed-decisions': 'every decision is an object of a known kind with the fields of its kind, of their types',
  'valid-decisions': 'the decisions pass the books’ checks (validateDecisions) against the snapshot they answer',
  'launch-on-full-worker': 'no launch on a worker without a free slot of the task’s kind',
  'launch-on-unknown-worker': 'no launch or replica on a worker that is not in the snapshot (a lost worker)',
  'reads-clock':
    'schedule reads no clock (Date.now, new Date(), performance.now, process.hrtime): time is snapshot.now',
  'mutates-snapshot': 'schedule does not modify the snapshot it is given',
  deterministic: 'two fresh policies given equal snapshots return deep-equal decisions',
  'uses-idle-cluster': 'a job whose tasks fit an idle cluster gets a launch (within the scenario’s calls)',
};

/** One broken rule: where, and the decision that broke it when one did. */
export interface ConformanceViolation {
  readonly rule: ConformanceRule;
  readonly scenario?: string;
  /** What went wrong, in a sentence. */
  readonly detail: string;
  readonly decision?: unknown;
}

export interface ConformanceReport {
  readonly policy: string;
  /** Scenarios driven and schedule calls made. */
  readonly scenarios: number;
  readonly calls: number;
  /** Every violation found, in the order found; empty when the policy keeps the contract. */
  readonly violations: readonly ConformanceViolation[];
}

/** A named sequence of snapshots given to one fresh policy in order. */
export interface ConformanceScenario {
  readonly name: string;
  readonly snapshots: readonly ClusterSnapshot[];
  /** The policy must launch something over the sequence (the cluster is idle and a task fits). */
  readonly expectsLaunch?: boolean;
}

// ---------------------------------------------------------------------------------------------
// Snapshot builders

function worker(id: string, rack: string, free: Partial<WorkerView> = {}): WorkerView {
  return {
    id,
    host: id,
    rack,
    mapSlots: 2,
    reduceSlots: 1,
    memoryMb: 4096,
    freeMapSlots: 2,
    freeReduceSlots: 1,
    freeMemoryMb: 4096,
    diskMBps: 100,
    cluster: 'default',
    ...free,
  };
}

function fullWorker(id: string, rack: string): WorkerView {
  return worker(id, rack, { freeMapSlots: 0, freeReduceSlots: 0, freeMemoryMb: 1024 });
}

const RACK_OF: Readonly<Record<string, string>> = { w1: '/r1', w2: '/r1', w3: '/r2', w4: '/r2' };

interface TaskShape {
  readonly kind?: 'map' | 'reduce';
  readonly memoryMb?: number;
  readonly on?: readonly string[];
  readonly durationMs?: number;
  readonly penalty?: PenaltyModel;
  readonly failedOn?: readonly string[];
}

function task(jobId: string, index: number, shape: TaskShape = {}): TaskView {
  const kind = shape.kind ?? 'map';
  const on = shape.on ?? [];
  return {
    id: `${jobId}-${kind === 'map' ? 'm' : 'r'}${index}`,
    jobId,
    kind,
    index,
    preferredWorkers: on,
    preferredRacks: [...new Set(on.map((w) => RACK_OF[w] ?? '/r9'))],
    memoryMb: shape.memoryMb ?? 1024,
    inputBytes: kind === 'map' ? 64 * 1024 * 1024 : 0,
    ...(shape.durationMs !== undefined ? { idealDurationMs: shape.durationMs } : {}),
    ...(shape.penalty ? { penalty: shape.penalty } : {}),
    failedOnWorkers: shape.failedOn ?? [],
  };
}

function attempt(t: TaskView, workerId: string, startTime: number): AttemptView {
  return {
    id: `${t.id}-a1`,
    taskId: t.id,
    jobId: t.jobId,
    kind: t.kind,
    workerId,
    startTime,
    progress: 0.4,
    memoryMb: t.memoryMb,
    idealMemoryMb: t.memoryMb,
    elastic: false,
    ...(t.idealDurationMs !== undefined ? { idealDurationMs: t.idealDurationMs } : {}),
    locality: t.preferredWorkers.includes(workerId) ? 'node' : 'any',
    inputWorkers: t.preferredWorkers,
    inputBytes: t.inputBytes,
  };
}

interface JobShape {
  readonly pool?: string;
  readonly submitTime?: number;
  readonly pending?: readonly TaskView[];
  readonly running?: readonly AttemptView[];
  readonly maps?: number;
  readonly mapsCompleted?: number;
  readonly reduces?: number;
  readonly completedMapMs?: number;
}

function job(id: string, shape: JobShape = {}): JobView {
  const pending = shape.pending ?? [];
  return {
    id,
    name: `job ${id}`,
    pool: shape.pool ?? 'default',
    weight: 1,
    partition: 0,
    cluster: 'default',
    submitTime: shape.submitTime ?? 0,
    mapsTotal: shape.maps ?? pending.filter((t) => t.kind === 'map').length,
    mapsCompleted: shape.mapsCompleted ?? 0,
    reducesTotal: shape.reduces ?? 1,
    reducesCompleted: 0,
    pendingTasks: pending,
    runningAttempts: shape.running ?? [],
    stats: {
      completedMapMs: shape.completedMapMs ?? 0,
      completedReduceMs: 0,
      mapInputBytes: (shape.mapsCompleted ?? 0) * 64 * 1024 * 1024,
      mapOutputBytes: (shape.mapsCompleted ?? 0) * 16 * 1024 * 1024,
    },
  };
}

function maps(jobId: string, count: number, shape: (i: number) => TaskShape = () => ({})): TaskView[] {
  const ids = ['w1', 'w2', 'w3', 'w4'];
  return Array.from({ length: count }, (_, i) => task(jobId, i, { on: [ids[i % 4]!, ids[(i + 1) % 4]!], ...shape(i) }));
}

function snapshot(
  now: number,
  trigger: SchedulingTrigger,
  workers: readonly WorkerView[],
  jobs: readonly JobView[],
  pools: readonly PoolView[] = [],
): ClusterSnapshot {
  return { now, trigger, workers, jobs, pools };
}

const FOUR_IDLE = (): WorkerView[] => ['w1', 'w2', 'w3', 'w4'].map((id) => worker(id, RACK_OF[id]!));

function manyJobs(): JobView[] {
  const sizes = [12, 2, 6, 1, 9, 3];
  return sizes.map((n, j) => {
    const id = `job-${j + 1}`;
    const pending = maps(id, n, (i) => ({ durationMs: 1000 * (1 + ((i + j) % 4)) }));
    return job(id, { submitTime: j * 100, pending, maps: n + 1, mapsCompleted: 1, completedMapMs: 2000 });
  });
}

/** The scenarios `checkConformance` drives a policy through, fresh for each call (snapshots are never shared). */
export function conformanceScenarios(): ConformanceScenario[] {
  const heartbeat = (w: string): SchedulingTrigger => ({ kind: 'heartbeat', workerId: w });
  const submitted = (j: string): SchedulingTrigger => ({ kind: 'job-submitted', jobId: j });
  const oneJob = () => job('job-1', { pending: maps('job-1', 8) });
  // A cluster with every slot taken: what runs is the first jobs' attempts.
  const full = ['w1', 'w2', 'w3', 'w4'].map((id) => fullWorker(id, RACK_OF[id]!));
  const runningTasks = maps('job-0', 8);
  const running = runningTasks.map((t, i) => attempt(t, `w${(i % 4) + 1}`, 0));
  const lostTasks = maps('job-1', 6, () => ({ on: ['w4'], failedOn: ['w4'] }));
  const elastic: PenaltyModel = { kind: 'power', exponent: 1, minFraction: 0.25 };
  return [
    { name: 'empty cluster, no jobs', snapshots: [snapshot(0, { kind: 'tick' }, [], [])] },
    {
      name: 'no workers, one job',
      snapshots: [snapshot(0, submitted('job-1'), [], [oneJob()])],
    },
    { name: 'idle cluster, no jobs', snapshots: [snapshot(0, heartbeat('w1'), FOUR_IDLE(), [])] },
    {
      name: 'one job on an idle cluster',
      expectsLaunch: true,
      snapshots: [
        snapshot(0, submitted('job-1'), FOUR_IDLE(), [oneJob()]),
        ...['w1', 'w2', 'w3', 'w4'].map((w, i) => snapshot(1000 * (i + 1), heartbeat(w), FOUR_IDLE(), [oneJob()])),
      ],
    },
    {
      name: 'many jobs',
      expectsLaunch: true,
      snapshots: [0, 1000, 2000].map((now, i) => snapshot(now, heartbeat(`w${i + 1}`), FOUR_IDLE(), manyJobs())),
    },
    {
      name: 'full cluster',
      snapshots: [0, 3000].map((now) =>
        snapshot(now, heartbeat('w2'), full, [
          job('job-0', { pending: [], running, maps: 8 }),
          job('job-1', { submitTime: 10, pending: maps('job-1', 4) }),
        ]),
      ),
    },
    {
      name: 'pools',
      expectsLaunch: true,
      snapshots: [
        snapshot(
          0,
          heartbeat('w1'),
          FOUR_IDLE(),
          [
            job('job-a1', { pool: 'research', pending: maps('job-a1', 6) }),
            job('job-b1', { pool: 'production', submitTime: 5, pending: maps('job-b1', 6) }),
            job('job-c1', { submitTime: 9, pending: maps('job-c1', 2) }),
          ],
          [
            { name: 'production', minMapSlots: 4, minReduceSlots: 1, weight: 2, mode: 'fair' },
            { name: 'research', minMapSlots: 0, minReduceSlots: 0, weight: 1, mode: 'fifo' },
          ],
        ),
      ],
    },
    {
      name: 'a worker lost',
      snapshots: [
        snapshot(5000, { kind: 'worker-lost', workerId: 'w4' }, FOUR_IDLE().slice(0, 3), [
          job('job-1', { pending: lostTasks, maps: 6 }),
        ]),
      ],
    },
    {
      name: 'reduces pending',
      expectsLaunch: true,
      snapshots: [
        snapshot(8000, heartbeat('w3'), FOUR_IDLE(), [
          job('job-1', {
            pending: [0, 1, 2].map((i) => task('job-1', i, { kind: 'reduce', memoryMb: 2048 })),
            maps: 4,
            mapsCompleted: 4,
            reduces: 3,
            completedMapMs: 8000,
          }),
        ]),
      ],
    },
    {
      name: 'tight memory',
      snapshots: [
        snapshot(
          0,
          heartbeat('w1'),
          ['w1', 'w2', 'w3', 'w4'].map((id) => worker(id, RACK_OF[id]!, { freeMemoryMb: 512 })),
          [job('job-1', { pending: maps('job-1', 4) })],
        ),
      ],
    },
    {
      // Only a memory-elastic policy launches here (below ideal memory); any grant must keep memory.ts's rules.
      name: 'elastic tasks',
      snapshots: [
        snapshot(
          0,
          heartbeat('w1'),
          ['w1', 'w2', 'w3', 'w4'].map((id) => worker(id, RACK_OF[id]!, { freeMemoryMb: 1500 })),
          [job('job-1', { pending: maps('job-1', 6, () => ({ memoryMb: 2000, durationMs: 4000, penalty: elastic })) })],
        ),
      ],
    },
  ];
}

// ---------------------------------------------------------------------------------------------
// The clock guard

/**
 * Runs `fn` with the clocks replaced by functions that record their name and return what the real
 * ones would (a policy that reads the clock is reported, not crashed), and restores them however
 * `fn` ends.
 */
export function withClockRecorder<T>(fn: () => T): { result: T; clockReads: string[] } {
  const clockReads: string[] = [];
  const restore: Array<() => void> = [];
  const replace = (target: object, key: string, what: string): void => {
    const own = Object.getOwnPropertyDescriptor(target, key);
    const real = (target as Record<string, unknown>)[key];
    if (typeof real !== 'function') return;
    const recording = function (this: unknown, ...args: unknown[]): unknown {
      clockReads.push(what);
      return (real as (...a: unknown[]) => unknown).apply(this, args);
    };
    Object.assign(recording, real);
    Object.defineProperty(target, key, { value: recording, configurable: true, writable: true });
    restore.push(() => {
      if (own) Object.defineProperty(target, key, own);
      else Reflect.deleteProperty(target, key);
    });
  };
  const RealDate = globalThis.Date;
  class RecordingDate extends RealDate {
    constructor(...args: unknown[]) {
      if (args.length === 0) clockReads.push('new Date()');
      super(...(args as [number]));
    }
    static override now(): number {
      clockReads.push('Date.now');
      return RealDate.now();
    }
  }
  try {
    globalThis.Date = RecordingDate as DateConstructor;
    restore.push(() => {
      globalThis.Date = RealDate;
    });
    replace(performance, 'now', 'performance.now');
    const hrtime = process.hrtime;
    replace(process, 'hrtime', 'process.hrtime');
    if (process.hrtime !== hrtime) replace(process.hrtime, 'bigint', 'process.hrtime.bigint');
    return { result: fn(), clockReads };
  } finally {
    for (const undo of restore.reverse()) undo();
  }
}

// ---------------------------------------------------------------------------------------------
// The checks

const CONSULTATIONS: readonly Consultation[] = [
  'every-event',
  'after-change',
  'after-change-if-a-task-fits',
  'at-heartbeats',
];
const LOCALITIES = ['node', 'rack', 'any'];

const isString = (v: unknown): boolean => typeof v === 'string';
const isOptional = (v: unknown, check: (x: unknown) => boolean): boolean => v === undefined || check(v);
const isFiniteNumber = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v);

/** What is wrong with one decision's shape, or undefined when it is a decision of a known kind. */
export function malformedDecision(d: unknown): string | undefined {
  if (typeof d !== 'object' || d === null) return `not an object: ${shownValue(d)}`;
  const r = d as Record<string, unknown>;
  const need = (fields: Record<string, (v: unknown) => boolean>): string | undefined => {
    const bad = Object.entries(fields).filter(([k, ok]) => !ok(r[k]));
    return bad.length > 0 ? `${String(r.kind)} with bad or missing ${bad.map(([k]) => k).join(', ')}` : undefined;
  };
  switch (r.kind) {
    case 'launch':
      return need({
        taskId: isString,
        jobId: isString,
        workerId: isString,
        locality: (v) => LOCALITIES.includes(v as string),
        memoryMb: (v) => isOptional(v, isFiniteNumber),
        elastic: (v) => isOptional(v, (x) => typeof x === 'boolean'),
        startDelayMs: (v) => isOptional(v, isFiniteNumber),
      });
    case 'kill':
      return need({ attemptId: isString, reason: isString });
    case 'migrate':
      return need({ jobId: isString, toPartition: isFiniteNumber });
    case 'replicate':
      return need({ taskId: isString, jobId: isString, workerId: isString });
    case 'move-node':
      return need({ workerId: isString, toCluster: isString });
    case 'deactivate-cluster':
      return need({ cluster: isString });
    default:
      return `unknown decision kind ${shownValue(r.kind)}`;
  }
}

function shownValue(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : shownValue(err);
}

/** The rule-specific checks of one call's decisions (full and unknown workers), beyond validateDecisions. */
function workerRuleViolations(
  scenario: string,
  snap: ClusterSnapshot,
  decisions: readonly Decision[],
): ConformanceViolation[] {
  const out: ConformanceViolation[] = [];
  const workers = new Map(snap.workers.map((w) => [w.id, w]));
  const tasks = new Map(snap.jobs.flatMap((j) => j.pendingTasks.map((t) => [t.id, t] as const)));
  for (const d of decisions) {
    if (d.kind !== 'launch' && d.kind !== 'replicate') continue;
    const w = workers.get(d.workerId);
    if (!w) {
      out.push({
        rule: 'launch-on-unknown-worker',
        scenario,
        detail: `${d.kind} on worker ${d.workerId}, which is not in the snapshot`,
        decision: d,
      });
      continue;
    }
    const kind = d.kind === 'launch' ? tasks.get(d.taskId)?.kind : undefined;
    if (kind && (kind === 'map' ? w.freeMapSlots : w.freeReduceSlots) <= 0)
      out.push({
        rule: 'launch-on-full-worker',
        scenario,
        detail: `launches ${kind} ${d.taskId} on ${w.id}, which has no free ${kind} slot`,
        decision: d,
      });
  }
  return out;
}

/** Runs one scenario on one fresh policy: its decisions per call, or the violations that stopped it. */
function drive(
  policy: Policy,
  scenario: ConformanceScenario,
  violations: ConformanceViolation[],
): { outputs: unknown[]; calls: number } {
  const outputs: unknown[] = [];
  let calls = 0;
  for (const snap of scenario.snapshots) {
    const before = structuredClone(snap);
    calls++;
    let decisions: unknown;
    let clockReads: string[] = [];
    try {
      ({ result: decisions, clockReads } = withClockRecorder(() => policy.schedule(snap)));
    } catch (err) {
      violations.push({ rule: 'does-not-throw', scenario: scenario.name, detail: `schedule threw ${errorText(err)}` });
      return { outputs, calls };
    }
    if (clockReads.length > 0)
      violations.push({
        rule: 'reads-clock',
        scenario: scenario.name,
        detail: `schedule called ${[...new Set(clockReads)].join(', ')}; use snapshot.now`,
      });
    if (!isDeepStrictEqual(snap, before))
      violations.push({
        rule: 'mutates-snapshot',
        scenario: scenario.name,
        detail: 'the snapshot differs after schedule returned',
      });
    outputs.push(decisions);
    if (!Array.isArray(decisions)) {
      violations.push({
        rule: 'returns-array',
        scenario: scenario.name,
        detail: `schedule returned ${shownValue(decisions)}`,
      });
      return { outputs, calls };
    }
    const malformed = decisions.flatMap((d) => {
      const why = malformedDecision(d);
      return why ? [{ d, why }] : [];
    });
    for (const { d, why } of malformed)
      violations.push({ rule: 'well-formed-decisions', scenario: scenario.name, detail: why, decision: d });
    if (malformed.length > 0) continue;
    const list = decisions as Decision[];
    const byRule = workerRuleViolations(scenario.name, snap, list);
    violations.push(...byRule);
    if (byRule.length > 0) continue;
    let problems: string[];
    try {
      problems = validateDecisions(snap, list);
    } catch (err) {
      problems = [`the decisions could not be checked: ${errorText(err)}`];
    }
    for (const problem of problems) {
      const at = /^decision (\d+):/.exec(problem);
      const decision = at ? list[Number(at[1])] : undefined;
      violations.push({
        rule: 'valid-decisions',
        scenario: scenario.name,
        detail: problem,
        ...(decision ? { decision } : {}),
      });
    }
  }
  return { outputs, calls };
}

/** A fresh policy from `definition`, or the violation that says why none could be made. */
function fresh(
  definition: PolicyDefinition,
  options: PolicyOptions,
): { policy: Policy } | { violation: ConformanceViolation } {
  let policy: unknown;
  try {
    policy = definition.create(options);
  } catch (err) {
    return { violation: { rule: 'creates-with-defaults', detail: `create threw ${errorText(err)}` } };
  }
  if (typeof policy !== 'object' || policy === null)
    return { violation: { rule: 'creates-with-defaults', detail: `create returned ${shownValue(policy)}` } };
  if (typeof (policy as Policy).schedule !== 'function')
    return { violation: { rule: 'has-schedule', detail: 'the policy create returns has no schedule method' } };
  return { policy: policy as Policy };
}

/**
 * Drives fresh policies from `definition` (made with `options`, default none) through every scenario
 * and reports each rule they break. Never throws for a misbehaving policy: what it does wrong is in the
 * report.
 */
export function checkConformance(
  definition: PolicyDefinition,
  options: PolicyOptions = {},
  scenarios: readonly ConformanceScenario[] = conformanceScenarios(),
): ConformanceReport {
  const violations: ConformanceViolation[] = [];
  const name = typeof definition?.name === 'string' ? definition.name : '(unnamed)';
  const first = fresh(definition, options);
  if ('violation' in first) return { policy: name, scenarios: 0, calls: 0, violations: [first.violation] };
  const p = first.policy;
  if (typeof p.name !== 'string' || p.name === '')
    violations.push({ rule: 'has-name', detail: `name is ${shownValue(p.name)}` });
  if (!CONSULTATIONS.includes(p.consultWhen))
    violations.push({ rule: 'consult-when', detail: `consultWhen is ${shownValue(p.consultWhen)}` });
  let calls = 0;
  for (const scenario of scenarios) {
    const a = fresh(definition, options);
    const b = fresh(definition, options);
    if ('violation' in a || 'violation' in b) continue;
    const found: ConformanceViolation[] = [];
    const one = drive(a.policy, scenario, found);
    violations.push(...found);
    calls += one.calls;
    if (found.some((v) => v.rule === 'does-not-throw' || v.rule === 'returns-array')) continue;
    // The twin sees equal snapshots (deep copies), so shared objects cannot make it agree by accident.
    const twin = drive(b.policy, { ...scenario, snapshots: scenario.snapshots.map((s) => structuredClone(s)) }, []);
    const differs = one.outputs.findIndex((out, i) => !isDeepStrictEqual(out, twin.outputs[i]));
    if (differs >= 0)
      violations.push({
        rule: 'deterministic',
        scenario: scenario.name,
        detail:
          `call ${differs + 1}: two fresh policies returned ${shownValue(one.outputs[differs])} ` +
          `and ${shownValue(twin.outputs[differs])}`,
      });
    if (
      scenario.expectsLaunch &&
      found.length === 0 &&
      !one.outputs.some((out) => Array.isArray(out) && out.some((d) => (d as Decision)?.kind === 'launch'))
    )
      violations.push({
        rule: 'uses-idle-cluster',
        scenario: scenario.name,
        detail: `no launch in ${scenario.snapshots.length} call(s) though tasks fit idle workers`,
      });
  }
  return { policy: name, scenarios: scenarios.length, calls, violations };
}

/**
 * The report for people: one line per broken rule, with the first scenario and decision that broke it
 * and how many more times it was broken; an empty list when there is none.
 */
export function conformanceLines(report: ConformanceReport): string[] {
  const byRule = new Map<ConformanceRule, ConformanceViolation[]>();
  for (const v of report.violations) byRule.set(v.rule, [...(byRule.get(v.rule) ?? []), v]);
  return [...byRule].map(([rule, list]) => {
    const v = list[0]!;
    const where = v.scenario ? ` (scenario '${v.scenario}')` : '';
    const decision = v.decision !== undefined ? `; decision ${shownValue(v.decision)}` : '';
    const more = list.length > 1 ? `; and ${list.length - 1} more` : '';
    return `${rule}: ${v.detail}${where}${decision}${more}`;
  });
}

/** The contract rule a policy broke in an engine's run, with what it did (PolicyAnswer). */
export interface PolicyFault {
  readonly rule: ConformanceRule;
  readonly detail: string;
  /** The decision that broke it, when one did. */
  readonly decision?: unknown;
}

/** A policy's answer to one snapshot in a run: its decisions, or the rule it broke. */
export type PolicyAnswer = { readonly decisions: readonly Decision[] } | { readonly fault: PolicyFault };

/**
 * Asks `policy` for its decisions on `snapshot` in an engine's run, holding it to the contract the
 * conformance suite checks: it must not throw, must return an array of well-formed decisions, and
 * those must pass `check` (the books' check against the snapshot). The JobTracker and the simulator
 * both ask through here, so a broken policy is named by the same rule on both.
 */
export function askPolicy(
  policy: Policy,
  snapshot: ClusterSnapshot,
  check: (decisions: readonly Decision[]) => readonly string[],
): PolicyAnswer {
  let decisions: unknown;
  try {
    decisions = policy.schedule(snapshot);
  } catch (err) {
    return { fault: { rule: 'does-not-throw', detail: `schedule threw ${errorText(err)}` } };
  }
  if (!Array.isArray(decisions))
    return { fault: { rule: 'returns-array', detail: `schedule returned ${shownValue(decisions)}` } };
  for (const d of decisions) {
    const why = malformedDecision(d);
    if (why) return { fault: { rule: 'well-formed-decisions', detail: why, decision: d } };
  }
  const list = decisions as Decision[];
  const problems = check(list);
  if (problems.length === 0) return { decisions: list };
  const at = /^decision (\d+):/.exec(problems[0]!);
  const more = problems.length > 1 ? ` (and ${problems.length - 1} more)` : '';
  return {
    fault: {
      rule: 'valid-decisions',
      detail: `${problems[0]}${more}`,
      ...(at && list[Number(at[1])] !== undefined ? { decision: list[Number(at[1])] } : {}),
    },
  };
}

/** One line naming the rule a policy broke, what it did and the decision: for its run's error and its logs. */
export function policyFaultText(policyName: string, fault: PolicyFault): string {
  const decision = fault.decision !== undefined ? `; decision ${shownValue(fault.decision)}` : '';
  return `policy '${policyName}' broke the policy contract, rule ${fault.rule}: ${fault.detail}${decision}`;
}
