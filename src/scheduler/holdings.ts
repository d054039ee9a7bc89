/**
 * What runs on each node, kept between calls of the YARN-shaped policies (yarn-me.ts's step 4
 * backfilling and step 5 disk share read it): a call on 3000 nodes must not read the cluster's
 * 48,000 running attempts to learn what runs on the few nodes it looks at.
 *
 * The books hand out the same JobView while a job does not change, and the same AttemptView while
 * an attempt does not (types.ts), so `update` walks the snapshot's jobs and looks inside only those
 * whose view is new: the attempts that appeared are added to their node's list, those gone are
 * taken out, those with a new view (progress) are refreshed. A node's list is in the order a walk
 * of the snapshot would give (its jobs in snapshot order, a job's attempts in runningAttempts
 * order), so sums over it (the disk share's spill rates) add up in the very order a call that
 * built it from scratch did: the result is the same to the last bit. Jobs never change places in
 * the books' list, nor attempts in their job's runningAttempts: `update` compares the old and new
 * lists side by side, and what is not where the walk expects it (came, went, or in a hand-built
 * snapshot moved) is taken out and put in again. A snapshot that repeats a job or an attempt, or
 * moves an attempt to another node, gets lists built from scratch.
 *
 * What depends on the clock (an end already passed is taken as now; an attempt without estimate
 * is predicted from its progress and the time it has run) is worked out at each read.
 *
 * The same attempts are also kept in the order they are predicted to end (`inReleaseOrder`, which
 * the timeline generator reads at every rebuild, on job arrivals and departures): those that came
 * since the last read are sorted and merged in, those gone are dropped, so a rebuild on 3000 nodes
 * costs a pass over the running attempts' list, not a prediction and a heap insertion for each of
 * its 48,000 attempts.
 */
import { DEFAULT_DISK_MBPS, elasticDiskMBps, penalizedMs } from './penalty.js';
import type { RunningReleases, TimelineRelease } from './timeline.js';
import type { AttemptView, JobView, TaskKind, WorkerView } from './types.js';

/** A running attempt as the policy sees it: where, what it holds, until when. */
export interface Holding {
  readonly jobId: string;
  readonly kind: TaskKind;
  readonly memoryMb: number;
  readonly endMs: number;
  /** Its spill's disk rate, MB/s (elastic attempts only). */
  readonly diskMBps: number;
}

/** A worker's disk rate, MB/s (the default for a worker that states none). */
export function diskOf(worker: WorkerView): number {
  return worker.diskMBps > 0 ? worker.diskMBps : DEFAULT_DISK_MBPS;
}

/** A running attempt's predicted duration from its task's estimates; undefined when it has none. */
export function predictedAttemptMs(a: AttemptView, worker: WorkerView | undefined): number | undefined {
  if (a.idealDurationMs === undefined) return undefined;
  return penalizedMs(
    a.idealMemoryMb,
    a.penalty,
    a.idealDurationMs,
    a.memoryMb,
    worker ? diskOf(worker) : DEFAULT_DISK_MBPS,
  );
}

/** The attempt's spill rate on its worker, MB/s: 0 unless elastic with estimates on a live worker. */
function spillRateOf(a: AttemptView, worker: WorkerView | undefined): number {
  return a.elastic && a.idealDurationMs !== undefined && worker
    ? elasticDiskMBps(a.idealMemoryMb, a.penalty, a.idealDurationMs, a.memoryMb, diskOf(worker))
    : 0;
}

/** When an attempt is predicted to end, from its estimate (`predictedMs`) or else its progress; never before now. */
function endOf(a: AttemptView, predictedMs: number | undefined, now: number): number {
  // Without an estimate: as long again as it has run, scaled by its progress.
  const elapsed = Math.max(1, now - a.startTime);
  const endMs =
    predictedMs !== undefined
      ? a.startTime + predictedMs
      : a.progress > 0
        ? a.startTime + elapsed / a.progress
        : now + elapsed;
  return Math.max(now, endMs);
}

/** Its predicted duration from its launch decision: the wait before its start (Decision.startDelayMs) included. */
function fromLaunch(predictedMs: number | undefined, startDelayMs: number): number | undefined {
  return predictedMs === undefined ? undefined : startDelayMs + predictedMs;
}

/**
 * A running attempt as a holding at `now` (its worker: the live one of its id, if any), whose work
 * began `startDelayMs` after its launch decision.
 */
