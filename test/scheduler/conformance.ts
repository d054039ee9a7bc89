/**
 * The behaviour every scheduling policy owes the JobTracker and the simulator, as one suite each
 * policy's test file runs against its own constructor (in the spirit of abstract-level's shared
 * tests). Policy-specific behaviour (ordering, fairness, locality waits) belongs in that policy's
 * own tests; what is here must hold for all of them.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type {
  ClusterSnapshot,
  Decision,
  JobView,
  Policy,
  SchedulingTrigger,
  TaskView,
  WorkerView,
} from '../../src/scheduler/index.js';
import {
  type DriverOptions,
  type JobSpec,
  type MapSpec,
  type Round,
  SnapshotDriver,
  mkJob,
  mkSnapshot,
  mkTask,
  mkWorker,
  seededRandom,
  validateDecisions,
} from './snapshot-driver.js';
import { mkAttempt } from '../helpers/books.js';

// ---------------------------------------------------------------------------------------------
// Purity guard

export class ImpureCallError extends Error {
  constructor(readonly what: string) {
    super(`policy called ${what} inside schedule(); time must come from snapshot.now`);
    this.name = 'ImpureCallError';
  }
}

/**
 * Runs `fn` with clocks, randomness and timers replaced by functions that throw, and restores them
 * however `fn` ends. The names reached are also recorded, so a policy that swallows the throw is
 * still caught.
 */
export function withPurityGuard<T>(fn: () => T): { result: T; forbiddenCalls: string[] } {
  const forbiddenCalls: string[] = [];
  const restore: Array<() => void> = [];
  const forbid = (target: object, key: PropertyKey, what: string, replacement?: unknown): void => {
    const own = Object.getOwnPropertyDescriptor(target, key);
    const value =
      replacement ??
      ((): never => {
        forbiddenCalls.push(what);
        throw new ImpureCallError(what);
      });
    Object.defineProperty(target, key, {
      value,
      configurable: true,
      writable: true,
      enumerable: own?.enumerable ?? false,
    });
    restore.push(() => {
      if (own) Object.defineProperty(target, key, own);
      else Reflect.deleteProperty(target, key);
    });
  };

  const RealDate = Date;
  // `new Date()` with no argument reads the clock as surely as Date.now(); dates built from
  // numbers stay allowed.
  class GuardedDate extends RealDate {
    constructor(...args: ConstructorParameters<typeof Date> | []) {
      if (args.length === 0) {
        forbiddenCalls.push('new Date()');
        throw new ImpureCallError('new Date()');
      }
      super(...(args as ConstructorParameters<typeof Date>));
    }
  }
  try {
    forbid(globalThis, 'Date', 'Date', GuardedDate);
    forbid(GuardedDate, 'now', 'Date.now');
    forbid(RealDate, 'now', 'Date.now');
    forbid(performance, 'now', 'performance.now');
    forbid(Math, 'random', 'Math.random');
    forbid(globalThis, 'setTimeout', 'setTimeout');
    forbid(globalThis, 'setInterval', 'setInterval');
    forbid(globalThis, 'setImmediate', 'setImmediate');
    // Replace process.hrtime with a thrower that carries its own throwing `bigint`, so
    // process.hrtime.bigint() is reported as impure instead of failing as "not a function".
    const hrtime = Object.assign(
      (): never => {
        forbiddenCalls.push('process.hrtime');
        throw new ImpureCallError('process.hrtime');
      },
      {
        bigint: (): never => {
          forbiddenCalls.push('process.hrtime');
          throw new ImpureCallError('process.hrtime.bigint');
        },
      },
    );
    forbid(process, 'hrtime', 'process.hrtime', hrtime);
    const result = fn();
    return { result, forbiddenCalls };
  } finally {
    for (const undo of restore.reverse()) undo();
  }
}

function guarded(policy: Policy): (snapshot: ClusterSnapshot) => readonly Decision[] {
  return (snapshot) => {
    const { result, forbiddenCalls } = withPurityGuard(() => policy.schedule(snapshot));
    assert.deepEqual(forbiddenCalls, [], `${policy.name} read a clock or randomness at t=${snapshot.now}`);
    return result;
  };
}

// ---------------------------------------------------------------------------------------------
// Workloads

/** Two racks of two workers; memory is tight enough that it, not only slots, limits placement. */
export const STEADY_WORKERS = [
  { id: 'w1', rack: 'r1', mapSlots: 2, reduceSlots: 1, memoryMb: 2048 },
  { id: 'w2', rack: 'r1', mapSlots: 2, reduceSlots: 1, memoryMb: 2048 },
  { id: 'w3', rack: 'r2', mapSlots: 2, reduceSlots: 1, memoryMb: 2048 },
  { id: 'w4', rack: 'r2', mapSlots: 2, reduceSlots: 1, memoryMb: 2048 },
] as const;

