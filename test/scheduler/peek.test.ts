/**
 * DSS's PEEK look-ahead (src/scheduler/peek.ts): hand-computed cases, and a cross-check against a
 * deliberately naive simulation in this file that steps every millisecond, heartbeats every node at
 * every phase point and runs every AM heartbeat with DSS's own container lists (allocated, acquired,
 * released, finished), so the closed-form launch and release times and the sleeping nodes of the
 * module are checked against the mechanism they stand for.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  type PeekContainer,
  type PeekInput,
  type PeekJob,
  type PeekNode,
  type PeekTasks,
  peekCompletions,
  peekCutoffMs,
} from '../../src/scheduler/index.js';

const BASE = {
  heartbeatMs: 1000,
  amHeartbeatMs: 1000,
  amMb: 1000,
  amCores: 1,
  maxAssign: 1,
  reservations: new Map<string, string>(),
} as const;

function tasks(memoryMb: number, durationMs: number, count = 1, cores = 1): PeekTasks {
  return { memoryMb, cores, durationMs, count };
}

function am(nodeId: string, jobId: string, memoryMb = 1000): PeekContainer {
  return { nodeId, jobId, memoryMb, cores: 1, endMs: Number.POSITIVE_INFINITY };
}

/** Two jobs whose AMs run on n1 (a's heartbeats at phase 0, b's at phase 500), one 2000 MB x 5 s task each. */
function twoJobs(over: Partial<PeekInput> = {}): PeekInput {
  return {
    ...BASE,
    now: 10_000,
    cutoffMs: 30_000,
    nodes: [{ id: 'n1', memoryMb: 10_000, cores: 4, phaseMs: 0 }],
    running: [am('n1', 'a'), am('n1', 'b')],
    jobs: [
      { id: 'a', submitMs: 0, usedMb: 1000, am: { nodeId: 'n1', runsFromMs: 2000 }, tasks: [tasks(2000, 5000)] },
      { id: 'b', submitMs: 500, usedMb: 1000, am: { nodeId: 'n1', runsFromMs: 2500 }, tasks: [tasks(2000, 5000)] },
    ],
    ...over,
  };
}

