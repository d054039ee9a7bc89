/**
 * yarn-me's PEEK admission check (`admission: 'peek'`, part of `compat: 'dss'`): DSS's way of
 * deciding whether an elastic grant would make its task its job's straggler. Where the timeline
 * generator (timeline.ts) list-schedules the queue at ideal memory with the head job blocking the
 * whole cluster, PEEK runs the regular allocation itself ahead (peek.ts: ApplicationMasters, node
 * heartbeats, one container per heartbeat, reservations that block only their node) up to its
 * cutoff, and a job's limit is when it completed there. A job that did not complete by the cutoff
 * has no limit: DSS then grants it elastic containers unchecked (schedulers/oracle.py).
 *
 * This module turns the policy's view (a snapshot, its AMs, reservations and the node heartbeats it
 * has seen) into the look-ahead's input. A policy never reads a clock, so the node heartbeat period
 * and phases are learnt from the heartbeat triggers themselves (HeartbeatPhases).
 */
import type { AppMasters } from './app-masters.js';
import { peekCompletions, peekCutoffMs, type PeekContainer, type PeekJob, type PeekTasks } from './peek.js';
import type { AttemptView, ClusterSnapshot, JobView, PenaltyModel, TaskView } from './types.js';

/** Each node's heartbeat phase and the heartbeat period, as seen from the heartbeat triggers. */
export class HeartbeatPhases {
  private readonly lastByNode = new Map<string, number>();
  /** The shortest gap seen between two heartbeats of one node; until one is seen, `fallbackMs`. */
  private periodMs = 0;

  constructor(private readonly fallbackMs: number) {}

  get period(): number {
    return this.periodMs > 0 ? this.periodMs : this.fallbackMs;
  }

  /** A heartbeat of `nodeId` at `now`. */
  saw(nodeId: string, now: number): void {
    const last = this.lastByNode.get(nodeId);
    if (last !== undefined && now > last && (this.periodMs === 0 || now - last < this.periodMs))
      this.periodMs = now - last;
    this.lastByNode.set(nodeId, now);
  }

  /** The node's first heartbeat after `t` (its phase from its last heartbeat seen; `t` itself when none was seen). */
  nextAfter(nodeId: string, t: number): number {
    const last = this.lastByNode.get(nodeId);
    if (last === undefined) return t;
    const period = this.period;
    return last + (Math.floor((t - last) / period) + 1) * period;
  }

  /** The node's phase in [0, period): from its last heartbeat, else its place among `count` nodes over the period. */
  phaseOf(nodeId: string, place: number, count: number): number {
    const period = this.period;
    const last = this.lastByNode.get(nodeId);
    const at = last ?? Math.floor((place * period) / Math.max(1, count));
    return ((at % period) + period) % period;
  }
}

/** DSS's initial bump `ib` of a task's penalty model (its `step:F` is F); 1 for models without one. */
function initialBumpOf(penalty: PenaltyModel | undefined): number {
  return penalty?.kind === 'step' ? penalty.factor : 1;
}

/** A job's pending tasks not yet launched, as PEEK's runs of alike ones, with each run's initial bump. */
function peekTasksOf(job: JobView, launched: ReadonlySet<string>, bumps: WeakMap<PeekTasks, number>): PeekTasks[] {
  const runs: PeekTasks[] = [];
  let last: { memoryMb: number; cores: number; durationMs: number; count: number; penalty?: PenaltyModel } | undefined;
  const close = () => {
    if (!last) return;
    const run: PeekTasks = { memoryMb: last.memoryMb, cores: 1, durationMs: last.durationMs, count: last.count };
    bumps.set(run, initialBumpOf(last.penalty));
    runs.push(run);
  };
  for (const t of job.pendingTasks as readonly TaskView[]) {
    if (launched.has(t.id)) continue;
    const durationMs = t.idealDurationMs ?? 0;
    if (last && last.memoryMb === t.memoryMb && last.durationMs === durationMs && last.penalty === t.penalty)
      last.count++;
    else {
      close();
      last = { memoryMb: t.memoryMb, cores: 1, durationMs, count: 1, ...(t.penalty ? { penalty: t.penalty } : {}) };
    }
  }
  close();
  return runs;
}