/** Ticks between arrivals in the steady workload, and how many small jobs follow the big one. */
const ARRIVAL_TICKS = 2;
const SMALL_JOBS = 40;
const TASK_TICKS = 3;

/**
 * A big job first, then a steady stream of small ones, with mixed locality (some maps homeless),
 * mixed memory, and a few first attempts failing so failed-worker avoidance is exercised.
 */
export function steadyLoad(): DriverOptions {
  const rand = seededRandom(20240611);
  const ids = STEADY_WORKERS.map((w) => w.id);
  const mapSpecs = (n: number): MapSpec[] =>
    Array.from({ length: n }, (_, i): MapSpec => {
      if (i % 4 === 3) return { memoryMb: 512 };
      const first = Math.floor(rand() * ids.length);
      return {
        preferredWorkers: [ids[first]!, ids[(first + 1 + Math.floor(rand() * (ids.length - 1))) % ids.length]!],
        memoryMb: rand() < 0.25 ? 1024 : 256,
      };
    });
  const jobs: JobSpec[] = [{ id: 'big', submitTime: 0, maps: mapSpecs(24), reduces: 2 }];
  for (let i = 0; i < SMALL_JOBS; i++) {
    jobs.push({
      id: `small${String(i).padStart(2, '0')}`,
      submitTime: (i + 1) * ARRIVAL_TICKS * 1000,
      maps: mapSpecs(3 + Math.floor(rand() * 4)),
      reduces: 1 + Math.floor(rand() * 2),
      reduceMemoryMb: rand() < 0.3 ? 1024 : 512,
    });
  }
  return {
    workers: STEADY_WORKERS,
    jobs,
    tickMs: 1000,
    taskTicks: TASK_TICKS,
    failAttempt: ({ taskId, attemptNo }) => attemptNo === 1 && /-m(3|11|17)$/.test(taskId),
  };
}

/**
 * The longest any job may take from submission to completion in the steady workload. Arrivals
 * run for 80 s and keep the map slots nearly saturated, so a policy that leaves a job waiting
 * while later ones are served (newest-first: 99 s for the big job) overshoots, while any order
 * that keeps every job moving stays well inside (FIFO: 19 s worst; a per-slot fair share: 30 s
 * worst), with room left for a locality wait of a few seconds.
 */
export const STEADY_RESPONSE_BOUND_MS = 50_000;
const STEADY_MAX_TICKS = 400;

/** Runs the steady workload to the end; response times (ms) of the jobs that finished. */
export function runSteadyLoad(
  policy: Policy,
  schedule?: (snapshot: ClusterSnapshot) => readonly Decision[],
): { unfinished: readonly string[]; responses: ReadonlyMap<string, number> } {
  const options = steadyLoad();
  const result = new SnapshotDriver(options).run(policy, { maxTicks: STEADY_MAX_TICKS, schedule });
  const responses = new Map<string, number>();
  for (const spec of options.jobs ?? []) {
    const done = result.finishTimes.get(spec.id);
    if (done !== undefined) responses.set(spec.id, done - spec.submitTime);
  }
  return { unfinished: result.unfinished, responses };
}

function pick<T>(rand: () => number, items: readonly T[]): T {
  return items[Math.floor(rand() * items.length)]!;
}

function subset<T>(rand: () => number, items: readonly T[], p: number): T[] {
  return items.filter(() => rand() < p);
}