describe('peekCompletions: hand-computed', () => {
  test('one node, two jobs, one container per heartbeat; AM pick-up and launch delays; AM release as the limit', () => {
    // Queue [a, b] (1000 MB each, a submitted first). n1 heartbeats at 11 s, 12 s, ...
    // a: allocated at 11 000; its AM (phase 0) picks it up at 12 000, launches it at 13 000; ends 18 000.
    //    n1 sees the end at 18 000 (a heartbeat then); a's AM learns of it at 19 000, is released at
    //    20 000 (the limit), the job completes at 21 000 < 30 000.
    // b: only one container per heartbeat, so allocated at 12 000; its AM (phase 500) picks it up at
    //    12 500, launches it at 13 500; ends 18 500; seen at 19 000; AM learns 19 500, released 20 500.
    assert.deepEqual(
      peekCompletions(twoJobs()),
      new Map([
        ['a', 20_000],
        ['b', 20_500],
      ]),
    );
  });

  test('as many containers per heartbeat as fit (maxAssign 0)', () => {
    // b is allocated at 11 000 too: picked up 11 500, launched 12 500, ends 17 500, seen 18 000,
    // AM learns 18 500, released 19 500. a as before.
    assert.deepEqual(
      peekCompletions(twoJobs({ maxAssign: 0 })),
      new Map([
        ['a', 20_000],
        ['b', 19_500],
      ]),
    );
  });

  test('a job that completes only at or after the cutoff is absent', () => {
    // a completes at 21 000, b at 21 500 (first case): the look-ahead handles events before the cutoff only.
    assert.deepEqual(peekCompletions(twoJobs({ cutoffMs: 21_000 })), new Map());
    assert.deepEqual(peekCompletions(twoJobs({ cutoffMs: 21_001 })), new Map([['a', 20_000]]));
    assert.deepEqual(peekCompletions(twoJobs({ cutoffMs: 10_000 })), new Map());
  });

  test('a job whose AM is not yet allocated: AM at a node heartbeat, launched at its next poll', () => {
    // c arrived at 9300: its AM polls at 10 300, 11 300, ... n1 (empty) heartbeats at 11 000: c's AM
    // is allocated; the 11 300 poll launches it (its heartbeats then at phase 300). At 12 000 its task
    // is allocated, picked up 12 300, launched 13 300, ends 17 300; seen 18 000; AM learns 18 300,
    // released 19 300; completes 20 300.
    const input: PeekInput = {
      ...BASE,
      now: 10_000,
      cutoffMs: 25_000,
      nodes: [{ id: 'n1', memoryMb: 10_000, cores: 4, phaseMs: 0 }],
      running: [],
      jobs: [{ id: 'c', submitMs: 9300, usedMb: 0, am: null, tasks: [tasks(2000, 4000)] }],
    };
    assert.deepEqual(peekCompletions(input), new Map([['c', 19_300]]));
  });

  test('a reservation holds the node for its job and blocks another job that would fit', () => {
    // n1: 8000 MB; a's and b's AMs (1000 MB each) and a's task x (4000 MB, ends 15 500): 2000 MB free.
    // Queue [b (1000 MB), a (5000 MB)]. a's next task (5000 MB) does not fit.
    const nodes: PeekNode[] = [{ id: 'n1', memoryMb: 8000, cores: 8, phaseMs: 0 }];
    const running = [
      am('n1', 'a'),
      am('n1', 'b'),
      { nodeId: 'n1', jobId: 'a', memoryMb: 4000, cores: 1, endMs: 15_500 },
    ];
    const jobs: PeekJob[] = [
      { id: 'a', submitMs: 0, usedMb: 5000, am: { nodeId: 'n1', runsFromMs: 2000 }, tasks: [tasks(5000, 3000)] },
      { id: 'b', submitMs: 500, usedMb: 1000, am: { nodeId: 'n1', runsFromMs: 2500 }, tasks: [tasks(1000, 2000)] },
    ];
    const input: PeekInput = { ...BASE, now: 10_000, cutoffMs: 40_000, nodes, running, jobs };
    // Reserved for a: b is not served at 11 000 though 1000 MB would fit. x ends at 15 500; at 16 000
    // a's consumption drops and its task fits (6000 MB free): allocated, picked up 17 000, launched
    // 18 000, ends 21 000, seen 21 000 (the node's heartbeat at that instant comes after the end); AM
    // learns 22 000, released 23 000. b at 17 000 (1000 MB left): picked up 17 500, launched 18 500,
    // ends 20 500, seen 21 000, AM learns 21 500, released 22 500.
    assert.deepEqual(
      peekCompletions({ ...input, reservations: new Map([['n1', 'a']]) }),
      new Map([
        ['a', 23_000],
        ['b', 22_500],
      ]),
    );
    // Without the reservation b goes first at 11 000 (picked up 11 500, launched 12 500, ends 14 500,
    // seen 15 000, AM learns 15 500, released 16 500); a reserves n1 at 12 000 and runs as above.
    assert.deepEqual(
      peekCompletions(input),
      new Map([
        ['a', 23_000],
        ['b', 16_500],
      ]),
    );
  });

  test('a reservation for a job whose AM is allocated but not launched was for the AM: released', () => {
    // d's AM was allocated elsewhere (runs from 10 300): n1's reservation for it is stale and n1 serves e.
    // e: allocated at 11 000 on n1, picked up (phase 0) 12 000, launched 13 000, ends 14 000, seen
    // 14 000, AM learns 15 000, released 16 000.
    const input: PeekInput = {
      ...BASE,
      now: 10_000,
      cutoffMs: 40_000,
      nodes: [
        { id: 'n1', memoryMb: 4000, cores: 4, phaseMs: 0 },
        { id: 'n2', memoryMb: 1000, cores: 1, phaseMs: 500 },
      ],
      running: [am('n2', 'd'), am('n1', 'e')],
      jobs: [
        { id: 'd', submitMs: 9300, usedMb: 1000, am: { nodeId: 'n2', runsFromMs: 10_300 }, tasks: [tasks(9000, 1000)] },
        { id: 'e', submitMs: 0, usedMb: 1000, am: { nodeId: 'n1', runsFromMs: 1000 }, tasks: [tasks(1000, 1000)] },
      ],
      reservations: new Map([['n1', 'd']]),
    };
    assert.deepEqual(peekCompletions(input), new Map([['e', 16_000]]));
  });
});