export function holdingOf(a: AttemptView, worker: WorkerView | undefined, now: number, startDelayMs = 0): Holding {
  return {
    jobId: a.jobId,
    kind: a.kind,
    memoryMb: a.memoryMb,
    endMs: endOf(a, fromLaunch(predictedAttemptMs(a, worker), startDelayMs), now),
    diskMBps: spillRateOf(a, worker),
  };
}

/** A running attempt as kept: where it runs, and what of it does not depend on the clock. */
interface KeptAttempt {
  readonly id: string;
  readonly nodeId: string;
  readonly job: KeptJob;
  /** Its place in its job's runningAttempts as last seen: its view is `job.views[place]`. */
  place: number;
  /** The view and the disk rate of its worker (-1: no live worker) the two below were worked out from. */
  from: AttemptView | null;
  basis: number;
  predictedMs: number | undefined;
  diskMBps: number;
  /** Its release as the timeline reads it (predicted end, not clamped to now); null without an estimate. */
  release: TimelineRelease | null;
  /** The release it is placed by in the end order (`inReleaseOrder`); a new `release` moves it. */
  orderedBy: TimelineRelease | null;
  /** Set when it stopped running (it leaves the end order at the next read). */
  gone: boolean;
}

/**
 * A job as kept: its rank among the jobs (see the file's comment), its runningAttempts as last
 * seen with their ids and workers apart (comparing those costs no look at an attempt's view), and
 * the same attempts as kept.
 */
interface KeptJob {
  readonly id: string;
  readonly rank: number;
  /** The latest predicted end among its running attempts, as of the last `inReleaseOrder`. */
  latestEndMs: number;
  views: readonly AttemptView[];
  ids: readonly string[];
  workerIds: readonly string[];
  attempts: KeptAttempt[];
}

/** What predictions of attempts on this worker depend on: its disk rate, or -1 when it is not live. */
function basisOf(worker: WorkerView | undefined): number {
  return worker ? diskOf(worker) : -1;
}

const NO_ATTEMPTS: readonly AttemptView[] = [];

function keptJob(id: string, rank: number): KeptJob {
  return { id, rank, latestEndMs: Number.NEGATIVE_INFINITY, views: NO_ATTEMPTS, ids: [], workerIds: [], attempts: [] };
}

function keptAttempt(a: AttemptView, job: KeptJob, place: number): KeptAttempt {
  return {
    id: a.id,
    nodeId: a.workerId,
    job,
    place,
    from: null,
    basis: Number.NaN,
    predictedMs: undefined,
    diskMBps: 0,
    release: null,
    orderedBy: null,
    gone: false,
  };
}

/** The order attempts end in: predicted end, then the snapshot's (a walk of its jobs and their attempts). */
function endsBefore(a: KeptAttempt, b: KeptAttempt): number {
  return a.release!.endMs - b.release!.endMs || a.job.rank - b.job.rank || a.place - b.place;
}

/** The snapshot's order alone (for ends taken as now: the timeline releases them in that order). */
function walkOrder(a: KeptAttempt, b: KeptAttempt): number {
  return a.job.rank - b.job.rank || a.place - b.place;
}

/** The running attempts of the last snapshot given, by node (see the file's comment). */
export class NodeHoldings {
  /** `startDelayOf`: how long after its launch decision an attempt's work began (Decision.startDelayMs). */
  constructor(private readonly startDelayOf: (a: AttemptView) => number = () => 0) {}

  private lastJobs: readonly JobView[] = [];
  private readonly jobs = new Map<string, KeptJob>();
  private nextRank = 0;
  /** Every kept attempt by id (to tell a new attempt from one that stayed). */
  private readonly byAttempt = new Map<string, KeptAttempt>();
  private readonly byNode = new Map<string, KeptAttempt[]>();
  /**
   * The attempts in the order they end, kept once `inReleaseOrder` was first asked (yarn never
   * asks): those placed at the last read, and those that came since (or have no estimate).
   */
  private ends: { sorted: KeptAttempt[]; came: KeptAttempt[] } | null = null;
  /**
   * inReleaseOrder's working lists, kept between reads: allocating three lists of every running
   * attempt per read was a tenth of yarn-me's time on 3000 nodes in the garbage collector. The
   * releases alternate between two lists, so the list a read returns stays whole until the read
   * after next (the timeline built on it is replaced at the next read's rebuild).
   */
  private readonly buffers = {
    stayed: [] as KeptAttempt[],
    releasesA: [] as TimelineRelease[],
    releasesB: [] as TimelineRelease[],
    flip: false,
  };
  /**
   * Set when a snapshot was not shaped as the books shape them (an attempt id twice, an attempt
   * that moved to another node or job, a job twice): its lists were built from scratch, and so
   * are the next's.
   */
  private odd = false;