/** An arbitrary but well-formed snapshot: any policy must answer it with valid decisions. */
export function randomSnapshot(seed: number): ClusterSnapshot {
  const rand = seededRandom(seed);
  const racks = ['r1', 'r2', 'r3'].slice(0, 1 + Math.floor(rand() * 3));
  const workers: WorkerView[] = Array.from({ length: Math.floor(rand() * 6) }, (_, i) => {
    const mapSlots = Math.floor(rand() * 4);
    const reduceSlots = Math.floor(rand() * 3);
    const memoryMb = 512 * (1 + Math.floor(rand() * 8));
    return mkWorker(`w${i}`, pick(rand, racks), {
      mapSlots,
      reduceSlots,
      memoryMb,
      freeMapSlots: Math.floor(rand() * (mapSlots + 1)),
      freeReduceSlots: Math.floor(rand() * (reduceSlots + 1)),
      freeMemoryMb: Math.floor(rand() * (memoryMb + 1)),
    });
  });
  const ids = workers.map((w) => w.id);
  // Estimates and penalty models for memory-elastic policies, from a stream of their own so the
  // snapshots every other policy sees stay as they were.
  const profile = seededRandom(seed + 7919);
  const jobs: JobView[] = Array.from({ length: Math.floor(rand() * 5) }, (_, j) => {
    const jobId = `j${j}`;
    const mapsLeft = rand() < 0.7;
    const tasks: TaskView[] = Array.from({ length: Math.floor(rand() * 7) }, (_, i) =>
      mkTask(jobId, mapsLeft ? 'map' : 'reduce', i, {
        workers,
        preferredWorkers: mapsLeft ? subset(rand, ids, 0.3) : [],
        memoryMb: 128 * (1 + Math.floor(rand() * 12)),
        failedOnWorkers: subset(rand, ids, 0.15),
        ...(profile() < 0.6
          ? {
              idealDurationMs: 1000 + Math.floor(profile() * 60_000),
              penalty: { kind: 'step', factor: 1 + profile() * 2, minFraction: 0.1 },
            }
          : {}),
      }),
    );
    const runningAttempts =
      ids.length === 0
        ? []
        : Array.from({ length: Math.floor(rand() * 3) }, (_, a) =>
            mkAttempt(jobId, 'map', a, pick(rand, ids), 0, {
              id: `${jobId}-running${a}_1`,
              taskId: `${jobId}-running${a}`,
              progress: rand(),
              inputBytes: 0,
            }),
          );
    return mkJob(jobId, tasks, { submitTime: j * 1000, runningAttempts });
  });
  const triggers: SchedulingTrigger[] = [
    { kind: 'tick' },
    { kind: 'job-submitted', jobId: jobs[0]?.id ?? 'j0' },
    { kind: 'heartbeat', workerId: ids[0] ?? 'ghost' },
    { kind: 'worker-joined', workerId: ids[ids.length - 1] ?? 'ghost' },
    { kind: 'worker-lost', workerId: 'gone' },
    { kind: 'attempt-finished', attemptId: 'j0-m0_1', jobId: 'j0' },
  ];
  return mkSnapshot(workers, jobs, { now: Math.floor(rand() * 100_000), trigger: pick(rand, triggers) });
}

/**
 * A snapshot with one job in which at least one task can start right now with no reason to wait:
 * it is node-local to, or has no preference for, a worker with a free slot and enough memory.
 */
export function launchableSnapshot(seed: number): ClusterSnapshot {
  const rand = seededRandom(seed);
  const base = randomSnapshot(seed);
  const kind = rand() < 0.7 ? 'map' : 'reduce';
  const host = mkWorker('host', pick(rand, ['r1', 'r2', 'r3']), {
    freeMapSlots: kind === 'map' ? 1 + Math.floor(rand() * 2) : 0,
    freeReduceSlots: kind === 'reduce' ? 1 : 0,
    freeMemoryMb: 1024 + Math.floor(rand() * 3072),
  });
  const workers = [...base.workers, host];
  const homeless = kind === 'reduce' || rand() < 0.5;
  const tasks = Array.from({ length: 1 + Math.floor(rand() * 5) }, (_, i) =>
    mkTask('solo', kind, i, {
      workers,
      preferredWorkers: homeless
        ? []
        : [
            host.id,
            ...subset(
              rand,
              base.workers.map((w) => w.id),
              0.3,
            ),
          ],
      memoryMb: 128 * (1 + Math.floor(rand() * 8)),
    }),
  );
  return mkSnapshot(workers, [mkJob('solo', tasks)], {
    now: seed * 1000,
    trigger: { kind: 'heartbeat', workerId: host.id },
  });
}