describe('peekCutoffMs', () => {
  test('now + int(d x (ib + 1)) + heartbeat, the longest over the jobs; a job without tasks counts as now; -1 for none', () => {
    const job = (durationMs: number) => ({ tasks: [tasks(1000, durationMs, 0), tasks(1000, durationMs)] });
    assert.equal(
      peekCutoffMs(5000, 1000, [job(200_000), { tasks: [] }, job(100_000)], () => 3),
      5000 + 800_000 + 1000,
    );
    assert.equal(
      peekCutoffMs(0, 1000, [job(333)], () => 0.5),
      499 + 1000,
    );
    assert.equal(
      peekCutoffMs(5000, 1000, [{ tasks: [] }], () => 3),
      5000,
    );
    assert.equal(
      peekCutoffMs(5000, 1000, [], () => 3),
      -1,
    );
  });
});

// ---- The naive reference ----

interface NaiveContainer {
  readonly node: number;
  readonly job: number;
  readonly mb: number;
  readonly cores: number;
  readonly durationMs: number;
  endMs: number;
}

interface NaiveJob {
  readonly id: string;
  readonly submitMs: number;
  used: number;
  amState: 'none' | 'allocated' | 'running';
  runsFromMs: number;
  amContainer: NaiveContainer | undefined;
  amReleased: boolean;
  readonly runs: { mb: number; cores: number; durationMs: number; count: number }[];
  outstanding: number;
  allocatedSince: NaiveContainer[];
  acquired: NaiveContainer[];
  released: NaiveContainer[];
  finished: NaiveContainer[];
}

