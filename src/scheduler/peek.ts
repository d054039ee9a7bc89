/**
 * DSS's PEEK look-ahead (the YARN-ME paper's simulator, epfl-labos/DSS), as a pure function: from a
 * snapshot of the cluster, simulate regular-only allocation the way DSS's YARN FairScheduler and its
 * SLS-style application masters do it, up to a cutoff, and say for each job that completes by then
 * the elastic time limit PEEK gives it. yarn-me under `--compat dss` admits an elastic grant only if
 * the task would end by its job's limit (schedulers/oracle.py, YarnPeekScheduler.allocate_on_node).
 *
 * A job absent from the result has no limit, and DSS then grants it elastic containers unchecked
 * (schedulers/oracle.py: `elastic_time_limits[job_id] is sys.maxint`).
 *
 * What is simulated (DSS's schedulers/yarn.py YarnFairScheduler.schedule, events/yarn/yarn.py's node
 * and AM heartbeats, models/oracle/peek.py and events/yarn/elastic/peek.py):
 * - Node heartbeats at phaseMs + k * heartbeatMs. A heartbeat first applies the consumption drops of
 *   the containers that ended on the node since its last one, then schedules: a reserved node tries
 *   only its application's next container (releasing the reservation if that application has none
 *   left, or its next container is of the other kind, AM or task); otherwise the first job in fair
 *   order [MB in use, submit time, id] whose AM runs, or whose next container is its AM, gets the
 *   node, or reserves it if its container does not fit. `maxAssign` containers at most per
 *   heartbeat (1: DSS's and YARN's assignmultiple=false); reservations are unlimited.
 * - An AM allocated at t launches at its job's first AM poll after t (polls every 1000 ms from the
 *   job's submission + 1000); its tasks are allocated only from then. A task allocated at t is
 *   picked up at its AM's first heartbeat after t and launched one AM heartbeat later; resources are
 *   booked at allocation and freed when the container ends; its job's consumption drops at the
 *   node's first heartbeat from then on. The AM is released one AM heartbeat after the AM learns of
 *   its last task's end (the AM heartbeat after that node heartbeat), and the job completes one AM
 *   heartbeat later. PEEK's limit for a completed job is the latest end among its containers, which
 *   is that AM release (DSS counts the AM among the job's finished containers).
 * - Events at the same instant: container ends and AM launches, then node heartbeats in the order of
 *   `nodes`. The look-ahead runs from just after `now` (heartbeats at times > now) and handles events
 *   strictly before `cutoffMs` (DSS ends the copy with an event queued first at the cutoff).
 *
 * The result is as if every node heartbeat at every phase point, but only heartbeats that can change
 * something are simulated: a node sleeps while it is reserved by a job whose next container does
 * not fit on it, or while no job in the queue can be given a container (every waiting job's AM is
 * allocated but not launched). It is woken by a container ending on it, by its reserving job's next
 * ask changing, and (unreserved) by an AM launching. Launches, ends and AM releases follow from the
 * heartbeat phases in closed form (no AM heartbeat events), and alike tasks are kept as counts.
 *
 * Where DSS differs: its own node heartbeats are lazy too, by rules that are not exact (a node it
 * stops heartbeating keeps a reservation for a job that has since been served elsewhere until a
 * container ends on it), and it orders events at one instant by when they were queued. Reservations
 * are told apart only as for an AM or for a task (DSS also tells maps from reduces).
 */
import { MinimrError } from '../errors.js';
import { EventHeap } from '../util/pure.js';

export interface PeekNode {
  readonly id: string;
  readonly memoryMb: number;
  readonly cores: number;
  /** its heartbeats fall at phaseMs + k * heartbeatMs */
  readonly phaseMs: number;
}

export interface PeekContainer {
  readonly nodeId: string;
  readonly jobId: string;
  readonly memoryMb: number;
  readonly cores: number;
  /**
   * When it frees its resources; Infinity for an AM (held until its job's last task is done, then
   * released through the AM's heartbeats; its job must be among the jobs). An allocated container
   * not yet launched is given with its predicted end.
   */
  readonly endMs: number;
}