/** Hand-made corner cases, each with the number of launches it allows at most. */
function cornerCases(): Array<{ name: string; snapshot: ClusterSnapshot; maxLaunches: number }> {
  const w = (id: string, rack: string, over: Partial<WorkerView> = {}): WorkerView => mkWorker(id, rack, over);
  const full = w('w1', 'r1', { freeMapSlots: 0, freeReduceSlots: 0 });
  const pending = [mkTask('j1', 'map', 0), mkTask('j1', 'map', 1)];
  return [
    { name: 'no workers', snapshot: mkSnapshot([], [mkJob('j1', pending)]), maxLaunches: 0 },
    { name: 'no jobs', snapshot: mkSnapshot([w('w1', 'r1')], []), maxLaunches: 0 },
    { name: 'job with nothing pending', snapshot: mkSnapshot([w('w1', 'r1')], [mkJob('j1', [])]), maxLaunches: 0 },
    { name: 'no free slots', snapshot: mkSnapshot([full], [mkJob('j1', pending)]), maxLaunches: 0 },
    {
      name: 'no free memory',
      snapshot: mkSnapshot([w('w1', 'r1', { freeMemoryMb: 0 })], [mkJob('j1', pending)]),
      maxLaunches: 0,
    },
    {
      name: 'task larger than any worker',
      snapshot: mkSnapshot(
        [w('w1', 'r1'), w('w2', 'r2')],
        [mkJob('j1', [mkTask('j1', 'map', 0, { memoryMb: 100_000 })])],
      ),
      maxLaunches: 0,
    },
    {
      name: 'memory for one task only',
      snapshot: mkSnapshot([w('w1', 'r1', { freeMapSlots: 2, freeMemoryMb: 300 })], [mkJob('j1', pending)]),
      maxLaunches: 1,
    },
    {
      name: 'only reduce slots free, only maps pending',
      snapshot: mkSnapshot([w('w1', 'r1', { freeMapSlots: 0 })], [mkJob('j1', pending)]),
      maxLaunches: 0,
    },
    {
      name: 'only map slots free, only reduces pending',
      snapshot: mkSnapshot([w('w1', 'r1', { freeReduceSlots: 0 })], [mkJob('j1', [mkTask('j1', 'reduce', 0)])]),
      maxLaunches: 0,
    },
    {
      name: 'trigger names a worker that is not in the snapshot',
      snapshot: mkSnapshot([w('w1', 'r1')], [mkJob('j1', pending)], {
        trigger: { kind: 'heartbeat', workerId: 'ghost' },
      }),
      maxLaunches: 2,
    },
    {
      name: 'worker-lost trigger',
      snapshot: mkSnapshot([w('w1', 'r1')], [mkJob('j1', pending)], {
        trigger: { kind: 'worker-lost', workerId: 'w9' },
      }),
      maxLaunches: 2,
    },
    {
      name: 'preferred workers that are not live',
      snapshot: mkSnapshot(
        [w('w1', 'r1')],
        [mkJob('j1', [mkTask('j1', 'map', 0, { preferredWorkers: ['dead'], preferredRacks: ['r9'] })])],
      ),
      maxLaunches: 1,
    },
  ];
}

function launches(decisions: readonly Decision[]): Array<Extract<Decision, { kind: 'launch' }>> {
  return decisions.filter((d): d is Extract<Decision, { kind: 'launch' }> => d.kind === 'launch');
}

function assertValid(snapshot: ClusterSnapshot, decisions: readonly Decision[], label: string): void {
  assert.ok(Array.isArray(decisions), `${label}: schedule() must return an array`);
  assert.deepEqual(validateDecisions(snapshot, decisions), [], label);
}

function runRecorded(makePolicy: () => Policy, options: DriverOptions, maxTicks: number): readonly Round[] {
  return new SnapshotDriver(options).run(makePolicy(), { maxTicks, record: true }).rounds;
}

// ---------------------------------------------------------------------------------------------
// The suite

export interface ConformanceOptions {
  /**
   * False for policies that keep capacity idle on purpose (Tyrex reserves each partition's slots
   * for its own queue): they skip the single-job work-conservation check, nothing else.
   */
  readonly workConserving?: boolean;
  /**
   * Response-time bound of the no-starvation test, for policies that give any one queue only part
   * of the cluster (default STEADY_RESPONSE_BOUND_MS). Still a bound: starving forever fails.
   */
  readonly steadyResponseBoundMs?: number;
}