/** Every millisecond, every node heartbeat, every AM heartbeat and poll, with DSS's container lists. */
function naivePeek(input: PeekInput): Map<string, number> {
  const result = new Map<string, number>();
  const { now, cutoffMs, heartbeatMs, amHeartbeatMs } = input;
  const limit = input.maxAssign > 0 ? input.maxAssign : Number.POSITIVE_INFINITY;
  const nodeAt = new Map(input.nodes.map((n, i) => [n.id, i]));
  const free = input.nodes.map((n) => ({ mb: n.memoryMb, cores: n.cores }));
  const awaiting: NaiveContainer[][] = input.nodes.map(() => []);
  const jobAt = new Map(input.jobs.map((j, i) => [j.id, i]));
  const jobs: NaiveJob[] = input.jobs.map((j) => ({
    id: j.id,
    submitMs: j.submitMs,
    used: j.usedMb,
    amState: j.am === null ? 'none' : j.am.runsFromMs > now ? 'allocated' : 'running',
    runsFromMs: j.am?.runsFromMs ?? Number.NaN,
    amContainer: undefined,
    amReleased: false,
    runs: j.tasks.map((t) => ({ mb: t.memoryMb, cores: t.cores, durationMs: t.durationMs, count: t.count })),
    outstanding: 0,
    allocatedSince: [],
    acquired: [],
    released: [],
    finished: [],
  }));
  let live: NaiveContainer[] = [];
  for (const c of input.running) {
    const node = nodeAt.get(c.nodeId)!;
    const job = jobAt.get(c.jobId) ?? -1;
    const container: NaiveContainer = { node, job, mb: c.memoryMb, cores: c.cores, durationMs: 0, endMs: c.endMs };
    if (c.endMs === Number.POSITIVE_INFINITY) {
      jobs[job]!.amContainer = container;
      free[node]!.mb -= c.memoryMb;
      free[node]!.cores -= c.cores;
      continue;
    }
    if (job >= 0) jobs[job]!.outstanding++;
    if (c.endMs <= now) awaiting[node]!.push(container);
    else {
      free[node]!.mb -= c.memoryMb;
      free[node]!.cores -= c.cores;
      live.push(container);
    }
  }
  const reserved = input.nodes.map(() => -1);
  const reservedForAm = input.nodes.map(() => false);
  for (const [nodeId, jobId] of input.reservations) {
    const n = nodeAt.get(nodeId)!;
    const j = jobAt.get(jobId);
    reserved[n] = j ?? -2;
    reservedForAm[n] = j !== undefined && jobs[j]!.amState !== 'running';
  }

  const nextAsk = (j: number): { mb: number; cores: number; am: boolean } | undefined => {
    const job = jobs[j]!;
    if (job.amState === 'none') return { mb: input.amMb, cores: input.amCores, am: true };
    const run = job.runs.find((r) => r.count > 0);
    return run && { mb: run.mb, cores: run.cores, am: false };
  };
  const fits = (ask: { mb: number; cores: number }, n: number) => ask.mb <= free[n]!.mb && ask.cores <= free[n]!.cores;
  const sortedQueue = (): number[] =>
    jobs
      .map((_, j) => j)
      .filter((j) => nextAsk(j) !== undefined)
      .sort((a, b) => {
        const x = jobs[a]!;
        const y = jobs[b]!;
        if (x.used !== y.used) return x.used - y.used;
        if (x.submitMs !== y.submitMs) return x.submitMs - y.submitMs;
        return x.id < y.id ? -1 : x.id > y.id ? 1 : 0;
      });
  const allocate = (j: number, n: number) => {
    const job = jobs[j]!;
    const ask = nextAsk(j)!;
    free[n]!.mb -= ask.mb;
    free[n]!.cores -= ask.cores;
    job.used += ask.mb;
    if (ask.am) {
      job.amState = 'allocated';
      job.amContainer = {
        node: n,
        job: j,
        mb: ask.mb,
        cores: ask.cores,
        durationMs: 0,
        endMs: Number.POSITIVE_INFINITY,
      };
      return;
    }
    const run = job.runs.find((r) => r.count > 0)!;
    run.count--;
    job.outstanding++;
    job.allocatedSince.push({
      node: n,
      job: j,
      mb: ask.mb,
      cores: ask.cores,
      durationMs: run.durationMs,
      endMs: Number.NaN,
    });
  };
  const schedule = (n: number) => {
    let assigned = 0;
    if (reserved[n] !== -1) {
      const r = reserved[n]!;
      const ask = r >= 0 ? nextAsk(r) : undefined;
      if (ask === undefined || ask.am !== reservedForAm[n]) reserved[n] = -1;
      else if (fits(ask, n)) {
        allocate(r, n);
        reserved[n] = -1;
        if (++assigned >= limit) return;
      } else return;
    }
    let queue = sortedQueue();
    for (let i = 0; i < queue.length; ) {
      const j = queue[i]!;
      if (jobs[j]!.amState === 'allocated') {
        i++;
        continue;
      }
      const ask = nextAsk(j)!;
      if (fits(ask, n)) {
        allocate(j, n);
        if (++assigned >= limit) return;
        queue = sortedQueue();
        i = 0;
      } else {
        reserved[n] = j;
        reservedForAm[n] = ask.am;
        return;
      }
    }
  };
  const amHeartbeat = (j: number, t: number) => {
    const job = jobs[j]!;
    for (const c of job.acquired) {
      c.endMs = t + c.durationMs;
      live.push(c);
    }
    job.outstanding -= job.finished.length;
    job.acquired = job.allocatedSince;
    job.allocatedSince = [];
    job.finished = job.released;
    job.released = [];
    if (nextAsk(j) === undefined && job.outstanding === 0 && job.acquired.length === 0) {
      job.amReleased = true;
      const c = job.amContainer;
      if (c) {
        free[c.node]!.mb += c.mb;
        free[c.node]!.cores += c.cores;
      }
      if (t + amHeartbeatMs < cutoffMs) result.set(job.id, t);
    }
  };

  for (let t = now + 1; t < cutoffMs; t++) {
    const still: NaiveContainer[] = [];
    for (const c of live) {
      if (c.endMs !== t) {
        still.push(c);
        continue;
      }
      free[c.node]!.mb += c.mb;
      free[c.node]!.cores += c.cores;
      awaiting[c.node]!.push(c);
    }
    live = still;
    jobs.forEach((job, j) => {
      if (job.amReleased) return;
      const polls = t >= job.submitMs + 1000 && (t - job.submitMs) % 1000 === 0;
      if (job.amState === 'allocated' && polls) {
        job.amState = 'running';
        job.runsFromMs = t;
        amHeartbeat(j, t);
      } else if (job.amState === 'running' && (t - job.runsFromMs) % amHeartbeatMs === 0) amHeartbeat(j, t);
    });
    input.nodes.forEach((node, n) => {
      if ((t - node.phaseMs) % heartbeatMs !== 0) return;
      for (const c of awaiting[n]!) {
        if (c.job < 0) continue;
        jobs[c.job]!.used -= c.mb;
        jobs[c.job]!.released.push(c);
      }
      awaiting[n] = [];
      schedule(n);
    });
  }
  return result;
}