export interface PeekView {
  readonly snapshot: ClusterSnapshot;
  readonly ams: AppMasters;
  readonly reservations: ReadonlyArray<readonly [string, string]>;
  /** Nodes reserved for their job's AM (the others are reserved for a task). */
  readonly reservedForAm: ReadonlySet<string>;
  readonly phases: HeartbeatPhases;
  /** Memory each job holds now, its AM's included, MB. */
  readonly usedMb: (jobId: string) => number;
  /** Tasks launched in this call (no longer pending). */
  readonly launched: ReadonlySet<string>;
  /** When a running attempt ends, as the policy predicts it (its launch delay included). */
  readonly endOf: (a: AttemptView) => number;
  /** Containers per node heartbeat at most; 0: all that fit. */
  readonly maxAssign: number;
  /**
   * Containers that ended and whose nodes have not reported it, still counted in their jobs' usedMb
   * (usageAtReports): the look-ahead drops them at each node's next heartbeat, as DSS's copy of its state.
   */
  readonly unreported?: Iterable<{ readonly nodeId: string; readonly jobId: string; readonly memoryMb: number }>;
}

/** Each job's elastic time limit from a PEEK look-ahead; a job absent has none. */
export function peekLimits(view: PeekView): Map<string, number> {
  const { snapshot, ams } = view;
  const now = snapshot.now;
  const heartbeatMs = view.phases.period;
  const bumps = new WeakMap<PeekTasks, number>();
  const jobs: PeekJob[] = snapshot.jobs.map((job) => {
    const am = ams.of(job.id);
    return {
      id: job.id,
      submitMs: job.submitTime,
      usedMb: view.usedMb(job.id),
      am: am ? { nodeId: am.nodeId, runsFromMs: am.runsFromMs } : null,
      tasks: peekTasksOf(job, view.launched, bumps),
    };
  });
  const running: PeekContainer[] = [];
  for (const job of snapshot.jobs) {
    for (const a of job.runningAttempts)
      running.push({ nodeId: a.workerId, jobId: job.id, memoryMb: a.memoryMb, cores: 1, endMs: view.endOf(a) });
    const am = ams.of(job.id);
    if (am) running.push({ nodeId: am.nodeId, jobId: job.id, memoryMb: am.memoryMb, cores: am.cores, endMs: Infinity });
  }
  for (const c of view.unreported ?? []) running.push({ ...c, cores: 1, endMs: now });
  // A reservation held for an AM placed since on another node is released at that node's next
  // heartbeat, and one of a job whose AM does not run yet (yarn-me.ts, DSS alike): the look-ahead
  // starts without them.
  const reservations = new Map(
    view.reservations.filter(([nodeId, jobId]) => {
      const am = ams.of(jobId);
      return !am || (!view.reservedForAm.has(nodeId) && am.runsFromMs <= now);
    }),
  );
  const workers = snapshot.workers;
  const cutoffMs = peekCutoffMs(now, heartbeatMs, jobs, (t) => bumps.get(t) ?? 1);
  if (cutoffMs < 0) return new Map();
  return peekCompletions({
    now,
    cutoffMs,
    heartbeatMs,
    amHeartbeatMs: ams.heartbeatMs > 0 ? ams.heartbeatMs : heartbeatMs,
    amMb: ams.memoryMb,
    amCores: ams.cores,
    maxAssign: view.maxAssign,
    nodes: workers.map((w, i) => ({
      id: w.id,
      memoryMb: w.memoryMb,
      cores: w.mapSlots > 0 ? w.mapSlots : w.reduceSlots,
      phaseMs: view.phases.phaseOf(w.id, i, workers.length),
    })),
    running,
    jobs,
    reservations,
  });
}