  /** Brings the lists up to `jobs` (a snapshot's active jobs). */
  update(jobs: readonly JobView[]): void {
    if (jobs === this.lastJobs) return;
    if (this.odd) this.clear();
    const last = this.lastJobs;
    // As FairQueue.update: both lists in the books' order, jobs leave anywhere and arrive at the end.
    // In any other order it still comes out right: a job not where the walk expects it is taken
    // out, with those before it, and in again as new, so ranks always follow the snapshot's order.
    let k = 0;
    for (const job of jobs) {
      while (k < last.length && last[k]!.id !== job.id) this.jobLeft(last[k++]!.id);
      const before = k < last.length ? last[k++]! : undefined;
      if (before !== job && !this.jobChanged(before, job)) {
        this.buildFromScratch(jobs);
        return;
      }
    }
    while (k < last.length) this.jobLeft(last[k++]!.id);
    this.lastJobs = jobs;
  }

  /**
   * What runs on the node as of the last update, at `now`, in the order of a walk of the snapshot;
   * `worker` is the node's live worker (undefined when it is not live).
   */
  on(nodeId: string, worker: WorkerView | undefined, now: number): Holding[] {
    const kept = this.byNode.get(nodeId);
    if (kept === undefined) return [];
    return kept.map((h) => {
      const view = this.refresh(h, worker);
      return {
        jobId: view.jobId,
        kind: view.kind,
        memoryMb: view.memoryMb,
        endMs: endOf(view, h.predictedMs, now),
        diskMBps: h.diskMBps,
      };
    });
  }

  /**
   * Every running attempt as of the last update, as the timeline releases them (timeline.ts's
   * `RunningReleases`): by predicted end, one already passed taken as `now`, ties in the order of a
   * walk of the snapshot. `workerOf` gives an attempt's live worker; `workersChanged` says who is
   * live changed since the last read (then every prediction is checked again). What it returns
   * holds until the read after next.
   */
  inReleaseOrder(
    now: number,
    workerOf: (id: string) => WorkerView | undefined,
    workersChanged: boolean,
  ): RunningReleases {
    if (this.ends === null) {
      // The first read: from here on, attempts are kept in end order too.
      this.ends = { sorted: [], came: [...this.byNode.values()].flat() };
      workersChanged = true;
    }
    const ends = this.ends;
    // Lists of 48,000 attempts on 3000 nodes, read at every rebuild: their buffers are kept (see `buffers`).
    const stayed = this.buffers.stayed;
    let kept = 0;
    const came = ends.came;
    ends.came = [];
    // Every job that ran an attempt since the last read has its latest end worked out again below.
    for (const h of ends.sorted) h.job.latestEndMs = Number.NEGATIVE_INFINITY;
    for (const h of came) h.job.latestEndMs = Number.NEGATIVE_INFINITY;
    for (const h of ends.sorted) {
      if (h.gone) continue;
      if (workersChanged || h.from !== h.job.views[h.place]) this.refresh(h, workerOf(h.nodeId));
      if (h.release === h.orderedBy) stayed[kept++] = h;
      else came.push(h);
    }
    // Those new or whose prediction changed; those without an estimate end as the clock says.
    const placed: KeptAttempt[] = [];
    const clocked: { readonly h: KeptAttempt; readonly endMs: number }[] = [];
    for (const h of came) {
      if (h.gone) continue;
      const view = this.refresh(h, workerOf(h.nodeId));
      h.orderedBy = h.release;
      if (h.release !== null) placed.push(h);
      else {
        clocked.push({ h, endMs: endOf(view, undefined, now) });
        ends.came.push(h);
      }
    }
    // One pass merges the two, lists the releases and works out each job's latest end.
    placed.sort(endsBefore);
    const sorted = ends.sorted;
    this.buffers.flip = !this.buffers.flip;
    const releases = this.buffers.flip ? this.buffers.releasesA : this.buffers.releasesB;
    let n = 0;
    const take = (h: KeptAttempt) => {
      sorted[n] = h;
      releases[n++] = h.orderedBy!;
      if (h.orderedBy!.endMs > h.job.latestEndMs) h.job.latestEndMs = h.orderedBy!.endMs;
    };
    let i = 0;
    let j = 0;
    while (i < kept && j < placed.length) take(endsBefore(placed[j]!, stayed[i]!) < 0 ? placed[j++]! : stayed[i++]!);
    while (i < kept) take(stayed[i++]!);
    while (j < placed.length) take(placed[j++]!);
    sorted.length = n;
    releases.length = n;
    // The buffer keeps no attempt alive past its read.
    stayed.fill(undefined as unknown as KeptAttempt, 0, kept);
    for (const c of clocked) c.h.job.latestEndMs = Math.max(c.h.job.latestEndMs, c.endMs);
    const latestEndMs = this.odd ? latestById([...sorted, ...clocked.map((c) => c.h)]) : this.latestOfKept;
    // Ends already passed come out at `now` in walk order, and so do the clocked ones among the rest.
    if (clocked.length === 0 && (releases.length === 0 || releases[0]!.endMs > now)) return { releases, latestEndMs };
    if (clocked.length === 0) {
      let passed = 0;
      while (passed < sorted.length && sorted[passed]!.orderedBy!.endMs <= now) passed++;
      const due = sorted.slice(0, passed).sort(walkOrder);
      return { releases: [...due.map((h) => h.orderedBy!), ...releases.slice(passed)], latestEndMs };
    }
    const all = [
      ...ends.sorted.map((h) => ({ h, endMs: Math.max(now, h.orderedBy!.endMs), release: h.orderedBy! })),
      ...clocked.map(({ h, endMs }) => ({ h, endMs, release: release(h.job.views[h.place]!, h.nodeId, endMs) })),
    ];
    all.sort((a, b) => a.endMs - b.endMs || walkOrder(a.h, b.h));
    return { releases: all.map((x) => x.release), latestEndMs };
  }