export interface PeekTasks {
  readonly memoryMb: number;
  readonly cores: number;
  readonly durationMs: number;
  readonly count: number;
}

export interface PeekJob {
  readonly id: string;
  readonly submitMs: number;
  /** its fair-share consumption now (MB of its running and allocated containers, its AM's included) */
  readonly usedMb: number;
  /**
   * Its AM: not yet allocated (null), or where it is and from when it runs (its first AM poll after
   * its allocation; tasks are allocated only from then; its heartbeats keep that phase).
   */
  readonly am: { readonly nodeId: string; readonly runsFromMs: number } | null;
  /** tasks not yet allocated, in order, as runs of alike ones (empty once all are allocated) */
  readonly tasks: readonly PeekTasks[];
}

export interface PeekInput {
  /** the snapshot's time: everything at `now` is done, the look-ahead's heartbeats fall after it */
  readonly now: number;
  /** events at or after it are not simulated (peekCutoffMs) */
  readonly cutoffMs: number;
  readonly heartbeatMs: number;
  readonly amHeartbeatMs: number;
  readonly amMb: number;
  readonly amCores: number;
  /** containers per node heartbeat at most; 0: as many as fit */
  readonly maxAssign: number;
  readonly nodes: readonly PeekNode[];
  /** every container holding resources now, AMs included */
  readonly running: readonly PeekContainer[];
  /**
   * Every job that has arrived and not completed (as DSS copies its running jobs), those with all
   * tasks allocated included (tasks: []). The queue order is recomputed from usedMb, submitMs, id.
   */
  readonly jobs: readonly PeekJob[];
  /**
   * node id -> id of the job it is reserved for: for its AM if the job's AM is not allocated, else
   * for its next task. A reservation for an AM since allocated elsewhere is to be left out (DSS
   * releases it at the node's next heartbeat, which is the same as not having it).
   */
  readonly reservations: ReadonlyMap<string, string>;
}

/** SLS's delay between an AM's allocation polls (DSS events/yarn/yarn.py, SLS_AM_ALLOCATION_TO_CONTAINER_REQ_DELAY). */
export const PEEK_AM_POLL_MS = 1000;

/**
 * PEEK's cutoff (DSS models/oracle/peek.py, compute_cutoff_time): the latest of now + int(d x (ib + 1))
 * + heartbeatMs over the jobs, d being the duration of a job's first pending task (AM aside) and ib
 * its penalty's initial bump (DSS's `ib`: for a `step:F` penalty, F); a job without pending tasks
 * counts as now. -1 without jobs, as DSS.
 */
export function peekCutoffMs(
  now: number,
  heartbeatMs: number,
  jobs: readonly { readonly tasks: readonly PeekTasks[] }[],
  initialBump: (tasks: PeekTasks) => number,
): number {
  let cutoff = -1;
  for (const job of jobs) {
    const first = job.tasks.find((t) => t.count > 0);
    const ahead = first === undefined ? 0 : Math.trunc(first.durationMs * (initialBump(first) + 1)) + heartbeatMs;
    if (now + ahead > cutoff) cutoff = now + ahead;
  }
  return cutoff;
}

/** The first of phase + k * period (k any integer) at or after t. */
function pointAtOrAfter(phase: number, period: number, t: number): number {
  return phase + Math.ceil((t - phase) / period) * period;
}

/** The first of phase + k * period strictly after t. */
function pointAfter(phase: number, period: number, t: number): number {
  return phase + (Math.floor((t - phase) / period) + 1) * period;
}

const TASK_END = 0;
const AM_RELEASE = 1;
const AM_LAUNCH = 2;
const NODE_HEARTBEAT = 3;

/** What a look-ahead event does: its kind, node and job indexes, and the memory and cores it gives back. */
interface PeekEvent {
  readonly kind: number;
  readonly node: number;
  readonly job: number;
  readonly memoryMb: number;
  readonly cores: number;
}

const AM_NOT_ALLOCATED = 0;
const AM_ALLOCATED = 1;
const AM_RUNNING = 2;