export function policyConformance(name: string, makePolicy: () => Policy, options: ConformanceOptions = {}): void {
  describe(`${name}: policy conformance`, () => {
    test('reports a non-empty name', () => {
      const policy = makePolicy();
      assert.equal(typeof policy.name, 'string');
      assert.ok(policy.name.length > 0);
    });

    test('corner cases: valid decisions, no launches without room', () => {
      for (const c of cornerCases()) {
        const decisions = makePolicy().schedule(c.snapshot);
        assertValid(c.snapshot, decisions, c.name);
        assert.ok(launches(decisions).length <= c.maxLaunches, `${c.name}: ${launches(decisions).length} launches`);
      }
    });

    test('never over-allocates, double-launches or launches a non-pending task (generated snapshots)', () => {
      // One policy across all snapshots as well as a fresh one per snapshot: state kept between
      // calls must not lead a policy astray either.
      const longLived = makePolicy();
      for (let seed = 1; seed <= 300; seed++) {
        const s = randomSnapshot(seed);
        assertValid(s, makePolicy().schedule(s), `seed ${seed}, fresh policy`);
        assertValid(s, longLived.schedule(s), `seed ${seed}, long-lived policy`);
      }
    });

    test('every decision of a driven run is valid and names an existing worker and task', () => {
      const driver = new SnapshotDriver(steadyLoad());
      // apply() validates each round against its snapshot and throws on the first problem.
      const result = driver.run(makePolicy(), { maxTicks: STEADY_MAX_TICKS, record: true });
      assert.ok(
        result.rounds.some((r) => launches(r.decisions).length > 0),
        'the run launched nothing',
      );
      for (const r of result.rounds) {
        const workers = new Set(r.snapshot.workers.map((w) => w.id));
        const tasks = new Set(r.snapshot.jobs.flatMap((j) => j.pendingTasks.map((t) => t.id)));
        for (const d of launches(r.decisions)) {
          assert.ok(workers.has(d.workerId), `unknown worker ${d.workerId}`);
          assert.ok(tasks.has(d.taskId), `unknown or non-pending task ${d.taskId}`);
        }
      }
    });

    test('deterministic: the same snapshots give deep-equal decisions from two fresh policies', () => {
      const first = runRecorded(makePolicy, steadyLoad(), STEADY_MAX_TICKS);
      const replay = makePolicy();
      for (const [i, r] of first.entries()) {
        assert.deepEqual(
          replay.schedule(r.snapshot),
          r.decisions,
          `round ${i} (t=${r.snapshot.now}) differs on replay`,
        );
      }
      // A whole second run must retrace the first exactly, snapshots included.
      assert.deepEqual(runRecorded(makePolicy, steadyLoad(), STEADY_MAX_TICKS), first);
      const a = makePolicy();
      const b = makePolicy();
      for (let seed = 1; seed <= 100; seed++) {
        const s = randomSnapshot(seed);
        assert.deepEqual(a.schedule(s), b.schedule(s), `seed ${seed}`);
      }
    });

    test('pure: no clock, randomness or timers inside schedule(), and they are restored afterwards', () => {
      const saved = [
        Date,
        Date.now,
        performance.now,
        Math.random,
        setTimeout,
        setInterval,
        setImmediate,
        process.hrtime,
      ];
      const policy = makePolicy();
      assert.deepEqual(runSteadyLoad(policy, guarded(policy)).unfinished, []);
      for (let seed = 1; seed <= 100; seed++) guarded(policy)(randomSnapshot(seed));
      assert.deepEqual(
        [Date, Date.now, performance.now, Math.random, setTimeout, setInterval, setImmediate, process.hrtime],
        saved,
      );
    });

    test('does not modify the snapshot it is given', () => {
      // Snapshots from the helpers are deep-frozen, so any write throws in strict-mode code; this
      // one is not, and is compared before and after instead (sloppy code would write silently).
      const s = randomSnapshot(7);
      const copy = structuredClone(s);
      const thawed: ClusterSnapshot = structuredClone(s);
      makePolicy().schedule(thawed);
      assert.deepEqual(thawed, copy);
    });

    test('no starvation under steady load: every job finishes within a bound', () => {
      const { unfinished, responses } = runSteadyLoad(makePolicy());
      assert.deepEqual(unfinished, [], 'jobs left unfinished');
      for (const [id, ms] of responses) {
        const bound = options.steadyResponseBoundMs ?? STEADY_RESPONSE_BOUND_MS;
        assert.ok(ms <= bound, `${id} took ${ms} ms (bound ${bound} ms)`);
      }
    });

    test('a task that failed on the only worker is still run there', () => {
      const driver = new SnapshotDriver({
        workers: [{ id: 'only', rack: 'r1', mapSlots: 1, reduceSlots: 1, memoryMb: 1024 }],
        jobs: [{ id: 'j1', submitTime: 0, maps: [{ preferredWorkers: ['only'] }, {}], reduces: 1 }],
        taskTicks: 2,
        failAttempt: ({ attemptNo }) => attemptNo <= 2,
      });
      const result = driver.run(makePolicy(), { maxTicks: 100 });
      assert.deepEqual(result.unfinished, []);
    });

    if (options.workConserving !== false)
      test('work-conserving for a single job: pending work and room means something is launched', () => {
        for (let seed = 1; seed <= 200; seed++) {
          const s = launchableSnapshot(seed);
          const decisions = makePolicy().schedule(s);
          assertValid(s, decisions, `seed ${seed}`);
          assert.ok(launches(decisions).length > 0, `seed ${seed}: nothing launched`);
        }
      });
  });
}