// ---- Random inputs ----

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let x = s;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

function randomInput(seed: number): PeekInput {
  const random = rng(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const heartbeatMs = pick([1000, 500, 300]);
  const amHeartbeatMs = pick([1000, 400]);
  const amMb = pick([0, 500, 1000]);
  const amCores = pick([0, 1]);
  const nodes: PeekNode[] = Array.from({ length: int(1, 4) }, (_, i) => ({
    id: `n${i}`,
    memoryMb: int(6, 20) * 500,
    cores: int(2, 6),
    phaseMs: int(0, heartbeatMs - 1),
  }));
  const free = nodes.map((n) => ({ mb: n.memoryMb, cores: n.cores }));
  const roomFor = (mb: number, cores: number): number => {
    const options = free.map((f, i) => (f.mb >= mb && f.cores >= cores ? i : -1)).filter((i) => i >= 0);
    if (options.length === 0) return -1;
    const n = pick(options);
    free[n]!.mb -= mb;
    free[n]!.cores -= cores;
    return n;
  };
  const now = int(10_000, 13_000);
  const running: PeekContainer[] = [];
  const jobs: PeekJob[] = Array.from({ length: int(1, 4) }, (_, i) => {
    const id = `j${i}`;
    const submitMs = int(0, now);
    const runs = Array.from({ length: int(0, 2) }, () =>
      tasks(int(1, 14) * 400, int(5, 120) * 100, int(i === 0 ? 1 : 0, 5), int(1, 3)),
    );
    let state = pick(['none', 'running', 'allocated'] as const);
    if (state === 'running' && submitMs + 1000 > now) state = 'allocated';
    if (state === 'none') return { id, submitMs, usedMb: 0, am: null, tasks: runs };
    const n = roomFor(amMb, amCores);
    if (n < 0) return { id, submitMs, usedMb: 0, am: null, tasks: runs };
    running.push({ nodeId: nodes[n]!.id, jobId: id, memoryMb: amMb, cores: amCores, endMs: Number.POSITIVE_INFINITY });
    if (state === 'allocated') {
      const runsFromMs = submitMs + (Math.floor((now - submitMs) / 1000) + 1) * 1000;
      return { id, submitMs, usedMb: amMb, am: { nodeId: nodes[n]!.id, runsFromMs }, tasks: runs };
    }
    const runsFromMs = submitMs + int(1, Math.floor((now - submitMs) / 1000)) * 1000;
    let usedMb = amMb;
    for (let k = int(0, 3); k > 0; k--) {
      const mb = int(1, 8) * 400;
      const m = roomFor(mb, 1);
      if (m < 0) break;
      running.push({ nodeId: nodes[m]!.id, jobId: id, memoryMb: mb, cores: 1, endMs: now + int(-800, 20_000) });
      usedMb += mb;
    }
    return { id, submitMs, usedMb, am: { nodeId: nodes[n]!.id, runsFromMs }, tasks: runs };
  });
  const reservations = new Map<string, string>();
  for (const node of nodes) {
    if (random() < 0.3) reservations.set(node.id, random() < 0.15 ? 'gone' : pick(jobs).id);
  }
  return {
    now,
    cutoffMs: now + int(3000, 40_000),
    heartbeatMs,
    amHeartbeatMs,
    amMb,
    amCores,
    maxAssign: pick([0, 1, 1, 2]),
    nodes,
    running,
    jobs,
    reservations,
  };
}

describe('peekCompletions against a naive every-heartbeat simulation', () => {
  test('identical limits on 300 random small inputs', () => {
    let completed = 0;
    for (let seed = 1; seed <= 300; seed++) {
      const input = randomInput(seed);
      const expected = naivePeek(input);
      completed += expected.size;
      assert.deepEqual(
        peekCompletions(input),
        expected,
        `seed ${seed}: ${JSON.stringify({ ...input, reservations: [...input.reservations] })}`,
      );
    }
    // The inputs exercise completions, not only empty maps.
    assert.ok(completed > 150, `only ${completed} completions in 300 inputs`);
  });
});