/**
 * For each job that completes before cutoffMs in a regular-only look-ahead as DSS's PEEK runs it:
 * its elastic time limit, the latest end among its containers there, i.e. its AM's release
 * (DSS events/yarn/elastic/peek.py, run_peek_simulation). Jobs that do not complete are absent.
 */
export function peekCompletions(input: PeekInput): Map<string, number> {
  const result = new Map<string, number>();
  const { now, cutoffMs, heartbeatMs, amHeartbeatMs, amMb, amCores, nodes, jobs } = input;
  if (cutoffMs <= now) return result;
  const maxAssign = input.maxAssign > 0 ? input.maxAssign : Number.POSITIVE_INFINITY;

  const nodeIndex = new Map<string, number>();
  nodes.forEach((n, i) => nodeIndex.set(n.id, i));
  const nodeCount = nodes.length;
  const freeMb = nodes.map((n) => n.memoryMb);
  const freeCores = nodes.map((n) => n.cores);
  const phase = nodes.map((n) => ((n.phaseMs % heartbeatMs) + heartbeatMs) % heartbeatMs);
  /** the job a node is reserved for, or -1; and whether for its AM */
  const reservedBy = new Array<number>(nodeCount).fill(-1);
  const reservedForAm = new Array<boolean>(nodeCount).fill(false);
  /** whether a heartbeat of the node is queued */
  const heartbeatQueued = new Array<boolean>(nodeCount).fill(false);
  /** per node, (job, MB) pairs of containers ended there whose consumption drop awaits its next heartbeat */
  const pendingDrops: number[][] = nodes.map(() => []);

  const jobIndex = new Map<string, number>();
  jobs.forEach((j, i) => jobIndex.set(j.id, i));
  const jobCount = jobs.length;
  const used = jobs.map((j) => j.usedMb);
  const amState = jobs.map((j) =>
    j.am === null ? AM_NOT_ALLOCATED : j.am.runsFromMs > now ? AM_ALLOCATED : AM_RUNNING,
  );
  const amRunsFrom = jobs.map((j) => (j.am === null ? Number.NaN : j.am.runsFromMs));
  /** where the job's AM is and what it holds (-1: no AM container known yet) */
  const amNode = new Array<number>(jobCount).fill(-1);
  const amHeldMb = new Array<number>(jobCount).fill(0);
  const amHeldCores = new Array<number>(jobCount).fill(0);
  /** the latest node heartbeat at which one of the job's task containers is seen ended */
  const lastSeenEnd = new Array<number>(jobCount).fill(Number.NEGATIVE_INFINITY);
  const runIndex = new Array<number>(jobCount).fill(0);
  const runLeft = jobs.map((j) => j.tasks[0]?.count ?? 0);
  /** nodes each job has reserved (may hold stale entries; checked against reservedBy) */
  const reservedNodes: number[][] = jobs.map(() => []);
  /** unreserved nodes asleep because no queued job could be given a container */
  let idleNodes: number[] = [];

  // Ranked: at one instant ends and AM launches (rank 0) come before node heartbeats (1 + node index).
  const heap = new EventHeap<PeekEvent>();
  const enqueue = (time: number, rank: number, kind: number, node: number, job: number, memoryMb = 0, cores = 0) =>
    heap.push(time, { kind, node, job, memoryMb, cores }, rank);

  // The queue: jobs with a container to ask for, sorted as DSS's queue_down_job/queue_up_job keep it.
  const queued = new Array<boolean>(jobCount).fill(false);
  const queue: number[] = [];
  /** each queued job's index in the queue */
  const place = new Array<number>(jobCount).fill(-1);
  /** queued jobs that can be given a container (not waiting for their AM to launch) */
  let eligibleQueued = 0;
  const fairBefore = (a: number, b: number): boolean => {
    if (used[a] !== used[b]) return used[a]! < used[b]!;
    const ja = jobs[a]!;
    const jb = jobs[b]!;
    if (ja.submitMs !== jb.submitMs) return ja.submitMs < jb.submitMs;
    return ja.id < jb.id;
  };

  /** skips empty runs; true if the job still has a task to allocate */
  const settleRuns = (j: number): boolean => {
    const tasks = jobs[j]!.tasks;
    while (runLeft[j]! <= 0 && runIndex[j]! < tasks.length) {
      runIndex[j]!++;
      runLeft[j] = tasks[runIndex[j]!]?.count ?? 0;
    }
    return runIndex[j]! < tasks.length;
  };

  for (let j = 0; j < jobCount; j++) {
    const hasTasks = settleRuns(j);
    if (amState[j] === AM_NOT_ALLOCATED || hasTasks) {
      queued[j] = true;
      queue.push(j);
    }
  }
  queue.sort((a, b) => (fairBefore(a, b) ? -1 : fairBefore(b, a) ? 1 : 0));
  queue.forEach((j, i) => {
    place[j] = i;
    if (amState[j] !== AM_ALLOCATED) eligibleQueued++;
  });

  const ensureHeartbeat = (n: number, time: number, rank: number): void => {
    if (heartbeatQueued[n]) return;
    let at = pointAtOrAfter(phase[n]!, heartbeatMs, time);
    if (at === time && 1 + n <= rank) at += heartbeatMs;
    if (at >= cutoffMs) return;
    heartbeatQueued[n] = true;
    enqueue(at, 1 + n, NODE_HEARTBEAT, n, -1);
  };

  /** the AM heartbeat at which job j's AM is released, once all its tasks are allocated */
  const amReleaseTime = (j: number): number => {
    const runsFrom = amRunsFrom[j]!;
    if (lastSeenEnd[j] === Number.NEGATIVE_INFINITY) {
      // No task container left to wait for: released at its launch, or at its next heartbeat.
      return runsFrom > now ? runsFrom : pointAfter(runsFrom, amHeartbeatMs, now);
    }
    return pointAfter(runsFrom, amHeartbeatMs, lastSeenEnd[j]!) + amHeartbeatMs;
  };

  const scheduleAmRelease = (j: number): void => {
    const releaseAt = amReleaseTime(j);
    if (releaseAt + amHeartbeatMs < cutoffMs) result.set(jobs[j]!.id, releaseAt);
    if (releaseAt < cutoffMs && amNode[j]! >= 0) {
      enqueue(releaseAt, 0, AM_RELEASE, amNode[j]!, j, amHeldMb[j]!, amHeldCores[j]!);
    }
  };

  // Containers now.
  for (const c of input.running) {
    const n = nodeIndex.get(c.nodeId);
    if (n === undefined) throw new MinimrError('EBADCONF', `peek: container on unknown node '${c.nodeId}'`);
    const j = jobIndex.get(c.jobId) ?? -1;
    if (c.endMs <= now) {
      // Ended already: its resources are free, its job's consumption drops at the node's next heartbeat.
      if (j >= 0) {
        pendingDrops[n]!.push(j, c.memoryMb);
        const seen = pointAfter(phase[n]!, heartbeatMs, now);
        if (seen > lastSeenEnd[j]!) lastSeenEnd[j] = seen;
      }
      continue;
    }
    freeMb[n]! -= c.memoryMb;
    freeCores[n]! -= c.cores;
    if (c.endMs === Number.POSITIVE_INFINITY) {
      if (j < 0 || jobs[j]!.am === null) {
        throw new MinimrError('EBADCONF', `peek: AM container of job '${c.jobId}' whose job or AM is not given`);
      }
      amNode[j] = n;
      amHeldMb[j] = c.memoryMb;
      amHeldCores[j] = c.cores;
      continue;
    }
    if (c.endMs < cutoffMs) enqueue(c.endMs, 0, TASK_END, n, j, c.memoryMb, c.cores);
    if (j >= 0) {
      const seen = pointAtOrAfter(phase[n]!, heartbeatMs, c.endMs);
      if (seen > lastSeenEnd[j]!) lastSeenEnd[j] = seen;
    }
  }
  for (let j = 0; j < jobCount; j++) {
    const am = jobs[j]!.am;
    if (am === null) continue;
    if (amNode[j]! < 0) amNode[j] = nodeIndex.get(am.nodeId) ?? -1;
    if (amState[j] === AM_ALLOCATED) enqueue(amRunsFrom[j]!, 0, AM_LAUNCH, -1, j);
    else if (!queued[j]) scheduleAmRelease(j);
  }
  for (const [nodeId, jobId] of input.reservations) {
    const n = nodeIndex.get(nodeId);
    const j = jobIndex.get(jobId);
    if (n === undefined) continue;
    // A reservation for a job not given is released at the node's next heartbeat.
    reservedBy[n] = j ?? jobCount;
    if (j !== undefined) {
      // For the AM while the job's AM is not launched (a task is asked only once it runs).
      reservedForAm[n] = amState[j] !== AM_RUNNING;
      reservedNodes[j]!.push(n);
    }
  }
  for (let n = 0; n < nodeCount; n++) ensureHeartbeat(n, now, Number.POSITIVE_INFINITY);

  // The job's next ask: AM or task, its size. Valid only for a queued job.
  const askMb = (j: number): number =>
    amState[j] === AM_NOT_ALLOCATED ? amMb : jobs[j]!.tasks[runIndex[j]!]!.memoryMb;
  const askCores = (j: number): number =>
    amState[j] === AM_NOT_ALLOCATED ? amCores : jobs[j]!.tasks[runIndex[j]!]!.cores;
  const fits = (j: number, n: number): boolean => askMb(j) <= freeMb[n]! && askCores(j) <= freeCores[n]!;
  const eligible = (j: number): boolean => amState[j] !== AM_ALLOCATED;

  const queueDown = (j: number): void => {
    let i = place[j]!;
    while (i < queue.length - 1 && fairBefore(queue[i + 1]!, j)) {
      const k = queue[i + 1]!;
      queue[i] = k;
      place[k] = i;
      i++;
    }
    queue[i] = j;
    place[j] = i;
  };
  const queueUp = (j: number): void => {
    let i = place[j]!;
    while (i > 0 && fairBefore(j, queue[i - 1]!)) {
      const k = queue[i - 1]!;
      queue[i] = k;
      place[k] = i;
      i--;
    }
    queue[i] = j;
    place[j] = i;
  };
  const leaveQueue = (j: number): void => {
    queued[j] = false;
    queue.splice(place[j]!, 1);
    for (let i = place[j]!; i < queue.length; i++) place[queue[i]!] = i;
    place[j] = -1;
  };

  /** wakes the nodes reserved by j: its next ask changed, or it has none left */
  const wakeReservedBy = (j: number, time: number, rank: number): void => {
    const list = reservedNodes[j]!;
    const still: number[] = [];
    for (const n of list) {
      if (reservedBy[n] !== j || still.includes(n)) continue;
      still.push(n);
      ensureHeartbeat(n, time, rank);
    }
    reservedNodes[j] = still;
  };

  /** allocates job j's next container on node n at `time` (during that node's heartbeat) */
  const allocate = (j: number, n: number, time: number, rank: number): void => {
    const mb = askMb(j);
    const cores = askCores(j);
    freeMb[n]! -= mb;
    freeCores[n]! -= cores;
    used[j]! += mb;
    let askChanged: boolean;
    if (amState[j] === AM_NOT_ALLOCATED) {
      amState[j] = AM_ALLOCATED;
      eligibleQueued--;
      const submit = jobs[j]!.submitMs;
      const poll = submit + Math.max(1, Math.floor((time - submit) / PEEK_AM_POLL_MS) + 1) * PEEK_AM_POLL_MS;
      amRunsFrom[j] = poll;
      amNode[j] = n;
      amHeldMb[j] = mb;
      amHeldCores[j] = cores;
      if (poll < cutoffMs) enqueue(poll, 0, AM_LAUNCH, -1, j);
      askChanged = true;
    } else {
      const tasks = jobs[j]!.tasks;
      const run = tasks[runIndex[j]!]!;
      const pickedUp = pointAfter(amRunsFrom[j]!, amHeartbeatMs, time);
      const endAt = pickedUp + amHeartbeatMs + run.durationMs;
      if (endAt < cutoffMs) enqueue(endAt, 0, TASK_END, n, j, mb, cores);
      const seen = pointAtOrAfter(phase[n]!, heartbeatMs, endAt);
      if (seen > lastSeenEnd[j]!) lastSeenEnd[j] = seen;
      runLeft[j]!--;
      askChanged = false;
      if (runLeft[j] === 0) {
        settleRuns(j);
        const next = tasks[runIndex[j]!];
        askChanged = next === undefined || next.memoryMb !== run.memoryMb || next.cores !== run.cores;
      }
    }
    const hasTasks = runIndex[j]! < jobs[j]!.tasks.length;
    if (!hasTasks) {
      if (amState[j] === AM_RUNNING) eligibleQueued--;
      leaveQueue(j);
      // All allocated: the AM's release follows (at its launch if the job had no tasks at all).
      if (amState[j] === AM_RUNNING) scheduleAmRelease(j);
    } else queueDown(j);
    if (askChanged) wakeReservedBy(j, time, rank);
  };

  const reserve = (n: number, j: number): void => {
    reservedBy[n] = j;
    reservedForAm[n] = amState[j] === AM_NOT_ALLOCATED;
    reservedNodes[j]!.push(n);
  };

  /** DSS's YarnFairScheduler.schedule on one node */
  const schedule = (n: number, time: number, rank: number): void => {
    let assigned = 0;
    const r = reservedBy[n]!;
    if (r >= 0) {
      if (r >= jobCount || !queued[r] || reservedForAm[n] !== (amState[r] === AM_NOT_ALLOCATED)) {
        reservedBy[n] = -1;
      } else if (fits(r, n)) {
        reservedBy[n] = -1;
        allocate(r, n, time, rank);
        assigned++;
        if (assigned >= maxAssign) return;
      } else return;
    }
    let i = 0;
    while (i < queue.length) {
      const j = queue[i]!;
      if (!eligible(j)) {
        i++;
        continue;
      }
      if (fits(j, n)) {
        allocate(j, n, time, rank);
        assigned++;
        if (assigned >= maxAssign) return;
        i = 0;
      } else {
        reserve(n, j);
        return;
      }
    }
  };

  /** whether the node's next heartbeat could change anything */
  const wantsHeartbeat = (n: number): boolean => {
    const r = reservedBy[n]!;
    if (r >= 0) {
      if (r >= jobCount || !queued[r] || reservedForAm[n] !== (amState[r] === AM_NOT_ALLOCATED)) return true;
      return fits(r, n);
    }
    return eligibleQueued > 0;
  };

  for (let event = heap.pop(); event !== undefined; event = heap.pop()) {
    const { time, rank } = event;
    const { kind, node: n, job: j } = event.value;
    if (time >= cutoffMs) break;
    switch (kind) {
      case TASK_END:
      case AM_RELEASE: {
        const memoryMb = event.value.memoryMb;
        freeMb[n]! += memoryMb;
        freeCores[n]! += event.value.cores;
        if (kind === TASK_END && j >= 0) pendingDrops[n]!.push(j, memoryMb);
        ensureHeartbeat(n, time, rank);
        break;
      }
      case AM_LAUNCH: {
        amState[j] = AM_RUNNING;
        if (queued[j]) {
          eligibleQueued++;
          const sleeping = idleNodes;
          idleNodes = [];
          for (const m of sleeping) if (reservedBy[m] === -1) ensureHeartbeat(m, time, rank);
        } else scheduleAmRelease(j);
        break;
      }
      default: {
        heartbeatQueued[n] = false;
        const drops = pendingDrops[n]!;
        if (drops.length > 0) {
          for (let k = 0; k < drops.length; k += 2) {
            const dropped = drops[k]!;
            used[dropped]! -= drops[k + 1]!;
            if (queued[dropped]) queueUp(dropped);
          }
          drops.length = 0;
        }
        schedule(n, time, rank);
        if (wantsHeartbeat(n)) ensureHeartbeat(n, time, rank);
        else if (reservedBy[n] === -1) idleNodes.push(n);
      }
    }
  }
  return result;
}