  /** Brings what of `h` depends on its view and worker up to date; its view. */
  private refresh(h: KeptAttempt, worker: WorkerView | undefined): AttemptView {
    const view = h.job.views[h.place]!;
    const basis = basisOf(worker);
    if (h.from !== view || h.basis !== basis) {
      h.from = view;
      h.basis = basis;
      h.predictedMs = fromLaunch(predictedAttemptMs(view, worker), this.startDelayOf(view));
      h.diskMBps = spillRateOf(view, worker);
      // A new release only when what the timeline reads of it changed (it then moves in the end order).
      const endMs = h.predictedMs === undefined ? undefined : view.startTime + h.predictedMs;
      const r = h.release;
      if (endMs === undefined) h.release = null;
      else if (r === null || r.endMs !== endMs || r.memoryMb !== view.memoryMb)
        h.release = release(view, h.nodeId, endMs);
    }
    return view;
  }

  private readonly latestOfKept = (jobId: string): number | undefined => {
    const end = this.jobs.get(jobId)?.latestEndMs;
    return end === undefined || end === Number.NEGATIVE_INFINITY ? undefined : end;
  };

  private clear(): void {
    this.lastJobs = [];
    this.jobs.clear();
    this.nextRank = 0;
    this.byAttempt.clear();
    this.byNode.clear();
    this.odd = false;
    if (this.ends !== null) this.ends = { sorted: [], came: [] };
  }

  /** Every node's list from a walk of the snapshot, as a call without kept lists would (an odd snapshot). */
  private buildFromScratch(jobs: readonly JobView[]): void {
    this.clear();
    this.odd = true;
    this.lastJobs = jobs;
    jobs.forEach((view, rank) => {
      const job = keptJob(view.id, rank);
      job.views = view.runningAttempts;
      job.views.forEach((a, place) => {
        const h = keptAttempt(a, job, place);
        this.ends?.came.push(h);
        const list = this.byNode.get(a.workerId);
        if (list) list.push(h);
        else this.byNode.set(a.workerId, [h]);
      });
    });
  }

  private jobLeft(jobId: string): void {
    const job = this.jobs.get(jobId);
    if (job === undefined) return;
    for (const h of job.attempts) this.remove(h);
    this.jobs.delete(jobId);
  }

  /** Takes in the job's new view; false when the snapshot is odd (see `odd`). */
  private jobChanged(before: JobView | undefined, view: JobView): boolean {
    let job = this.jobs.get(view.id);
    if (before === undefined) {
      // A job listed twice.
      if (job !== undefined) return false;
      this.jobs.set(view.id, (job = keptJob(view.id, this.nextRank++)));
    } else if (job === undefined) return false;
    const running = view.runningAttempts;
    if (running === job.views) return true;
    if (!this.sameAttempts(job, running) && !this.attemptsCameOrWent(job, running)) return false;
    job.views = running;
    return true;
  }

  /** Whether the job runs the very attempts it ran, on the same nodes (their views may be new: progress). */
  private sameAttempts(job: KeptJob, running: readonly AttemptView[]): boolean {
    if (running.length !== job.views.length) return false;
    const { views, ids, workerIds } = job;
    for (let i = 0; i < running.length; i++) {
      const a = running[i]!;
      if (a !== views[i] && (a.id !== ids[i] || a.workerId !== workerIds[i])) return false;
    }
    return true;
  }

  /**
   * The job's old and new running attempts side by side (a job's attempts never change places, so
   * an attempt not where the walk expects it was added or is gone). False when the snapshot is odd.
   */
  private attemptsCameOrWent(job: KeptJob, running: readonly AttemptView[]): boolean {
    const old = job.attempts;
    const kept: KeptAttempt[] = [];
    const added: KeptAttempt[] = [];
    let i = 0;
    for (let place = 0; place < running.length; place++) {
      const a = running[place]!;
      let h = i < old.length && job.ids[i] === a.id ? old[i] : undefined;
      if (h === undefined) {
        h = this.byAttempt.get(a.id);
        if (h !== undefined) {
          if (h.job !== job) return false;
          // `a` was further on: those before it are gone.
          while (i < old.length && old[i] !== h) this.remove(old[i++]!);
          if (i === old.length) return false;
        }
      }
      if (h === undefined) {
        h = keptAttempt(a, job, place);
        this.byAttempt.set(a.id, h);
        added.push(h);
        kept.push(h);
        continue;
      }
      if (h.nodeId !== a.workerId) return false;
      i++;
      h.place = place;
      kept.push(h);
    }
    while (i < old.length) this.remove(old[i++]!);
    job.attempts = kept;
    job.ids = running.map((a) => a.id);
    job.workerIds = running.map((a) => a.workerId);
    // Once every attempt of the job has its new place.
    for (const h of added) this.insert(h);
    this.ends?.came.push(...added);
    return true;
  }

  /** Puts `h` in its node's list: after every attempt of an earlier job, and of its own earlier in runningAttempts. */
  private insert(h: KeptAttempt): void {
    let list = this.byNode.get(h.nodeId);
    if (list === undefined) this.byNode.set(h.nodeId, (list = []));
    let i = list.length;
    while (i > 0 && after(list[i - 1]!, h)) i--;
    list.splice(i, 0, h);
  }

  private remove(h: KeptAttempt): void {
    h.gone = true;
    if (this.byAttempt.get(h.id) === h) this.byAttempt.delete(h.id);
    const list = this.byNode.get(h.nodeId);
    if (list === undefined) return;
    const i = list.indexOf(h);
    if (i >= 0) list.splice(i, 1);
    if (list.length === 0) this.byNode.delete(h.nodeId);
  }
}

/** A running attempt's release ending at `endMs`. */
function release(view: AttemptView, nodeId: string, endMs: number): TimelineRelease {
  return { nodeId, jobId: view.jobId, kind: view.kind, memoryMb: view.memoryMb, endMs };
}

/** Each job's latest end among `attempts` (a snapshot that lists a job twice has two kept jobs of its id). */
function latestById(attempts: readonly KeptAttempt[]): (jobId: string) => number | undefined {
  const latest = new Map<string, number>();
  for (const h of attempts)
    latest.set(h.job.id, Math.max(latest.get(h.job.id) ?? h.job.latestEndMs, h.job.latestEndMs));
  return (jobId) => latest.get(jobId);
}

/** Whether `a` comes after `b` on their node (see the file's comment). */
function after(a: KeptAttempt, b: KeptAttempt): boolean {
  return a.job.rank > b.job.rank || (a.job.rank === b.job.rank && a.place > b.place);
}
